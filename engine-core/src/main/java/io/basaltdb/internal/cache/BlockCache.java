package io.basaltdb.internal.cache;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.Mem;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.StampedLock;
import java.util.function.Supplier;

/**
 * The store's block cache: an off-heap LRU cache of what Magma's index block cache holds (seed 000,
 * section 3.4: the key index's index, filter and data blocks, the log segments' seqno index pages)
 * and, for a store with no document cache above it, single documents: the paper's Couchbase keeps a
 * document cache per vBucket because caching documents one by one does not waste memory on the cold
 * documents that share a 4 KiB block with a hot one. Readers keep no copy of index data on the
 * heap: a lookup pins the cached block, reads it in place and releases it.
 *
 * <p>Blocks are keyed by {@code (owner, offset)}: {@link #newOwner()} gives each open file its own
 * number, so a key never names two different contents (a file is immutable below what its readers
 * read, and a new file gets a new owner). What is cached is each reader's decoded, checked form of
 * a block, not the bytes on disk, so a hit skips the checksum and the parsing as well as the read.
 *
 * <p>Memory: every cached block is one malloc of its size, counted in {@link #bytes()} from the
 * allocation to the free; the engine gives the cache its own part of the memory quota, so the cache
 * and the write cache never take each other's memory. A block is freed only when it is out of the
 * cache and no reader holds a pin on it, so an eviction racing a reader never frees memory in use.
 * A block larger than a shard's share of the capacity, or any block once the cache is closed, is
 * returned to the reader as a heap block that is not cached (and {@link #release}d as a no-op).
 *
 * <p>Concurrency: the cache is split into shards by key hash, each with its own lock guarding its
 * map and LRU list (RocksDB's LRUCache design), taken for writing by puts, removals and evictions.
 * A hit takes no lock: it looks in the map optimistically ({@link StampedLock}) and pins the block
 * with a CAS that fails once the block is evicted, and instead of moving the block to the head of
 * the list it sets the block's referenced bit, which the evictor honours with a second chance
 * (CLOCK over the LRU order). So readers of one hot block (a table's filter, read by every get) do
 * not queue on a lock, nor park behind a lock holder the scheduler has preempted ({@link #find}
 * says how a lookup that races a writer ends). Evicted blocks are freed after the lock. A release
 * is a lock-free decrement. A block's state word holds its pin count and an EVICTED bit; whoever
 * brings it to "evicted, no pins" frees it, and that happens exactly once: a pin succeeds only
 * before the EVICTED bit is set, so an eviction after it sees the pin.
 */
public final class BlockCache implements AutoCloseable {
  /** What a cached block holds; the stats count bytes by kind. */
  public enum Kind {
    TABLE_INDEX,
    TABLE_FILTER,
    TABLE_DATA,
    SEGMENT_PAGE,
    DOCUMENT
  }

  private static final int EVICTED = 1 << 30;
  private static final int PINS = EVICTED - 1;

  /**
   * A heap block never in the cache: pins are not counted and it is never freed (the GC owns it).
   */
  private static final int HEAP = -1;

  private static final VarHandle STATE;

  /**
   * Bytes a cached block costs beyond its contents: its entry object, map node and malloc header.
   */
  static final int OVERHEAD = 96;

  /** A shard gets at least this much of the capacity, so that one big filter block fits in one. */
  private static final long MIN_SHARD_BYTES = 4L << 20;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Block.class, "state", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /**
   * A pinned block: {@code size} bytes at {@code (base, address)} in {@link Mem}'s addressing (base
   * is null for native memory, a {@code byte[]} for a heap block). Valid until {@link #release}d;
   * release each pin exactly once.
   */
  public static final class Block {
    public final Object base;
    public final long address;
    public final int size;
    final Kind kind;
    final long key;

    /** The cache whose memory this is; null for a heap block. */
    private final BlockCache cache;

