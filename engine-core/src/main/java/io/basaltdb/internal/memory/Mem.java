package io.basaltdb.internal.memory;

import net.openhft.chronicle.core.UnsafeMemory;

/**
 * The single accessor for native memory: every off-heap read, write, CAS, fence, allocation and
 * copy in Basalt goes through here, over Chronicle-Core's {@link UnsafeMemory}. Method names follow
 * the scheme in {@code package-info.java}.
 *
 * <p>Thread-safety: stateless; each method is as atomic as its name says. In debug mode every
 * access is checked by {@link MemoryDebug} and an invalid one throws {@link IllegalStateException}
 * instead of touching memory.
 */
public final class Mem {
  /**
   * Debug mode switch, read once at class load. Static final so the JIT removes the checks when
   * off.
   */
  public static final boolean DEBUG = Boolean.getBoolean("basalt.memory.debug");

  private static final UnsafeMemory U = UnsafeMemory.MEMORY;
  private static final long BYTES_BASE = UnsafeMemory.UNSAFE.arrayBaseOffset(byte[].class);
  private static final boolean LITTLE_ENDIAN = UnsafeMemory.IS_LITTLE_ENDIAN;

  private Mem() {}

  // ---- raw allocation: only allocators call these
  // -------------------------------------------------

  /**
   * Allocates {@code size} bytes with malloc; only {@link Region} calls it, where mmap is
   * unavailable.
   */
  static long osAllocate(long size) {
    return U.allocate(size);
  }

  /**
   * Allocates {@code size} bytes with malloc for a caller that accounts for them itself (the block
   * cache, whose blocks come and go one by one and must go back to the OS). Free with {@link
   * #freeUnpooled}; in debug mode {@code owner} is checked at the free and names the block in leak
   * reports.
   */
  public static long allocateUnpooled(long size, Object owner) {
    long a = U.allocate(size);
    if (DEBUG) MemoryDebug.recordAllocation(a, size, owner);
    return a;
  }

  /** Frees a block of {@link #allocateUnpooled}; {@code size} and {@code owner} as allocated. */
  public static void freeUnpooled(long a, long size, Object owner) {
    if (DEBUG) {
      MemoryDebug.check(a, size);
      U.setMemory(a, size, (byte) 0xDD);
      MemoryDebug.recordFree(a, size, owner);
    }
    U.freeMemory(a, size);
  }

  /**
   * Blocks of {@code owner} still allocated (debug mode only; empty otherwise), for leak checks.
   */
  public static int liveBlocksOf(Object owner) {
    return DEBUG ? MemoryDebug.liveBlocksOf(owner).size() : 0;
  }

  // ---- plain
  // ---------------------------------------------------------------------------------------

  public static long lpLong(long a) {
    if (DEBUG) MemoryDebug.check(a, 8);
    return U.readLong(a);
  }

  public static void spLong(long a, long v) {
    if (DEBUG) MemoryDebug.check(a, 8);
    U.writeLong(a, v);
  }

  public static int lpInt(long a) {
    if (DEBUG) MemoryDebug.check(a, 4);
    return U.readInt(a);
  }

  public static void spInt(long a, int v) {
    if (DEBUG) MemoryDebug.check(a, 4);
    U.writeInt(a, v);
  }

  // ---- volatile and CAS
  // ---------------------------------------------------------------------------

  public static long lvLong(long a) {
    if (DEBUG) MemoryDebug.check(a, 8);
    return U.readVolatileLong(a);
  }

  /** Ordered (release) store: every earlier write is visible to a reader that loads this value. */
  public static void soLong(long a, long v) {
    if (DEBUG) MemoryDebug.check(a, 8);
    U.writeOrderedLong(a, v);
  }

  public static boolean casLong(long a, long expect, long update) {
    if (DEBUG) MemoryDebug.check(a, 8);
    return U.compareAndSwapLong(a, expect, update);
  }

  // ---- bulk
  // ----------------------------------------------------------------------------------------

