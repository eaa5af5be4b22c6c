package io.basaltdb;

import java.util.Collections;
import java.util.Map;

/**
 * A point-in-time reading of a store's counters and gauges. Counters count since the store was
 * opened, except the key index totals, which the manifest persists. Names, in {@link #asMap()}
 * order:
 *
 * <ul>
 *   <li>{@code puts}, {@code deletes}, {@code gets}, {@code batches}, {@code groupCommits} (WAL
 *       writes, each shared by one or more batches);
 *   <li>{@code userBytesWritten} (keys and values of acknowledged writes), {@code walBytesWritten},
 *       {@code walSyncs}, {@code walSkippedBatches} and {@code walSkippedBytes} (batches that
 *       skipped the WAL, {@link Options#walSkipBytes}, and the WAL bytes they would have taken),
 *       {@code segmentBytesWritten}, {@code indexBytesWritten} (key index tables; a hashed
 *       keyspace's trie checkpoints), {@code manifestBytesWritten}; see {@link
 *       #writeAmplification()};
 *   <li>{@code flushes}; {@code stalls} and {@code stallNanos} (writers blocked because the write
 *       cache was full while the previous one was still flushing), {@code slowdowns} and {@code
 *       slowdownNanos} (writers delayed 1 ms because it was three quarters full);
 *   <li>{@code tableLookups} (key index tables consulted), {@code indexBlockReads} (data blocks of
 *       those tables read from disk, by gets and scans, after the key range, the bloom filter and
 *       the block cache let them through), {@code documentReads} (segment blocks read from disk for
 *       documents the block cache did not hold), {@code hintMisses} (of those reads, the ones that
 *       searched the segment's seqno index because the key index record's location hint was missing
 *       or named a segment garbage collection replaced: Magma section 8.2's fallback); see {@link
 *       #readsPerGet()}; {@code batchedGets} ({@link Keyspace#getAll} and {@link Basalt#getAll}
 *       calls), {@code batchedReads} (the key index and document block reads they, and scans
 *       reading ahead, handed to the read transport, counted in {@code indexBlockReads} and {@code
 *       documentReads} too) and {@code batchedReadRounds} (the times reads were handed over to the
 *       transport: a batch hands over several at its start and the next read of each key as its
 *       last completes);
 *   <li>{@code pendingCompactionBytes} (gauge, with {@code
 *       keyspace.<name>.pendingCompactionBytes}): the key index bytes compaction still has to
 *       rewrite, estimated as RocksDB's {@code estimate-pending-compaction-bytes} is;
 *   <li>document expiry ({@link Keyspace#put(byte[], byte[], long)}): {@code
 *       expiredRecordsCompacted} (expired key index records compaction turned into tombstones or
 *       dropped), {@code expiryCompactions} (compactions the expiry check started, {@link
 *       Options#expiryCheckMillis});
 *   <li>key index compaction: {@code compactions}, {@code trivialMoves} (tables moved down a level
 *       without rewriting), {@code l0Merges} (merges of level-0 tables into one level-0 table,
 *       level 0 being tiered; see {@link Options#l0BaseRatio}), {@code hintsRefreshed} (location
 *       hints a compaction, or for a hashed keyspace a flush after gets missed them, rewrote from
 *       the seqno index because they named a segment garbage collection replaced), {@code
 *       flushStaleReported} (superseded versions flushes sent to the delete list, with {@link
 *       Options#flushLookups}), {@code l0MergeStaleReported} (superseded versions the larger
 *       level-0 merges, and with {@link Options#keyIndexGuards} the pushes into a guarded level,
 *       found below their records and sent to the delete list at once), {@code
 *       compactionBytesRead}, {@code compactionBytesWritten}; with {@link Options#keyIndexGuards},
 *       {@code guardsAdded} (guard keys compactions committed), {@code guardPushes} (guards
 *       compacted into the next level, trivial moves included), {@code guardMerges} (last-level
 *       guards merged in place), and gauges {@code guards} (guards of the non-empty levels >= 1,
 *       sentinels included), {@code emptyGuards} (of those, guards with no table) and {@code
 *       maxGuardTables} (the most tables one guard holds: a point read probes at most that many per
 *       level);
 *   <li>the change feed ({@link ChangeFeed}): {@code changeFeeds} (feeds opened), {@code
 *       changesReturned}, {@code changesSkippedStale} (documents of the log skipped because the
 *       delete list names them), {@code changesSkippedExact} (documents an {@link
 *       ChangeFeed.Mode#EXACT} feed skipped because a newer version of their key exists);
 *   <li>key index totals of the live keyspaces since each was created, committed in the manifest
 *       together with the tables they describe, so they survive reopening and a crash neither loses
 *       nor repeats a count: {@code flushedRecords} and {@code flushedBytes} (key index records the
 *       flushes wrote, one per key and flush, and the document bytes they reference), {@code
 *       discardedVersions} and {@code discardedBytes} (older versions and bottom-level tombstones
 *       compaction dropped, or a flush reported with {@link Options#flushLookups}, with their
 *       document sizes: the garbage in the log segments), {@code liveDataBytes} (flushed minus
 *       discarded bytes: the document bytes the key index references, an upper bound of the live
 *       data, since it still counts superseded versions not yet compacted away and tombstones;
 *       document sizes are as encoded in a segment block, before compression); gauge {@code
 *       diskBytes} (the size of every file of the store: WAL, manifests and checkpoints, tables,
 *       segments with their preallocated tails), {@code checkpointOnlyBytes} (of those, the table,
 *       delete list and segment files that only retained checkpoints name: the space rollback
 *       costs), {@code checkpointsDroppedForSpace} (periodic checkpoints dropped before their
 *       retention ended because they held more than {@code checkpointSpaceRatio});
 *   <li>garbage collection (Magma section 4): gauges {@code preallocatedBytes} (space reserved past
 *       the segments' tails and WAL files kept for reuse, in diskBytes), {@code segmentBytes} (the
 *       log segments' bytes up to their tails), {@code segmentStaleBytes} (of those, superseded
 *       index pages and the share of stale document versions), {@code segmentGarbageBytes} (the
 *       document bytes, before compression, of the versions the key index dropped and no segment
 *       compaction removed yet), {@code fragmentationPermille} (stale over segment bytes, in
 *       thousandths), {@code pendingGarbageBytes} (an estimate of the segment bytes of versions
 *       that level-0 key index records supersede and that compaction has not yet reported: garbage
 *       collection counts it toward {@code fragmentationThreshold}), {@code deleteListTables},
 *       {@code deleteListRecords}, {@code deleteListBytes} (their files), {@code
 *       deleteListLogicalBytes} (the document bytes they describe); counters {@code
 *       deleteListCompactions}, {@code deleteListBytesRead}, {@code deleteListBytesWritten} (by key
 *       index compactions and delete list compactions), {@code gcRuns} (segment compactions),
 *       {@code gcBytesRead}, {@code gcBytesWritten}, {@code gcBytesReclaimed} (input less output
 *       bytes), {@code gcDocumentsDropped}, {@code gcFailures} (jobs that could not write their
 *       output, a full disk: retried a second later), {@code gcSlowdowns} and {@code
 *       gcSlowdownNanos} (commit groups delayed 1 ms because collection is falling behind), {@code
 *       gcStalls} and {@code gcStallNanos} (writers held until it caught up), {@code
 *       gcColdSegments} and {@code gcColdBytesWritten} (outputs written with zstd, their inputs
 *       cold: {@link Options#coldSegmentMillis}), {@code coldPassSegments} (of them, the segments
 *       the cold pass rewrote without garbage to collect); per live keyspace, {@code
 *       keyspace.<name>.segmentBytes}, {@code keyspace.<name>.segmentStaleBytes}, {@code
 *       keyspace.<name>.fragmentationPermille} and {@code keyspace.<name>.pendingGarbageBytes};
 *   <li>with {@link Options#exactItemCounts} (the last entries): {@code items} (live keys of every
 *       keyspace) and {@code keyspace.<name>.items} (each keyspace's, as {@link
 *       Keyspace#itemCount});
 *   <li>{@code diskFullRefusals} (writes refused, nothing written, because the disk had less usable
 *       space than {@code diskReserveBytes});
 *   <li>{@code l0Stalls} and {@code l0StallNanos} (writers blocked because a keyspace had {@code
 *       l0StopWritesTrigger} level-0 tables), {@code obsoleteDeleteFailures} (deletes of replaced
 *       tables that failed and are retried); gauges {@code tablesAtLevel0} to {@code
 *       tablesAtLevel6}, {@code keyIndexBytes} (the key index tables' bytes), {@code
 *       indexNavigationReads} and {@code indexFilterReads} (block cache misses of key index index
 *       blocks or navigation pages, and of bloom filters), {@code keyIndexIndexBytes} (of which
 *       their indexes: block tables' index blocks, HB+-trie tables' navigation pages and headers)
 *       and {@code trieTables} (tables in the HB+-trie format);
 *   <li>memory, gauges: {@code writeCacheBytes} (entries in the write caches), {@code memoryInUse}
 *       (off-heap bytes in use: the write cache's and the block cache's) of {@code memoryQuota};
 *       {@code writeCacheMemory} of {@code writeCacheQuota} (the write cache's allocator and its
 *       part of the quota); {@code blockCacheBytes} of {@code blockCacheCapacity}, split by kind
 *       into {@code blockCacheIndexBytes}, {@code blockCacheFilterBytes}, {@code
 *       blockCacheDataBytes} (the key index's index, filter and data blocks), {@code
 *       blockCachePageBytes} (segment index pages) and {@code blockCacheDocumentBytes} (documents);
 *       {@code readBufferBytes} (aligned buffers reads stage through, in {@code memoryInUse}), of
 *       which {@code readBufferPoolBytes} pooled, which grow up to {@code readBufferQuota} as reads
 *       need them and take their room from {@code blockCacheCapacity}, and {@code
 *       readBufferOverflows} (buffers taken beyond the pool); {@code writeBufferBytes} (with {@link
 *       Options#directWrites}: the aligned buffers writes stage through, in {@code memoryInUse},
 *       taken from {@code blockCacheCapacity} as they are made), counters {@code directWriteBytes}
 *       (bytes it wrote around the page cache) and {@code directWriteBufferedBytes} (bytes of the
 *       same files' writes that went through it: partial last blocks and writes under 64 KiB);
 *   <li>block cache counters: {@code blockCacheHits}, {@code blockCacheMisses} (each miss is a read
 *       from disk, but for a batched get's documents, which share block reads), {@code
 *       blockCacheDocumentHits}, {@code blockCacheDocumentMisses} (of those, documents), {@code
 *       blockCacheEvictions}, {@code blockCacheDeclined} (data blocks and documents read once
 *       lately, so not cached: the cache admits them on their second read);
 *   <li>hashed keyspaces ({@link KeyspaceOptions.Kind#HASHED}): gauges {@code hashedIndexBytes}
 *       (their lazy-tries' records and nodes, off the heap, taken from {@code blockCacheCapacity})
 *       and {@code hashedIndexNodeBytes} (of which the nodes' child tables); counters {@code
 *       trieCheckpoints} (checkpoints written), {@code trieCheckpointPages} (the 4 KiB pages they
 *       wrote: the whole space, or the dirty pages twice), {@code trieCheckpointFailures}
 *       (checkpoints a storage error stopped), {@code trieDoubleWritesApplied} (checkpoints an open
 *       completed from their double-write file), {@code trieCheckpointRecordsLoaded} and {@code
 *       trieLogBytesReplayed} (what the open loaded from checkpoints, and replayed from the log
 *       after them), {@code trieExpiredRemoved} (expired records the expiry sweep removed, {@link
 *       Options#expiryCheckMillis});
 *   <li>gauges: {@code tables}, {@code segments}, {@code lastSeqno}, {@code keyspaces}.
 * </ul>
 *
 * <p>Thread-safety: immutable.
 */
