package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints and rollback (Magma section 5) against a model of each keyspace's contents. */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class CheckpointTest {
  /** Several segments per keyspace, a flush every few dozen writes, compactions, tiny blocks. */
  private static Options options() {
    return ModelTest.tinyLevels(
        Options.defaults()
            .memoryQuota(8L << 20)
            .writeCacheSize(64 << 10)
            .segmentSize(64 << 10)
            .blockSize(512)
            .syncMode(SyncMode.NONE));
  }

  @Test
  void rollback_bringsBackExactlyTheCheckpoint_forgetsLaterCheckpoints_andTheStoreGoesOn(
      @TempDir Path dir) {
    Map<String, TreeMap<String, String>> atCheckpoint;
    Checkpoint cp;
    List<Checkpoint> before;
    try (Basalt db = Basalt.open(dir, options())) {
      db.createKeyspace("dropped-later");
      writeRandom(db, new Random(1), 3000);
      cp = db.checkpoint();
      atCheckpoint = contents(db);
      assertEquals(
          db.stats().lastSeqno(),
          cp.seqno(),
          "a checkpoint holds every write acknowledged before it");
      assertEquals(List.of("default", "dropped-later"), cp.keyspaces());
      // Later: overwrites, deletes, new keys, a new keyspace, a dropped one, flushes, compactions,
      // and
      // writes that stay in the WAL.
      db.createKeyspace("created-later");
      writeRandom(db, new Random(2), 3000);
      db.dropKeyspace("dropped-later");
      db.waitForCompactions(30_000);
      db.checkpoint();
      writeRandom(db, new Random(3), 200);
      assertNotEquals(atCheckpoint, contents(db));
      before = db.checkpoints();
      assertTrue(before.stream().anyMatch(c -> c.id() > cp.id()));
    }
    long segmentFilesBefore = countFiles(dir.resolve("keyspaces"));

    Checkpoint now = Basalt.rollback(dir, cp.id());
    assertEquals(cp.seqno(), now.seqno());
    assertEquals(cp.keyspaces(), now.keyspaces());
    assertTrue(now.id() > before.get(before.size() - 1).id());
    List<Checkpoint> after = Basalt.checkpoints(dir);
    assertEquals(now, after.get(after.size() - 1));
    for (Checkpoint c : after)
      assertTrue(c.id() <= cp.id() || c.id() == now.id(), "left after the rollback: " + c);
    assertTrue(
        countFiles(dir.resolve("keyspaces")) < segmentFilesBefore,
        "later tables and segments are deleted");
    assertEquals(
        0,
        Files.exists(dir.resolve("keyspaces/3")) ? countFiles(dir.resolve("keyspaces/3")) : 0,
        "the keyspace created after the checkpoint has no files left");

    Map<String, TreeMap<String, String>> expected = atCheckpoint;
    try (Basalt db = Basalt.open(dir, options())) {
      assertEquals(expected, contents(db));
      assertEquals(
          cp.seqno(), db.stats().lastSeqno(), "seqnos after the checkpoint's are handed out again");
      // The store goes on: writes land over the old tail segment and survive a reopen.
      Random rnd = new Random(4);
      for (int i = 0; i < 2000; i++) {
        String k = "k" + rnd.nextInt(500);
        String v = "after-" + i;
        db.keyspace("default").put(bytes(k), bytes(v));
        expected.get("default").put(k, v);
      }
      db.flush();
      db.keyspace("default").put(bytes("wal-only"), bytes("x"));
      expected.get("default").put("wal-only", "x");
    }
    try (Basalt db = Basalt.open(dir, options())) {
      assertEquals(expected, contents(db));
      assertEquals(cp.seqno() + 2001, db.stats().lastSeqno());
    }
  }

  @Test
  void rollbackToTheNewestCheckpoint_dropsWritesOnlyTheWalHolds_andAnEarlierOneStaysReachable(
      @TempDir Path dir) {
    Checkpoint first;
    Checkpoint second;
    Map<String, TreeMap<String, String>> atFirst;
    Map<String, TreeMap<String, String>> atSecond;
    try (Basalt db = Basalt.open(dir, options())) {
      writeRandom(db, new Random(5), 500);
      first = db.checkpoint();
      atFirst = contents(db);
      writeRandom(db, new Random(6), 500);
      second = db.checkpoint();
      atSecond = contents(db);
      db.keyspace("default").put(bytes("unflushed"), bytes("y"));
    }
    Basalt.rollback(dir, second.id());
    try (Basalt db = Basalt.open(dir, options())) {
      assertEquals(atSecond, contents(db));
      db.keyspace("default").put(bytes("after-second"), bytes("z"));
    }
    Basalt.rollback(dir, first.id()); // across a rollback: still there, still whole
    try (Basalt db = Basalt.open(dir, options())) {
      assertEquals(atFirst, contents(db));
    }
  }

  @Test
  void refusals_leaveTheStoreUnchanged(@TempDir Path dir) {
    Map<String, TreeMap<String, String>> state;
    Checkpoint cp;
    try (Basalt db = Basalt.open(dir, options().checkpointRetentionMillis(0))) {
      writeRandom(db, new Random(7), 800);
      cp = db.checkpoint();
      writeRandom(db, new Random(8), 800);
      db.flush();
      state = contents(db);
      // Open: refused.
      StorageException open =
          assertThrows(StorageException.class, () -> Basalt.rollback(dir, cp.id()));
      assertTrue(open.getMessage().contains("already open"), open.getMessage());
      assertEquals(state, contents(db));
      assertEquals(1, db.checkpoints().size(), "retention 0 keeps the current manifest only");
    }
    // Expired (retention 0), and never existed.
    InvalidArgumentException expired =
        assertThrows(InvalidArgumentException.class, () -> Basalt.rollback(dir, cp.id()));
    assertTrue(expired.getMessage().contains("no checkpoint " + cp.id()), expired.getMessage());
    assertThrows(InvalidArgumentException.class, () -> Basalt.rollback(dir, 1_000_000));
    assertThrows(
        InvalidArgumentException.class, () -> Basalt.rollback(dir.resolve("nothing-here"), 1));
    assertThrows(InvalidArgumentException.class, () -> Basalt.rollback((Path) null, 1));
    try (Basalt db = Basalt.open(dir, options())) {
      assertEquals(state, contents(db));
    }
    try (Basalt db = Basalt.open(dir, options())) {
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> db.rollback(cp.id()));
      assertTrue(e.getMessage().contains("only while closed"), e.getMessage());
    }
  }

  @Test
  void aCheckpointWithAMissingFile_isReportedAndNothingChanges() throws Exception {
    MemStorage storage = new MemStorage(9);
    Checkpoint cp;
    Map<String, TreeMap<String, String>> state;
    try (Basalt db = Basalt.open(storage, options())) {
      writeRandom(db, new Random(9), 1500);
      cp = db.checkpoint();
      state = contents(db);
    }
    String victim = storage.list("keyspaces/1/log").get(0);
    byte[] saved = storage.contents("keyspaces/1/log/" + victim);
    storage.delete("keyspaces/1/log/" + victim);
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Basalt.rollback(storage, cp.id()));
    assertTrue(e.getMessage().contains(victim), e.getMessage());
    try (var f = storage.create("keyspaces/1/log/" + victim)) {
      f.write(0, java.nio.ByteBuffer.wrap(saved));
      f.sync();
    }
    try (Basalt db = Basalt.open(storage, options())) {
      assertEquals(state, contents(db));
    }
  }

  /**
   * A crash at every storage mutation of a rollback: the reopened store is either the store before
   * the rollback or the checkpoint, whole, and it takes writes that survive the next reopen. A
   * rollback that returned is never undone.
   */
  @Test
  void aCrashAtAnyPointOfARollback_leavesTheOldStoreOrTheCheckpoint() {
    long seed = Long.getLong("basalt.rollback.seed", new Random().nextLong());
    long mutations = -1;
    for (int point = 0; mutations < 0 || point <= mutations; point++) {
      MemStorage storage = new MemStorage(seed + point); // which unsynced writes a crash keeps
      Checkpoint cp;
      Map<String, TreeMap<String, String>> atCheckpoint;
      Map<String, TreeMap<String, String>> atEnd;
      try (Basalt db = Basalt.open(storage, options())) {
        db.createKeyspace("second");
        writeRandom(db, new Random(10), 1200);
        cp = db.checkpoint();
        atCheckpoint = contents(db);
        writeRandom(db, new Random(11), 1200);
        db.flush();
        db.waitForCompactions(30_000);
        atEnd = contents(db);
      }
      long start = storage.mutationCount();
      storage.crashAfterMutations(point);
      boolean returned;
      try {
        Basalt.rollback(storage, cp.id());
        returned = true;
      } catch (StorageException e) {
        returned = false;
      }
      if (returned)
        mutations = storage.mutationCount() - start; // the rollback's length: the last point
      storage.crash(MemStorage.CrashMode.RANDOM);
      String where =
          "crash after "
              + point
              + " mutations of the rollback (replay: -Dbasalt.rollback.seed="
              + seed
              + ")";
      try (Basalt db = Basalt.open(storage, options())) {
        Map<String, TreeMap<String, String>> found = contents(db);
        boolean rolledBack = found.equals(atCheckpoint);
        assertTrue(
            rolledBack || found.equals(atEnd),
            where + ": neither the old store nor the checkpoint");
        if (returned) assertTrue(rolledBack, where + ": a finished rollback was undone");
        if (rolledBack) {
          for (Checkpoint c : db.checkpoints()) {
            assertTrue(
                c.seqno() <= cp.seqno(),
                where + ": a checkpoint from before the rollback is offered: " + c);
          }
        }
        db.keyspace("second").put(bytes("after"), bytes("crash"));
        found.get("second").put("after", "crash");
        db.flush();
        try (Basalt again = reopen(db, storage)) {
          assertEquals(found, contents(again), where);
        }
      }
    }
    assertTrue(mutations > 3, "the rollback made " + mutations + " mutations");
  }

  private static Basalt reopen(Basalt db, MemStorage storage) {
    db.close();
    return Basalt.open(storage, options());
  }

  /** Puts and deletes over a few hundred keys in every keyspace. */
  private static void writeRandom(Basalt db, Random rnd, int ops) {
    List<String> names = db.keyspaceNames();
    for (int i = 0; i < ops; i++) {
      Keyspace ks = db.keyspace(names.get(rnd.nextInt(names.size())));
      byte[] key = bytes("k" + rnd.nextInt(500));
      if (rnd.nextInt(6) == 0) {
        ks.delete(key);
      } else {
        ks.put(key, bytes("v" + rnd.nextLong() + "-" + "x".repeat(rnd.nextInt(120))));
      }
    }
  }

  private static Map<String, TreeMap<String, String>> contents(Basalt db) {
    Map<String, TreeMap<String, String>> out = new TreeMap<>();
    for (String name : db.keyspaceNames()) {
      TreeMap<String, String> m = new TreeMap<>();
      try (Cursor c = db.keyspace(name).scan(null, null)) {
        while (c.next())
          m.put(
              new String(c.key(), StandardCharsets.UTF_8),
              new String(c.value(), StandardCharsets.UTF_8));
      }
      out.put(name, m);
    }
    return out;
  }

  private static long countFiles(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).count();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