    /**
     * Pins, plus EVICTED once out of the cache; HEAP for a heap block. Changed only by atomic
     * operations through STATE ({@link #casState}, {@link #faaState}), from any thread, without a
     * lock.
     */
    @SuppressWarnings("unused")
    private volatile int state;

    /**
     * Read since the evictor last passed it: set by hits without the lock (a benign race: a lost or
     * late set only changes which block goes first), cleared by the evictor, which gives such a
     * block a second chance at the head of the list.
     */
    boolean referenced;

    /**
     * LRU neighbours, guarded by the shard lock while the block is in the list; null once out of
     * it, except that a put chains the blocks it evicted through {@code older} to free them after
     * the lock (no other thread reaches them by then).
     */
    Block newer;

    Block older;

    Block(BlockCache cache, Object base, long address, int size, Kind kind, long key, int state) {
      this.cache = cache;
      this.base = base;
      this.address = address;
      this.size = size;
      this.kind = kind;
      this.key = key;
      this.state = state; // a volatile store, before the block is put in a map or returned
    }

    long charge() {
      return size + OVERHEAD;
    }

    private int lvState() {
      return (int) STATE.getVolatile(this);
    }

    private boolean casState(int expect, int update) {
      return STATE.compareAndSet(this, expect, update);
    }

    /** Adds {@code delta} to the state and returns the state before. */
    private int faaState(int delta) {
      return (int) STATE.getAndAdd(this, delta);
    }

    /** Releases this pin; the block must not be read afterwards. */
    public void release() {
      if (cache != null) cache.release(this);
    }
  }

  /** Lowered by {@link #shrink}, never raised. */
  private volatile long capacity;

  private volatile long shardCapacity;
  private final Shard[] shards;
  private final int shardMask;
  private final AtomicLong owners = new AtomicLong();

  /**
   * Native bytes allocated and not yet freed, charges included (what the cache costs the quota).
   */
  private final AtomicLong bytes = new AtomicLong();

  private final AtomicLong[] bytesByKind = new AtomicLong[Kind.values().length];
  private final LongAdder[] hits = new LongAdder[Kind.values().length];
  private final LongAdder[] misses = new LongAdder[Kind.values().length];
  private final LongAdder evictions = new LongAdder();

  /** Reads {@link #admitOnSecondRead} turned away. */
  private final LongAdder declined = new LongAdder();

  /**
   * Fingerprints of blocks read once and not cached, direct-mapped by key (TinyLFU's doorkeeper).
   * Read and written racily, with plain accesses: a lost, stale or torn slot changes one admission
   * decision, never what a read returns.
   */
  private final long[] readOnce;

  private static final int READ_ONCE_WAYS = 4;
  private volatile boolean closed;

  /** A cache of at most {@code capacity} bytes; 0 caches nothing (every lookup misses). */
  public BlockCache(long capacity) {
    if (capacity < 0)
      throw new InvalidArgumentException(
          "block cache capacity must not be negative, was " + capacity);
    this.capacity = capacity;
    int n =
        (int)
            Math.max(1, Math.min(16, Long.highestOneBit(Math.max(1, capacity / MIN_SHARD_BYTES))));
    this.shards = new Shard[n];
    for (int i = 0; i < n; i++) shards[i] = new Shard();
    this.shardMask = n - 1;
    this.shardCapacity = capacity / n;
    // About one slot per KiB of capacity: a window as long as the cache holds documents of that
    // size.
    this.readOnce =
        new long[(int) Long.highestOneBit(Math.max(64, Math.min(1L << 20, capacity >> 10)))];
    for (int i = 0; i < bytesByKind.length; i++) {
      bytesByKind[i] = new AtomicLong();
      hits[i] = new LongAdder();
      misses[i] = new LongAdder();
    }
  }

  /** A number no other file of this cache has: the owner part of the keys of one file's blocks. */
  public long newOwner() {
    return owners.incrementAndGet();
  }

