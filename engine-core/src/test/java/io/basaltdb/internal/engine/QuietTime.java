package io.basaltdb.internal.engine;

/**
 * Sets how long a store must go without a flush to count as quiet ({@link SegmentCompactor#quietNanos}),
 * for tests outside this package: {@code waitForCompactions} waits for a quiet store's passes, so tests
 * shorten it; a test that needs level 0 left alone lengthens it.
 */
public final class QuietTime {
  private QuietTime() {}

  /** Sets the quiet time; {@link #restore} puts the default back. */
  public static void set(long nanos) {
    SegmentCompactor.quietNanos = nanos;
  }

  public static void restore() {
    SegmentCompactor.quietNanos = 2_000_000_000L;
  }
}
