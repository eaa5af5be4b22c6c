package io.basaltdb.internal.engine.version;

import java.util.concurrent.atomic.LongAdder;

/**
 * The engine's counters. {@link LongAdder}s stripe their cells, so hot counters bumped by many
 * threads do not share a cache line (the padding JCTools does by hand).
 *
 * <p>Each field is named as the stat it feeds (see StatsReport).
 *
 * <p>Thread-safety: every counter may be bumped from any thread; a read is a racy sum, fine for
 * stats.
 */
public final class EngineStats {
  public final LongAdder puts = new LongAdder();

  /** Hashed keyspaces' trie checkpoints written ({@code TrieCheckpoints}). */
  public final LongAdder trieCheckpoints = new LongAdder();

  /** 4 KiB pages those checkpoints wrote (the whole space, or dirty pages twice). */
  public final LongAdder trieCheckpointPages = new LongAdder();

  /** Trie checkpoints that could not be written or put in place (each reported in the log). */
  public final LongAdder trieCheckpointFailures = new LongAdder();

  /** Expired records hashed keyspaces' expiry sweeps removed from their tries. */
  public final LongAdder trieExpiredRemoved = new LongAdder();

  /** Checkpoints the open completed from their double-write files. */
  public final LongAdder trieDoubleWritesApplied = new LongAdder();

  /** Records the open loaded from trie checkpoints, and log bytes it replayed after them. */
  public final LongAdder trieCheckpointRecordsLoaded = new LongAdder();

  public final LongAdder trieLogBytesReplayed = new LongAdder();

  /**
   * Bytes of the hashed keyspaces' tries (records and nodes); set once at open, before any stats
   * call.
   */
  public volatile java.util.function.LongSupplier hashedIndexBytes = () -> 0;

  /** Of {@link #hashedIndexBytes}, the nodes' child tables; set once at open. */
  public volatile java.util.function.LongSupplier hashedIndexNodeBytes = () -> 0;

  public final LongAdder deletes = new LongAdder();
  public final LongAdder gets = new LongAdder();
  public final LongAdder batches = new LongAdder();
  public final LongAdder groupCommits = new LongAdder();
  public final LongAdder userBytesWritten = new LongAdder();
  public final LongAdder walBytesWritten = new LongAdder();
  public final LongAdder walSyncs = new LongAdder();

  /**
   * Batches that skipped the WAL ({@link io.basaltdb.Options#walSkipBytes}) and the WAL bytes they
   * would have taken.
   */
  public final LongAdder walSkippedBatches = new LongAdder();

  public final LongAdder walSkippedBytes = new LongAdder();
  public final LongAdder segmentBytesWritten = new LongAdder();
  public final LongAdder indexBytesWritten = new LongAdder();
  public final LongAdder manifestBytesWritten = new LongAdder();
  public final LongAdder flushes = new LongAdder();

  /**
   * When the last flush (or the open) happened; written by the flusher, read by the background
   * workers.
   */
  private volatile long lastFlushNanos = System.nanoTime();

  public final LongAdder stallNanos = new LongAdder();
  public final LongAdder stalls = new LongAdder();
  public final LongAdder slowdownNanos = new LongAdder();
  public final LongAdder slowdowns = new LongAdder();
  public final LongAdder tableLookups = new LongAdder();
  public final LongAdder documentReads = new LongAdder();
  public final LongAdder batchedGets = new LongAdder();

  /**
   * Reads batched gets handed to the read transport (key index and document blocks), and the rounds
   * they took.
   */
  public final LongAdder batchedReads = new LongAdder();

  public final LongAdder batchedReadRounds = new LongAdder();

  /** Reads of batches made in place, from a mapping of the file, not handed to the transport. */
  public final LongAdder batchedReadsInPlace = new LongAdder();

  public final LongAdder compactions = new LongAdder();
  public final LongAdder trivialMoves = new LongAdder();

  /**
   * Under key index guards: guard keys committed, guards pushed into the next level, last-level
   * guards merged in place.
   */
  public final LongAdder guardsAdded = new LongAdder();

  public final LongAdder guardPushes = new LongAdder();
  public final LongAdder guardMerges = new LongAdder();

  /** Key index compactions that merged level-0 tables into one level-0 table. */
  public final LongAdder l0Merges = new LongAdder();

  /**
   * Superseded versions level 0 hides from the delete list, estimated (not a counter; see its
   * class).
   */
  public final ShadowedBytes shadowed = new ShadowedBytes();

  /**
   * Key index tables that compaction wrote with at least one tombstone, by file number (in memory
   * only: tables found at open are not listed). A quiet guarded store merges a last-level guard
   * whose newer tables hold tombstones, so deletes reach the bottom ({@link
   * io.basaltdb.internal.engine.index.CompactionPicker}).
   */
  public final java.util.Set<Long> tablesWithTombstones =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** Location hints key index compaction rewrote because they named a replaced segment. */
  public final LongAdder hintsRefreshed = new LongAdder();