  /**
   * The first of {@code n} consecutive owner numbers no other file has, for a file that keys {@code
   * n} kinds of blocks in separate spaces (a segment: index pages by offset, documents by seqno).
   */
  public long newOwners(int n) {
    if (n < 1) throw new InvalidArgumentException("owner count must be positive, was " + n);
    return owners.getAndAdd(n) + 1;
  }

  /**
   * The pinned block {@code (owner, offset)}, or null if it is not cached. Counts a hit or a miss
   * of {@code kind}, the kind the caller expects there.
   */
  public Block get(long owner, long offset, Kind kind) {
    Block b = find(owner, offset);
    (b == null ? misses : hits)[kind.ordinal()].increment();
    return b;
  }

  /**
   * As {@link #get(long, long, Kind)} for a reader that will not load the block if it is not
   * cached: counts a hit, and no miss (nothing is read for it).
   */
  public Block getIfCached(long owner, long offset, Kind kind) {
    Block b = find(owner, offset);
    if (b != null) hits[kind.ordinal()].increment();
    return b;
  }

  /**
   * As {@link #get(long, long, Kind)} without counting a hit or a miss: for readers whose reads are
   * not the cache's business (compaction reads each block once and does not cache it).
   */
  public Block find(long owner, long offset) {
    long key = key(owner, offset);
    Shard s = shard(key);
    // Look without the lock and pin with a CAS that fails once the block is evicted: a block of
    // this
    // key pinned that way is a hit whatever writers do meanwhile, so a hit takes no lock at all.
    // Not
    // finding the key is a miss only if no writer ran during the look (a writer's removal shifts
    // entries, which can hide a key for a moment); while writers keep the shard busy, it is called
    // a
    // miss after a few looks rather than waited for: a writer the scheduler preempted would park
    // every
    // reader of the shard. The caller of a miss then loads the block and puts it, and the put,
    // under
    // the lock, finds the cached one if it was there after all.
    for (int attempt = 0; ; attempt++) {
      long stamp = s.lock.tryOptimisticRead();
      Block b = s.map.getRacy(key);
      if (b != null && b.key == key && tryPin(b)) {
        b.referenced = true;
        return b;
      }
      if (stamp != 0 && s.lock.validate(stamp)) return null;
      if (attempt == 3) return null;
      Thread.onSpinWait();
    }
  }

  /** Pins {@code b} unless it is evicted; a block pinned here is not freed until released. */
  private static boolean tryPin(Block b) {
    while (true) {
      int v = b.lvState(); // lv: sees an evictor's EVICTED; the CAS below validates it
      if ((v & EVICTED) != 0) return false;
      // cas: succeeds only before the EVICTED add, which then counts this pin and leaves the free
      // to us
      if (b.casState(v, v + 1)) return true;
    }
  }

  /**
   * The pinned block {@code (owner, offset)}: the cached one, or else what {@code load} returns
   * (the block's decoded form, which the cache copies), cached if it fits.
   */
  public Block get(long owner, long offset, Kind kind, Supplier<byte[]> load) {
    Block b = get(owner, offset, kind);
    return b != null ? b : put(owner, offset, kind, load.get());
  }

  /**
   * Caches a copy of {@code contents} as {@code (owner, offset)} and returns it pinned; if another
   * thread cached that key first, returns theirs. A block the cache cannot take comes back as a
   * pinned heap block wrapping {@code contents}.
   */
  public Block put(long owner, long offset, Kind kind, byte[] contents) {
    return put(owner, offset, kind, contents, contents.length);
  }

