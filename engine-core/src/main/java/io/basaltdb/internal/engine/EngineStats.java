package io.basaltdb.internal.engine;

import java.util.concurrent.atomic.LongAdder;

/**
 * The engine's counters. {@link LongAdder}s stripe their cells, so hot counters bumped by many
 * threads do not share a cache line (the padding JCTools does by hand).
 *
 * Each field is named as the stat it feeds (see StatsReport).
 *
 * <p>Thread-safety: every counter may be bumped from any thread; a read is a racy sum, fine for stats.
 */
final class EngineStats {
  final LongAdder puts = new LongAdder();
  final LongAdder deletes = new LongAdder();
  final LongAdder gets = new LongAdder();
  final LongAdder batches = new LongAdder();
  final LongAdder groupCommits = new LongAdder();
  final LongAdder userBytesWritten = new LongAdder();
  final LongAdder walBytesWritten = new LongAdder();
  final LongAdder walSyncs = new LongAdder();
  /** Batches that skipped the WAL ({@link io.basaltdb.Options#walSkipBytes}) and the WAL bytes they would have taken. */
  final LongAdder walSkippedBatches = new LongAdder();
  final LongAdder walSkippedBytes = new LongAdder();
  final LongAdder segmentBytesWritten = new LongAdder();
  final LongAdder indexBytesWritten = new LongAdder();
  final LongAdder manifestBytesWritten = new LongAdder();
  final LongAdder flushes = new LongAdder();
  /** When the last flush (or the open) happened; written by the flusher, read by the background workers. */
  private volatile long lastFlushNanos = System.nanoTime();
  final LongAdder stallNanos = new LongAdder();
  final LongAdder stalls = new LongAdder();
  final LongAdder slowdownNanos = new LongAdder();
  final LongAdder slowdowns = new LongAdder();
  final LongAdder tableLookups = new LongAdder();
  final LongAdder documentReads = new LongAdder();
  final LongAdder batchedGets = new LongAdder();
  /** Reads batched gets handed to the read transport (key index and document blocks), and the rounds they took. */
  final LongAdder batchedReads = new LongAdder();
  final LongAdder batchedReadRounds = new LongAdder();
  /** Reads of batches made in place, from a mapping of the file, not handed to the transport. */
  final LongAdder batchedReadsInPlace = new LongAdder();
  final LongAdder compactions = new LongAdder();
  final LongAdder trivialMoves = new LongAdder();
  /** Under key index guards: guard keys committed, guards pushed into the next level, last-level guards merged in place. */
  final LongAdder guardsAdded = new LongAdder();
  final LongAdder guardPushes = new LongAdder();
  final LongAdder guardMerges = new LongAdder();
  /** Key index compactions that merged level-0 tables into one level-0 table. */
  final LongAdder l0Merges = new LongAdder();
  /** Superseded versions level 0 hides from the delete list, estimated (not a counter; see its class). */
  final ShadowedBytes shadowed = new ShadowedBytes();
  /**
   * Key index tables that compaction wrote with at least one tombstone, by file number (in memory only:
   * tables found at open are not listed). A quiet guarded store merges a last-level guard whose newer
   * tables hold tombstones, so deletes reach the bottom ({@link CompactionPicker}).
   */
  final java.util.Set<Long> tablesWithTombstones = java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** Location hints key index compaction rewrote because they named a replaced segment. */
  final LongAdder hintsRefreshed = new LongAdder();
  /** Document reads that searched a segment's seqno index: the record's hint was missing, stale or wrong. */
  final LongAdder hintMisses = new LongAdder();
  /** Expired key index records compaction turned into tombstones or dropped (Magma section 7.1). */
  final LongAdder expiredRecordsCompacted = new LongAdder();
  /** Compactions the expiry check started ({@link io.basaltdb.Options#expiryCheckMillis}). */
  final LongAdder expiryCompactions = new LongAdder();
  /** Superseded versions flushes sent to the delete list ({@link io.basaltdb.Options#flushLookups}). */
  final LongAdder flushStaleReported = new LongAdder();
  /** Superseded versions revealing level-0 merges sent to the delete list (see {@link Compactor}). */
  final LongAdder l0MergeStaleReported = new LongAdder();
  final LongAdder compactionBytesRead = new LongAdder();
  final LongAdder compactionBytesWritten = new LongAdder();
  final LongAdder l0Stalls = new LongAdder();
  /** Writes refused because free disk space was below diskReserveBytes (each refused writer). */
  final LongAdder diskFullRefusals = new LongAdder();
  final LongAdder l0StallNanos = new LongAdder();
  final LongAdder obsoleteDeleteFailures = new LongAdder();
  final LongAdder checkpointsDroppedForSpace = new LongAdder();
  /** Delete list tables written: by key index compactions (their discards) and delete list compactions. */
  final LongAdder deleteListBytesWritten = new LongAdder();
  final LongAdder deleteListBytesRead = new LongAdder();
  final LongAdder deleteListCompactions = new LongAdder();
  /** Segment compactions (garbage collection runs), the segment bytes they read, wrote and reclaimed. */
  final LongAdder gcRuns = new LongAdder();
  final LongAdder gcBytesRead = new LongAdder();
  final LongAdder gcBytesWritten = new LongAdder();
  final LongAdder gcBytesReclaimed = new LongAdder();
  final LongAdder gcDocumentsDropped = new LongAdder();
  final LongAdder gcFailures = new LongAdder();
  final LongAdder gcSlowdowns = new LongAdder();
  final LongAdder gcSlowdownNanos = new LongAdder();
  final LongAdder gcStalls = new LongAdder();
  final LongAdder gcStallNanos = new LongAdder();
  /**
   * When a flush or collection last wrote each segment, by id, in ms since the epoch (in memory only:
   * segments found at the open count as written at {@link #openMillis}); {@link io.basaltdb.Options#coldSegmentMillis}.
   */
  final java.util.Map<Long, Long> segmentWrittenMillis = new java.util.concurrent.ConcurrentHashMap<>();
  final long openMillis = System.currentTimeMillis();
  /** Segments garbage collection wrote with zstd (cold), and their bytes. */
  final LongAdder gcColdSegments = new LongAdder();
  final LongAdder gcColdBytesWritten = new LongAdder();

  /** When segment {@code id} was last written. */
  long segmentWrittenMillis(long id) {
    return segmentWrittenMillis.getOrDefault(id, openMillis);
  }

  /** Change feeds opened, changes they returned, and documents they skipped as stale (delete list, exact check). */
  final LongAdder changeFeeds = new LongAdder();
  final LongAdder changesReturned = new LongAdder();
  final LongAdder changesSkippedStale = new LongAdder();
  final LongAdder changesSkippedExact = new LongAdder();

  /** A flush committed: counted, and the store is not quiet. */
  void flushed() {
    flushes.increment();
    lastFlushNanos = System.nanoTime();
  }

  /**
   * Whether no flush has happened for {@code nanos} (the store is quiet: key index compaction merges
   * level 0 into the base level and garbage collection collects lower). Volatile read: a stale answer
   * only delays or hastens a quiet pass by one look.
   */
  boolean quietFor(long nanos) {
    return System.nanoTime() - lastFlushNanos >= nanos;
  }
}
