package io.basaltdb.internal.memory;

/**
 * The allocator's size classes. Blocks up to {@value #FINE_LIMIT} bytes come in 8-byte steps (a
 * skiplist node wastes at most 7 bytes to rounding); above that, eight classes per power of two (at
 * most 12.5% waste) up to {@value #MAX_SMALL} bytes. Bigger requests bypass the slabs.
 *
 * <p>Thread-safety: stateless.
 */
final class SizeClasses {
  static final int FINE_LIMIT = 1024;
  static final int FINE_STEP = 8;
  static final int FINE_CLASSES = FINE_LIMIT / FINE_STEP; // classes 0..127: sizes 8..1024
  static final int MAX_SMALL = 128 * 1024;
  private static final int FINE_SHIFT = 10; // log2(FINE_LIMIT)
  private static final int STEPS_PER_DOUBLING = 8;
  static final int COUNT = FINE_CLASSES + (17 - FINE_SHIFT) * STEPS_PER_DOUBLING; // up to 2^17

  private SizeClasses() {}

  /** The class that serves {@code size} bytes, {@code 1 <= size <= MAX_SMALL}. */
  static int classOf(long size) {
    if (size <= FINE_LIMIT) {
      return (int) ((size + FINE_STEP - 1) / FINE_STEP) - 1;
    }
    int k = 63 - Long.numberOfLeadingZeros(size - 1); // size in (2^k, 2^(k+1)]
    long step = (1L << k) / STEPS_PER_DOUBLING;
    int within = (int) ((size - (1L << k) + step - 1) / step) - 1; // 0..7
    return FINE_CLASSES + (k - FINE_SHIFT) * STEPS_PER_DOUBLING + within;
  }

  /** The block size of class {@code c}. */
  static long sizeOf(int c) {
    if (c < FINE_CLASSES) {
      return (long) (c + 1) * FINE_STEP;
    }
    int rel = c - FINE_CLASSES;
    int k = FINE_SHIFT + rel / STEPS_PER_DOUBLING;
    long step = (1L << k) / STEPS_PER_DOUBLING;
    return (1L << k) + (rel % STEPS_PER_DOUBLING + 1) * step;
  }
}