  /**
   * As {@link #put(long, long, Kind, byte[])} with the first {@code size} bytes of {@code
   * contents}.
   */
  public Block put(long owner, long offset, Kind kind, byte[] contents, int size) {
    if (size < 0 || size > contents.length)
      throw new InvalidArgumentException("size " + size + " out of range");
    if (closed || !admits(size)) return heapBlock(contents, size, kind);
    long key = key(owner, offset);
    long a = Mem.allocateUnpooled(size, this);
    Mem.copyFromArray(contents, 0, null, a, size);
    Block b = new Block(this, null, a, size, kind, key, 1);
    bytes.addAndGet(b.charge());
    bytesByKind[kind.ordinal()].addAndGet(b.charge());
    Shard s = shard(key);
    Block existing;
    boolean inserted = false;
    Block unpinned =
        null; // evicted with no pins: freed after the lock, chained through their `older`
    long stamp = s.lock.writeLock();
    try {
      existing = s.map.get(key);
      if (existing != null) {
        existing.referenced = true;
        existing.faaState(
            1); // faa: in the map, under the lock, so not evicted: this pin cannot fail
      } else if (!closed) {
        s.map.put(b);
        inserted = true;
        s.pushNewest(b);
        s.used += b.charge();
        unpinned = evictDownTo(s, shardCapacity, b);
      }
    } finally {
      s.lock.unlockWrite(stamp);
    }
    freeAll(unpinned);
    if (!inserted) {
      free(b); // never published: no pin but ours
      return existing != null ? existing : heapBlock(contents, size, kind);
    }
    return b;
  }

  /**
   * Releases one pin of {@code b}; frees it if it is out of the cache and that was the last pin.
   */
  private void release(Block b) {
    int v =
        b.faaState(-1)
            - 1; // faa: orders our reads of the block before a free by whoever sees 0 pins
    if ((v & PINS) == PINS)
      throw new IllegalStateException("block released more often than pinned");
    if (v == EVICTED) free(b);
  }

  /**
   * Drops {@code (owner, offset)} from the cache (its file is gone); readers holding it keep it
   * until released.
   */
  public void remove(long owner, long offset) {
    long key = key(owner, offset);
    Shard s = shard(key);
    long stamp = s.lock.writeLock();
    try {
      Block b = s.map.get(key);
      if (b == null) return;
      s.remove(b);
      evict(b);
    } finally {
      s.lock.unlockWrite(stamp);
    }
  }

  /**
   * Drops every block of {@code owner} (a file closed for good). Scans the cache: for rare events.
   */
  public void removeOwner(long owner) {
    for (Shard s : shards) {
      long stamp = s.lock.writeLock();
      try {
        for (Block b = s.oldest; b != null; ) {
          Block next = b.newer;
          if (b.key >>> OFFSET_BITS == owner) {
            s.remove(b);
            evict(b);
          }
          b = next;
        }
      } finally {
        s.lock.unlockWrite(stamp);
      }
    }
  }

  /**
   * Empties the cache; later lookups miss and later puts return heap blocks. Pinned blocks are
   * freed at their release.
   */
  @Override
  public void close() {
    closed = true;
    for (Shard s : shards) {
      long stamp = s.lock.writeLock();
      try {
        while (s.oldest != null) {
          Block b = s.oldest;
          s.remove(b);
          evict(b);
        }
      } finally {
        s.lock.unlockWrite(stamp);
      }
    }
  }

  public long capacity() {
    return capacity;
  }

  /**
   * Lowers the capacity by {@code bytes} (to no less than 0) and evicts what no longer fits, as a
   * put would (blocks pinned by readers are freed when their last pin goes): the store's read
   * buffer pool takes its room from the cache's part of the quota as it grows.
   */
  public synchronized void shrink(long bytes) {
    if (bytes < 0) throw new InvalidArgumentException("bytes must not be negative: " + bytes);
    capacity = Math.max(0, capacity - bytes);
    long perShard = capacity / shards.length;
    shardCapacity = perShard;
    for (Shard s : shards) {
      Block unpinned;
      long stamp = s.lock.writeLock();
      try {
        unpinned = evictDownTo(s, perShard, null);
      } finally {
        s.lock.unlockWrite(stamp);
      }
      freeAll(unpinned);
    }
  }

