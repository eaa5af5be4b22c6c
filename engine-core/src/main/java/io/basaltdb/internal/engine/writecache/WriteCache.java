package io.basaltdb.internal.engine.writecache;

import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.memory.SlabAllocator;
import io.basaltdb.internal.skiplist.SkipList;
import io.basaltdb.internal.skiplist.SkipListConfig;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One generation of the write cache (Magma section 3.1): a Nitro skiplist holding every keyspace's
 * recent writes. A store key is the keyspace id in an order-preserving form of 1 byte (ids below
 * {@link #LONG_KEYSPACE}) or 5 (that byte and the id as 4 bytes, big-endian), so keyspaces sort
 * apart, followed by the user key. One byte leaves seven of the eight bytes a skiplist node keeps
 * for comparisons without reading the key to the user key, where keys differ. A stored value is
 * {@code [u64 seqno][u8 flags][below][value]} (docs/format.md, "Write cache entry"), flags bit 0
 * marking a tombstone, which shadows older versions in the key index; with exact item counts, bits
 * 1 to 3 say what the key's newest version below this write cache was when it was written (nothing,
 * a tombstone or a version of the key index: then {@code below} holds its seqno and document size),
 * so the flush reports that version to the delete list without a lookup of its own ({@link Below});
 * bit 4 marks a value that expires, its expiry (u64, ms since the epoch) after {@code below}.
 *
 * <p>Memory: each write cache has its own allocator over the engine's write-cache {@link
 * MemoryQuota}, so when it is freed every chunk goes back to the quota, whatever size classes its
 * nodes had (a store whose value sizes change would otherwise strand the quota in free blocks of
 * classes nobody asks for).
 *
 * <p>Thread-safety: writes come only from the commit leader (one at a time); reads from any thread.
 * The skiplist and its allocator are freed when the last {@link
 * io.basaltdb.internal.engine.version.Version} holding it lets go ({@link #release()}).
 */
public final class WriteCache {
  public static final int VALUE_HEADER = 9;
  public static final byte TOMBSTONE = 1;

  /**
   * Flags: the version below is known; it is a tombstone; it is a key index version (with {@link
   * #BELOW_BYTES}).
   */
  static final byte BELOW_KNOWN = 2;

  static final byte BELOW_TOMBSTONE = 4;
  static final byte BELOW_RECORD = 8;

  /**
   * The below version's seqno (u64) and document size (u32), after the flags, with {@link
   * #BELOW_RECORD}.
   */
  static final int BELOW_BYTES = 12;

  /** Flag: the value expires; a u64 expiry (ms since the epoch) follows the below bytes. */
  static final byte EXPIRES = 16;

  static final int EXPIRY_BYTES = 8;

  /**
   * What a key's newest version below the write cache holding a write was, when it was written
   * (exact item counts, {@link io.basaltdb.internal.engine.version.ItemCounter}): unknown, nothing
   * (an insert), or a key index record ({@code tombstone}, {@code seqno}, {@code size} its document
   * size). A write of a key this cache already holds inherits the earlier write's: the version
   * below the cache is the same.
   */
  public record Below(boolean known, boolean tombstone, long seqno, int size, boolean record) {
    public static final Below UNKNOWN = new Below(false, false, -1, 0, false);
    public static final Below NONE = new Below(true, false, -1, 0, false);

    public static Below of(boolean tombstone, long seqno, int size) {
      return new Below(true, tombstone, seqno, size, true);
    }
  }

  final long id;
  public final SkipList list;

  /** This write cache's own allocator; closed after the skiplist. */
  private final SlabAllocator allocator;

  /**
   * Approximate bytes held: keys, values and per-entry overhead. Written by the leader, read
   * racily.
   */
  private final AtomicLong bytes = new AtomicLong();

  /**
   * Highest seqno applied; written by the leader (or recovery), read after the write cache is
   * frozen.
   */
  volatile long maxSeqno;

  /**
   * Last seqno assigned when this cache turned immutable; written under applyLock at the switch.
   */
  private volatile long switchSeqno;

  /** The WAL file started at the switch: the first one a flush of this cache does not cover. */
  private volatile long walAfter;

  /**
   * With exact item counts, each keyspace's live keys at {@link #switchSeqno} (absent: 0), which
   * the flush of this cache commits; null otherwise. Written under applyLock at the switch.
   */
  private volatile java.util.Map<Integer, Long> itemsAtSwitch;

  /**
   * Records the switch that makes this cache immutable: the last seqno it holds, the WAL file
   * started then, and (with exact item counts) the live keys at that seqno. Called once, under
   * applyLock.
   */
  public void switched(long lastSeqno, long walAfter, java.util.Map<Integer, Long> itemsAtSwitch) {
    this.switchSeqno = lastSeqno;
    this.walAfter = walAfter;
    this.itemsAtSwitch = itemsAtSwitch;
  }

  /** The last seqno this cache holds, once it switched (its flush's flushed seqno). */
  public long switchSeqno() {
    return switchSeqno;
  }

  /** The WAL file started at the switch: the first one a flush of this cache does not cover. */
  public long walAfter() {
    return walAfter;
  }

  /** The live keys per keyspace at the switch, with exact item counts; null otherwise. */
  public java.util.Map<Integer, Long> itemsAtSwitch() {
    return itemsAtSwitch;
  }

  /** Called once when the skiplist is freed. */
  private final Runnable onFree;

  /** References: one per Version holding it. */
  private final AtomicInteger refs = new AtomicInteger(1);

  /**
   * @throws io.basaltdb.MemoryLimitException if the quota has no chunk left for the skiplist's
   *     head; nothing is allocated then
   */
  public WriteCache(
      long id,
      String name,
      MemoryQuota quota,
      long chunkSize,
      int maxValueSize,
      boolean layered,
      Runnable onFree) {
    this.id = id;
    this.layered = layered;
    this.onFree = onFree;
    this.allocator = new SlabAllocator(name + "-" + id, quota, chunkSize);
    try {
      this.list =
          new SkipList(
              SkipListConfig.defaults()
                  .withAllocator(allocator)
                  .withMaxValueSize(maxValueSize + VALUE_HEADER + BELOW_BYTES + EXPIRY_BYTES));
    } catch (RuntimeException e) {
      allocator.close();
      throw e;
    }
  }

  /** Keyspace ids below this take one byte of a store key; the rest this byte and four more. */
  static final int LONG_KEYSPACE = 0xF0;

  public static byte[] storeKey(int keyspace, byte[] key) {
    if (keyspace < 0) throw new IllegalArgumentException("keyspace id " + keyspace);
    byte[] k = new byte[prefixLength(keyspace) + key.length];
    storeKeyInto(k, keyspace, key, 0, key.length);
    return k;
  }

  /**
   * The least byte string after every store key of {@code keyspace}: its prefix with the last byte
   * that is not 0xFF incremented and the rest cut (the prefix of a keyspace id, never negative, is
   * never all 0xFF). The exclusive upper bound of a reverse scan over the whole keyspace.
   */
  public static byte[] storeKeyEnd(int keyspace) {
    byte[] p = storeKey(keyspace, new byte[0]);
    int i = p.length - 1;
    while (p[i] == (byte) 0xFF) i--;
    byte[] end = java.util.Arrays.copyOf(p, i + 1);
    end[i]++;
    return end;
  }

  /**
   * Bytes of a store key before the user key: the keyspace id in one byte, or a marker and four.
   */
  public static int prefixLength(int keyspace) {
    return keyspace < LONG_KEYSPACE ? 1 : 5;
  }

  /**
   * Writes the store key of {@code key[off, off + len)} in {@code keyspace} at the start of {@code
   * dst}.
   */
  static void storeKeyInto(byte[] dst, int keyspace, byte[] key, int off, int len) {
    int prefix = prefixLength(keyspace);
    dst[0] = (byte) (prefix == 1 ? keyspace : LONG_KEYSPACE);
    if (prefix == 5) {
      dst[1] = (byte) (keyspace >>> 24);
      dst[2] = (byte) (keyspace >>> 16);
      dst[3] = (byte) (keyspace >>> 8);
      dst[4] = (byte) keyspace;
    }
    System.arraycopy(key, off, dst, prefix, len);
  }

  public static int keyspaceOf(byte[] storeKey) {
    return keyspaceOf(storeKey, 0, storeKey.length);
  }

  /**
   * The keyspace of the store key at {@code buf[off, off + len)}; -1 if it is too short to hold
   * one.
   */
  public static int keyspaceOf(byte[] buf, int off, int len) {
    int b = buf[off] & 0xFF;
    if (b < LONG_KEYSPACE) return b;
    if (len < 5) return -1;
    return (buf[off + 1] & 0xFF) << 24
        | (buf[off + 2] & 0xFF) << 16
        | (buf[off + 3] & 0xFF) << 8
        | (buf[off + 4] & 0xFF);
  }

  /**
   * The keyspace of the store key of {@code len} bytes off the heap at {@code addr} (a skiplist
   * node's).
   */
  public static int keyspaceAt(long addr, int len) {
    if (len < 1) return -1;
    int b = io.basaltdb.internal.memory.Mem.lpUnsignedByte(null, addr);
    if (b < LONG_KEYSPACE) return b;
    if (len < 5) return -1;
    int id = 0;
    for (int i = 1; i < 5; i++)
      id = id << 8 | io.basaltdb.internal.memory.Mem.lpUnsignedByte(null, addr + i);
    return id;
  }

  public static byte[] userKey(byte[] storeKey) {
    return java.util.Arrays.copyOfRange(
        storeKey, (storeKey[0] & 0xFF) < LONG_KEYSPACE ? 1 : 5, storeKey.length);
  }

  /**
   * An entry (seqno, flags, what is below, the expiry: 0 for never) with the value {@code data[off,
   * off + len)} (len -1: a tombstone, no value).
   */
  public static byte[] entry(long seqno, byte[] data, int off, int len, Below below, long expiry) {
    int vlen = Math.max(len, 0);
    byte[] e = new byte[headerSize(below, expiry) + vlen];
    int at = writeHeader(e, seqno, len < 0, below, expiry);
    System.arraycopy(data, off, e, at, vlen);
    return e;
  }

  /** Bytes of an entry before its value. */
  static int headerSize(Below below, long expiry) {
    return VALUE_HEADER + (below.record() ? BELOW_BYTES : 0) + (expiry != 0 ? EXPIRY_BYTES : 0);
  }

  /**
   * Writes an entry's header into {@code e} and returns where its value starts ({@link
   * #headerSize}).
   */
  private static int writeHeader(
      byte[] e, long seqno, boolean tombstone, Below below, long expiry) {
    int expiryAt = VALUE_HEADER + (below.record() ? BELOW_BYTES : 0);
    for (int i = 0; i < 8; i++) e[i] = (byte) (seqno >>> (56 - 8 * i));
    int flags = tombstone ? TOMBSTONE : 0;
    if (below.known()) {
      flags |= BELOW_KNOWN;
      if (below.record()) {
        flags |= BELOW_RECORD | (below.tombstone() ? BELOW_TOMBSTONE : 0);
        for (int i = 0; i < 8; i++) e[VALUE_HEADER + i] = (byte) (below.seqno() >>> (56 - 8 * i));
        for (int i = 0; i < 4; i++)
          e[VALUE_HEADER + 8 + i] = (byte) (below.size() >>> (24 - 8 * i));
      }
    }
    if (expiry != 0) {
      flags |= EXPIRES;
      for (int i = 0; i < 8; i++) e[expiryAt + i] = (byte) (expiry >>> (56 - 8 * i));
    }
    e[8] = (byte) flags;
    return expiryAt + (expiry != 0 ? EXPIRY_BYTES : 0);
  }

  /** When the entry's value expires (ms since the epoch), 0 for never. */
  public static long expiryOf(byte[] entry) {
    if ((entry[8] & EXPIRES) == 0) return 0;
    int at = VALUE_HEADER + ((entry[8] & BELOW_RECORD) != 0 ? BELOW_BYTES : 0);
    long s = 0;
    for (int i = 0; i < 8; i++) s = s << 8 | (entry[at + i] & 0xFF);
    return s;
  }

  /**
   * Whether the entry reads as absent at {@code now}: a tombstone, or a value expired at or before
   * it.
   */
  public static boolean isDeleted(byte[] entry, long now) {
    if ((entry[8] & TOMBSTONE) != 0) return true;
    return (entry[8] & EXPIRES) != 0 && expiryOf(entry) <= now;
  }

  /** Whether the entry's value expires (at any time). */
  public static boolean expires(byte[] entry) {
    return (entry[8] & EXPIRES) != 0;
  }

  /** What the entry says of the version below its write cache. */
  public static Below belowOf(byte[] entry) {
    int flags = entry[8];
    if ((flags & BELOW_KNOWN) == 0) return Below.UNKNOWN;
    if ((flags & BELOW_RECORD) == 0) return Below.NONE;
    long s = 0;
    for (int i = 0; i < 8; i++) s = s << 8 | (entry[VALUE_HEADER + i] & 0xFF);
    int size = 0;
    for (int i = 0; i < 4; i++) size = size << 8 | (entry[VALUE_HEADER + 8 + i] & 0xFF);
    return Below.of((flags & BELOW_TOMBSTONE) != 0, s, size);
  }

  /** Where the entry's value starts: it runs from there to the entry's end. */
  public static int valueOffset(byte[] entry) {
    return VALUE_HEADER
        + ((entry[8] & BELOW_RECORD) != 0 ? BELOW_BYTES : 0)
        + ((entry[8] & EXPIRES) != 0 ? EXPIRY_BYTES : 0);
  }

  public static long seqnoOf(byte[] entry) {
    long s = 0;
    for (int i = 0; i < 8; i++) s = s << 8 | (entry[i] & 0xFF);
    return s;
  }

  public static boolean isTombstone(byte[] entry) {
    return (entry[8] & TOMBSTONE) != 0;
  }

  public static byte[] valueOf(byte[] entry) {
    return java.util.Arrays.copyOfRange(entry, valueOffset(entry), entry.length);
  }

  /**
   * Takes the memory for one operation without applying it (leader or recovery only): the commit
   * leader prepares a whole group before its WAL write, so running out of memory leaves nothing
   * written. Pass the result to {@link #applyPrepared} or {@link #discardPrepared}. The key and
   * value are the ones a batch holds at {@code data[keyOffset, keyOffset + keyLength)} and the
   * {@code valueLength} bytes after it (-1: a tombstone); {@code below}: what is below the cache;
   * {@code expiry}: when the value expires (0: never). The store key and entry are built in this
   * thread's scratch: nothing is allocated on the heap once it has grown.
   *
   * @throws io.basaltdb.MemoryLimitException if the write cache's quota cannot serve it; nothing is
   *     taken
   */
  public long prepare(
      int keyspace,
      byte[] data,
      int keyOffset,
      int keyLength,
      int valueLength,
      long seqno,
      Below below,
      long expiry) {
    Scratch sc = SCRATCH.get();
    int prefix = prefixLength(keyspace);
    byte[] sk = sc.key(prefix + keyLength);
    storeKeyInto(sk, keyspace, data, keyOffset, keyLength);
    int vlen = Math.max(valueLength, 0);
    int header = headerSize(below, expiry);
    if (header + vlen > Scratch.MAX_ENTRY) { // not kept per thread: an entry of its own
      byte[] e = new byte[header + vlen];
      writeHeader(e, seqno, valueLength < 0, below, expiry);
      System.arraycopy(data, keyOffset + keyLength, e, header, vlen);
      return list.prepare(sk, 0, prefix + keyLength, e, 0, e.length);
    }
    byte[] e = sc.entry(header + vlen);
    writeHeader(e, seqno, valueLength < 0, below, expiry);
    System.arraycopy(data, keyOffset + keyLength, e, header, vlen);
    return list.prepare(sk, 0, prefix + keyLength, e, 0, header + vlen);
  }

  /**
   * A thread's arrays for building a store key and an entry ({@link #prepare(int, byte[], int, int,
   * int, long, Below, long)}).
   */
  private static final class Scratch {
    static final int MAX_ENTRY = 64 * 1024;
    private byte[] key = new byte[64];
    private byte[] entry = new byte[256];

    byte[] key(int n) {
      if (key.length < n) key = new byte[Math.max(n, key.length * 2)];
      return key;
    }

    byte[] entry(int n) {
      if (entry.length < n) entry = new byte[Math.max(n, Math.min(entry.length * 2, MAX_ENTRY))];
      return entry;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /**
   * Applies an operation from {@link #prepare} of a key of keyspace {@code keyspace} and value of
   * those lengths (-1: a tombstone), {@code seqno}; allocates nothing. Counts it in {@link
   * #netKeys}. Leader (or recovery) only.
   */
  public void applyPrepared(long node, int keyspace, int keyLength, long seqno, int valueLength) {
    int was = list.putPrepared(node, FLAGS_AT);
    bytes.addAndGet(accounted(keyLength, valueLength));
    if (seqno > maxSeqno) maxSeqno = seqno;
    long delta = weight(valueLength >= 0);
    if (was >= 0) delta -= weight((was & TOMBSTONE) == 0); // the entry it replaced
    if (delta != 0) {
      AtomicLong c = netCounter(keyspace); // one writer at a time: no locked add on the write path
      c.setRelease(c.getPlain() + delta);
    }
  }

  /** What a key's newest entry adds to {@link #netKeys}. */
  private long weight(boolean put) {
    return put ? 1 : layered ? -1 : 0;
  }

  /** Where an entry's flags are ({@link #TOMBSTONE}). */
  private static final int FLAGS_AT = 8;

  /**
   * What this cache adds to keyspace {@code keyspace}'s key count, estimated without a lookup: each
   * key it holds counts +1 if its newest entry is a put; a tombstone -1 if the store has versions
   * below the cache (it presumably deletes one) and 0 in the in-memory store (exact there). So it
   * counts what the flush of the cache will add to the key index's estimate ({@link
   * io.basaltdb.internal.sstable.TableInfo}): a put over a key that exists below is +1 too until a
   * merge meets both versions, as in RocksDB's estimate. Read racily: approximate.
   */
  public long netKeys(int keyspace) {
    AtomicLong c = netKeys.get(keyspace);
    return c == null ? 0 : c.get();
  }

  /** Sets what this cache adds to a keyspace's count: the in-memory store's restore. */
  public void setNetKeys(int keyspace, long n) {
    netCounter(keyspace).setRelease(n);
  }

  private AtomicLong netCounter(int keyspace) {
    if (keyspace == lastKeyspace && lastCounter != null) return lastCounter;
    AtomicLong c = netKeys.computeIfAbsent(keyspace, k -> new AtomicLong());
    lastKeyspace = keyspace;
    lastCounter = c;
    return c;
  }

  /**
   * {@link #netKeys} by keyspace; the counters are added by the leader (one at a time, so a plain
   * read and a release store), read by anyone. Its last keyspace and counter are cached for the
   * leader: a batch mostly writes one keyspace.
   */
  private final ConcurrentHashMap<Integer, AtomicLong> netKeys = new ConcurrentHashMap<>();

  private int lastKeyspace = -1;
  private AtomicLong lastCounter;

  /** Whether the store keeps versions below this cache (the disk store), which tombstones hide. */
  private final boolean layered;

  /**
   * What {@link #bytes()} counts for an entry of a user key and value of these lengths (-1: a
   * tombstone): the two, the entry header, and a per-entry overhead.
   */
  public static long accounted(int keyLength, int valueLength) {
    return keyLength + Math.max(valueLength, 0) + VALUE_HEADER + 4 + 64;
  }

  /**
   * Accounts for what a restore loaded into the skiplist directly: {@code bytes} as {@link
   * #accounted} counts them.
   */
  public void loaded(long bytes, long seqno) {
    this.bytes.addAndGet(bytes);
    if (seqno > maxSeqno) maxSeqno = seqno;
  }

  /** Returns the memory of an operation from {@link #prepare} that will not be applied. */
  public void discardPrepared(long node) {
    list.discardPrepared(node);
  }

  /**
   * Removes a key whose current entry is the tombstone written at {@code seqno} (the in-memory
   * engine, which has no older versions to shadow); a later write of the same key stays. Leader
   * only.
   */
  public void removeTombstone(int keyspace, byte[] key, long seqno) {
    removeTombstone(storeKey(keyspace, key), seqno);
  }

  /**
   * As {@link #removeTombstone(int, byte[], long)} by store key; true if it removed one. Under the
   * apply lock (the in-memory store's purge of old deletions runs beside the leader).
   */
  public boolean removeTombstone(byte[] storeKey, long seqno) {
    byte[] e = list.get(storeKey);
    return e != null && isTombstone(e) && seqnoOf(e) == seqno && list.delete(storeKey);
  }

  /**
   * Takes the memory for a stored entry, {@code entry} under {@code storeKey}, as {@link #prepare}
   * does for a write: the in-memory store's rollback puts an older entry back with this and {@link
   * #applyPrepared}.
   */
  public long prepareEntry(byte[] storeKey, byte[] entry) {
    return list.prepare(storeKey, 0, storeKey.length, entry, 0, entry.length);
  }

  /**
   * Odd while a rewrite of the skiplist (the in-memory store's rollback) is under way: a get that
   * sees it odd, or sees it change across its read, waits for the rewrite and reads again, so gets
   * see the whole rewrite or none of it (a seqlock). Written under the apply lock.
   */
  private volatile long rewrites;

  /**
   * Starts a rewrite that gets must see whole ({@link #rewrites}); the caller holds the apply lock
   * and ends it with {@link #endRewrite} in a finally block.
   */
  public void beginRewrite() {
    rewrites = rewrites + 1;
    java.lang.invoke.VarHandle.fullFence(); // the odd count before any change of the list
  }

  public void endRewrite() {
    java.lang.invoke.VarHandle.fullFence();
    rewrites = rewrites + 1;
  }

  /** The rewrite count before a read; waits while a rewrite is under way. */
  private long beforeRead() {
    long r = rewrites;
    for (int spins = 0; (r & 1) != 0; spins++) {
      if (spins < 100) Thread.onSpinWait();
      else java.util.concurrent.locks.LockSupport.parkNanos(50_000);
      r = rewrites;
    }
    return r;
  }

  /** Whether a read that began at rewrite count {@code r} saw no rewrite. */
  private boolean readWhole(long r) {
    java.lang.invoke.VarHandle.loadLoadFence(); // the read's loads before the count's
    return rewrites == r;
  }

  /** The stored entry of a key, or null. */
  public byte[] get(int keyspace, byte[] key) {
    byte[] sk = storeKey(keyspace, key);
    while (true) {
      long r = beforeRead();
      byte[] e = list.get(sk);
      if (readWhole(r)) return e;
    }
  }

  /**
   * The stored entry of a key into {@code l.entry} (its first {@code l.entryLength} bytes: the
   * thread's scratch, or a larger array): true if found. Allocates nothing for an entry of up to
   * {@link Lookup#MAX_SCRATCH_ENTRY} bytes once the scratch has grown to it; a larger entry is
   * copied into a new array.
   */
  public boolean get(int keyspace, byte[] key, Lookup l) {
    int n = prefixLength(keyspace) + key.length;
    byte[] sk = l.storeKey(n);
    storeKeyInto(sk, keyspace, key, 0, key.length);
    while (true) {
      long r = beforeRead();
      int len = list.get(sk, n, l.scratch);
      if (!readWhole(r)) continue;
      if (len < 0) return false;
      if (len <= l.scratch.length) {
        l.entry = l.scratch;
        l.entryLength = len;
        return true;
      }
      if (len > Lookup.MAX_SCRATCH_ENTRY) { // too large to keep per thread: a copy of its own
        byte[] e = list.get(java.util.Arrays.copyOf(sk, n));
        if (!readWhole(r)) continue;
        if (e == null) return false;
        l.entry = e;
        l.entryLength = e.length;
        return true;
      }
      l.scratch = new byte[Math.max(len, Math.min(l.scratch.length * 2, Lookup.MAX_SCRATCH_ENTRY))];
    }
  }

  public long bytes() {
    return bytes.get();
  }

  public boolean isEmpty() {
    return bytes.get() == 0;
  }

  public void retain() {
    int r;
    do {
      r = refs.get();
      if (r <= 0) throw new IllegalStateException("write cache " + id + " already released");
    } while (!refs.compareAndSet(r, r + 1));
  }

  public void release() {
    if (refs.decrementAndGet() == 0) {
      try {
        free(); // a leak check failure still forgets the cache
      } finally {
        onFree.run();
      }
    }
  }

  /**
   * Frees the skiplist and returns its allocator's chunks to the quota; release() or engine close
   * only.
   */
  public void free() {
    list.close();
    allocator.close(); // throws MemoryLeakException if a node was not freed
  }

  /** Removes every key of a keyspace (the in-memory engine's drop). */
  public void removeKeyspace(int keyspace) {
    netKeys.remove(keyspace);
    lastCounter = null;
    byte[] from = storeKey(keyspace, new byte[0]);
    try (io.basaltdb.internal.skiplist.Snapshot s = list.snapshot();
        io.basaltdb.internal.skiplist.SnapshotIterator it = s.iterator()) {
      for (it.seek(from); it.valid(); it.next()) {
        byte[] k = it.key();
        if (keyspaceOf(k) != keyspace) break;
        list.delete(k);
      }
    }
  }

  /**
   * The indexes of {@code seqnos} (distinct) in seqno order. A write cache's seqnos span less than
   * 2^31, so each is packed with its index into one long (offset from the smallest above, index
   * below) and the longs are sorted as primitives: no boxing, no comparator (a boxed sort took a
   * fifth of the flusher's time). A wider span falls back to a boxed sort.
   */
  public static int[] seqnoOrder(long[] seqnos) {
    int n = seqnos.length;
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (long q : seqnos) {
      min = Math.min(min, q);
      max = Math.max(max, q);
    }
    int[] order = new int[n];
    if (n > 0 && max - min >= (1L << 31)) {
      Integer[] boxed = new Integer[n];
      for (int i = 0; i < n; i++) boxed[i] = i;
      Arrays.sort(boxed, (a, b) -> Long.compare(seqnos[a], seqnos[b]));
      for (int i = 0; i < n; i++) order[i] = boxed[i];
      return order;
    }
    long[] packed = new long[n];
    for (int i = 0; i < n; i++) packed[i] = (seqnos[i] - min) << 32 | i;
    Arrays.sort(packed);
    for (int i = 0; i < n; i++) order[i] = (int) packed[i];
    return order;
  }
}