public final class Stats {
  private final Map<String, Long> values;

  Stats(Map<String, Long> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  /** Every value by name. */
  public Map<String, Long> asMap() {
    return values;
  }

  /** A value by name; {@link InvalidArgumentException} for an unknown name. */
  public long get(String name) {
    Long v = values.get(name);
    if (v == null)
      throw new InvalidArgumentException(
          "no statistic named '" + name + "'; known: " + values.keySet());
    return v;
  }

  public long userBytesWritten() {
    return get("userBytesWritten");
  }

  public long stallNanos() {
    return get("stallNanos");
  }

  public long flushes() {
    return get("flushes");
  }

  public long memoryInUse() {
    return get("memoryInUse");
  }

  public long lastSeqno() {
    return get("lastSeqno");
  }

  /**
   * Bytes written to disk (WAL, segments, key index and its compactions, the delete list, garbage
   * collection's rewritten segments, manifests) over user bytes written; 0 before any write.
   */
  public double writeAmplification() {
    long user = get("userBytesWritten");
    if (user == 0) return 0;
    return (double)
            (get("walBytesWritten")
                + get("segmentBytesWritten")
                + get("indexBytesWritten")
                + get("compactionBytesWritten")
                + get("deleteListBytesWritten")
                + get("gcBytesWritten")
                + get("manifestBytesWritten"))
        / user;
  }

  /**
   * Disk space in use over the live part of the log segments: {@code (diskBytes -
   * preallocatedBytes) / (segmentBytes - segmentStaleBytes)}; 0 before any flush. Both sides are
   * on-disk bytes (compressed alike), so it measures what garbage, checkpoints, the key index, the
   * delete list and the WAL add to the data; the segments' preallocated tails hold nothing yet and
   * are left out. A fresh store of a few documents still reads high: its WAL and manifests outweigh
   * its data.
   */
  public double spaceAmplification() {
    long live = get("segmentBytes") - get("segmentStaleBytes");
    if (live <= 0) return 0;
    return (double) (get("diskBytes") - get("preallocatedBytes")) / live;
  }

  /**
   * Read amplification of point gets: reads from disk per get, that is block cache misses of the
   * key index (index, filter and data blocks) and of segment index pages, and segment blocks read
   * for documents; a get answered from the write cache or the block cache reads nothing. Reads of
   * scans are counted too, so read it from a workload of gets.
   */
  public double readsPerGet() {
    long gets = get("gets");
    if (gets == 0) return 0;
    return (double)
            (get("blockCacheMisses") - get("blockCacheDocumentMisses") + get("documentReads"))
        / gets;
  }

  @Override
  public String toString() {
    return "Stats" + values;
  }
}