  /**
   * Document reads that searched a segment's seqno index: the record's hint was missing, stale or
   * wrong.
   */
  public final LongAdder hintMisses = new LongAdder();

  /** Expired key index records compaction turned into tombstones or dropped (Magma section 7.1). */
  public final LongAdder expiredRecordsCompacted = new LongAdder();

  /** Compactions the expiry check started ({@link io.basaltdb.Options#expiryCheckMillis}). */
  public final LongAdder expiryCompactions = new LongAdder();

  /**
   * Superseded versions flushes sent to the delete list ({@link io.basaltdb.Options#flushLookups}).
   */
  public final LongAdder flushStaleReported = new LongAdder();

  /**
   * Superseded versions revealing level-0 merges sent to the delete list (see {@link
   * io.basaltdb.internal.engine.index.Compactor}).
   */
  public final LongAdder l0MergeStaleReported = new LongAdder();

  public final LongAdder compactionBytesRead = new LongAdder();
  public final LongAdder compactionBytesWritten = new LongAdder();
  public final LongAdder l0Stalls = new LongAdder();

  /** Writes refused because free disk space was below diskReserveBytes (each refused writer). */
  public final LongAdder diskFullRefusals = new LongAdder();

  public final LongAdder l0StallNanos = new LongAdder();
  public final LongAdder obsoleteDeleteFailures = new LongAdder();
  public final LongAdder checkpointsDroppedForSpace = new LongAdder();

  /**
   * Delete list tables written: by key index compactions (their discards) and delete list
   * compactions.
   */
  public final LongAdder deleteListBytesWritten = new LongAdder();

  public final LongAdder deleteListBytesRead = new LongAdder();
  public final LongAdder deleteListCompactions = new LongAdder();

  /**
   * Segment compactions (garbage collection runs), the segment bytes they read, wrote and
   * reclaimed.
   */
  public final LongAdder gcRuns = new LongAdder();

  public final LongAdder gcBytesRead = new LongAdder();
  public final LongAdder gcBytesWritten = new LongAdder();
  public final LongAdder gcBytesReclaimed = new LongAdder();
  public final LongAdder gcDocumentsDropped = new LongAdder();
  public final LongAdder gcFailures = new LongAdder();
  public final LongAdder gcSlowdowns = new LongAdder();
  public final LongAdder gcSlowdownNanos = new LongAdder();
  public final LongAdder gcStalls = new LongAdder();
  public final LongAdder gcStallNanos = new LongAdder();

  /**
   * When a flush or collection last wrote each segment, by id, in ms since the epoch (in memory
   * only: segments found at the open count as written at {@link #openMillis}); {@link
   * io.basaltdb.Options#coldSegmentMillis}.
   */
  public final java.util.Map<Long, Long> segmentWrittenMillis =
      new java.util.concurrent.ConcurrentHashMap<>();

  final long openMillis = System.currentTimeMillis();

  /**
   * When the cold pass last saw each segment read, by id, in ms since the epoch (in memory only;
   * {@link io.basaltdb.Options#coldSegmentMillis}).
   */
  public final java.util.Map<Long, Long> segmentReadMillis =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** Segments garbage collection wrote with zstd (cold), and their bytes. */
  public final LongAdder gcColdSegments = new LongAdder();

  public final LongAdder gcColdBytesWritten = new LongAdder();

  /** Segments the cold pass rewrote ({@link io.basaltdb.Options#coldPassBytesPerSecond}). */
  public final LongAdder coldPassSegments = new LongAdder();

  /** When segment {@code id} was last written. */
  public long segmentWrittenMillis(long id) {
    return segmentWrittenMillis.getOrDefault(id, openMillis);
  }

  /**
   * Change feeds opened, changes they returned, and documents they skipped as stale (delete list,
   * exact check).
   */
  public final LongAdder changeFeeds = new LongAdder();

  public final LongAdder changesReturned = new LongAdder();
  public final LongAdder changesSkippedStale = new LongAdder();
  public final LongAdder changesSkippedExact = new LongAdder();

  /** A flush committed: counted, and the store is not quiet. */
  public void flushed() {
    flushes.increment();
    lastFlushNanos = System.nanoTime();
  }

  /**
   * Whether no flush has happened for {@code nanos} (the store is quiet: key index compaction
   * merges level 0 into the base level and garbage collection collects lower). Volatile read: a
   * stale answer only delays or hastens a quiet pass by one look.
   */
  public boolean quietFor(long nanos) {
    return System.nanoTime() - lastFlushNanos >= nanos;
  }
}