  /**
   * Evicts the oldest blocks of {@code s}, under its write lock, until it holds at most {@code cap}
   * bytes or only {@code keep} (the block being put, never evicted: alone over a capacity a shrink
   * lowered meanwhile, it stays). CLOCK's second chance over the LRU list: a block read since it
   * was last passed goes back to the head once (hits set the bit without the lock); at most one
   * pass of chances per call, so readers that keep setting bits cannot hold the writer here.
   * Returns the evicted blocks no reader pins, chained through their {@code older}, for {@link
   * #freeAll} after the lock.
   */
  private Block evictDownTo(Shard s, long cap, Block keep) {
    Block unpinned = null;
    int chances = s.map.size();
    while (s.used > cap && s.oldest != null) {
      Block victim = s.oldest;
      if (victim == keep && s.map.size() == 1) break;
      if (victim == keep || (victim.referenced && chances-- > 0)) {
        victim.referenced = false;
        s.touch(victim);
        continue;
      }
      s.remove(victim);
      evictions.increment();
      if (markEvicted(victim)) {
        victim.older = unpinned;
        unpinned = victim;
      }
    }
    return unpinned;
  }

  /** Frees a chain {@link #evictDownTo} returned. */
  private void freeAll(Block unpinned) {
    while (unpinned != null) {
      Block next = unpinned.older;
      unpinned.older = null;
      free(unpinned);
      unpinned = next;
    }
  }

  /**
   * Whether a block of {@code size} bytes can be cached: it fits one shard's share of the capacity.
   * A reader keeps a bigger index or filter on the heap, outside the quota, rather than read it
   * from the file at every use.
   */
  public boolean admits(int size) {
    return size > 0 && size + (long) OVERHEAD <= shardCapacity;
  }

  /**
   * Whether an entry of {@code size} bytes that is cached for a single small thing (a document)
   * should be: it takes at most a sixteenth of a shard, so that one large document cannot push out
   * a shard's worth of hot entries.
   */
  public boolean admitsSmall(int size) {
    return size > 0 && size + (long) OVERHEAD <= shardCapacity / 16;
  }

  /**
   * Whether a block a read just brought in (a key index data block, a document) should be cached:
   * true on its second read within a window of about as many other first reads as the cache holds
   * KiB, after TinyLFU's doorkeeper (Einziger, Friedman and Manes, 2017). A block read once and not
   * again soon (a get of a uniformly random key over data far bigger than the cache) then costs no
   * copy and evicts nothing; a block read again soon gets cached on that read. Blocks a file needs
   * to work (index, filter, index pages) are cached without asking.
   */
  public boolean admitOnSecondRead(long owner, long offset) {
    long h = key(owner, offset); // murmur3's fmix64: neighbouring offsets land far apart
    h = (h ^ h >>> 33) * 0xff51afd7ed558ccdL;
    h = (h ^ h >>> 33) * 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    long fingerprint = h | 1; // never the empty slot's 0
    long[] seen = readOnce;
    // Four-way buckets, newest first: a direct-mapped table would make a few percent of even a
    // small
    // working set collide and wait for a third read.
    int b = ((int) (h >>> 32) & (seen.length / READ_ONCE_WAYS - 1)) * READ_ONCE_WAYS;
    for (int i = b; i < b + READ_ONCE_WAYS; i++) {
      if (seen[i] == fingerprint) {
        seen[i] = 0; // cached now; after an eviction it has to earn its place again
        return true;
      }
    }
    System.arraycopy(seen, b, seen, b + 1, READ_ONCE_WAYS - 1); // the bucket's oldest goes
    seen[b] = fingerprint;
    declined.increment();
    return false;
  }

  /** Reads {@link #admitOnSecondRead} has turned away. */
  public long declined() {
    return declined.sum();
  }

  /** Native bytes the cache holds now, blocks evicted but still pinned included. */
  public long bytes() {
    return bytes.get();
  }

  public long bytes(Kind kind) {
    return bytesByKind[kind.ordinal()].get();
  }

