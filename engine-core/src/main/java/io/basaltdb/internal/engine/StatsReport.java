package io.basaltdb.internal.engine;

import io.basaltdb.Options;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.index.LevelTargets;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.ItemCounter;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.memory.AlignedBuffers;
import io.basaltdb.internal.memory.MemoryQuota;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Assembles the store's stats (io.basaltdb.Stats documents each): the engine's counters, the key
 * index accounting the current manifest persists (so it survives reopening and never counts a
 * version twice), memory, block cache and the shape of the current version. Each stat's name
 * matches its counter.
 *
 * <p>Thread-safety: stateless; the sums are racy, which is fine for stats.
 */
final class StatsReport {
  private StatsReport() {}

  /**
   * The key index bytes compaction still has to rewrite, estimated as RocksDB's {@code
   * estimate-pending-compaction-bytes} is: level 0's bytes once it holds {@code
   * l0CompactionTrigger} tables, and for each level >= 1 the bytes over its target times the
   * fan-out plus one (each byte moved down merges with about that many below); for the store and
   * each keyspace.
   */
  private static void pendingCompaction(
      Map<String, Long> m, Version v, KeyspaceCatalog catalog, io.basaltdb.Options o) {
    long all = 0;
    Map<String, Long> each = new LinkedHashMap<>();
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      if (!catalog.isLive(e.getKey())) continue;
      KeyspaceFiles f = e.getValue();
      long pending = 0;
      if (f.level(0).size() >= o.l0CompactionTrigger())
        for (KeyspaceFiles.Table t : f.level(0)) pending += t.bytes();
      LevelTargets targets = LevelTargets.of(f, o);
      for (int l = 1; l < KeyspaceFiles.MAX_LEVELS - 1; l++) {
        long over = f.levelBytes(l) - targets.target(l);
        if (over > 0) pending += over * (o.levelMultiplier() + 1L);
      }
      all += pending;
      each.put("keyspace." + catalog.describe(e.getKey()) + ".pendingCompactionBytes", pending);
    }
    m.put("pendingCompactionBytes", all);
    m.putAll(each);
  }

  /**
   * Garbage collection: fragmentation, the delete list, segment compactions, per store and
   * keyspace.
   */
  private static void garbage(
      Map<String, Long> m, EngineStats s, Version v, KeyspaceCatalog catalog) {
    long stale = 0,
        total = 0,
        garbage = 0,
        pending = 0,
        records = 0,
        deleteBytes = 0,
        deleteLogical = 0;
    long deleteTables = 0;
    Map<String, Long> perKeyspace = new LinkedHashMap<>();
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      KeyspaceFiles f = e.getValue();
      long[] st = SegmentCompactor.staleAndTotal(f);
      long hidden = s.shadowed.pending(f, st[1] - st[0]);
      stale += st[0];
      total += st[1];
      pending += hidden;
      for (Manifest.SegmentGarbage g : f.garbage.values()) garbage += g.bytes();
      for (KeyspaceFiles.DeleteTable d : f.deletes) {
        records += d.meta().records();
        deleteLogical += d.meta().logicalBytes();
        deleteBytes += d.reader().info().fileSize();
        deleteTables++;
      }
      if (catalog.isLive(e.getKey())) {
        String name = catalog.describe(e.getKey());
        perKeyspace.put("keyspace." + name + ".segmentBytes", st[1]);
        perKeyspace.put("keyspace." + name + ".segmentStaleBytes", st[0]);
        perKeyspace.put("keyspace." + name + ".fragmentationPermille", permille(st[0], st[1]));
        perKeyspace.put("keyspace." + name + ".pendingGarbageBytes", hidden);
      }
    }
    m.put("segmentBytes", total);
    m.put("segmentStaleBytes", stale);
    m.put("segmentGarbageBytes", garbage);
    m.put("fragmentationPermille", permille(stale, total));
    m.put("pendingGarbageBytes", pending);
    m.put("deleteListTables", deleteTables);
    m.put("deleteListRecords", records);
    m.put("deleteListBytes", deleteBytes);
    m.put("deleteListLogicalBytes", deleteLogical);
    m.put("deleteListCompactions", s.deleteListCompactions.sum());
    m.put("deleteListBytesRead", s.deleteListBytesRead.sum());
    m.put("deleteListBytesWritten", s.deleteListBytesWritten.sum());
    m.put("gcRuns", s.gcRuns.sum());
    m.put("gcBytesRead", s.gcBytesRead.sum());
    m.put("gcBytesWritten", s.gcBytesWritten.sum());
    m.put("gcBytesReclaimed", s.gcBytesReclaimed.sum());
    m.put("gcDocumentsDropped", s.gcDocumentsDropped.sum());
    m.put("gcFailures", s.gcFailures.sum());
    m.put("gcSlowdowns", s.gcSlowdowns.sum());
    m.put("gcSlowdownNanos", s.gcSlowdownNanos.sum());
    m.put("gcStalls", s.gcStalls.sum());
    m.put("gcStallNanos", s.gcStallNanos.sum());
    m.put("gcColdSegments", s.gcColdSegments.sum());
    m.put("gcColdBytesWritten", s.gcColdBytesWritten.sum());
    m.put("coldPassSegments", s.coldPassSegments.sum());
    m.putAll(perKeyspace);
  }

  private static long permille(long part, long whole) {
    return whole == 0 ? 0 : Math.round(1000.0 * part / whole);
  }

  static Map<String, Long> collect(
      EngineStats s,
      Store.FileStats files,
      Versions versions,
      KeyspaceCatalog catalog,
      MemoryQuota writeMemory,
      BlockCache cache,
      AlignedBuffers readBuffers,
      AlignedBuffers writeBuffers,
      Options options) {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("puts", s.puts.sum());
    m.put("deletes", s.deletes.sum());
    m.put("gets", s.gets.sum());
    m.put("batches", s.batches.sum());
    m.put("groupCommits", s.groupCommits.sum());
    m.put("userBytesWritten", s.userBytesWritten.sum());
    m.put("walBytesWritten", s.walBytesWritten.sum());
    m.put("walSyncs", s.walSyncs.sum());
    m.put("walSkippedBatches", s.walSkippedBatches.sum());
    m.put("walSkippedBytes", s.walSkippedBytes.sum());
    m.put("segmentBytesWritten", s.segmentBytesWritten.sum());
    m.put("indexBytesWritten", s.indexBytesWritten.sum());
    m.put("manifestBytesWritten", s.manifestBytesWritten.sum());
    m.put("flushes", s.flushes.sum());
    m.put("stalls", s.stalls.sum());
    m.put("stallNanos", s.stallNanos.sum());
    m.put("slowdowns", s.slowdowns.sum());
    m.put("slowdownNanos", s.slowdownNanos.sum());
    m.put("tableLookups", s.tableLookups.sum());
    m.put("documentReads", s.documentReads.sum());
    m.put("batchedGets", s.batchedGets.sum());
    m.put("batchedReads", s.batchedReads.sum());
    m.put("batchedReadRounds", s.batchedReadRounds.sum());
    m.put("batchedReadsInPlace", s.batchedReadsInPlace.sum());
    m.put("hintMisses", s.hintMisses.sum());
    m.put("expiredRecordsCompacted", s.expiredRecordsCompacted.sum());
    m.put("expiryCompactions", s.expiryCompactions.sum());
    m.put("indexBlockReads", cache == null ? 0 : cache.misses(BlockCache.Kind.TABLE_DATA));
    // the key index's other reads: index blocks and HB+-trie navigation pages, filters
    m.put("indexNavigationReads", cache == null ? 0 : cache.misses(BlockCache.Kind.TABLE_INDEX));
    m.put("indexFilterReads", cache == null ? 0 : cache.misses(BlockCache.Kind.TABLE_FILTER));
    m.put("compactions", s.compactions.sum());
    m.put("trivialMoves", s.trivialMoves.sum());
    m.put("l0Merges", s.l0Merges.sum());
    m.put("guardsAdded", s.guardsAdded.sum());
    m.put("guardPushes", s.guardPushes.sum());
    m.put("guardMerges", s.guardMerges.sum());
    m.put("hintsRefreshed", s.hintsRefreshed.sum());
    m.put("flushStaleReported", s.flushStaleReported.sum());
    m.put("hashedIndexBytes", s.hashedIndexBytes.getAsLong());
    m.put("hashedIndexNodeBytes", s.hashedIndexNodeBytes.getAsLong());
    m.put("trieCheckpoints", s.trieCheckpoints.sum());
    m.put("trieCheckpointPages", s.trieCheckpointPages.sum());
    m.put("trieCheckpointFailures", s.trieCheckpointFailures.sum());
    m.put("trieExpiredRemoved", s.trieExpiredRemoved.sum());
    m.put("trieCheckpointRecordsLoaded", s.trieCheckpointRecordsLoaded.sum());
    m.put("trieDoubleWritesApplied", s.trieDoubleWritesApplied.sum());
    m.put("trieLogBytesReplayed", s.trieLogBytesReplayed.sum());
    m.put("l0MergeStaleReported", s.l0MergeStaleReported.sum());
    m.put("compactionBytesRead", s.compactionBytesRead.sum());
    m.put("compactionBytesWritten", s.compactionBytesWritten.sum());
    m.put("changeFeeds", s.changeFeeds.sum());
    m.put("changesReturned", s.changesReturned.sum());
    m.put("changesSkippedStale", s.changesSkippedStale.sum());
    m.put("changesSkippedExact", s.changesSkippedExact.sum());
    Manifest.Counters total = files.counters();
    m.put("flushedRecords", total.flushedVersions());
    m.put("flushedBytes", total.flushedBytes());
    m.put("discardedVersions", total.discardedVersions());
    m.put("discardedBytes", total.discardedBytes());
    m.put("liveDataBytes", total.liveBytes());
    m.put("diskBytes", files.diskBytes());
    m.put("checkpointOnlyBytes", files.checkpointOnlyBytes());
    m.put("checkpointsDroppedForSpace", s.checkpointsDroppedForSpace.sum());
    m.put("l0Stalls", s.l0Stalls.sum());
    m.put("diskFullRefusals", s.diskFullRefusals.sum());
    m.put("l0StallNanos", s.l0StallNanos.sum());
    m.put("obsoleteDeleteFailures", s.obsoleteDeleteFailures.sum());
    m.put("preallocatedBytes", files.preallocatedBytes());
    m.put("directWriteBytes", files.directWriteBytes());
    m.put("directWriteBufferedBytes", files.directWriteBufferedBytes());
    Version v = versions.current();
    garbage(m, s, v, catalog);
    m.put("writeCacheBytes", v.active.bytes() + (v.immutable == null ? 0 : v.immutable.bytes()));
    long cacheBytes = cache == null ? 0 : cache.bytes();
    long bufferBytes = readBuffers == null ? 0 : readBuffers.bytes();
    long writeBufferBytes = writeBuffers == null ? 0 : writeBuffers.bytes();
    m.put("memoryInUse", writeMemory.usedBytes() + cacheBytes + bufferBytes + writeBufferBytes);
    m.put("memoryQuota", options.memoryQuota());
    m.put("writeCacheMemory", writeMemory.usedBytes());
    m.put("writeCacheQuota", writeMemory.limit());
    m.put("blockCacheBytes", cacheBytes);
    m.put("blockCacheCapacity", cache == null ? 0 : cache.capacity());
    m.put("readBufferBytes", bufferBytes);
    m.put("readBufferPoolBytes", readBuffers == null ? 0 : readBuffers.pooledBytes());
    m.put("readBufferQuota", readBuffers == null ? 0 : readBuffers.limit());
    m.put("readBufferOverflows", readBuffers == null ? 0 : readBuffers.overflows());
    m.put("writeBufferBytes", writeBufferBytes);
    m.put("blockCacheIndexBytes", cache == null ? 0 : cache.bytes(BlockCache.Kind.TABLE_INDEX));
    m.put("blockCacheFilterBytes", cache == null ? 0 : cache.bytes(BlockCache.Kind.TABLE_FILTER));
    m.put("blockCacheDataBytes", cache == null ? 0 : cache.bytes(BlockCache.Kind.TABLE_DATA));
    m.put("blockCachePageBytes", cache == null ? 0 : cache.bytes(BlockCache.Kind.SEGMENT_PAGE));
    m.put("blockCacheDocumentBytes", cache == null ? 0 : cache.bytes(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheDocumentHits", cache == null ? 0 : cache.hits(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheDocumentMisses", cache == null ? 0 : cache.misses(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheHits", cache == null ? 0 : cache.hits());
    m.put("blockCacheMisses", cache == null ? 0 : cache.misses());
    m.put("blockCacheEvictions", cache == null ? 0 : cache.evictions());
    m.put("blockCacheDeclined", cache == null ? 0 : cache.declined());
    int tables = 0, segments = 0;
    long tableBytes = 0, indexBytes = 0, trieTables = 0;
    for (KeyspaceFiles f : v.files.values()) {
      tables += f.tables.size();
      segments += f.segments.size();
      for (KeyspaceFiles.Table t : f.tables) {
        tableBytes += t.reader().info().fileSize();
        indexBytes += t.reader().indexBytes();
        if (t.reader().trieChunkBytes() != 0) trieTables++;
      }
    }
    m.put("tables", (long) tables);
    m.put("keyIndexBytes", tableBytes);
    m.put("keyIndexIndexBytes", indexBytes);
    m.put("trieTables", trieTables);
    pendingCompaction(m, v, catalog, options);
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      long n = 0;
      for (KeyspaceFiles f : v.files.values()) n += f.level(l).size();
      m.put("tablesAtLevel" + l, n);
    }
    long guards = 0, emptyGuards = 0, maxGuardTables = 0;
    for (KeyspaceFiles f : v.files.values()) {
      if (!f.guarded()) continue;
      for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
        if (f.level(l).isEmpty()) continue; // an empty level's guards are not probed
        for (int g = 0; g < f.guardCount(l); g++) {
          int n = f.guardTables(l, g).size();
          guards++;
          if (n == 0) emptyGuards++;
          maxGuardTables = Math.max(maxGuardTables, n);
        }
      }
    }
    m.put("guards", guards);
    m.put("emptyGuards", emptyGuards);
    m.put("maxGuardTables", maxGuardTables);
    m.put("segments", (long) segments);
    m.put("lastSeqno", versions.lastSeqno());
    m.put("keyspaces", (long) catalog.size());
    ItemCounter items = versions.items();
    if (items != null) { // exact item counts: the store's, then each keyspace's
      long all = 0;
      Map<String, Long> each = new LinkedHashMap<>();
      for (String name : catalog.names()) {
        int id = catalog.id(name);
        if (id < 0) continue; // dropped meanwhile
        long n = items.count(id);
        all += n;
        each.put("keyspace." + name + ".items", n);
      }
      m.put("items", all);
      m.putAll(each);
    }
    return m;
  }
}
