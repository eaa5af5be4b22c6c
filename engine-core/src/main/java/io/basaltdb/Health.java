package io.basaltdb;

/**
 * Whether a store can take writes ({@link Basalt#health}): a failure in the background (a flush,
 * compaction or collection that hit a full disk or a damaged file) shows here at once, without a
 * write to discover it.
 *
 * @param state {@link State#OK}, {@link State#FAILED} (writes are refused, reads work; reopen the
 *     store to recover every acknowledged write) or {@link State#CLOSED}
 * @param failure the failure that made it refuse writes, or null
 */
public record Health(State state, BasaltException failure) {
  public enum State {
    OK,
    FAILED,
    CLOSED
  }

  /** Whether the store takes writes. */
  public boolean isOk() {
    return state == State.OK;
  }
}
