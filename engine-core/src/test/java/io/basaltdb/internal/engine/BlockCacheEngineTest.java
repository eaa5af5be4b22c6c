package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.storage.MemStorage;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The store's block cache: what it holds, what it costs the quota, what a miss costs a get. */
class BlockCacheEngineTest {
  private static final int KEYS = 4000;

  private static Options options() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(256 << 10)
        .blockSize(512)
        .l0CompactionTrigger(2)
        .level1Bytes(16 << 10)
        .levelMultiplier(4)
        .tableTargetBytes(16 << 10);
  }

  private static void load(Engine e) {
    for (int i = 0; i < KEYS; i++) put(e, i, "v" + i);
    e.flush();
    assertTrue(e.waitForCompactions(30_000));
  }

  private static void put(Engine e, int i, String v) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, ("key-" + i).getBytes(), v.getBytes());
    e.write(b);
  }

  private static void getAll(Engine e) {
    for (int i = 0; i < KEYS; i += 7)
      assertArrayEquals(("v" + i).getBytes(), e.get(1, ("key-" + i).getBytes()), "key-" + i);
  }

  @Test
  void indexAndFilterBlocks_areCachedOffHeap_insideTheQuota_andFreedAtClose() {
    MemStorage storage = new MemStorage(1);
    Engine e = Engine.open(storage, options());
    load(e);
    Map<String, Long> s = e.stats();
    assertTrue(s.get("tables") > 1, "several tables: " + s);
    assertTrue(
        s.get("blockCacheIndexBytes") > 0 && s.get("blockCacheFilterBytes") > 0, s.toString());
    assertEquals(
        s.get("memoryQuota"),
        s.get("writeCacheQuota") + s.get("blockCacheCapacity"),
        "the write cache and the block cache split the quota");
    assertEquals(8L << 20, s.get("blockCacheCapacity"), "default: half the quota");
    assertTrue(
        s.get("memoryInUse") >= s.get("blockCacheBytes") + s.get("writeCacheMemory") - 1,
        s.toString());
    assertEquals(
        0,
        s.get("indexBlockReads") + s.get("documentReads"),
        "compaction's reads are not counted: " + s);
    long misses = s.get("blockCacheMisses");
    getAll(e);
    s = e.stats();
    assertEquals(
        misses,
        s.get("blockCacheMisses") - s.get("indexBlockReads") - s.get("blockCacheDocumentMisses"),
        "index and filter blocks: tables start cached, and everything fits");
    assertEquals(KEYS / 7 + 1, s.get("documentReads"), "each document read once: " + s);
    assertEquals(0, s.get("blockCacheDocumentBytes"), "a document read once is not cached: " + s);
    getAll(e); // the second read of a document or data block caches it
    s = e.stats();
    assertEquals(2 * (KEYS / 7 + 1), s.get("documentReads"), "each document read again: " + s);
    assertTrue(
        s.get("blockCacheDataBytes") > 0 && s.get("blockCacheDocumentBytes") > 0, s.toString());
    long reads = s.get("documentReads");
    long dataReads = s.get("indexBlockReads");
    long hits = s.get("blockCacheDocumentHits");
    misses = s.get("blockCacheMisses");
    getAll(
        e); // a third time: key index data blocks and documents come from the cache, nothing from
    // the files
    s = e.stats();
    assertEquals(reads, s.get("documentReads"));
    assertEquals(dataReads, s.get("indexBlockReads"));
    assertEquals(misses, s.get("blockCacheMisses"));
    assertEquals(hits + KEYS / 7 + 1, s.get("blockCacheDocumentHits"));
    assertTrue(
        s.get("blockCacheHits") > KEYS / 7,
        "every probed table's filter and index came from the cache");
    BlockCacheHandle h = new BlockCacheHandle(e);
    e.close();
    assertEquals(0, h.cache.bytes(), "every cached byte freed at close");
    assertEquals(0, Mem.liveBlocksOf(h.cache));
  }

  /**
   * Gets of uniformly random keys over documents far bigger than the cache: almost no document is
   * read twice while the cache could still hold it, so few are cached (none pushes out the key
   * index's blocks), while a small hot set read over and over is cached and hits.
   */
  @Test
  void randomGetsOverDataFarBiggerThanTheCache_cacheFewDocuments_butAHotSetIsCached() {
    MemStorage storage = new MemStorage(3);
    Options o = options().blockCacheSize(1 << 20); // 1 MiB against about 20 MiB of documents
    try (Engine e = Engine.open(storage, o)) {
      byte[] value = new byte[1000];
      int keys = 20_000;
      for (int i = 0; i < keys; i++) {
        value[0] = (byte) i;
        Batch b = new Batch(1);
        b.add(1, Batch.PUT, ("key-" + i).getBytes(), value.clone());
        e.write(b);
      }
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      java.util.Random rnd = new java.util.Random(3);
      for (int n = 0; n < 20_000; n++) {
        int i = rnd.nextInt(keys);
        assertEquals((byte) i, e.get(1, ("key-" + i).getBytes())[0]);
      }
      Map<String, Long> s = e.stats();
      long docMisses = s.get("blockCacheDocumentMisses");
      assertTrue(
          s.get("blockCacheDeclined") > docMisses * 8 / 10,
          "most documents read once are turned away: " + s);
      assertTrue(
          s.get("blockCacheEvictions") < docMisses / 5,
          "few blocks were cached, so few evicted: " + s);
      long hits = s.get("blockCacheDocumentHits");
      for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 50; i++) e.get(1, ("key-" + i).getBytes());
      }
      s = e.stats();
      assertTrue(
          s.get("blockCacheDocumentHits") - hits >= 50 * 8,
          "the hot set hits from its third read on: " + s);
    }
  }

  @Test
  void withoutACache_everyProbeReadsTheIndexAndFilterAgain_andGetsStayCorrect() {
    MemStorage storage = new MemStorage(2);
    try (Engine e = Engine.open(storage, options())) {
      load(e);
    }
    try (Engine e = Engine.open(storage, options().blockCacheSize(0))) {
      getAll(e);
      Map<String, Long> s = e.stats();
      assertEquals(0, s.get("blockCacheBytes"));
      assertTrue(
          s.get("blockCacheMisses") >= 2L * (KEYS / 7),
          "an index and a key index block read per get at least: " + s);
      double readsPerGet =
          (double)
                  (s.get("blockCacheMisses")
                      - s.get("blockCacheDocumentMisses")
                      + s.get("documentReads"))
              / s.get("gets"); // io.basaltdb.Stats.readsPerGet
      // A filter the cache does not hold is not read: the key index block it would spare answers as
      // well.
      assertEquals(
          3.0,
          readsPerGet,
          0.01,
          "an index, a key index block and a document per get, no filter: " + s);
      getAll(e);
      assertEquals(2L * (KEYS / 7 + 1), e.stats().get("documentReads"), "no document cached");
    }
    try (Engine e =
        Engine.open(storage, options().blockCacheSize(4 << 10))) { // a few blocks at a time
      getAll(e);
      getAll(e);
      Map<String, Long> s = e.stats();
      assertTrue(s.get("blockCacheEvictions") > 0 && s.get("blockCacheHits") > 0, s.toString());
      assertTrue(s.get("blockCacheBytes") <= 4 << 10, s.toString());
    }
  }

  @Test
  void aCachedFilterSparesAbsentKeysTheirBlockRead_aColdOneIsNotReadBack() {
    MemStorage storage = new MemStorage(4);
    try (Engine e = Engine.open(storage, options())) {
      load(e);
    }
    for (long cacheSize :
        new long[] {-1, 0}) { // the default cache holds every filter; none without a cache
      try (Engine e = Engine.open(storage, options().blockCacheSize(cacheSize))) {
        Map<String, Long> before = e.stats();
        for (int i = 0; i < KEYS; i += 7)
          assertEquals(null, e.get(1, ("key-" + i + "x").getBytes()), "absent");
        Map<String, Long> after = e.stats();
        long dataReads = after.get("indexBlockReads") - before.get("indexBlockReads");
        long filterMisses =
            after.get("blockCacheMisses")
                - before.get("blockCacheMisses")
                - dataReads
                - (after.get("blockCacheDocumentMisses") - before.get("blockCacheDocumentMisses"));
        if (cacheSize < 0) {
          assertTrue(
              dataReads < KEYS / 7 / 20,
              "cached filters turn nearly every absent key away: " + dataReads);
        } else {
          assertTrue(
              dataReads > KEYS / 7 * 9 / 10,
              "no filter read back: each absent key's data block answers: " + dataReads);
          assertTrue(
              filterMisses <= after.get("gets") - before.get("gets"),
              "an index block per get, no filter: " + after);
        }
      }
    }
  }

  @Test
  void aCacheThatLeavesTheWriteCacheNoRoom_isRefused() {
    MemStorage storage = new MemStorage(3);
    InvalidArgumentException ex =
        assertThrows(
            InvalidArgumentException.class,
            () -> Engine.open(storage, options().blockCacheSize(16L << 20)));
    assertTrue(ex.getMessage().contains("blockCacheSize"), ex.getMessage());
  }

  /** The engine's cache, kept past close (the field is package-private). */
  private record BlockCacheHandle(io.basaltdb.internal.cache.BlockCache cache) {
    BlockCacheHandle(Engine e) {
      this(e.blockCache());
    }
  }
}
