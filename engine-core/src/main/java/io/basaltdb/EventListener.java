package io.basaltdb;

/**
 * Hears of a disk store's background work (RocksJava's {@code AbstractEventListener}): flushes, key
 * index compactions and garbage collection runs as they complete, with their sizes and times;
 * writers stalling and going on; and the failure that makes the store refuse writes. Set with
 * {@link Options#eventListener}; every method has an empty default, so a listener overrides what it
 * needs.
 *
 * <p>Thread-safety: methods are called on the thread that did the work (the flusher, a compaction
 * or collection thread, the commit leader for stalls and for a batch that skipped the WAL), after
 * its commit, possibly at once from several, so two calls from different threads may arrive in
 * another order than their commits (a flush's seqno says where it stands): keep them quick and
 * thread-safe, and do not write to the store from them (a listener that waits for a write can wait
 * for itself). What a listener throws is logged and ignored. The in-memory store has no background
 * work: it calls only {@link #onBackgroundError}.
 */
public interface EventListener {
  /** A listener that hears nothing: the default. */
  EventListener NONE = new EventListener() {};

  /**
   * A flush committed: a write cache's contents (or a batch that skipped the WAL) written to log
   * segments and level-0 key index tables, made durable by a manifest commit.
   *
   * @param flushedSeqno every write up to it is in the store's files now
   * @param keyspaces keyspaces it wrote to
   * @param records key index records written (one per key and keyspace)
   * @param segmentBytes log segment bytes written (compressed)
   * @param nanos how long it took
   * @param walSkipped whether it was a batch that skipped the WAL ({@link Options#walSkipBytes})
   */
  record FlushInfo(
      long flushedSeqno,
      int keyspaces,
      long records,
      long segmentBytes,
      long nanos,
      boolean walSkipped) {}

  /**
   * A key index compaction committed.
   *
   * @param keyspace the keyspace's name
   * @param level the level its inputs came from
   * @param outputLevel the level it wrote
   * @param inputTables tables it read (of both levels)
   * @param outputTables tables it wrote (0 for a move, which only changes the manifest)
   * @param bytesRead table bytes read
   * @param bytesWritten table bytes written
   * @param versionsDropped superseded versions, tombstones and expired records it dropped (their
   *     documents went to the delete list)
   * @param nanos how long it took
   */
  record CompactionInfo(
      String keyspace,
      int level,
      int outputLevel,
      int inputTables,
      int outputTables,
      long bytesRead,
      long bytesWritten,
      long versionsDropped,
      long nanos) {}

  /**
   * A garbage collection run committed: log segments rewritten without their stale documents.
   *
   * @param keyspace the keyspace's name
   * @param inputSegments segments it replaced
   * @param bytesRead segment bytes it read (0 when every document was stale and nothing was read)
   * @param bytesWritten bytes of the segment it wrote (0 if none)
   * @param bytesReclaimed segment bytes given back
   * @param documentsDropped stale documents it dropped
   * @param cold whether it wrote its output with zstd ({@link Options#coldSegmentMillis})
   * @param nanos how long it took
   */
  record CollectionInfo(
      String keyspace,
      int inputSegments,
      long bytesRead,
      long bytesWritten,
      long bytesReclaimed,
      long documentsDropped,
      boolean cold,
      long nanos) {}

  /** Why writers wait. */
  enum Stall {
    /** The write cache is full while the previous one is still being flushed. */
    WRITE_CACHE,
    /** A keyspace holds {@link Options#l0StopWritesTrigger} level-0 tables. */
    LEVEL_0,
    /** Garbage collection has fallen too far behind. */
    GARBAGE_COLLECTION
  }

  default void onFlushCompleted(FlushInfo info) {}

  default void onCompactionCompleted(CompactionInfo info) {}

  default void onCollectionCompleted(CollectionInfo info) {}

  /** Writers began to wait, for {@code cause}. */
  default void onStallBegin(Stall cause) {}

  /** Writers waited {@code nanos} for {@code cause} and go on (or the store failed meanwhile). */
  default void onStallEnd(Stall cause, long nanos) {}

  /**
   * The store failed: from now on it refuses writes (reads still work) until it is reopened, which
   * recovers every acknowledged write. Called once, with the first failure, whatever found it (a
   * flush, a compaction, collection, or a WAL write), on a thread of its own, so it may close the
   * store (and open it again); {@link Basalt#health} reports the failure from the moment it
   * happens.
   */
  default void onBackgroundError(BasaltException error) {}
}