  /** Copies {@code len} bytes of {@code src[off..]} to native {@code a}. */
  public static void copyFromArray(byte[] src, int off, long a, int len) {
    if (DEBUG) MemoryDebug.check(a, len);
    copy(src, BYTES_BASE + off, null, a, len);
  }

  /**
   * Copies {@code len} native bytes from {@code from} to {@code to}; the ranges must not overlap.
   */
  public static void copyMemory(long from, long to, long len) {
    if (DEBUG) {
      MemoryDebug.check(from, len);
      MemoryDebug.check(to, len);
    }
    copy(null, from, null, to, len);
  }

  /** Copies {@code len} native bytes at {@code a} into {@code dst[off..]}. */
  public static void copyToArray(long a, byte[] dst, int off, int len) {
    if (DEBUG) MemoryDebug.check(a, len);
    copy(null, a, dst, BYTES_BASE + off, len);
  }

  /**
   * Bytes one {@link #copy} step moves: a safepoint can come between steps (as in java.nio.Bits).
   */
  private static final long COPY_STEP = 1L << 20;

  /**
   * Copies between the heap and native memory with the JDK's {@code Unsafe.copyMemory}, which the
   * JIT turns into a memcpy. Chronicle's {@code UnsafeMemory.copyMemory} copies between the heap
   * and native memory in a Java loop on JDK 9 and later (the flusher spent a fifth of its time in
   * it copying 1 KB values). Large copies go in steps of 1 MiB so that the thread reaches a
   * safepoint in between.
   */
  private static void copy(
      Object srcBase, long srcOffset, Object dstBase, long dstOffset, long len) {
    while (len > 0) {
      long n = Math.min(len, COPY_STEP);
      UnsafeMemory.UNSAFE.copyMemory(srcBase, srcOffset, dstBase, dstOffset, n);
      len -= n;
      srcOffset += n;
      dstOffset += n;
    }
  }

  /** Sets {@code len} bytes at {@code a} to {@code value}. */
  public static void fill(long a, long len, byte value) {
    if (DEBUG) MemoryDebug.check(a, len);
    U.setMemory(a, len, value);
  }

  /** Offset of element 0 in a {@code byte[]}, for the (base, offset) addressing below. */
  public static final long ARRAY_BASE = BYTES_BASE;

  /**
   * Eight bytes at {@code (base, offset)} as a big-endian long: base null means offset is a native
   * address, otherwise base is a {@code byte[]} and offset counts from {@link #ARRAY_BASE}.
   */
  public static long lpLongBE(Object base, long offset) {
    if (DEBUG && base == null) MemoryDebug.check(offset, 8);
    long v = UnsafeMemory.UNSAFE.getLong(base, offset);
    return LITTLE_ENDIAN ? Long.reverseBytes(v) : v;
  }

  /**
   * Four bytes at {@code (base, offset)} in native order, addressed as in {@link #lpLongBE(Object,
   * long)}.
   */
  public static int lpInt(Object base, long offset) {
    if (DEBUG && base == null) MemoryDebug.check(offset, 4);
    return UnsafeMemory.UNSAFE.getInt(base, offset);
  }

  /**
   * Eight bytes at {@code (base, offset)} in native order, addressed as in {@link #lpLongBE(Object,
   * long)}.
   */
  public static long lpLong(Object base, long offset) {
    if (DEBUG && base == null) MemoryDebug.check(offset, 8);
    return UnsafeMemory.UNSAFE.getLong(base, offset);
  }

  /** Copies {@code len} bytes from {@code src[off..]} to {@code (base, offset)}. */
  public static void copyFromArray(byte[] src, int off, Object base, long offset, int len) {
    if (DEBUG && base == null) MemoryDebug.check(offset, len);
    copy(src, BYTES_BASE + off, base, offset, len);
  }

  /** One byte at {@code (base, offset)}, addressed as in {@link #lpLongBE(Object, long)}. */
  public static int lpUnsignedByte(Object base, long offset) {
    if (DEBUG && base == null) MemoryDebug.check(offset, 1);
    return UnsafeMemory.UNSAFE.getByte(base, offset) & 0xFF;
  }

