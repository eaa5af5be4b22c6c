package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Exact item counts (Magma section 7.2, {@link Options#exactItemCounts}) against a model: inserts,
 * updates, deletes of live and absent keys, several writes of one key in a batch, across flushes,
 * compaction, reopens, crashes, rollbacks, option changes and concurrent writers.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class ItemCountTest {
  /** Tiny caches, tables and segments (flushes and compactions all the time), with counts. */
  static Options counted() {
    return ChangeFeedTest.tiny().exactItemCounts(true);
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A random mix of writes to {@code ks}, some batched with repeated keys; the model is the live
   * key set.
   */
  static void randomWrites(Basalt db, Keyspace ks, Set<String> live, Random r, int n, int keys) {
    for (int i = 0; i < n; i++) {
      int p = r.nextInt(10);
      if (p < 5) {
        String k = "k" + r.nextInt(keys);
        ks.put(b(k), b("v" + i));
        live.add(k);
      } else if (p < 7) {
        String k = "k" + r.nextInt(keys);
        ks.delete(b(k)); // of a live key or an absent one
        live.remove(k);
      } else {
        WriteBatch batch = new WriteBatch();
        Set<String> after = new HashSet<>(live);
        for (int j = r.nextInt(6); j >= 0; j--) {
          String k = "k" + r.nextInt(Math.min(keys, 20)); // few keys: repeats within the batch
          if (r.nextBoolean()) {
            batch.put(ks, b(k), b("b" + i + "-" + j));
            after.add(k);
          } else {
            batch.delete(ks, b(k));
            after.remove(k);
          }
        }
        db.write(batch);
        live.clear();
        live.addAll(after);
      }
    }
  }

  static long scanCount(Keyspace ks) {
    long n = 0;
    try (Cursor c = ks.scan(null, null)) {
      while (c.next()) n++;
    }
    return n;
  }

  @Test
  void counts_matchTheModel_acrossFlushesCompactionAndReopens_inTwoKeyspaces() {
    MemStorage storage = new MemStorage(21);
    Options o = counted();
    Random r = new Random(21);
    Set<String> a = new HashSet<>(), bLive = new HashSet<>();
    Basalt db = Basalt.open(storage, o);
    try {
      db.createKeyspace("other");
      for (int phase = 0; phase < 8; phase++) {
        Keyspace ka = db.keyspace("default"), kb = db.keyspace("other");
        randomWrites(db, ka, a, r, 400, 300);
        randomWrites(db, kb, bLive, r, 150, 60);
        assertEquals(a.size(), ka.itemCount(), "phase " + phase);
        assertEquals(bLive.size(), kb.itemCount(), "phase " + phase);
        if (phase % 3 == 2) {
          db.flush();
          assertTrue(db.waitForCompactions(60_000));
          assertEquals(a.size(), scanCount(ka));
          var st = db.stats().asMap();
          assertTrue(
              st.get("compactions") > 0 && st.get("flushes") > 0,
              "flushed and compacted since the open");
        }
        if (phase % 2 == 1) { // counts come back from the manifest and the WAL replay
          db.close();
          db = Basalt.open(storage, o);
          assertEquals(
              a.size(), db.keyspace("default").itemCount(), "after reopen, phase " + phase);
          assertEquals(
              bLive.size(), db.keyspace("other").itemCount(), "after reopen, phase " + phase);
        }
      }
      var st = db.stats().asMap();
      assertEquals((long) a.size() + bLive.size(), st.get("items"));
      assertEquals(a.size(), st.get("keyspace.default.items"));
    } finally {
      db.close();
    }
  }

  @Test
  void aCrash_keepsTheCountOfEveryAcknowledgedWrite() {
    for (long seed = 1; seed <= 4; seed++) {
      MemStorage storage = new MemStorage(seed);
      Options o = counted().syncMode(SyncMode.SYNC);
      Random r = new Random(seed);
      Set<String> live = new HashSet<>();
      Basalt db = Basalt.open(storage, o);
      try {
        randomWrites(db, db.keyspace("default"), live, r, 300 + r.nextInt(600), 200);
        storage.crash(MemStorage.CrashMode.RANDOM); // every write was synced before it returned
      } finally {
        ChangeFeedTest.closeCrashed(db);
      }
      try (Basalt again = Basalt.open(storage, o)) {
        assertEquals(live.size(), again.keyspace("default").itemCount(), "seed " + seed);
        assertEquals(live.size(), scanCount(again.keyspace("default")));
      }
    }
  }

  @Test
  void turningCountsOn_countsTheStoreAtTheOpen_andOff_makesThemUnavailable() {
    MemStorage storage = new MemStorage(5);
    Random r = new Random(5);
    Set<String> live = new HashSet<>();
    Options off = counted().exactItemCounts(false);
    Options on = counted();
    try (Basalt db = Basalt.open(storage, off)) {
      Keyspace ks = db.keyspace("default");
      randomWrites(db, ks, live, r, 500, 200);
      UnsupportedOperationException e =
          assertThrows(UnsupportedOperationException.class, ks::itemCount);
      assertTrue(e.getMessage().contains("exactItemCounts"), e.getMessage());
      assertTrue(!db.stats().asMap().containsKey("items"));
    }
    try (Basalt db =
        Basalt.open(storage, on)) { // counted at the open: the key index and the replayed writes
      Keyspace ks = db.keyspace("default");
      assertEquals(live.size(), ks.itemCount());
      randomWrites(db, ks, live, r, 300, 200);
      assertEquals(live.size(), ks.itemCount());
    }
    try (Basalt db = Basalt.open(storage, off)) { // writes the counts do not see
      randomWrites(db, db.keyspace("default"), live, r, 300, 200);
    }
    try (Basalt db = Basalt.open(storage, on)) { // so they are counted again
      assertEquals(live.size(), db.keyspace("default").itemCount());
      db.flush(); // the counts are exact in the manifest from here
    }
    try (Basalt db = Basalt.open(storage, on)) {
      assertEquals(live.size(), db.keyspace("default").itemCount());
    }
  }

  @Test
  void aRollback_restoresTheCheckpointsCount(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    Random r = new Random(9);
    Set<String> live = new HashSet<>();
    Options o = counted().checkpointRetentionMillis(600_000);
    long id;
    int atCheckpoint;
    try (Basalt db = Basalt.open(dir, o)) {
      randomWrites(db, db.keyspace("default"), live, r, 400, 150);
      id = db.checkpoint().id();
      atCheckpoint = live.size();
      randomWrites(db, db.keyspace("default"), live, r, 400, 300);
      assertEquals(live.size(), db.keyspace("default").itemCount());
    }
    Basalt.rollback(dir, id);
    try (Basalt db = Basalt.open(dir, o)) {
      assertEquals(atCheckpoint, db.keyspace("default").itemCount());
      assertEquals(atCheckpoint, scanCount(db.keyspace("default")));
    }
  }

  @Test
  void concurrentWriters_ofOverlappingKeys_leaveTheCountOfTheKeysLeft() throws Exception {
    try (Basalt db = Basalt.open(new MemStorage(3), counted())) {
      Keyspace ks = db.keyspace("default");
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread[] writers = new Thread[4];
      for (int t = 0; t < writers.length; t++) {
        long seed = t;
        writers[t] =
            new Thread(
                () -> {
                  try {
                    Random r = new Random(seed);
                    for (int i = 0; i < 1500; i++) {
                      byte[] k = b("k" + r.nextInt(300));
                      if (r.nextInt(3) == 0) ks.delete(k);
                      else ks.put(k, b("v" + i));
                    }
                  } catch (Throwable e) {
                    failed.set(e);
                  }
                });
        writers[t].start();
      }
      for (Thread t : writers) t.join();
      if (failed.get() != null) throw new AssertionError(failed.get());
      assertEquals(scanCount(ks), ks.itemCount());
    }
  }

  @Test
  void anInMemoryStore_countsToo() {
    try (Basalt db = Basalt.openInMemory(Options.defaults().exactItemCounts(true))) {
      Keyspace ks = db.keyspace("default");
      Set<String> live = new HashSet<>();
      randomWrites(db, ks, live, new Random(4), 2000, 300);
      assertEquals(live.size(), ks.itemCount());
      db.dropKeyspace("default");
      assertThrows(ClosedException.class, ks::itemCount);
    }
  }

  /**
   * Without exact counts, {@link Keyspace#approximateItemCount} takes no lookup and is exact where
   * the estimate knows enough: inserts, overwrites within the write cache, deletes of keys the key
   * index holds, before and after the flush, and through WAL replay.
   */
  @Test
  void approximateCounts_withoutLookups_areExactForInsertsAndDeletesOfFlushedKeys() {
    MemStorage storage = new MemStorage(7);
    Options o = Options.defaults().syncMode(SyncMode.NONE).checkpointIntervalMillis(0);
    Basalt db = Basalt.open(storage, o);
    try {
      Keyspace ks = db.keyspace("default");
      Keyspace other = db.createKeyspace("other");
      assertEquals(0, ks.approximateItemCount());
      assertThrows(UnsupportedOperationException.class, ks::itemCount);
      for (int i = 0; i < 300; i++) ks.put(b("k" + i), b("v"));
      for (int i = 0; i < 50; i++) ks.put(b("k" + i), b("again")); // the same cache: no overcount
      other.put(b("x"), b("v"));
      assertEquals(300, ks.approximateItemCount());
      assertEquals(1, other.approximateItemCount());
      db.flush();
      assertEquals(300, ks.approximateItemCount());
      WriteBatch deletes = new WriteBatch();
      for (int i = 0; i < 40; i++) deletes.delete(ks, b("k" + i));
      db.write(deletes);
      assertEquals(260, ks.approximateItemCount(), "tombstones over flushed puts");
      db.close();
      db = Basalt.open(storage, o); // the write cache comes back from the WAL
      ks = db.keyspace("default");
      assertEquals(260, ks.approximateItemCount(), "after the replay");
      db.flush();
      assertEquals(260, ks.approximateItemCount(), "tombstones in the key index");
      assertEquals(260, scanCount(ks));
      assertEquals(1, db.keyspace("other").approximateItemCount());
    } finally {
      db.close();
    }
  }

  @Test
  void anInMemoryStore_countsApproximatelyAndExactly_withoutLookups_andAfterARestore(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    Set<String> live = new HashSet<>();
    try (Basalt db = Basalt.openInMemory(Options.defaults())) {
      Keyspace ks = db.keyspace("default");
      randomWrites(db, ks, live, new Random(5), 2000, 300);
      assertEquals(live.size(), ks.approximateItemCount(), "nothing below the cache: exact");
      db.backup(dir.resolve("b"));
    }
    try (Basalt db = Basalt.openInMemory(Options.defaults(), dir.resolve("b"))) {
      Keyspace ks = db.keyspace("default");
      assertEquals(live.size(), ks.approximateItemCount(), "restored");
      ks.put(b("new key"), b("v"));
      assertEquals(live.size() + 1, ks.approximateItemCount());
    }
  }
}