  public long hits() {
    long n = 0;
    for (LongAdder h : hits) n += h.sum();
    return n;
  }

  public long misses() {
    long n = 0;
    for (LongAdder m : misses) n += m.sum();
    return n;
  }

  public long hits(Kind kind) {
    return hits[kind.ordinal()].sum();
  }

  public long misses(Kind kind) {
    return misses[kind.ordinal()].sum();
  }

  public long evictions() {
    return evictions.sum();
  }

  /** Blocks in the cache now. */
  public int entries() {
    int n = 0;
    for (Shard s : shards) {
      long stamp = s.lock.readLock();
      try {
        n += s.map.size();
      } finally {
        s.lock.unlockRead(stamp);
      }
    }
    return n;
  }

  /**
   * Offsets are below 2^32 (segments and tables are smaller); owners take the upper half of a key.
   */
  private static final int OFFSET_BITS = 32;

  private static long key(long owner, long offset) {
    if (offset < 0 || offset >>> OFFSET_BITS != 0)
      throw new InvalidArgumentException("block offset out of range: " + offset);
    return owner << OFFSET_BITS | offset;
  }

  private Shard shard(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return shards[(int) (h >>> 40) & shardMask];
  }

  /**
   * A block on the heap, never cached: for readers without a cache, and blocks a cache cannot take.
   */
  public static Block heapBlock(byte[] contents, Kind kind) {
    return heapBlock(contents, contents.length, kind);
  }

  /** As {@link #heapBlock(byte[], Kind)} with the first {@code size} bytes of {@code contents}. */
  public static Block heapBlock(byte[] contents, int size, Kind kind) {
    return new Block(null, contents, Mem.ARRAY_BASE, size, kind, -1, HEAP);
  }

  /** Marks {@code b}, just taken out of its shard, evicted; frees it if nobody holds a pin. */
  private void evict(Block b) {
    if (markEvicted(b)) free(b);
  }

  /**
   * Marks {@code b}, just taken out of its shard, evicted; true if nobody holds a pin (free it).
   */
  private static boolean markEvicted(Block b) {
    int v = b.faaState(EVICTED); // faa: a pin either precedes it (counted here) or fails after it
    return (v & PINS) == 0;
  }

  private void free(Block b) {
    bytes.addAndGet(-b.charge());
    bytesByKind[b.kind.ordinal()].addAndGet(-b.charge());
    Mem.freeUnpooled(b.address, b.size, this);
  }

  /** A map and an LRU list (newest at the head). */
  private static final class Shard {
    /**
     * Taken for writing by puts, removals and evictions, for reading by {@link BlockCache#entries};
     * lookups read the map without it and validate a stamp instead.
     */
    final StampedLock lock = new StampedLock();

    /**
     * Written only under the write lock; read racily by lookups (the rule is at {@link BlockMap}).
     */
    final BlockMap map = new BlockMap();

    /** The LRU list and its charge: read and written only under the write lock. */
    Block newest;

    Block oldest;
    long used;

    void pushNewest(Block b) {
      b.older = newest;
      b.newer = null;
      if (newest != null) newest.newer = b;
      newest = b;
      if (oldest == null) oldest = b;
    }

    void unlink(Block b) {
      if (b.newer != null) b.newer.older = b.older;
      else newest = b.older;
      if (b.older != null) b.older.newer = b.newer;
      else oldest = b.newer;
      b.newer = null;
      b.older = null;
    }

    void touch(Block b) {
      if (newest == b) return;
      unlink(b);
      pushNewest(b);
    }

    void remove(Block b) {
      map.remove(b.key);
      unlink(b);
      used -= b.charge();
    }
  }

