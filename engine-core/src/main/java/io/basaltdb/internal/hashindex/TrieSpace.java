package io.basaltdb.internal.hashindex;

import io.basaltdb.MemoryLimitException;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.MemoryQuota;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The lazy-trie's logical space (seed 004 section 3.1): one contiguous off-heap block in which
 * every node and list lives at a logical offset. The trie's pointers are offsets, so its bytes can
 * be written to a file page by page ({@link #PAGE} bytes each) and read back at any address; the
 * space remembers which pages were written since the last checkpoint ({@link #dirtyPages}).
 *
 * <p>Allocation: a request is rounded up to a size class (every multiple of 8 bytes up to 1 KiB,
 * then eight classes per doubling); a freed block goes to its class's free stack (on the heap, so
 * freeing writes nothing to the space) and is reused for that class; otherwise the space bumps its
 * top. Slack past a request is zeroed, so every byte below the top that a live block holds is
 * deterministic. When the top passes the capacity, the block is replaced by one twice as large: the
 * bytes are copied, the new base published (volatile), and the old block handed to {@code onGrow},
 * which frees it once no reader can still use it.
 *
 * <p>Accounting: the quota is charged for the bytes below the top, in steps of {@link
 * #CHARGE_STEP}; capacity past the top is address space the writer has not touched (malloc maps
 * such blocks lazily). An old block waiting for its readers is not charged again.
 *
 * <p>Thread-safety: one writer allocates, frees and marks pages; readers only call {@link #base}.
 */
public final class TrieSpace implements AutoCloseable {
  /**
   * Bytes of the space per checkpoint page (a file page is 4 KiB: these plus a 16-byte trailer).
   */
  public static final int PAGE = 4080;

  /** The first offset handed out: offset 0 means "no block". */
  static final long FIRST = 64;

  static final long CHARGE_STEP = 1 << 20;
  private static final long MIN_CAPACITY = 1 << 20;

  /** The largest space: the walks that check it index its 8-byte granules with an int. */
  public static final long MAX_BYTES = 16L << 30;

  private static final int SMALL = 128; // classes 1..128: 8..1024 bytes
  private static final int CLASSES = SMALL + 8 * 40 + 1;

  private static final AtomicInteger OPEN = new AtomicInteger();

  /** Called with an old block (address, bytes) after a larger one replaced it. */
  @FunctionalInterface
  public interface OnGrow {
    void retired(long address, long bytes);
  }

  private final MemoryQuota quota;
  private final String name;
  private final OnGrow onGrow;

  private volatile long base;
  private long capacity;
  private long top = FIRST;
  private long charged;

  private long[] dirty = new long[0];
  private long dirtyCount;

  private final long[][] free = new long[CLASSES][];
  private final int[] freeCount = new int[CLASSES];
  private long liveBlocks;
  private int growths;
  private boolean closed;

  TrieSpace(MemoryQuota quota, String name, OnGrow onGrow) {
    this.quota = quota;
    this.name = name;
    this.onGrow = onGrow;
    OPEN.incrementAndGet();
  }

  /** Spaces not yet closed (tests check that none leaks). */
  public static int openSpaces() {
    return OPEN.get();
  }

  /** The block's address; readers load it once per operation (offsets stay valid across growth). */
  long base() {
    return base;
  }

  // ---- size classes

  static int classOf(long size) {
    long u = Math.max(1, (size + 7) >>> 3);
    if (u <= SMALL) return (int) u;
    int lg = 63 - Long.numberOfLeadingZeros(u - 1);
    return SMALL + (lg - 7) * 8 + (int) ((u - 1 - (1L << lg)) >>> (lg - 3)) + 1;
  }

  static long sizeOf(int c) {
    if (c <= SMALL) return 8L * c;
    int k = c - SMALL - 1;
    int lg = 7 + k / 8;
    return ((1L << lg) + ((long) (k % 8 + 1) << (lg - 3))) * 8;
  }

  /** The bytes a block of {@code size} takes. */
  static long blockSize(long size) {
    return sizeOf(classOf(size));
  }

  // ---- allocation (the writer)

  /** A block of at least {@code size} bytes, its slack zeroed; its pages are marked dirty. */
  long allocate(long size) {
    int c = classOf(size);
    long bytes = sizeOf(c);
    long off;
    if (freeCount[c] > 0) {
      off = free[c][--freeCount[c]];
    } else {
      ensure(top + bytes);
      off = top;
      top += bytes;
      charge();
    }
    if (bytes > size) Mem.fill(base + off + size, bytes - size, (byte) 0);
    markDirty(off, bytes);
    liveBlocks++;
    return off;
  }

  /** Frees a block of {@link #allocate}({@code size}); the caller knows no reader can reach it. */
  void free(long off, long size) {
    int c = classOf(size);
    long bytes = sizeOf(c);
    if (Mem.DEBUG) Mem.fill(base + off, bytes, (byte) 0xDB); // poison: a late reader sees garbage
    pushFree(c, off);
    liveBlocks--;
  }

  private void pushFree(int c, long off) {
    long[] s = free[c];
    if (s == null) s = free[c] = new long[16];
    else if (freeCount[c] == s.length) s = free[c] = Arrays.copyOf(s, 2 * s.length);
    s[freeCount[c]++] = off;
  }

  private void ensure(long need) {
    if (need <= capacity) return;
    if (need >= MAX_BYTES) {
      throw new MemoryLimitException(
          "lazy-trie " + name + " would pass " + MAX_BYTES + " bytes: use more keyspaces");
    }
    long cap = Math.max(MIN_CAPACITY, capacity);
    while (cap < need) cap *= 2;
    long fresh = Mem.allocateUnpooled(cap, this);
    long old = base, oldCap = capacity;
    if (old != 0) Mem.copyMemory(old, fresh, top);
    base = fresh; // volatile: a reader that loads the new base sees the copied bytes
    capacity = cap;
    if (old != 0) growths++;
    if (old != 0) onGrow.retired(old, oldCap);
  }

  private void charge() {
    long want = (top + CHARGE_STEP - 1) / CHARGE_STEP * CHARGE_STEP;
    if (want > charged) {
      quota.reserve(want - charged, name);
      charged = want;
    }
  }

  /** Frees an old block {@link OnGrow} was given, once no reader can use it. */
  void freeOld(long address, long bytes) {
    Mem.freeUnpooled(address, bytes, this);
  }

  // ---- dirty pages

  void markDirty(long off, long len) {
    long first = off / PAGE, last = (off + len - 1) / PAGE;
    if ((last >>> 6) >= dirty.length) dirty = Arrays.copyOf(dirty, (int) (last >>> 6) * 2 + 2);
    for (long p = first; p <= last; p++) {
      long bit = 1L << p, word = dirty[(int) (p >>> 6)];
      if ((word & bit) == 0) {
        dirty[(int) (p >>> 6)] = word | bit;
        dirtyCount++;
      }
    }
  }

  /** Pages written since {@link #clearDirty}, ascending. */
  public long[] dirtyPages() {
    long[] out = new long[(int) dirtyCount];
    int n = 0;
    for (int w = 0; w < dirty.length; w++) {
      for (long word = dirty[w]; word != 0; word &= word - 1) {
        out[n++] = ((long) w << 6) + Long.numberOfTrailingZeros(word);
      }
    }
    return out;
  }

  public long dirtyCount() {
    return dirtyCount;
  }

  public void clearDirty() {
    Arrays.fill(dirty, 0);
    dirtyCount = 0;
  }

  /** Pages below the top. */
  public long pages() {
    return (top + PAGE - 1) / PAGE;
  }

  public long top() {
    return top;
  }

  /**
   * Copies page {@code p} into {@code dst} at {@code at} ({@link #PAGE} bytes; those past the top
   * are zeros).
   */
  public void copyPage(long p, byte[] dst, int at) {
    long from = p * PAGE;
    int n = (int) Math.max(0, Math.min(PAGE, top - from));
    Mem.copyToArray(base + from, dst, at, n);
    Arrays.fill(dst, at + n, at + PAGE, (byte) 0);
  }

  // ---- loading a checkpoint (before any reader)

  /** Makes the space {@code top} bytes long, for {@link #loadPage} to fill; nothing is free yet. */
  void resetForLoad(long top) {
    if (top < FIRST || top >= MAX_BYTES || (top & 7) != 0) {
      throw new IllegalArgumentException("space top " + top);
    }
    ensure(top);
    this.top = top;
    charge();
  }

  /** Copies {@code len} bytes of page {@code p} from {@code src}. */
  public void loadPage(long p, byte[] src, int at) {
    long from = p * PAGE;
    int n = (int) Math.max(0, Math.min(PAGE, top - from));
    Mem.copyFromArray(src, at, base + from, n);
  }

  /**
   * After a load: the blocks a walk found live, as a bitmap of 8-byte granules from offset 0; the
   * gaps between them become free blocks, carved greedily into the largest classes that fit.
   */
  void rebuildFree(java.util.BitSet used, long blocks) {
    Arrays.fill(freeCount, 0);
    liveBlocks = blocks;
    int end = (int) (top >>> 3);
    int g = used.nextClearBit((int) (FIRST >>> 3));
    while (g < end) {
      int next = used.nextSetBit(g);
      if (next < 0 || next > end) next = end;
      long off = (long) g << 3, gap = (long) (next - g) << 3;
      while (gap > 0) {
        int c = classOf(gap);
        if (sizeOf(c) > gap) c--;
        long bytes = sizeOf(c);
        pushFree(c, off);
        off += bytes;
        gap -= bytes;
      }
      if (next >= end) break;
      g = used.nextClearBit(next);
    }
  }

  /** Calls {@code visitor} with each free block (offset, bytes). */
  void forEachFree(java.util.function.BiConsumer<Long, Long> visitor) {
    for (int c = 1; c < CLASSES; c++) {
      for (int i = 0; i < freeCount[c]; i++) visitor.accept(free[c][i], sizeOf(c));
    }
  }

  // ---- introspection

  /** Times the space moved to a larger block (tests check readers across a move). */
  int growths() {
    return growths;
  }

  /** Blocks handed out and not freed. */
  long liveBlocks() {
    return liveBlocks;
  }

  /** Bytes charged to the quota. */
  public long chargedBytes() {
    return charged;
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    if (base != 0) Mem.freeUnpooled(base, capacity, this);
    base = 0;
    quota.release(charged);
    charged = 0;
    OPEN.decrementAndGet();
  }
}
