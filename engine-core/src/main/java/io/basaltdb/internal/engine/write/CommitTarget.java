package io.basaltdb.internal.engine.write;

import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.List;

/**
 * What the {@link CommitPipeline} needs from the store it commits to, in the order it calls it:
 * room in the write cache (and more of it when the group's nodes do not fit), a durable log of the
 * group, and a last step once the group is published. The disk store logs to the WAL and switches,
 * slows or stalls on a full write cache ({@link DiskWrites}); the in-memory store logs nothing
 * ({@link io.basaltdb.internal.engine.MemoryStore}).
 *
 * <p>Thread-safety: called by the commit leader only, one group at a time.
 */
public interface CommitTarget {
  /**
   * Before a group is formed: makes room (switch the write cache, slow down, or wait for a flush),
   * or refuses the leader's batch {@code head} before anything is written (a nearly full disk).
   *
   * @return true if the group may hold only deletes (the disk is short of space, and deletes are
   *     how its user frees it)
   */
  boolean makeRoom(Batch head);

  /**
   * Before the group's nodes are allocated: refuses a group this store wants to keep memory back
   * from (the in-memory store keeps room for deletes, the only way out of a full store), by
   * throwing {@link io.basaltdb.MemoryLimitException}; nothing is written then.
   */
  void precheck(List<Batch> group, long estimate);

  /**
   * The active write cache could not take the group's nodes: frees what this store can (waits for
   * the flush of the immutable cache, or switches the active one) and returns true to retry, or
   * false if nothing it does would help (memory pinned by snapshots, or an in-memory store that is
   * full).
   */
  boolean freeMemory();

  /**
   * How long the leader waits for memory that only readers can free before it refuses the group.
   */
  long pinnedWaitNanos();

  /** What a refused group's message says: why the memory is full and what to do. */
  String whenFull();

  /** Makes the group durable as the sync mode says; a failure fails the store and is thrown. */
  void log(List<Batch> group);

  /** The group is applied to {@code cache} and published; still under the apply lock. */
  void applied(WriteCache cache, List<Batch> group);

  /** The leader's group is over (committed or failed): a stall it was in has ended. */
  default void groupDone() {}

  /**
   * How {@code b} skips the WAL ({@link io.basaltdb.Options#walSkipBytes}), or null if it goes
   * through the WAL as any group does: a batch that skips it leads a group of its own, committed by
   * the steps of {@link WalSkip} instead of the ones above. A store without a WAL (the in-memory
   * one) returns null.
   */
  default WalSkip walSkip(Batch b) {
    return null;
  }

  /** The steps of a batch that skips the WAL, in the order the leader calls them. */
  interface WalSkip {
    /**
     * Before the batch gets its seqnos: refuses it on a nearly full disk, waits out stalls, and
     * flushes everything written before it, so both write caches are empty and no flush is pending.
     * Throws with nothing written.
     */
    void prepare(Batch b);

    /**
     * Writes the batch to the store's files and commits them ({@link Flusher#flushBatch}, whose
     * arguments these are); {@code publish} runs as the batch becomes visible. A failure once
     * writing has begun fails the store (its files are ahead of the manifest) and is thrown; the
     * reopened store holds none of the batch.
     */
    void write(
        Batch b,
        WriteCache.Below[] below,
        java.util.Map<Integer, Long> itemsAfter,
        Runnable publish);
  }
}
