package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.storage.MemStorage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Leveled compaction against an exact account: every key index record a flush writes either stays in
 * a table or is handed to the discard listener, once, and only records that are superseded or are
 * tombstones with nothing below them are discarded.
 */
class CompactionTest {
  static Options tinyLevels() {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(64 << 10).segmentSize(256 << 10)
        .blockSize(512).syncMode(SyncMode.NONE).l0CompactionTrigger(2).l0StopWritesTrigger(8)
        .level1Bytes(1024).levelMultiplier(2).tableTargetBytes(1024);
  }

  @Test
  void everyFlushedRecord_isKeptOrDiscardedOnce_andOnlyDeadOnesAreDiscarded() throws Exception {
    Map<Long, byte[]> keyOfSeqno = new HashMap<>();
    Map<String, Long> newest = new HashMap<>();
    Set<Long> tombstones = new HashSet<>();
    Map<String, byte[]> model = new HashMap<>();
    List<long[]> discarded = java.util.Collections.synchronizedList(new ArrayList<>());
    Random rnd = new Random(42);
    try (Engine e = Engine.open(new MemStorage(42), tinyLevels())) {
      e.setDiscardListener((ks, seqno, size) -> discarded.add(new long[] {ks, seqno, size}));
      for (int i = 0; i < 6000; i++) {
        String k = "key-" + rnd.nextInt(300);
        Batch b = new Batch(1);
        long seqno = e.lastSeqno + 1;
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
        assertEquals(seqno, e.lastSeqno);
        keyOfSeqno.put(seqno, k.getBytes());
        newest.put(k, seqno);
      }
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000), "compaction settled");
      Map<String, Long> st = e.stats();
      assertTrue(st.get("compactions") > 5, "compactions ran: " + st);
      assertTrue(st.get("tablesAtLevel3") + st.get("tablesAtLevel4") + st.get("tablesAtLevel5") > 0, "deep levels: " + st);
      assertTrue(!discarded.isEmpty(), "versions were discarded");
      long kept = 0;
      Set<Long> keptSeqnos = new HashSet<>();
      for (KeyspaceFiles.Table t : e.current().files(1).tables) {
        kept += t.reader().info().entryCount();
        try (var it = t.reader().iterator()) {
          for (it.seekFirst(); it.valid(); it.next()) keptSeqnos.add(it.seqno());
        }
      }
      Set<Long> seen = new HashSet<>();
      for (long[] d : discarded) {
        long seqno = d[1];
        assertTrue(seen.add(seqno), "seqno " + seqno + " discarded twice");
        assertTrue(!keptSeqnos.contains(seqno), "seqno " + seqno + " discarded but still in a table");
        String k = new String(keyOfSeqno.get(seqno));
        assertTrue(newest.get(k) != seqno || tombstones.contains(seqno),
            "seqno " + seqno + " is the live version of " + k + " and was discarded");
        assertTrue(d[2] > 0, "document size");
      }
      assertEquals(st.get("flushedRecords"), kept + discarded.size(), "every flushed record kept or discarded, once");
      assertEquals(st.get("discardedVersions"), (long) discarded.size());
      for (int k = 0; k < 300; k++) {
        String key = "key-" + k;
        byte[] got = e.get(1, key.getBytes());
        if (model.containsKey(key)) assertArrayEquals(model.get(key), got, key); else assertNull(got, key);
      }
    }
  }

  @Test
  void tablesReplacedByCompaction_stayWhileASnapshotUsesThem_thenGo() throws Exception {
    MemStorage storage = new MemStorage(7);
    try (Engine e = Engine.open(storage, tinyLevels().checkpointRetentionMillis(0))) {
      for (int i = 0; i < 1500; i++) put(e, "key-" + (i % 200), "old-" + i);
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000));
      EngineSnapshot snap = e.snapshot();
      Set<String> pinned = new HashSet<>();
      for (KeyspaceFiles.Table t : snap.version.files(1).tables) pinned.add(KeyspaceFiles.tableName(1, t.fileNumber()));
      Map<String, byte[]> before = new HashMap<>();
      for (int k = 0; k < 200; k++) before.put("key-" + k, snap.get(1, ("key-" + k).getBytes()));
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "new-" + i);
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000));
      Set<Long> current = new HashSet<>();
      for (KeyspaceFiles.Table t : e.current().files(1).tables) current.add(t.fileNumber());
      assertTrue(snap.version.files(1).tables.stream().anyMatch(t -> !current.contains(t.fileNumber())),
          "compaction replaced some of the snapshot's tables");
      for (String f : pinned) assertTrue(storage.exists(f), f + " deleted under an open snapshot");
      for (int k = 0; k < 200; k++) {
        assertArrayEquals(before.get("key-" + k), snap.get(1, ("key-" + k).getBytes()), "snapshot read of key-" + k);
      }
      snap.close();
      long deadline = System.currentTimeMillis() + 10_000;
      Set<String> left = new HashSet<>(pinned);
      while (System.currentTimeMillis() < deadline) { // deletion runs on a compaction thread
        left.removeIf(f -> !storage.exists(f));
        left.removeIf(f -> current.contains(Long.parseLong(f.substring(f.lastIndexOf('/') + 1, f.length() - 4))));
        if (left.isEmpty()) break;
        Thread.sleep(10);
      }
      assertTrue(left.isEmpty(), "tables no version names any more were not deleted: " + left);
    }
  }

  @Test
  void slowCompaction_stallsWritersAtTheLevel0Limit_andCountsIt() throws Exception {
    MemStorage storage = new MemStorage(9);
    storage.setFaultInjector((op, name) -> {
      if (op == MemStorage.Op.WRITE && name.contains("/index/")
          && Thread.currentThread().getName().startsWith("basalt-compactor")) {
        try {
          Thread.sleep(5); // every block compaction writes takes 5 ms
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
        }
      }
      return MemStorage.Fault.NONE;
    });
    try (Engine e = Engine.open(storage, tinyLevels().l0CompactionTrigger(2).l0StopWritesTrigger(3)
        .writeCacheSize(64 << 10))) {
      for (int i = 0; i < 3000; i++) put(e, "key-" + i, "value-" + i + "-".repeat(40));
      Map<String, Long> st = e.stats();
      assertTrue(st.get("l0Stalls") > 0 && st.get("l0StallNanos") > 0, "writers waited for compaction: " + st);
      for (int i = 0; i < 3000; i += 97) {
        assertArrayEquals(("value-" + i + "-".repeat(40)).getBytes(), e.get(1, ("key-" + i).getBytes()));
      }
    }
  }

  @Test
  void droppingAKeyspaceStalledAtTheLevel0Limit_releasesTheOtherWriters() throws Exception {
    MemStorage storage = new MemStorage(9);
    java.util.concurrent.atomic.AtomicBoolean slow = new java.util.concurrent.atomic.AtomicBoolean(true);
    storage.setFaultInjector((op, name) -> {
      if (slow.get() && op == MemStorage.Op.WRITE && name.contains("/index/")
          && Thread.currentThread().getName().startsWith("basalt-compactor")) {
        try {
          Thread.sleep(50);
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
        }
      }
      return MemStorage.Fault.NONE;
    });
    try (Engine e = Engine.open(storage, tinyLevels().l0CompactionTrigger(2).l0StopWritesTrigger(3))) {
      int b = e.createKeyspace("b");
      var writerB = java.util.concurrent.CompletableFuture.runAsync(() -> {
        for (int i = 0; i < 100_000; i++) put(e, b, "key-" + i, "value-" + i + "-".repeat(40));
      });
      long deadline = System.currentTimeMillis() + 20_000;
      while (e.stats().get("l0Stalls") == 0 && System.currentTimeMillis() < deadline) Thread.sleep(5);
      assertTrue(e.stats().get("l0Stalls") > 0, "writers stalled on b's level 0");
      e.dropKeyspace("b");
      slow.set(false);
      // b's level 0 stays (its files go at the next open); writes elsewhere must not wait for it
      put(e, 1, "a", "a");
      assertArrayEquals("a".getBytes(), e.get(1, "a".getBytes()));
      assertThrows(java.util.concurrent.ExecutionException.class, () -> writerB.get(20, java.util.concurrent.TimeUnit.SECONDS),
          "b's writer ends with an error once b is dropped");
    }
  }

  @Test
  void failedDeleteOfAReplacedTable_isRetried_andCompactionGoesOn() throws Exception {
    MemStorage storage = new MemStorage(7);
    java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger(3);
    java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
    storage.setFaultInjector((op, name) -> armed.get() && op == MemStorage.Op.DELETE && name.contains("/index/")
        && failures.getAndDecrement() > 0 ? MemStorage.Fault.IO_ERROR : MemStorage.Fault.NONE);
    try (Engine e = Engine.open(storage, tinyLevels().compactionThreads(1).checkpointRetentionMillis(0))) {
      for (int i = 0; i < 1500; i++) put(e, "key-" + (i % 200), "old-" + i);
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000));
      EngineSnapshot snap = e.snapshot();
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "new-" + i);
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000));
      armed.set(true);
      snap.close(); // its tables become obsolete; the first deletes fail
      for (int i = 0; i < 3000; i++) put(e, "key-" + (i % 200), "newer-" + i);
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000), "compaction still runs");
      assertNull(e.failure(), "a failed delete of an obsolete file does not fail the store");
      assertTrue(e.stats().get("obsoleteDeleteFailures") > 0);
      assertArrayEquals("newer-2999".getBytes(), e.get(1, "key-199".getBytes()));
      Set<Long> named = new HashSet<>();
      for (KeyspaceFiles.Table t : e.current().files(1).tables) named.add(t.fileNumber());
      List<String> left = List.of();
      long deadline = System.currentTimeMillis() + 10_000;
      while (System.currentTimeMillis() < deadline) { // the failed deletes are retried by later cleanups
        left = storage.list("keyspaces/1/index").stream()
            .filter(f -> !named.contains(Long.parseLong(f.substring(0, f.indexOf('.'))))).toList();
        if (left.isEmpty()) break;
        Thread.sleep(10); // the last job's pinned version is freed after its commit; that runs a cleanup
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
      assertTrue(e.compactor.awaitIdle(30_000));
    }
    try (Engine e = Engine.open(storage, o)) {
      Thread.sleep(1500); // the previous run's checkpoints expire
      for (int i = 0; i < 50; i++) put(e, "other-" + i, "v");
      e.flush();
      assertTrue(e.compactor.awaitIdle(30_000));
      Set<Long> named = new HashSet<>();
      synchronized (e.manifestLock) {
        e.checkpointTables.values().forEach(named::addAll);
      }
      for (String f : storage.list("keyspaces/1/index")) {
        assertTrue(named.contains(Long.parseLong(f.substring(0, f.indexOf('.')))), f + " no retained manifest names stays on disk");
      }
    }
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
}
