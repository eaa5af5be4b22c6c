package io.basaltdb.internal.engine;

import java.util.List;

/**
 * What the {@link CommitPipeline} needs from the store it commits to, in the order it calls it: room
 * in the write cache, a durable log of the group, and a last step once the group is published. The
 * disk store logs to the WAL and switches, slows or stalls on a full write cache ({@link DiskWrites});
 * the in-memory store logs nothing ({@link MemoryStore}).
 *
 * <p>Thread-safety: called by the commit leader only, one group at a time.
 */
interface CommitTarget {
  /** Before a group is formed: makes room (switch the write cache, slow down, or wait for a flush). */
  void makeRoom();

  /**
   * Before anything of the group is written: admits about {@code bytes} of write cache for it, or
   * throws {@link io.basaltdb.MemoryLimitException} having written nothing.
   */
  void admit(long bytes);

  /** Makes the group durable as the sync mode says; a failure fails the store and is thrown. */
  void log(List<Batch> group);

  /** The group is applied to {@code cache} and published; still under the apply lock. */
  void applied(WriteCache cache, List<Batch> group);
}
