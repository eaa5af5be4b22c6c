package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.index.LevelTargets;
import io.basaltdb.internal.engine.read.EngineSnapshot;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;

/**
 * Leveled compaction against an exact account: every key index record a flush writes either stays
 * in a table or is handed to the discard listener, once, and only records that are superseded or
 * are tombstones with nothing below them are discarded. Then the shape of the tree under dynamic
 * and static level targets.
 */
class CompactionTest {
  @BeforeEach
  void quickQuiet() {
    SegmentCompactor.quietNanos =
        200_000_000L; // waitForCompactions waits for the quiet level-0 merge
  }

  @AfterEach
  void defaultQuiet() {
    SegmentCompactor.quietNanos = 2_000_000_000L;
  }

  static Options tinyLevels() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(64 << 10)
        .segmentSize(256 << 10)
        .blockSize(512)
        .syncMode(SyncMode.NONE)
        .l0CompactionTrigger(2)
        .l0StopWritesTrigger(8)
        .level1Bytes(1024)
        .levelMultiplier(2)
        .tableTargetBytes(1024);
  }

  /**
   * Who reports superseded versions besides the merges that drop them: nobody, the level-0 merges
   * that reveal ({@link Options#l0RevealRatio}: here every one), the flushes ({@link
   * Options#flushLookups}), or the flushes from what each write's item-count lookup found ({@link
   * Options#exactItemCounts}).
   */
  enum Reporting {
    DROPS,
    REVEALS,
    LOOKUPS,
    COUNTS
  }

  @ParameterizedTest(name = "dynamicLevelTargets={0}, reporting={1}, guards={2}")
  @org.junit.jupiter.params.provider.CsvSource({
    "true,DROPS,false",
    "false,DROPS,false",
    "true,REVEALS,false",
    "false,REVEALS,false",
    "true,LOOKUPS,false",
    "false,LOOKUPS,false",
    "true,DROPS,true",
    "true,REVEALS,true",
    "true,LOOKUPS,true",
    "true,COUNTS,false",
    "true,COUNTS,true"
  })
  void everyFlushedRecord_isKeptOrDiscardedOnce_andOnlyDeadOnesAreDiscarded(
      boolean dynamic, Reporting reporting, boolean guards) throws Exception {
    checkDiscardsOnce(dynamic, reporting, guards);
  }

  private static void checkDiscardsOnce(boolean dynamic, Reporting reporting, boolean guards)
      throws Exception {
    boolean lookups = reporting == Reporting.LOOKUPS;
    Map<Long, byte[]> keyOfSeqno = new HashMap<>();
    Map<String, Long> newest = new HashMap<>();
    Set<Long> tombstones = new HashSet<>();
    Map<String, byte[]> model = new HashMap<>();
    List<long[]> discarded = java.util.Collections.synchronizedList(new ArrayList<>());
    Random rnd = new Random(42);
    Options o =
        tinyLevels()
            .dynamicLevelTargets(dynamic)
            .flushLookups(lookups)
            .exactItemCounts(reporting == Reporting.COUNTS)
            .l0RevealRatio(reporting == Reporting.REVEALS ? 1 << 20 : 0);
    // Revealing merges are level-0 merges: level 0 tiers while the base level holds the rest. Under
    // guards the pushes reveal too, and the tiny levels make many of them.
    if (reporting == Reporting.REVEALS && !guards)
      o.level1Bytes(1 << 20).tableTargetBytes(16 << 10).l0BaseRatio(4);
    if (guards)
      o.keyIndexGuards(true)
          .guardLastLevelBits(2)
          .guardBitsStep(1)
          .guardMaxTables(3); // every guard job runs
    try (Engine e = Engine.open(new MemStorage(42), o)) {
      e.setDiscardListener((ks, seqno, size) -> discarded.add(new long[] {ks, seqno, size}));
      for (int i = 0; i < 6000; i++) {
        String k = "key-" + rnd.nextInt(300);
        Batch b = new Batch(1);
        long seqno = e.versions().lastSeqno() + 1;
        if (rnd.nextInt(5) == 0) {
          b.add(1, Batch.DELETE, k.getBytes(), null);
          tombstones.add(seqno);
          model.remove(k);
        } else {
          byte[] v = new byte[1 + rnd.nextInt(100)];
          rnd.nextBytes(v);
          b.add(1, Batch.PUT, k.getBytes(), v);
          model.put(k, v);
        }
        e.write(b);
        assertEquals(seqno, e.versions().lastSeqno());
        keyOfSeqno.put(seqno, k.getBytes());
        newest.put(k, seqno);
      }
      e.flush();
      assertTrue(e.waitForCompactions(30_000), "compaction settled");
      Map<String, Long> st = e.stats();
      assertTrue(st.get("compactions") > 5, "compactions ran: " + st);
      if (reporting == Reporting.REVEALS && guards) {
        assertTrue(st.get("guardPushes") > 3, "guard pushes: " + st);
      } else if (reporting == Reporting.REVEALS) {
        assertTrue(st.get("l0Merges") > 3, "level-0 merges: " + st);
      } else if (dynamic) { // level 0 compacts into the last level while the store is small
        assertTrue(st.get("tablesAtLevel6") > 0, "last level: " + st);
      } else {
        assertTrue(
            st.get("tablesAtLevel3") + st.get("tablesAtLevel4") + st.get("tablesAtLevel5") > 0,
            "deep levels: " + st);
      }
      assertTrue(!discarded.isEmpty(), "versions were discarded");
      if (guards) {
        assertTrue(st.get("guardsAdded") > 0 && st.get("guards") > 1, "guards chosen: " + st);
        if (reporting != Reporting.REVEALS)
          assertTrue(st.get("guardMerges") > 0, "in-place merges: " + st);
      }
      // Records still in tables that no flush reported stale (a reported one waits there for a
      // compaction).
      DiscardAccounting.Census census = DiscardAccounting.census(e).getValue().get(1);
      long kept = census.records();
      Set<Long> keptSeqnos = census.seqnos();
      if (lookups || reporting == Reporting.COUNTS) {
        assertTrue(st.get("flushStaleReported") > 0, "flushes reported stale versions: " + st);
      } else {
        assertEquals(0L, st.get("flushStaleReported"), st.toString());
      }
      if (reporting == Reporting.REVEALS) {
        assertTrue(
            st.get("l0MergeStaleReported") > 0, "level-0 merges reported stale versions: " + st);
      } else {
        assertEquals(0L, st.get("l0MergeStaleReported"), st.toString());
      }
      Set<Long> seen = new HashSet<>();
      for (long[] d : discarded) {
        long seqno = d[1];
        assertTrue(seen.add(seqno), "seqno " + seqno + " discarded twice");
        assertTrue(
            !keptSeqnos.contains(seqno), "seqno " + seqno + " discarded but still in a table");
        String k = new String(keyOfSeqno.get(seqno));
        assertTrue(
            newest.get(k) != seqno || tombstones.contains(seqno),
            "seqno " + seqno + " is the live version of " + k + " and was discarded");
        assertTrue(d[2] > 0, "document size");
      }
      assertEquals(
          st.get("flushedRecords"),
          kept + discarded.size(),
          "every flushed record kept or discarded, once");
      assertEquals(st.get("discardedVersions"), (long) discarded.size());
      for (int k = 0; k < 300; k++) {
        String key = "key-" + k;
        byte[] got = e.get(1, key.getBytes());
        if (model.containsKey(key)) assertArrayEquals(model.get(key), got, key);
        else assertNull(got, key);
      }
    }
  }

  @Test
  void tablesReplacedByCompaction_stayWhileASnapshotUsesThem_thenGo() throws Exception {
    MemStorage storage = new MemStorage(7);
    try (Engine e = Engine.open(storage, tinyLevels().checkpointRetentionMillis(0))) {
      for (int i = 0; i < 1500; i++) put(e, "key-" + (i % 200), "old-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      EngineSnapshot snap = e.snapshot();
      Set<String> pinned = new HashSet<>();
      for (KeyspaceFiles.Table t : snap.version.files(1).tables)
        pinned.add(FileNames.table(1, t.fileNumber()));
      Map<String, byte[]> before = new HashMap<>();
      for (int k = 0; k < 200; k++) before.put("key-" + k, snap.get(1, ("key-" + k).getBytes()));
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "new-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      Set<Long> current = new HashSet<>();
      for (KeyspaceFiles.Table t : e.versions().current().files(1).tables)
        current.add(t.fileNumber());
      assertTrue(
          snap.version.files(1).tables.stream().anyMatch(t -> !current.contains(t.fileNumber())),
          "compaction replaced some of the snapshot's tables");
      for (String f : pinned) assertTrue(storage.exists(f), f + " deleted under an open snapshot");
      for (int k = 0; k < 200; k++) {
        assertArrayEquals(
            before.get("key-" + k),
            snap.get(1, ("key-" + k).getBytes()),
            "snapshot read of key-" + k);
      }
      snap.close();
      long deadline = System.currentTimeMillis() + 10_000;
      Set<String> left = new HashSet<>(pinned);
      while (System.currentTimeMillis() < deadline) { // deletion runs on a compaction thread
        left.removeIf(f -> !storage.exists(f));
        left.removeIf(
            f ->
                current.contains(
                    Long.parseLong(f.substring(f.lastIndexOf('/') + 1, f.length() - 4))));
        if (left.isEmpty()) break;
        Thread.sleep(10);
      }
      assertTrue(left.isEmpty(), "tables no version names any more were not deleted: " + left);
    }
  }

  @Test
  void aLongCompaction_doesNotPinFlushedWriteCaches() throws Exception {
    java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    // The first compaction's first table write waits, outside any lock of the storage, until
    // released.
    io.basaltdb.internal.storage.Storage storage =
        HookedStorage.beforeWrite(
            new MemStorage(12),
            name -> {
              if (name.contains("/index/")
                  && Thread.currentThread().getName().startsWith("basalt-compactor")) {
                started.countDown();
                try {
                  release.await(30, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException ex) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    // A 512 KiB write cache in a 2 MiB quota, 1 MiB of it the write cache's allocator: room for the
    // write cache (active and immutable) and the allocator's headroom, not for a third skiplist.
    // While
    // the compaction waits, write caches fill and flush; the one active when the job was picked
    // must not
    // stay allocated until the job ends.
    Options o =
        Options.defaults()
            .memoryQuota(2L << 20)
            .writeCacheSize(512 << 10)
            .l0CompactionTrigger(2)
            .l0StopWritesTrigger(1000)
            .compactionThreads(1);
    try (Engine e = Engine.open(storage, o)) {
      try {
        checkWhileCompactionWaits(e, started, release);
      } finally {
        release.countDown(); // before close, which waits for the compaction
      }
    }
  }

  private static void checkWhileCompactionWaits(
      Engine e,
      java.util.concurrent.CountDownLatch started,
      java.util.concurrent.CountDownLatch release)
      throws Exception {
    {
      int i = 0;
      while (started.getCount() > 0) {
        put(e, "key-" + (i++ % 5000), "v".repeat(200));
        assertTrue(i < 200_000, "a compaction started");
      }
      long flushes = e.stats().get("flushes");
      for (int j = 0; j < 10_000; j++)
        put(e, "key-" + (i++ % 5000), "w".repeat(200)); // about 2 MiB
      assertTrue(
          e.stats().get("flushes") >= flushes + 3,
          "write caches flushed during the compaction: " + e.stats());
      e.flush();
      assertEquals(0, e.stats().get("compactions"), "the first compaction is still running");
      long deadline = System.currentTimeMillis() + 5_000;
      while (e.versions().liveWriteCaches() > 1 && System.currentTimeMillis() < deadline) {
        Thread.sleep(5); // the flusher lets go of the flushed cache just after installing its table
      }
      assertEquals(
          1,
          e.versions().liveWriteCaches(),
          "every flushed write cache is freed; only the active one is left");
      release.countDown();
      assertTrue(e.waitForCompactions(30_000));
      assertNull(e.state().failure());
      assertArrayEquals("w".repeat(200).getBytes(), e.get(1, ("key-" + (i - 1) % 5000).getBytes()));
    }
  }

  @Test
  void slowCompaction_stallsWritersAtTheLevel0Limit_andCountsIt() throws Exception {
    MemStorage storage = new MemStorage(9);
    storage.setFaultInjector(
        (op, name) -> {
          if (op == MemStorage.Op.WRITE
              && name.contains("/index/")
              && Thread.currentThread().getName().startsWith("basalt-compactor")) {
            try {
              // every write of a compaction's table takes 25 ms: a table gathers its blocks into
              // one write (TableWriter.WRITE_BUFFER), where these tiny ones took five of 5 ms
              Thread.sleep(25);
            } catch (InterruptedException ex) {
              Thread.currentThread().interrupt();
            }
          }
          return MemStorage.Fault.NONE;
        });
    try (Engine e =
        Engine.open(
            storage,
            tinyLevels().l0CompactionTrigger(2).l0StopWritesTrigger(3).writeCacheSize(64 << 10))) {
      // Flushes of 64 KiB outrun compactions that take 25 ms per table: level 0 reaches its limit
      // within a few flushes. Writes go on until the stall is counted (3,000 writes, about five
      // flushes, missed it when compaction happened to keep up), with a bound that fails the test.
      int written = 0;
      while (e.stats().get("l0Stalls") == 0 && written < 200_000) {
        for (int end = written + 500; written < end; written++)
          put(e, "key-" + written, "value-" + written + "-".repeat(40));
      }
      Map<String, Long> st = e.stats();
      assertTrue(
          st.get("l0Stalls") > 0 && st.get("l0StallNanos") > 0,
          "writers waited for compaction: " + st);
      for (int i = 0; i < written; i += 97) {
        assertArrayEquals(
            ("value-" + i + "-".repeat(40)).getBytes(), e.get(1, ("key-" + i).getBytes()));
      }
    }
  }

  @Test
  void droppingAKeyspaceStalledAtTheLevel0Limit_releasesTheOtherWriters() throws Exception {
    MemStorage storage = new MemStorage(9);
    java.util.concurrent.atomic.AtomicBoolean slow =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    storage.setFaultInjector(
        (op, name) -> {
          if (slow.get()
              && op == MemStorage.Op.WRITE
              && name.contains("/index/")
              && Thread.currentThread().getName().startsWith("basalt-compactor")) {
            try {
              Thread.sleep(50);
            } catch (InterruptedException ex) {
              Thread.currentThread().interrupt();
            }
          }
          return MemStorage.Fault.NONE;
        });
    try (Engine e =
        Engine.open(storage, tinyLevels().l0CompactionTrigger(2).l0StopWritesTrigger(3))) {
      int b = e.createKeyspace("b");
      var writerB =
          java.util.concurrent.CompletableFuture.runAsync(
              () -> {
                for (int i = 0; i < 100_000; i++)
                  put(e, b, "key-" + i, "value-" + i + "-".repeat(40));
              });
      long deadline = System.currentTimeMillis() + 20_000;
      while (e.stats().get("l0Stalls") == 0 && System.currentTimeMillis() < deadline)
        Thread.sleep(5);
      assertTrue(e.stats().get("l0Stalls") > 0, "writers stalled on b's level 0");
      e.dropKeyspace("b");
      slow.set(false);
      // b's level 0 stays (its files go at the next open); writes elsewhere must not wait for it
      put(e, 1, "a", "a");
      assertArrayEquals("a".getBytes(), e.get(1, "a".getBytes()));
      assertThrows(
          java.util.concurrent.ExecutionException.class,
          () -> writerB.get(20, java.util.concurrent.TimeUnit.SECONDS),
          "b's writer ends with an error once b is dropped");
    }
  }

  @Test
  void droppingAKeyspace_forgetsTheGarbageEstimatesOfItsTables() throws Exception {
    SegmentCompactor.quietNanos =
        Long.MAX_VALUE / 4; // no quiet merge: the overwrites wait in level 0
    try (Engine e =
        Engine.open(
            new MemStorage(13), tinyLevels().l0CompactionTrigger(8).l0StopWritesTrigger(30))) {
      int b = e.createKeyspace("b");
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 400; i++) {
          put(e, 1, "a-" + i, "v" + round);
          put(e, b, "b-" + i, "v" + round);
        }
        e.flush();
      }
      java.util.Set<Long> bTables = new java.util.HashSet<>();
      for (KeyspaceFiles.Table t : e.versions().current().files(b).tables)
        bTables.add(t.fileNumber());
      java.util.Set<Long> estimated = e.engineStats().shadowed.tables();
      assertTrue(
          estimated.stream().anyMatch(bTables::contains),
          "b's overwrites carry estimates: " + estimated);
      assertTrue(
          estimated.stream().anyMatch(n -> !bTables.contains(n)), "so do the default keyspace's");
      e.dropKeyspace("b");
      java.util.Set<Long> after = e.engineStats().shadowed.tables();
      assertTrue(
          after.stream().noneMatch(bTables::contains),
          "b's estimates are gone: " + after + " b " + bTables);
      java.util.Set<Long> live = new java.util.HashSet<>();
      for (KeyspaceFiles.Table t : e.versions().current().files(1).tables) live.add(t.fileNumber());
      assertTrue(
          live.containsAll(after) && !after.isEmpty(),
          "the default keyspace keeps its own: " + after);
    }
  }

  @Test
  void failedDeleteOfAReplacedTable_isRetried_andCompactionGoesOn() throws Exception {
    MemStorage storage = new MemStorage(7);
    java.util.concurrent.atomic.AtomicInteger failures =
        new java.util.concurrent.atomic.AtomicInteger(3);
    java.util.concurrent.atomic.AtomicBoolean armed =
        new java.util.concurrent.atomic.AtomicBoolean();
    storage.setFaultInjector(
        (op, name) ->
            armed.get()
                    && op == MemStorage.Op.DELETE
                    && name.contains("/index/")
                    && failures.getAndDecrement() > 0
                ? MemStorage.Fault.IO_ERROR
                : MemStorage.Fault.NONE);
    try (Engine e =
        Engine.open(storage, tinyLevels().compactionThreads(1).checkpointRetentionMillis(0))) {
      for (int i = 0; i < 1500; i++) put(e, "key-" + (i % 200), "old-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      EngineSnapshot snap = e.snapshot();
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "new-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      armed.set(true);
      snap.close(); // its tables become obsolete; the first deletes fail
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "newer-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000), "compaction still runs");
      assertNull(
          e.state().failure(), "a failed delete of an obsolete file does not fail the store");
      assertTrue(e.stats().get("obsoleteDeleteFailures") > 0);
      assertArrayEquals("newer-2999".getBytes(), e.get(1, "key-199".getBytes()));
      Set<Long> named = new HashSet<>();
      for (KeyspaceFiles.Table t : e.versions().current().files(1).tables)
        named.add(t.fileNumber());
      List<String> left = List.of();
      long deadline = System.currentTimeMillis() + 10_000;
      while (System.currentTimeMillis()
          < deadline) { // the failed deletes are retried by later cleanups
        left =
            storage.list("keyspaces/1/index").stream()
                .filter(f -> !named.contains(Long.parseLong(f.substring(0, f.indexOf('.')))))
                .toList();
        if (left.isEmpty()) break;
        Thread.sleep(
            10); // the last job's pinned version is freed after its commit; that runs a cleanup
      }
      assertTrue(left.isEmpty(), "obsolete tables left behind: " + left);
    }
  }

  @Test
  void tablesOnlyAnExpiredCheckpointNamedAtOpen_areDeleted() throws Exception {
    MemStorage storage = new MemStorage(11);
    Options o = tinyLevels().checkpointRetentionMillis(1000);
    try (Engine e = Engine.open(storage, o)) {
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 300), "v-" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
    }
    try (Engine e = Engine.open(storage, o)) {
      Thread.sleep(1500); // the previous run's checkpoints expire
      for (int i = 0; i < 50; i++) put(e, "other-" + i, "v");
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      List<String> left = List.of();
      long deadline = System.currentTimeMillis() + 10_000;
      while (System.currentTimeMillis()
          < deadline) { // the last job's pinned version is freed just after its commit
        Set<Long> named = new HashSet<>();
        for (Manifest m : e.versionSet().checkpoints()) named.addAll(Manifest.tableNumbers(m));
        left =
            storage.list("keyspaces/1/index").stream()
                .filter(f -> !named.contains(Long.parseLong(f.substring(0, f.indexOf('.')))))
                .toList();
        if (left.isEmpty()) break;
        Thread.sleep(10);
      }
      assertTrue(left.isEmpty(), "tables no retained manifest names stay on disk: " + left);
    }
  }

  // ---- level targets
  // --------------------------------------------------------------------------------------

  /**
   * Levels of 4 KiB, 16 KiB, ... (static); the index of {@link #load}'s 5,000 keys is about 100
   * KiB.
   */
  static Options smallLevels() {
    return tinyLevels().level1Bytes(4 << 10).levelMultiplier(4);
  }

  @Test
  void tieredLevel0_mergesTablesOfASize_readsSeeNewestValues_andAQuietStoreEmptiesLevel0()
      throws Exception {
    // Flushes of about 300 records; level 0 reaches the base level only at a quarter of its bytes,
    // so it
    // holds tiers of merged tables meanwhile, and overwrites and deletes cross them.
    Options o =
        tinyLevels()
            .l0CompactionTrigger(4)
            .l0StopWritesTrigger(20)
            .l0BaseRatio(0.25)
            .level1Bytes(1 << 20)
            .tableTargetBytes(16 << 10);
    Map<String, String> model = new HashMap<>();
    SegmentCompactor.quietNanos =
        Long.MAX_VALUE / 4; // not quiet until asked (so no waitForCompactions before)
    try (Engine e = Engine.open(new MemStorage(5), o)) {
      Random rnd = new Random(5);
      int maxLevel0 = 0;
      boolean sawTiers = false;
      for (int i = 0; i < 40_000; i++) {
        String k = "key-" + (i < 20_000 || rnd.nextInt(3) > 0 ? i : rnd.nextInt(i));
        if (i >= 20_000 && rnd.nextInt(10) == 0) {
          String victim = "key-" + rnd.nextInt(i);
          Batch b = new Batch(1);
          b.add(1, Batch.DELETE, victim.getBytes(), null);
          e.write(b);
          model.remove(victim);
        }
        put(e, k, "v" + i);
        model.put(k, "v" + i);
        if (i == 19_999) { // inserts only so far: level 0's records supersede nothing (bloom false
          // positives aside)
          Map<String, Long> st = e.stats();
          assertTrue(
              st.get("pendingGarbageBytes") * 20 < st.get("flushedBytes"),
              "no hidden garbage estimated: " + st);
        }
        if (i % 1000 == 999) {
          List<KeyspaceFiles.Table> l0 = e.versions().current().files(1).level(0);
          maxLevel0 = Math.max(maxLevel0, l0.size());
          long min = Long.MAX_VALUE, max = 0;
          for (KeyspaceFiles.Table t : l0) {
            min = Math.min(min, t.bytes());
            max = Math.max(max, t.bytes());
          }
          sawTiers |= l0.size() > 1 && max > 3 * min;
          for (int j = 0; j < 50; j++) { // reads across the tiers see the newest version
            String key = "key-" + rnd.nextInt(i + 1);
            String want = model.get(key);
            byte[] got = e.get(1, key.getBytes());
            assertEquals(
                want, got == null ? null : new String(got), key + " after " + i + " writes");
          }
        }
      }
      Map<String, Long> st = e.stats();
      assertTrue(st.get("l0Merges") > 5, "level-0 tables were merged into level 0: " + st);
      assertTrue(sawTiers, "level 0 held tables of different tiers at once");
      assertTrue(maxLevel0 < 20, "level 0 stayed below the stall limit: " + maxLevel0);
      assertEquals(0L, st.get("l0Stalls"), "no writer stalled on level 0");
      // Settle, then overwrite an eighth of the keys: level 0 then holds over a quarter of its due
      // share
      // of the base level (l0BaseRatio), which a quiet store merges.
      SegmentCompactor.quietNanos = 100_000_000L;
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      SegmentCompactor.quietNanos = Long.MAX_VALUE / 4;
      for (int i = 0; i < 5000; i++) {
        put(e, "key-" + i, "w" + i);
        model.put("key-" + i, "w" + i);
      }
      e.flush();
      assertTrue(
          e.versions().current().files(1).level(0).size() > 0, "the overwrites wait in level 0");
      assertTrue(
          e.stats().get("pendingGarbageBytes") > 0,
          "the garbage they hide is estimated: " + e.stats());
      SegmentCompactor.quietNanos = 100_000_000L;
      assertTrue(e.waitForCompactions(30_000));
      assertEquals(
          0,
          e.versions().current().files(1).level(0).size(),
          "a quiet store merged level 0 into the base");
      assertEquals(0L, e.stats().get("pendingGarbageBytes"), "the merge reported what level 0 hid");
      for (int i = 0; i < 40_000; i += 7) {
        String key = "key-" + i;
        byte[] got = e.get(1, key.getBytes());
        assertEquals(model.get(key), got == null ? null : new String(got), key);
      }
    } finally {
      SegmentCompactor.quietNanos = 2_000_000_000L;
    }
  }

  @Test
  void dynamicTargets_smallStore_level0CompactsIntoTheLastLevel_andLevels1To5StayEmpty()
      throws Exception {
    // level 5 would aim at a tenth of level 6, below level1Bytes / 10 until level 6 reaches 1 MiB
    Options o = tinyLevels().level1Bytes(1 << 20).levelMultiplier(10);
    try (Engine e = Engine.open(new MemStorage(3), o)) {
      Random rnd = new Random(3);
      for (int i = 0; i < 20_000; i++) {
        put(e, "key-" + rnd.nextInt(5000), "v" + i);
        if (i % 500 == 0) assertLevels1To5Empty(e, "after " + i + " writes");
      }
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      assertLevels1To5Empty(e, "settled");
      long[] sizes = levelBytes(e);
      assertTrue(
          sizes[6] > 50_000 && e.stats().get("compactions") > 5,
          "level 0 compacted into level 6: " + Arrays.toString(sizes) + " " + e.stats());
    }
  }

  @Test
  void dynamicTargets_levelsGrowByTheMultiplier_andMostDataSitsInTheLastLevel() throws Exception {
    Options o = smallLevels();
    try (Engine e = Engine.open(new MemStorage(5), o)) {
      Map<String, String> model = load(e, new Random(5), 20_000, 0);
      long[] sizes = levelBytes(e);
      assertDynamicShape(sizes, o);
      long m = o.levelMultiplier();
      // level 5 compacts down one table at a time once it passes level 6 / m, so it ends up near
      // that
      assertTrue(
          sizes[5] * m * 2 >= sizes[6],
          "level 5 near a " + m + "th of level 6: " + Arrays.toString(sizes));
      assertReads(e, model);
    }
  }

  @Test
  void staticTargets_keepTheOldLayout() throws Exception {
    try (Engine e =
        Engine.open(
            new MemStorage(3),
            tinyLevels().level1Bytes(1 << 20).levelMultiplier(10).dynamicLevelTargets(false))) {
      load(e, new Random(3), 20_000, 0);
      long[] sizes = levelBytes(e);
      assertTrue(sizes[1] > 50_000, "all in level 1: " + Arrays.toString(sizes));
      for (int l = 2; l < KeyspaceFiles.MAX_LEVELS; l++)
        assertEquals(0, sizes[l], "level " + l + ": " + Arrays.toString(sizes));
    }
    Options o = smallLevels().dynamicLevelTargets(false);
    try (Engine e = Engine.open(new MemStorage(5), o)) {
      Map<String, String> model = load(e, new Random(5), 20_000, 0);
      long[] sizes = levelBytes(e);
      assertStaticShape(sizes, o);
      assertReads(e, model);
    }
  }

  @Test
  void switchingToDynamicTargets_drainsTheLevelsAboveTheBase_whileWritesGoOn() throws Exception {
    MemStorage storage = new MemStorage(8);
    Map<String, String> model;
    try (Engine e = Engine.open(storage, smallLevels().dynamicLevelTargets(false))) {
      model = load(e, new Random(8), 20_000, 0);
      assertStaticShape(levelBytes(e), smallLevels().dynamicLevelTargets(false));
    }
    try (Engine e = Engine.open(storage, smallLevels())) {
      model.putAll(
          load(e, new Random(9), 10_000, 20_000)); // level-0 jobs run while the old levels drain
      long[] sizes = levelBytes(e);
      assertDynamicShape(sizes, smallLevels());
      assertReads(e, model);
    }
    try (Engine e = Engine.open(storage, smallLevels().dynamicLevelTargets(false))) { // and back
      model.putAll(load(e, new Random(10), 5_000, 30_000));
      assertReads(e, model);
    }
  }

  @Test
  void levelTargets_followRocksDbsDynamicLevelBytes() {
    long gb = 1_000_000_000L;
    // RocksDB's documented example: level 6 holds 276 GB, max_bytes_for_level_base 1 GB, multiplier
    // 10
    LevelTargets t = LevelTargets.of(new long[] {0, 0, 0, 0, 0, 0, 276 * gb}, gb, 10, true);
    assertEquals(3, t.base);
    long[] want = {0, 0, 0, 276_000_000L, 2_760_000_000L, 27_600_000_000L, 276 * gb};
    for (int l = 1; l < 7; l++) assertEquals(want[l], t.target(l), "level " + l);

    // empty, or smaller than level1Bytes: level 0 compacts into level 6
    assertEquals(6, LevelTargets.of(new long[7], gb, 10, true).base);
    assertEquals(6, LevelTargets.of(new long[] {0, 0, 0, 0, 0, 0, gb / 2}, gb, 10, true).base);
    assertEquals(5, LevelTargets.of(new long[] {0, 0, 0, 0, 0, 0, 2 * gb}, gb, 10, true).base);

    // a store written with static targets: level 0 still writes the shallowest non-empty level, and
    // the
    // levels above the ideal base level drain first, shallowest first
    t = LevelTargets.of(new long[] {0, gb, 10 * gb, 30 * gb, 0, 0, 0}, gb, 10, true);
    assertEquals(1, t.base);
    for (int l = 1; l <= 3; l++) assertEquals(0, t.target(l), "level " + l + " should be empty");
    assertEquals(3 * gb, t.target(5));
    assertTrue(
        t.score(1, gb) > t.score(2, 10 * gb) && t.score(3, 30 * gb) > 1e9, "drains come first");
    assertEquals(0, t.score(4, 0));
    assertEquals(3.0, t.score(5, 9 * gb));

    // static targets
    t = LevelTargets.of(new long[] {0, 0, 0, 0, 0, 0, 276 * gb}, gb, 10, false);
    assertEquals(1, t.base);
    for (int l = 1; l < 6; l++)
      assertEquals((long) (gb * Math.pow(10, l - 1)), t.target(l), "level " + l);
    // a store so big that even level 1 would outgrow level1Bytes gets them too
    t = LevelTargets.of(new long[] {0, 0, 0, 0, 0, 0, 200_000 * gb}, gb, 10, true);
    assertEquals(1, t.base);
    assertEquals(gb, t.target(1));
  }

  /**
   * Puts {@code n} values over 5,000 keys, flushes and waits for compaction; returns what it wrote.
   */
  private static Map<String, String> load(Engine e, Random rnd, int n, int first)
      throws InterruptedException {
    Map<String, String> wrote = new HashMap<>();
    for (int i = first; i < first + n; i++) {
      String k = "key-" + rnd.nextInt(5000);
      put(e, k, "v" + i);
      wrote.put(k, "v" + i);
    }
    e.flush();
    assertTrue(e.waitForCompactions(60_000), "compaction settled");
    return wrote;
  }

  private static void assertReads(Engine e, Map<String, String> model) {
    for (Map.Entry<String, String> kv : model.entrySet()) {
      assertArrayEquals(kv.getValue().getBytes(), e.get(1, kv.getKey().getBytes()), kv.getKey());
    }
  }

  private static long[] levelBytes(Engine e) {
    Version v = e.versions().acquire();
    try {
      long[] sizes = new long[KeyspaceFiles.MAX_LEVELS];
      for (int l = 0; l < sizes.length; l++) sizes[l] = v.files(1).levelBytes(l);
      return sizes;
    } finally {
      v.release();
    }
  }

  private static void assertLevels1To5Empty(Engine e, String when) {
    long[] sizes = levelBytes(e);
    for (int l = 1; l < 6; l++)
      assertEquals(0, sizes[l], "level " + l + " " + when + ": " + Arrays.toString(sizes));
  }

  /**
   * A settled tree under dynamic targets: level 6 is the largest, level n holds at most level 6 /
   * multiplier^(6-n), levels whose target would be below level1Bytes / multiplier are empty, and so
   * level 6 holds more than (multiplier - 1) / multiplier of the data.
   */
  private static void assertDynamicShape(long[] sizes, Options o) {
    String shape = Arrays.toString(sizes);
    long m = o.levelMultiplier(), total = 0, target = sizes[6];
    for (int l = 1; l < 7; l++) total += sizes[l];
    for (int l = 5; l >= 1; l--) {
      target /= m;
      if (target < o.level1Bytes() / m) {
        assertEquals(0, sizes[l], "level " + l + " should be empty: " + shape);
      } else {
        assertTrue(
            sizes[l] <= target, "level " + l + " within its target " + target + ": " + shape);
      }
    }
    assertTrue(sizes[6] * m > total * (m - 1), "level 6 holds most of the data: " + shape);
    assertFalse(sizes[5] == 0 && sizes[4] == 0, "data in more than one level: " + shape);
  }

  /**
   * A settled tree under static targets: level n within level1Bytes * multiplier^(n-1), level 1
   * used.
   */
  private static void assertStaticShape(long[] sizes, Options o) {
    String shape = Arrays.toString(sizes);
    assertTrue(sizes[1] > 0, "level 0 compacts into level 1: " + shape);
    long target = o.level1Bytes();
    for (int l = 1; l < 6; l++, target *= o.levelMultiplier()) {
      assertTrue(sizes[l] <= target, "level " + l + " within " + target + ": " + shape);
    }
    assertEquals(0, sizes[6], "level 6 not reached: " + shape);
  }

  private static void put(Engine e, int ks, String key, String value) {
    Batch b = new Batch(1);
    b.add(ks, Batch.PUT, key.getBytes(), value.getBytes());
    e.write(b);
  }

  private static void put(Engine e, String key, String value) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key.getBytes(), value.getBytes());
    e.write(b);
  }

  /**
   * PebblesDB's experiment (seed 002 section IV.B), scaled down: five rounds of inserting 2,000 new
   * keys, reading them all and deleting them all. The guards the earlier rounds chose stay behind,
   * empty, once their deletes reach the last level; reads must not pay for them.
   */
  @Test
  void emptyGuardsLeftByMassDeletes_addNoTableLookups() throws Exception {
    double[] lookupsPerGet = new double[5];
    long emptyGuards = 0;
    Options o =
        tinyLevels().keyIndexGuards(true).guardLastLevelBits(6).guardBitsStep(1).guardMaxTables(3);
    try (Engine e = Engine.open(new MemStorage(4), o)) {
      for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 2000; i++) put(e, "r" + round + "-" + i, "v" + i);
        e.flush();
        assertTrue(e.waitForCompactions(30_000));
        long before = e.stats().get("tableLookups");
        for (int i = 0; i < 2000; i++)
          assertArrayEquals(("v" + i).getBytes(), e.get(1, ("r" + round + "-" + i).getBytes()));
        lookupsPerGet[round] = (e.stats().get("tableLookups") - before) / 2000.0;
        for (int i = 0; i < 2000; i++) {
          Batch b = new Batch(1);
          b.add(1, Batch.DELETE, ("r" + round + "-" + i).getBytes(), null);
          e.write(b);
        }
        e.flush();
        assertTrue(e.waitForCompactions(30_000));
        emptyGuards = Math.max(emptyGuards, e.stats().get("emptyGuards"));
      }
    }
    assertTrue(emptyGuards > 0, "mass deletes left empty guards");
    // Later rounds read past more guards, empty ones included (the average: one round may meet a
    // guard
    // whose fragments are waiting for their merge).
    double later = (lookupsPerGet[1] + lookupsPerGet[2] + lookupsPerGet[3] + lookupsPerGet[4]) / 4;
    assertTrue(
        later <= lookupsPerGet[0] * 1.25,
        "table lookups per get, by round: " + java.util.Arrays.toString(lookupsPerGet));
  }

  /**
   * Deletes that reach the last level as a fragment beside the tables they shadow, too few to make
   * a guard due, still merge once the store is quiet: every flushed record ends up dropped and
   * reported.
   */
  @Test
  void deletesInAGuardBelowItsTableLimit_areMergedAwayOnceQuiet() throws Exception {
    Options o =
        tinyLevels()
            .tableTargetBytes(1 << 20)
            .keyIndexGuards(true)
            .guardLastLevelBits(6)
            .guardBitsStep(1)
            .guardMaxTables(16);
    try (Engine e = Engine.open(new MemStorage(5), o)) {
      for (int i = 0; i < 2000; i++) put(e, "k" + i, "v" + i);
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      for (int i = 0; i < 2000; i++) {
        Batch b = new Batch(1);
        b.add(1, Batch.DELETE, ("k" + i).getBytes(), null);
        e.write(b);
      }
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      Map<String, Long> st = e.stats();
      assertTrue(st.get("guardMerges") > 0, st.toString());
      assertEquals(
          st.get("flushedRecords"),
          st.get("discardedVersions"),
          "every value and tombstone dropped: " + st);
      assertEquals(0L, st.get("tables"), st.toString());
    }
  }
}
