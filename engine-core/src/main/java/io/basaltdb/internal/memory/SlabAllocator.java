package io.basaltdb.internal.memory;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.MemoryLimitException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Arena/slab allocator for off-heap blocks, with every byte accounted against a quota.
 *
 * <p>Design: memory comes from the JVM-wide {@link Region} in big chunks (default 4 MiB; 2
 * MiB-aligned when the chunk size is a multiple of 2 MiB, so transparent huge pages back them and a
 * structure spread over gigabytes does not miss the TLB on every node). Every block therefore has a
 * 32-bit {@link Region#ref reference}. A block request is rounded up to a size class ({@link
 * SizeClasses}); a thread serves it from its own cache of freed blocks of that class, else from the
 * class's global free stack (a batch at a time), else by bumping a pointer through the thread's
 * current chunk. A freed block goes to the freeing thread's cache; when a cache fills, half of it
 * moves to the global stack. Requests above {@link SizeClasses#MAX_SMALL} get their own span of the
 * region, rounded up to 4 KiB pages. Threads bump through 128 KiB regions carved from the current
 * chunk, so a thread costs at most one region of unused space; when the thread dies, {@link
 * #trimDeadThreads} hands the rest of its region to the next thread that needs one, so
 * thread-per-task callers do not leak the quota a region at a time. The tail of a region too small
 * for a request is left unused and counted as waste.
 *
 * <p>Accounting: {@code reserved} is what was taken from the region (chunks and large blocks) and
 * is what the quota bounds: a request that needs a new chunk past the quota throws {@link
 * MemoryLimitException} and nothing is allocated. Several allocators may share one {@link
 * MemoryQuota}; each still accounts its own bytes, and gives all of them back to the quota on
 * close. Freed blocks are reused only for their own size class, so an owner whose request sizes
 * change over time (the write cache) should use an allocator per generation and close it, not keep
 * one forever. {@code used} is the sum of the class sizes of the blocks handed out and not yet
 * freed. At any quiescent moment, reserved = used + cached free blocks + unbumped chunk space +
 * waste; {@link #stats()} reports each part.
 *
 * <p>Concurrency: allocate and free may be called from any thread. Thread caches are owned by their
 * thread (plain access); global free stacks are guarded by their own monitors; counters are
 * LongAdders or atomics, and each thread cache keeps its used-byte changes until they pass {@link
 * #FLUSH_BYTES} (read with the caches' own by {@link #usedBytes} and the quota's). Blocks stuck in
 * the cache of a thread that died are reclaimed by {@link #trimDeadThreads}. {@link #close()} must
 * not race with allocate or free: the owner stops all users first.
 *
 * <p>Invariants:
 *
 * <ol>
 *   <li>A block is in at most one place: handed out, in one thread cache, or in one global stack.
 *   <li>reserved never exceeds the quota.
 *   <li>Every chunk and large block is returned to the operating system by close().
 * </ol>
 */
public final class SlabAllocator implements AutoCloseable {
  public static final long DEFAULT_CHUNK_SIZE = 4L << 20;

  /**
   * Bytes a thread bumps through at a time, carved from the current chunk; fits the largest class.
   */
  static final long REGION = SizeClasses.MAX_SMALL;

  private static final int CACHE_CAPACITY = 64;

  /**
   * Bytes of one size class a thread cache holds at most (at least two blocks): freed blocks past
   * it go to the global stack, where every thread can reuse them. A count alone would let a thread
   * strand 64 blocks of 128 KiB (8 MiB of the quota) that no other thread can reach.
   */
  private static final long MAX_CACHED_BYTES = 256 << 10;

  /** Blocks of class c a thread cache holds at most: 64, fewer for big blocks. */
  private static final int[] CACHE_LIMIT = new int[SizeClasses.COUNT];

  static {
    for (int c = 0; c < SizeClasses.COUNT; c++) {
      CACHE_LIMIT[c] =
          (int) Math.max(2, Math.min(CACHE_CAPACITY, MAX_CACHED_BYTES / SizeClasses.sizeOf(c)));
    }
  }

  private static final AtomicInteger OPEN = new AtomicInteger();

  /**
   * A thread's unflushed count of used bytes is at most this far from zero (see {@link #count}).
   */
  static final long FLUSH_BYTES = 64 << 10;

  private static final java.lang.invoke.VarHandle UNFLUSHED;

  static {
    try {
      UNFLUSHED =
          java.lang.invoke.MethodHandles.lookup()
              .findVarHandle(ThreadCache.class, "unflushed", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /**
   * Arenas: blocks of different arenas never share a chunk, so a caller can keep a small, hot set
   * of blocks (the skiplist's tall nodes, which every search passes through) packed together, on
   * fewer pages and DRAM rows than if they were scattered among the cold ones. Arena 0 is the
   * default.
   */
  public static final int ARENAS = 2;

  public static final int HOT_ARENA = 1;
  private static final long HUGE_PAGE = 2L << 20;

  /** {@code -Dbasalt.memory.hugePages=false} stops aligning chunks to huge pages; on by default. */
  private static final boolean HUGE_PAGES =
      !"false".equals(System.getProperty("basalt.memory.hugePages"));

  private final String name;

  /** The limit reserved bytes count against; possibly shared with other allocators. */
  private final MemoryQuota quota;

  private final long chunkSize;

  /**
   * Bytes this allocator took from the OS (and from {@link #quota}); grows through {@link
   * #reserve}.
   */
  private final AtomicLong reserved = new AtomicLong();

  /** Bytes of blocks handed out; striped so concurrent allocators do not share a line. */
  private final LongAdder used = new LongAdder();

  /** Chunk tails left unused because a request did not fit. */
  private final LongAdder waste = new LongAdder();

  /**
   * Global free stacks per arena and class ({@code arena * COUNT + class}); each guarded by its own
   * monitor.
   */
  private final GlobalStack[] global = new GlobalStack[ARENAS * SizeClasses.COUNT];

  /** Chunk base addresses; guarded by its own monitor. */
  private final List<Long> chunks = new ArrayList<>();

  /**
   * Per arena, the part of its newest chunk not yet handed to a thread as a region. Guarded by
   * {@code chunks}.
   */
  private final long[] chunkCursor = new long[ARENAS];

  private final long[] chunkEnd = new long[ARENAS];

  /**
   * Per arena, unbumped rests of the regions of threads that died, as {@code [start, end]} pairs,
   * taken before new chunk space. Guarded by {@code chunks}.
   */
  private final long[][] spareRegions = {new long[16], new long[16]};

  private final int[] spareCount = new int[ARENAS];

  /**
   * Whether chunks are 2 MiB-aligned, so transparent huge pages can back them (see {@link Region}).
   */
  private final boolean hugePages;

  /** Large blocks by address -> size. */
  private final Map<Long, Long> large = new ConcurrentHashMap<>();

  /** Every thread cache ever created, so close/stats/trim can see them. */
  private final CopyOnWriteArrayList<ThreadCache> caches = new CopyOnWriteArrayList<>();

  private final ThreadLocal<ThreadCache[]> cache = ThreadLocal.withInitial(this::newCaches);

  /**
   * Set once by close(); read by allocate to refuse use after close (volatile: close publishes it).
   */
  private volatile boolean closed;

  /**
   * @param name shown in messages and leak reports
   * @param quota hard limit on bytes reserved from the OS
   * @param chunkSize bytes per slab chunk; at least {@link SizeClasses#MAX_SMALL}
   */
  public SlabAllocator(String name, long quota, long chunkSize) {
    this(name, new MemoryQuota(quota), chunkSize);
  }

  /** An allocator that reserves its chunks from {@code quota}, which other allocators may share. */
  public SlabAllocator(String name, MemoryQuota quota, long chunkSize) {
    if (quota.limit() <= 0) {
      throw new InvalidArgumentException("memory quota must be positive, was " + quota.limit());
    }
    if (chunkSize < REGION || chunkSize % REGION != 0) {
      throw new InvalidArgumentException(
          "chunk size must be a positive multiple of " + REGION + " bytes, was " + chunkSize);
    }
    this.name = name;
    this.quota = quota;
    this.chunkSize = chunkSize;
    this.hugePages = HUGE_PAGES && chunkSize % HUGE_PAGE == 0;
    for (int c = 0; c < global.length; c++) { // every arena's classes
      global[c] = new GlobalStack();
    }
    quota.members.add(this);
    OPEN.incrementAndGet();
  }

  /** An allocator with a chunk size of about a 16th of the quota, at most the default. */
  public static SlabAllocator withQuota(String name, long quota) {
    long chunk =
        Math.max(
            SizeClasses.MAX_SMALL, Math.min(DEFAULT_CHUNK_SIZE, Long.highestOneBit(quota / 16)));
    return new SlabAllocator(name, quota, chunk);
  }

  /** Allocators created and not yet closed in this JVM; tests check it returns to zero. */
  public static int openAllocators() {
    return OPEN.get();
  }

  /**
   * Allocates a block of at least {@code size} bytes, 8-byte aligned, contents undefined.
   *
   * @throws MemoryLimitException if the quota does not allow it; nothing is allocated
   */
  public long allocate(long size) {
    return allocate(size, 0);
  }

  /**
   * As {@link #allocate(long)}, from {@code arena} (0 or {@link #HOT_ARENA}); large blocks ignore
   * it. Free the block with {@link #free(long, long, int)} and the same arena.
   */
  public long allocate(long size, int arena) {
    if (closed) throw new ClosedException("allocator " + name + " is closed");
    checkArena(arena);
    if (size <= 0)
      throw new InvalidArgumentException("allocation size must be positive, was " + size);
    if (size > SizeClasses.MAX_SMALL) return allocateLarge(size);
    int c = SizeClasses.classOf(size);
    long blockSize = SizeClasses.sizeOf(c);
    ThreadCache tc = cache.get()[arena];
    long a;
    if (tc.counts[c] > 0 || refill(tc, c)) {
      a = tc.stacks[c][--tc.counts[c]];
    } else {
      if (tc.bumpEnd - tc.bumpCursor < blockSize) {
        newRegion(tc, blockSize);
      }
      a = tc.bumpCursor;
      tc.bumpCursor += blockSize;
    }
    count(tc, blockSize);
    if (Mem.DEBUG) MemoryDebug.recordAllocation(a, size, this);
    return a;
  }

  /** Returns a block of arena 0; {@code size} must be the size it was allocated with. */
  public void free(long address, long size) {
    free(address, size, 0);
  }

  /** Returns a block; {@code size} and {@code arena} must be those it was allocated with. */
  public void free(long address, long size, int arena) {
    checkArena(arena);
    if (Mem.DEBUG) {
      MemoryDebug.check(address, size);
      Mem.fill(
          address, size, (byte) 0xDD); // poison: a stale reader sees garbage lengths, not old data
      MemoryDebug.recordFree(address, size, this);
    }
    if (size > SizeClasses.MAX_SMALL) {
      freeLarge(address, size);
      return;
    }
    int c = SizeClasses.classOf(size);
    ThreadCache tc = cache.get()[arena];
    if (tc.counts[c] >= CACHE_LIMIT[c]) {
      spill(tc, c);
    }
    long[] stack = tc.stacks[c];
    if (stack == null) {
      stack = tc.stacks[c] = new long[CACHE_CAPACITY];
    }
    stack[tc.counts[c]++] = address;
    count(tc, -SizeClasses.sizeOf(c));
  }

  /**
   * Adds {@code bytes} to the thread's unflushed count, and moves it to the shared counters once it
   * passes {@link #FLUSH_BYTES} either way. A shared counter's update is a locked instruction,
   * which waits for the stores before it to drain: per block, it cost a restore (a stream of stores
   * to fresh memory) about a quarter of its time.
   */
  private void count(ThreadCache tc, long bytes) {
    long p = tc.unflushed + bytes;
    if (p >= FLUSH_BYTES || p <= -FLUSH_BYTES) {
      used.add(p);
      quota.used.add(p);
      p = 0;
    }
    UNFLUSHED.setOpaque(tc, p);
  }

  /** The bytes a block of {@code size} really occupies (its class size). */
  public static long blockSize(long size) {
    return size > SizeClasses.MAX_SMALL
        ? Region.roundToPage(size)
        : SizeClasses.sizeOf(SizeClasses.classOf(size));
  }

  /**
   * Bytes of blocks handed out: exact when no thread is allocating or freeing (and this thread has
   * seen their last calls); while they run, a racy sum.
   */
  public long usedBytes() {
    return used.sum() + unflushed();
  }

  /** The thread caches' counts not yet added to {@code used} or the quota; racy while they run. */
  long unflushed() {
    long sum = 0;
    for (ThreadCache tc : caches) sum += (long) UNFLUSHED.getOpaque(tc);
    return sum;
  }

  public long reservedBytes() {
    return reserved.get();
  }

  /** The limit of this allocator's quota, which it may share with other allocators. */
  public long quota() {
    return quota.limit();
  }

  /** A consistent-enough breakdown of reserved memory; exact when no thread is allocating. */
  public Stats stats() {
    long cachedFree = 0;
    long bumpFree = 0;
    for (ThreadCache tc : caches) {
      synchronized (tc) {
        for (int c = 0; c < SizeClasses.COUNT; c++) {
          cachedFree += (long) tc.counts[c] * SizeClasses.sizeOf(c);
        }
        bumpFree += tc.bumpEnd - tc.bumpCursor;
      }
    }
    for (int g = 0; g < global.length; g++) {
      synchronized (global[g]) {
        cachedFree += (long) global[g].count * SizeClasses.sizeOf(g % SizeClasses.COUNT);
      }
    }
    synchronized (chunks) {
      for (int arena = 0; arena < ARENAS; arena++) {
        bumpFree += chunkEnd[arena] - chunkCursor[arena];
        for (int i = 0; i < spareCount[arena]; i += 2) {
          bumpFree += spareRegions[arena][i + 1] - spareRegions[arena][i];
        }
      }
    }
    return new Stats(quota.limit(), reserved.get(), usedBytes(), cachedFree, bumpFree, waste.sum());
  }

  /**
   * Reserved memory by part; {@code reserved == used + freeBlocks + unbumped + waste} when
   * quiescent.
   */
  public record Stats(
      long quota, long reserved, long used, long freeBlocks, long unbumped, long waste) {}

  /**
   * Moves the cached blocks of threads that have died to the global stacks, and the unbumped rest
   * of their regions to the spare regions, so other threads reuse both.
   */
  public void trimDeadThreads() {
    for (ThreadCache tc : caches) {
      Thread owner = tc.owner.get();
      if (owner == null || !owner.isAlive()) {
        synchronized (tc) {
          for (int c = 0; c < SizeClasses.COUNT; c++) {
            while (tc.counts[c] > 0) {
              spill(tc, c);
            }
          }
          if (tc.bumpEnd > tc.bumpCursor) {
            addSpare(tc.arena, tc.bumpCursor, tc.bumpEnd);
            tc.bumpCursor = tc.bumpEnd;
          }
          long p = (long) UNFLUSHED.getOpaque(tc); // the owner is dead: its last store is final
          used.add(p);
          quota.used.add(p);
          UNFLUSHED.setOpaque(tc, 0L);
        }
        caches.remove(tc);
      }
    }
  }

  /**
   * Returns every chunk and large block to the operating system.
   *
   * @throws MemoryLeakException if blocks are still allocated (after freeing everything anyway); in
   *     debug mode the message lists them with their allocation stacks
   */
  @Override
  public void close() {
    closeReleasing(0);
  }

  /**
   * Closes the allocator when its owner knows that exactly {@code stillAllocated} bytes (in block
   * sizes, see {@link #blockSize}) are still handed out and are to be released with the chunks,
   * without freeing them one by one. Anything else still allocated is a leak, reported as by {@link
   * #close()}.
   */
  public void closeReleasing(long stillAllocated) {
    if (closed) return;
    closed = true;
    long leaked = usedBytes() - stillAllocated;
    Map<Long, MemoryDebug.Block> leakedBlocks =
        Mem.DEBUG && stillAllocated == 0 ? MemoryDebug.liveBlocksOf(this) : Map.of();
    synchronized (chunks) {
      for (long chunk : chunks) {
        Region.free(chunk, chunkSize);
      }
      chunks.clear();
      java.util.Arrays.fill(spareCount, 0);
    }
    large.forEach(Region::free);
    large.clear();
    if (Mem.DEBUG) MemoryDebug.forgetAllOf(this);
    quota.used.add(-used.sum()); // the quota has seen only the flushed counts
    quota.members.remove(this);
    quota.release(reserved.getAndSet(0));
    OPEN.decrementAndGet();
    if (leaked != 0 || !leakedBlocks.isEmpty()) {
      StringBuilder sb =
          new StringBuilder("allocator ")
              .append(name)
              .append(" closed with ")
              .append(leaked)
              .append(" bytes still allocated");
      Throwable first = null;
      int shown = 0;
      for (Map.Entry<Long, MemoryDebug.Block> e : leakedBlocks.entrySet()) {
        if (shown++ == 10) {
          sb.append("\n  ... and ").append(leakedBlocks.size() - 10).append(" more");
          break;
        }
        sb.append("\n  block 0x")
            .append(Long.toHexString(e.getKey()))
            .append(" size ")
            .append(e.getValue().size());
        if (first == null) first = e.getValue().allocatedAt();
      }
      throw new MemoryLeakException(sb.toString(), first);
    }
  }

  @Override
  public String toString() {
    return "SlabAllocator[" + name + ", " + stats() + "]";
  }

  // ---- internals
  // -------------------------------------------------------------------------------------

  private static void checkArena(int arena) {
    if (arena < 0 || arena >= ARENAS) {
      throw new InvalidArgumentException("arena must be 0 or " + HOT_ARENA + ", was " + arena);
    }
  }

  private ThreadCache[] newCaches() {
    ThreadCache[] tcs = new ThreadCache[ARENAS];
    for (int arena = 0; arena < ARENAS; arena++) {
      tcs[arena] = new ThreadCache(Thread.currentThread(), arena);
      caches.add(tcs[arena]);
    }
    return tcs;
  }

  private boolean refill(ThreadCache tc, int c) {
    GlobalStack g = global[tc.arena * SizeClasses.COUNT + c];
    // lp, racy: an allocator that has freed nothing yet (a load, a restore) takes no lock per
    // block; a
    // stale 0 only bump-allocates a block that a free list could have served
    if (g.count == 0) return false;
    synchronized (g) {
      if (g.count == 0) return false;
      int n = Math.min(CACHE_LIMIT[c] / 2, g.count);
      long[] stack = tc.stacks[c];
      if (stack == null) {
        stack = tc.stacks[c] = new long[CACHE_CAPACITY];
      }
      System.arraycopy(g.blocks, g.count - n, stack, 0, n);
      g.count -= n;
      tc.counts[c] = n;
      return true;
    }
  }

  private void spill(ThreadCache tc, int c) {
    int n = Math.min(CACHE_LIMIT[c] / 2, tc.counts[c]);
    GlobalStack g = global[tc.arena * SizeClasses.COUNT + c];
    synchronized (g) {
      if (g.blocks.length - g.count < n) {
        g.blocks = java.util.Arrays.copyOf(g.blocks, Math.max(g.blocks.length * 2, g.count + n));
      }
      System.arraycopy(tc.stacks[c], tc.counts[c] - n, g.blocks, g.count, n);
      g.count += n;
    }
    tc.counts[c] -= n;
  }

  /**
   * Gives the thread a region to bump through that holds at least {@code blockSize} bytes: a spare
   * region left by a thread that died, else a fresh one carved from the current chunk (a new chunk
   * when it is used up). Threads take regions, not whole chunks, so many threads do not strand the
   * quota.
   */
  private void newRegion(ThreadCache tc, long blockSize) {
    synchronized (chunks) {
      int arena = tc.arena;
      long[] spares = spareRegions[arena];
      for (int i = spareCount[arena] - 2; i >= 0; i -= 2) {
        if (spares[i + 1] - spares[i] >= blockSize) {
          waste.add(tc.bumpEnd - tc.bumpCursor);
          tc.bumpCursor = spares[i];
          tc.bumpEnd = spares[i + 1];
          spareCount[arena] -= 2;
          spares[i] = spares[spareCount[arena]];
          spares[i + 1] = spares[spareCount[arena] + 1];
          return;
        }
      }
      if (chunkEnd[arena] - chunkCursor[arena] < REGION) {
        waste.add(chunkEnd[arena] - chunkCursor[arena]);
        long chunk = newChunk();
        chunkCursor[arena] = chunk;
        chunkEnd[arena] = chunk + chunkSize;
      }
      waste.add(tc.bumpEnd - tc.bumpCursor);
      tc.bumpCursor = chunkCursor[arena];
      tc.bumpEnd = chunkCursor[arena] + REGION;
      chunkCursor[arena] += REGION;
    }
  }

  /**
   * Keeps the unbumped {@code [start, end)} of a dead thread's region for the next thread that
   * needs one.
   */
  private void addSpare(int arena, long start, long end) {
    synchronized (chunks) {
      if (spareCount[arena] == spareRegions[arena].length) {
        spareRegions[arena] = java.util.Arrays.copyOf(spareRegions[arena], spareCount[arena] * 2);
      }
      spareRegions[arena][spareCount[arena]++] = start;
      spareRegions[arena][spareCount[arena]++] = end;
    }
  }

  /** Reserves and maps one chunk; the caller holds the {@code chunks} monitor. */
  private long newChunk() {
    reserve(chunkSize);
    long chunk;
    try {
      chunk = Region.allocate(chunkSize, hugePages ? HUGE_PAGE : Region.PAGE);
    } catch (MemoryLimitException e) {
      reserved.addAndGet(-chunkSize);
      quota.release(chunkSize);
      throw e;
    }
    chunks.add(chunk);
    return chunk;
  }

  private void reserve(long bytes) {
    quota.reserve(bytes, name); // throws, reserving nothing, past the quota
    reserved.addAndGet(bytes);
  }

  private long allocateLarge(long size) {
    long rounded = Region.roundToPage(size);
    reserve(rounded);
    long a;
    try {
      a = Region.allocate(rounded, Region.PAGE);
    } catch (MemoryLimitException e) {
      reserved.addAndGet(-rounded);
      quota.release(rounded);
      throw e;
    }
    large.put(a, rounded);
    used.add(rounded);
    quota.used.add(rounded);
    if (Mem.DEBUG) MemoryDebug.recordAllocation(a, size, this);
    return a;
  }

  private void freeLarge(long address, long size) {
    long rounded = Region.roundToPage(size);
    Long known = large.remove(address);
    if (known == null || known != rounded) {
      throw new IllegalStateException(
          "allocator "
              + name
              + ": free of unknown large block 0x"
              + Long.toHexString(address)
              + " size "
              + size);
    }
    Region.free(address, rounded);
    used.add(-rounded);
    quota.used.add(-rounded);
    reserved.addAndGet(-rounded);
    quota.release(rounded);
  }

  /**
   * Per-thread free-block cache and bump region. Written only by its owning thread, with plain
   * accesses and no lock (the owner never takes the monitor, so the monitor excludes nothing).
   * {@link #stats()} reads it racily: a stale breakdown is fine for stats. {@link #trimDeadThreads}
   * changes it only once its owner has terminated ({@code isAlive()} false: the thread's last
   * action happens-before that detection) or been collected.
   */
  private static final class ThreadCache {
    final java.lang.ref.WeakReference<Thread> owner;
    final int arena;
    final long[][] stacks = new long[SizeClasses.COUNT][];
    final int[] counts = new int[SizeClasses.COUNT];
    long bumpCursor;
    long bumpEnd;

    /**
     * Bytes allocated minus bytes freed through this cache and not yet added to {@code used} and
     * the quota's count; written by the owner only (opaque, so a reader on another thread sees no
     * torn value).
     */
    long unflushed;

    ThreadCache(Thread owner, int arena) {
      this.arena = arena;
      this.owner = new java.lang.ref.WeakReference<>(owner);
    }
  }

  /** A class's global free stack; guarded by its own monitor. */
  private static final class GlobalStack {
    long[] blocks = new long[CACHE_CAPACITY];

    /** Guarded by this stack's monitor; also read racily, outside it, by refill's fast path. */
    int count;
  }
}
