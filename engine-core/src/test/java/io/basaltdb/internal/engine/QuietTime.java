package io.basaltdb.internal.engine;

import io.basaltdb.internal.engine.gc.SegmentCompactor;

/**
 * Sets how long a store must go without a flush to count as quiet ({@link
 * SegmentCompactor#quietNanos}), for tests outside this package: {@code waitForCompactions} waits
 * for a quiet store's passes, so tests shorten it; a test that needs level 0 left alone lengthens
 * it.
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

  /**
   * A test class's quiet time of 200 ms for each test, the default restored after it
   * ({@code @ExtendWith(QuietTime.Short.class)}): {@code waitForCompactions} waits for a quiet
   * store's passes.
   */
  public static final class Short
      implements org.junit.jupiter.api.extension.BeforeEachCallback,
          org.junit.jupiter.api.extension.AfterEachCallback {
    @Override
    public void beforeEach(org.junit.jupiter.api.extension.ExtensionContext context) {
      set(200_000_000L);
    }

    @Override
    public void afterEach(org.junit.jupiter.api.extension.ExtensionContext context) {
      restore();
    }
  }
}