  /**
   * A hash map from a block's key to the block, open-addressed with linear probing over parallel
   * arrays of primitive keys and blocks: a probe boxes nothing and touches two arrays, not a chain
   * of nodes. Key 0 marks a free slot (no block has it: owners start at 1). Removal shifts later
   * entries of the probe run back, so there are no tombstones.
   *
   * <p>Concurrency: every write ({@link #put}, {@link #remove}, the grow inside put) and every
   * {@link #get} runs under the shard's write lock, {@link #size} under its read or write lock.
   * Only {@link #getRacy} reads without the lock, and then the arrays may be in any state a writer
   * passes through: the two arrays of different generations (a grow assigns them one after the
   * other, then refills them), an entry shifted back while the reader's probe passed it, a key slot
   * and its block slot from different moments. A racy read is safe because it is bounded and
   * believed only after a check: it stops after one pass over the arrays and gives up when their
   * lengths differ, so it never throws or loops; a block it returns is a hit only if the block's
   * own key (a final field, so seen as constructed) is the one looked up and a CAS pins it before
   * it is marked evicted (so it cannot be freed under the reader); a null is a miss only if the
   * lock's stamp shows no writer ran during the look. Anything else makes {@link BlockCache#find}
   * look again or report a miss, which the put that follows a miss corrects under the lock.
   */
  static final class BlockMap {
    private long[] keys = new long[16];
    private Block[] blocks = new Block[16];
    private int size;

    private static int slot(long key, int mask) {
      long h = key * 0x9E3779B97F4A7C15L;
      return (int) (h ^ h >>> 29) & mask;
    }

    Block get(long key) {
      long[] ks = keys;
      int mask = ks.length - 1;
      for (int i = slot(key, mask); ; i = (i + 1) & mask) {
        long k = ks[i];
        if (k == key) return blocks[i];
        if (k == 0) return null;
      }
    }

    /**
     * As {@link #get} for a reader that does not hold the lock, to be validated by the caller (the
     * block's key, a stamp): never throws or loops on arrays a writer is changing, but may return
     * null or a block of another key while one is.
     */
    Block getRacy(long key) {
      long[] ks = keys;
      Block[] bs = blocks;
      int mask = ks.length - 1;
      if (bs.length != ks.length) return null; // caught between a grow's two arrays
      for (int i = slot(key, mask), n = 0; n < ks.length; i = (i + 1) & mask, n++) {
        long k = ks[i];
        if (k == key) return bs[i];
        if (k == 0) return null;
      }
      return null;
    }

    /** Maps {@code b.key} to {@code b}; the key must not be mapped yet. */
    void put(Block b) {
      if (b.key == 0) throw new IllegalArgumentException("key 0 is the free marker");
      if ((size + 1) * 2 > keys.length) grow();
      insert(b);
      size++;
    }

    private void insert(Block b) {
      int mask = keys.length - 1;
      int i = slot(b.key, mask);
      while (keys[i] != 0) i = (i + 1) & mask;
      keys[i] = b.key;
      blocks[i] = b;
    }

    private void grow() {
      long[] oldKeys = keys;
      Block[] oldBlocks = blocks;
      keys = new long[oldKeys.length * 2];
      blocks = new Block[oldKeys.length * 2];
      for (int i = 0; i < oldKeys.length; i++) {
        if (oldKeys[i] != 0) insert(oldBlocks[i]);
      }
    }

    /** Unmaps {@code key} if mapped. */
    void remove(long key) {
      long[] ks = keys;
      int mask = ks.length - 1;
      int i = slot(key, mask);
      while (ks[i] != key) {
        if (ks[i] == 0) return;
        i = (i + 1) & mask;
      }
      // Shift back every later entry of the run whose home slot is not in (i, j].
      for (int j = (i + 1) & mask; ks[j] != 0; j = (j + 1) & mask) {
        int home = slot(ks[j], mask);
        boolean stays = i <= j ? i < home && home <= j : i < home || home <= j;
        if (!stays) {
          ks[i] = ks[j];
          blocks[i] = blocks[j];
          i = j;
        }
      }
      ks[i] = 0;
      blocks[i] = null;
      size--;
    }

    int size() {
      return size;
    }
  }
}