  /**
   * One byte at {@code (base, offset)}, signed, addressed as in {@link #lpLongBE(Object, long)}.
   */
  public static byte lpByte(Object base, long offset) {
    if (DEBUG && base == null) MemoryDebug.check(offset, 1);
    return UnsafeMemory.UNSAFE.getByte(base, offset);
  }

  /**
   * Four bytes at {@code (base, offset)} as a little-endian int (file formats), addressed as above.
   */
  public static int lpIntLE(Object base, long offset) {
    int v = lpInt(base, offset);
    return LITTLE_ENDIAN ? v : Integer.reverseBytes(v);
  }

  /**
   * Eight bytes at {@code (base, offset)} as a little-endian long (file formats), addressed as
   * above.
   */
  public static long lpLongLE(Object base, long offset) {
    long v = lpLong(base, offset);
    return LITTLE_ENDIAN ? v : Long.reverseBytes(v);
  }

  /** Copies {@code len} bytes at {@code (base, offset)} into {@code dst[off..]}. */
  public static void copyToArray(Object base, long offset, byte[] dst, int off, int len) {
    if (DEBUG && base == null) MemoryDebug.check(offset, len);
    copy(base, offset, dst, BYTES_BASE + off, len);
  }

  /** Bytes {@link #copyToBuffer} moves at a time through a direct buffer's way in. */
  private static final int BUFFER_STEP = 8 * 1024;

  /** Each thread's array for {@link #copyToBuffer}'s steps into a direct buffer. */
  private static final ThreadLocal<byte[]> BUFFER_STAGE =
      ThreadLocal.withInitial(() -> new byte[BUFFER_STEP]);

  /**
   * Copies {@code len} bytes at {@code (base, offset)} into {@code dst} from its index {@code at}
   * on, changing neither its position nor its limit; the caller has checked that they fit and that
   * {@code dst} is writable. A heap buffer is copied into straight; a direct buffer through the
   * buffer's own absolute {@code put}, in steps of 8 KiB staged in a per-thread array, so the JDK's
   * checks apply (a buffer over a closed or unmapped segment throws instead of being written) and
   * nothing is allocated.
   */
  public static void copyToBuffer(
      Object base, long offset, java.nio.ByteBuffer dst, int at, int len) {
    if (dst.hasArray()) {
      copyToArray(base, offset, dst.array(), dst.arrayOffset() + at, len);
      return;
    }
    byte[] stage = BUFFER_STAGE.get();
    for (int done = 0; done < len; ) {
      int n = Math.min(len - done, BUFFER_STEP);
      copyToArray(base, offset + done, stage, 0, n);
      dst.put(at + done, stage, 0, n);
      done += n;
    }
  }

  /**
   * Unsigned lexicographic order of the {@code len} bytes at {@code (base, offset)} against {@code
   * key} (negative, zero or positive, as {@link java.util.Arrays#compareUnsigned(byte[], byte[])}).
   */
  public static int compareUnsigned(Object base, long offset, int len, byte[] key) {
    int min = Math.min(len, key.length);
    int i = 0;
    for (; i + 8 <= min; i += 8) {
      long x = lpLongBE(base, offset + i);
      long y = lpLongBE(key, BYTES_BASE + i);
      if (x != y) return Long.compareUnsigned(x, y);
    }
    for (; i < min; i++) {
      int x = lpUnsignedByte(base, offset + i);
      int y = key[i] & 0xFF;
      if (x != y) return x - y;
    }
    return len - key.length;
  }

  public static int lvInt(long a) {
    if (DEBUG) MemoryDebug.check(a, 4);
    return U.readVolatileInt(a);
  }

  public static boolean casInt(long a, int expect, int update) {
    if (DEBUG) MemoryDebug.check(a, 4);
    return U.compareAndSwapInt(a, expect, update);
  }
}
