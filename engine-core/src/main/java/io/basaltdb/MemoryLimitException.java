package io.basaltdb;

/**
 * An allocation would have taken the engine's off-heap memory over its quota. Nothing was written;
 * free memory (close snapshots, let garbage collection catch up) or raise the quota.
 *
 * <p>Thread-safety: immutable.
 */
public class MemoryLimitException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public MemoryLimitException(String message) {
    super(message);
  }
}
