package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.KeyspaceOptions.Kind;
import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * How a hashed keyspace's trie comes back (issue 39, item 3): from the checkpoint written at close,
 * from a checkpoint and the log after it, from the whole log when no checkpoint may be used (none,
 * a damaged one, a rollback, a backup), across crashes at every storage operation of a flush that
 * writes a checkpoint, and over segments garbage collection rewrote.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class HashedRecoveryTest {
  static final KeyspaceOptions HASHED =
      KeyspaceOptions.defaults().kind(Kind.HASHED).branching(16).sluggishness(4);

  static Options options() {
    return Options.defaults()
        .memoryQuota(32L << 20)
        .writeCacheSize(128 << 10)
        .segmentSize(128 << 10)
        .trieCheckpointBytes(64 << 10);
  }

  /** Writes {@code n} operations over {@code keys} keys: mostly puts, a fifth deletes. */
  static void write(Keyspace ks, Map<Integer, byte[]> model, Random rnd, int n, int keys) {
    for (int i = 0; i < n; i++) {
      int k = rnd.nextInt(keys);
      if (rnd.nextInt(5) == 0) {
        ks.delete(key(k));
        model.remove(k);
      } else {
        byte[] v = new byte[20 + rnd.nextInt(200)];
        rnd.nextBytes(v);
        ks.put(key(k), v);
        model.put(k, v);
      }
    }
  }

  /** Puts keys {@code [from, to)} with random 100-byte values. */
  static void putRandom(Keyspace ks, Map<Integer, byte[]> model, Random rnd, int from, int to) {
    for (int k = from; k < to; k++) {
      byte[] v = new byte[100];
      rnd.nextBytes(v);
      ks.put(key(k), v);
      model.put(k, v);
    }
  }

  static void check(Keyspace ks, Map<Integer, byte[]> model, int keys, String where) {
    for (int k = 0; k < keys; k++) {
      byte[] want = model.get(k);
      byte[] got = ks.get(key(k));
      if (want == null ? got != null : !java.util.Arrays.equals(want, got)) {
        throw new AssertionError(
            where + ": key " + k + " is " + (got == null ? "absent" : "wrong"));
      }
    }
  }

  static byte[] key(int k) {
    return ByteBuffer.allocate(8).putInt(k).putInt(k * 31).array();
  }

  @Test
  void checkpointAtClose_isLoaded_andNothingIsReplayed() {
    MemStorage storage = new MemStorage(1);
    Map<Integer, byte[]> model = new HashMap<>();
    try (Basalt db = Basalt.open(storage, options())) {
      write(db.createKeyspace("h", HASHED), model, new Random(1), 20_000, 5000);
      db.flush(); // close writes no write cache: the checkpoint then holds every write
    }
    try (Basalt db = Basalt.open(storage, options())) {
      Stats st = db.stats();
      assertEquals(model.size(), st.get("trieCheckpointRecordsLoaded"), st.toString());
      assertEquals(0, st.get("trieLogBytesReplayed"), st.toString());
      assertTrue(st.get("hashedIndexBytes") > 0, st.toString());
      check(db.keyspace("h"), model, 5000, "after the checkpoint");
    }
  }

  /**
   * Deletions flushed after the last checkpoint leave it usable: the open loads it, then replays.
   */
  @Test
  void deletionsAfterTheCheckpoint_leaveItUsable() {
    MemStorage storage = new MemStorage(3);
    Map<Integer, byte[]> model = new HashMap<>();
    Options o = options().syncMode(SyncMode.SYNC);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      write(ks, model, new Random(3), 3000, 2000); // past trieCheckpointBytes: a checkpoint
      db.flush();
      for (int k = 0; k < 50; k++) {
        ks.delete(key(k));
        model.remove(k);
      }
      db.flush(); // a flush of deletions alone: no checkpoint
      storage.crash(MemStorage.CrashMode.RANDOM);
    } catch (StorageException e) {
      // closing after the crash
    }
    try (Basalt db = Basalt.open(storage, o)) {
      assertTrue(db.stats().get("trieCheckpointRecordsLoaded") > 0, db.stats().toString());
      check(db.keyspace("h"), model, 2000, "checkpoint, then the deletions replayed");
    }
  }

  @Test
  void damagedCheckpoint_isSetAside_andTheWholeLogReplayed() {
    MemStorage storage = new MemStorage(2);
    Map<Integer, byte[]> model = new HashMap<>();
    try (Basalt db = Basalt.open(storage, options())) {
      write(db.createKeyspace("h", HASHED), model, new Random(2), 5000, 2000);
    }
    String space = null;
    for (String n : storage.snapshot().keySet()) if (n.endsWith("/trie/space")) space = n;
    assertTrue(space != null, "a checkpoint was written at close");
    storage.flipByte(space, 3 * 4096 + 100); // inside page 2
    try (Basalt db = Basalt.open(storage, options())) {
      Stats st = db.stats();
      assertEquals(0, st.get("trieCheckpointRecordsLoaded"), st.toString());
      assertTrue(st.get("trieLogBytesReplayed") > 0, st.toString());
      check(db.keyspace("h"), model, 2000, "after the log replay");
    }
  }

  /**
   * Every write is synced before it returns, so after a crash at any storage operation of a flush
   * and the close that checkpoints after it (the documents, the delete list, the commit, the
   * double-write file, the commit that makes the tombstones garbage, the pages in place, the
   * double-write file's deletion) the keyspace holds exactly what was written.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0} writes after the first checkpoint")
  @org.junit.jupiter.params.provider.ValueSource(ints = {2, 1500})
  void crashAtEveryMutation_ofAFlushAndACheckpoint(int writes) {
    // 2 writes dirty a few of the space's 20-odd pages: they go through the double-write file;
    // 1,500 dirty most pages, and the checkpoint rewrites the whole space instead
    boolean doubleWrite = writes < 100;
    long seed = Long.getLong("basalt.test.seed", new Random().nextLong());
    // checkpoints only at close, so the one under test is the close's
    Options o = options().syncMode(SyncMode.SYNC).trieCheckpointBytes(1L << 30);
    MemStorage whole = new MemStorage(seed);
    long mutations = flushAndClose(whole, new HashMap<>(), o, -1, writes);
    assertTrue(
        whole.snapshot().keySet().stream().noneMatch(n -> n.endsWith("double-write")),
        "a finished checkpoint leaves no double-write file");
    int applied = 0, loaded = 0;
    // A run's count moves by a few between runs (background threads' writes fall on either side of
    // the flush): the points go on past the measured count, so the checkpoint's last operations
    // are crashed at in runs that make more of them too (one past the end crashes nowhere).
    for (int point = 0; point < mutations + 16; point++) {
      MemStorage storage = new MemStorage(seed + point);
      Map<Integer, byte[]> model = new HashMap<>();
      flushAndClose(storage, model, o, point, writes);
      storage.crash(MemStorage.CrashMode.RANDOM);
      String where = "crash after " + point + " mutations (-Dbasalt.test.seed=" + seed + ")";
      try (Basalt db = Basalt.open(storage, o)) {
        check(db.keyspace("h"), model, 1000, where);
        applied += db.stats().get("trieDoubleWritesApplied");
        loaded += db.stats().get("trieCheckpointRecordsLoaded") > 0 ? 1 : 0;
      }
      try (Basalt db = Basalt.open(storage, o)) { // and again from what that open left
        check(db.keyspace("h"), model, 1000, where + ", second open");
        assertEquals(0, db.stats().get("trieDoubleWritesApplied"), where);
      }
    }
    assertTrue(mutations > 15, "the flush and the checkpoint mutated " + mutations + " times");
    // crashes in the in-place writes left double-write files the open completed (none with a
    // whole rewrite); elsewhere the open loaded the first checkpoint or the second
    if (doubleWrite) {
      assertTrue(
          applied > 0,
          "no open completed a checkpoint from its double-write file (-Dbasalt.test.seed="
              + seed
              + ")");
    } else {
      assertEquals(0, applied, "a whole rewrite writes no double-write file");
    }
    assertTrue(
        loaded > mutations / 2, "opens that loaded a checkpoint: " + loaded + "/" + mutations);
  }

  /**
   * Writes a keyspace and closes (its first checkpoint); reopens, writes more, flushes and closes
   * again (the second checkpoint), the storage halting after {@code crashPoint} mutations of that
   * flush and close (never, if negative). Returns the mutations they made.
   */
  private static long flushAndClose(
      MemStorage storage, Map<Integer, byte[]> model, Options o, long crashPoint, int writes) {
    Random rnd = new Random(7);
    try (Basalt db = Basalt.open(storage, o)) {
      write(db.createKeyspace("h", HASHED), model, rnd, 1500, 1000);
      db.flush(); // the trie holds every write: the close's checkpoint does
    }
    Basalt db = Basalt.open(storage, o);
    write(db.keyspace("h"), model, rnd, writes, 1000); // puts and deletes: tombstones pending
    long start = storage.mutationCount();
    if (crashPoint >= 0) storage.crashAfterMutations(crashPoint);
    try {
      db.flush();
      db.close(); // the second checkpoint: the changed pages, the tombstones made garbage
    } catch (StorageException e) {
      try {
        db.close(); // after the simulated crash
      } catch (RuntimeException closing) {
        // the storage is halted
      }
    }
    return storage.mutationCount() - start;
  }

  @Test
  void replay_overSegmentsGarbageCollectionRewrote() throws InterruptedException {
    MemStorage storage = new MemStorage(4);
    Map<Integer, byte[]> model = new HashMap<>();
    Options o =
        options()
            .fragmentationThreshold(0.3)
            .trieCheckpointBytes(1L << 30); // no checkpoint before the crash
    long gcRuns = 0;
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      Random rnd = new Random(4);
      for (int round = 0; round < 6; round++) {
        write(ks, model, rnd, 1500, 400); // overwrites: most of each segment turns to garbage
        db.flush();
      }
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (db.stats().get("gcRuns") == 0 && System.nanoTime() < deadline) Thread.sleep(10);
      db.flush(); // every write durable in the log; then a crash, with no close: no checkpoint
      gcRuns = db.stats().get("gcRuns");
      storage.crash(MemStorage.CrashMode.RANDOM);
    } catch (StorageException e) {
      // closing after the crash
    }
    assertTrue(gcRuns > 0, "garbage collection rewrote segments: " + gcRuns);
    try (Basalt db = Basalt.open(storage, o)) {
      assertEquals(0, db.stats().get("trieCheckpointRecordsLoaded"));
      check(db.keyspace("h"), model, 400, "replayed over collected segments");
    }
  }

  /**
   * Garbage collection moves documents without touching the trie; the gets that then miss their
   * hints queue them, and the next flush refreshes them, so a later open's cold reads find every
   * document from its hint.
   */
  /**
   * Hints garbage collection left stale are refreshed by the keyspace's next flush or, with no
   * write, by the flusher while it is idle.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "by a flush: {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {true, false})
  void hintsGarbageCollectionLeftStale_areRefreshed(boolean byFlush) throws InterruptedException {
    MemStorage storage = new MemStorage(8);
    Map<Integer, byte[]> model = new HashMap<>();
    Options o = options().fragmentationThreshold(0.3);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      Random rnd = new Random(8);
      putRandom(ks, model, rnd, 0, 400);
      db.flush();
      for (int round = 0; round < 6; round++) { // keys 200-399 overwritten: garbage beside 0-199
        putRandom(ks, model, rnd, 200, 400);
        db.flush();
      }
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (db.stats().get("gcRuns") == 0 && System.nanoTime() < deadline) Thread.sleep(10);
      assertTrue(db.stats().get("gcRuns") > 0, "garbage collection rewrote segments");
      db.flush();
      // Collection may go on moving documents meanwhile: read, refresh, until a round in which it
      // ran no more and the reads found no stale hint.
      long refreshed = 0;
      for (int round = 0; ; round++) {
        assertTrue(round < 50, "collection never settled: " + db.stats());
        long gc = db.stats().get("gcRuns"), before = db.stats().get("hintsRefreshed");
        check(ks, model, 400, "after collection"); // the gets queue the stale hints
        if (byFlush) {
          ks.put(key(0), model.get(0)); // a flush of the keyspace refreshes them
          db.flush();
        } else {
          Thread.sleep(300); // three of the idle flusher's rounds
        }
        long now = db.stats().get("hintsRefreshed");
        refreshed += now - before;
        if (now == before && db.stats().get("gcRuns") == gc) break;
      }
      assertTrue(refreshed > 0, db.stats().toString());
    }
    // cold, and with no collection moving documents again: every document read from its hint
    try (Basalt db = Basalt.open(storage, o.fragmentationThreshold(1.0))) {
      check(db.keyspace("h"), model, 400, "reopened");
      assertEquals(0, db.stats().get("hintMisses"), db.stats().toString());
    }
  }

  @Test
  void rollback_rebuildsTheTrieFromTheLog() {
    MemStorage storage = new MemStorage(5);
    Map<Integer, byte[]> atCheckpoint;
    long id;
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      Map<Integer, byte[]> model = new HashMap<>();
      Random rnd = new Random(5);
      write(ks, model, rnd, 3000, 1000);
      id = db.checkpoint().id();
      atCheckpoint = new HashMap<>(model);
      write(ks, model, rnd, 3000, 1000);
      db.flush();
    } // a trie checkpoint newer than the store checkpoint
    Basalt.rollback(storage, id);
    try (Basalt db = Basalt.open(storage, options())) {
      assertEquals(
          0, db.stats().get("trieCheckpointRecordsLoaded"), "the newer checkpoint is set aside");
      check(db.keyspace("h"), atCheckpoint, 1000, "after the rollback");
    }
  }

  @Test
  void backup_restoresAHashedKeyspace(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    Map<Integer, byte[]> model = new HashMap<>();
    try (Basalt db = Basalt.open(dir.resolve("db"), options())) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      write(ks, model, new Random(6), 4000, 1500); // checkpoints on the way
      db.backup(dir.resolve("backup"));
      write(ks, new HashMap<>(), new Random(60), 2000, 1500); // after the backup: not in it
    }
    Basalt.restore(dir.resolve("backup"), dir.resolve("restored"));
    try (Basalt db = Basalt.open(dir.resolve("restored"), options())) {
      assertEquals(Kind.HASHED, db.keyspaceOptions("h").kind());
      // the backup holds a checkpoint consistent with its manifest: loaded, then the log after it
      assertTrue(db.stats().get("trieCheckpointRecordsLoaded") > 0, db.stats().toString());
      check(db.keyspace("h"), model, 1500, "restored");
    }
  }

  /** 300 keys, then a batch past {@code walSkipBytes}: overwrites, deletes and new keys. */
  private static WriteBatch bigBatch(Keyspace ks, Map<Integer, byte[]> model) {
    WriteBatch b = new WriteBatch();
    for (int k = 0; k < 450; k++) {
      if (k >= 150 && k < 200) {
        b.delete(ks, key(k));
        model.remove(k);
      } else if (k < 150 || k >= 300) {
        byte[] v = new byte[100];
        v[0] = (byte) k;
        v[1] = 7;
        b.put(ks, key(k), v);
        model.put(k, v);
      }
    }
    return b;
  }

  private static void load(Keyspace ks, Map<Integer, byte[]> model) {
    for (int k = 0; k < 300; k++) {
      byte[] v = new byte[50];
      v[0] = (byte) k;
      ks.put(key(k), v);
      model.put(k, v);
    }
  }

  /**
   * A batch past {@code walSkipBytes} skips the WAL on a hashed keyspace too: a snapshot taken
   * before it keeps its view, later reads see all of it, and it survives a crash.
   */
  @Test
  void largeBatches_skipTheWal_andKeepSnapshotsAndCrashes() {
    MemStorage storage = new MemStorage(7);
    Map<Integer, byte[]> model = new HashMap<>();
    Options o = options().syncMode(SyncMode.SYNC).walSkipBytes(8192);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      Keyspace plain = db.createKeyspace("plain");
      load(ks, model);
      Map<Integer, byte[]> before = new HashMap<>(model);
      try (Snapshot snap = db.snapshot()) {
        WriteBatch b = bigBatch(ks, model);
        b.put(plain, key(1), new byte[10]);
        db.write(b);
        assertEquals(1, db.stats().get("walSkippedBatches"), "the batch skipped the WAL");
        check(ks, model, 450, "after the batch");
        for (int k = 0; k < 450; k++) {
          byte[] want = before.get(k), got = snap.get(ks, key(k));
          assertTrue(
              want == null ? got == null : java.util.Arrays.equals(want, got),
              "the snapshot before the batch, key " + k);
        }
      }
      storage.crash(MemStorage.CrashMode.RANDOM);
    } catch (RuntimeException e) {
      // closing after the crash
    }
    try (Basalt db = Basalt.open(storage, o)) {
      check(db.keyspace("h"), model, 450, "after the crash");
    }
  }

  /**
   * A crash at every storage operation of a WAL-skip batch on a hashed keyspace leaves all of the
   * batch or none of it, also once the open's checkpoint and replay are done.
   */
  @Test
  void crashAtEveryMutation_ofAWalSkipBatch() {
    long seed = Long.getLong("basalt.test.seed", new Random().nextLong());
    Options o = options().syncMode(SyncMode.SYNC).walSkipBytes(8192);
    long mutations = -1;
    int whole = 0;
    for (int point = 0; mutations < 0 || point <= mutations; point++) {
      MemStorage storage = new MemStorage(seed + point);
      Map<Integer, byte[]> model = new HashMap<>();
      Map<Integer, byte[]> after = new HashMap<>();
      Basalt db = Basalt.open(storage, o);
      Keyspace ks = db.createKeyspace("h", HASHED);
      load(ks, model);
      after.putAll(model);
      WriteBatch b = bigBatch(ks, after);
      long start = storage.mutationCount();
      storage.crashAfterMutations(point);
      try {
        db.write(b);
        mutations = storage.mutationCount() - start;
        assertEquals(1, db.stats().get("walSkippedBatches"));
      } catch (StorageException e) {
        // the simulated crash
      }
      try {
        db.close();
      } catch (RuntimeException closing) {
        // the storage is halted
      }
      storage.crash(MemStorage.CrashMode.RANDOM);
      String where = "crash after " + point + " mutations (-Dbasalt.test.seed=" + seed + ")";
      for (int open = 0; open < 2; open++) {
        try (Basalt again = Basalt.open(storage, o)) {
          Keyspace h = again.keyspace("h");
          boolean applied = java.util.Arrays.equals(after.get(0), h.get(key(0)));
          if (applied) whole++;
          check(h, applied ? after : model, 450, where + (applied ? " (applied)" : " (not)"));
        }
      }
    }
    assertTrue(mutations > 3, "the batch wrote segments, tables and a commit: " + mutations);
    assertTrue(whole > 0, "no crash point kept the batch");
  }
}
