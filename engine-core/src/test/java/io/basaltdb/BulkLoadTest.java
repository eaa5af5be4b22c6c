package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link BulkLoad}: its chunks are sorted, written past the WAL and committed one by one; what it
 * leaves is what the same writes in order would, before and after a reopen; bad input is refused
 * before anything is added; and a chunk that fails leaves exactly the writes {@link
 * BulkLoad#appliedWrites} counts.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class BulkLoadTest {
  private static final long CHUNK = BulkLoad.MIN_CHUNK_BYTES;

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Small caches, tables and segments, so chunks make many level-0 tables and compactions. */
  static Options options() {
    return ChangeFeedTest.tiny().memoryQuota(32L << 20).writeCacheSize(256 << 10);
  }

  /** One write of a load: a put of {@code value}, or a delete if it is null. */
  record Op(int keyspace, String key, byte[] value) {}

  /** {@code n} puts and deletes over 3,000 keys of two keyspaces, values of 40-400 bytes. */
  static List<Op> ops(long seed, int n) {
    Random r = new Random(seed);
    List<Op> ops = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String k = "key" + r.nextInt(3000);
      if (r.nextInt(10) == 0) {
        ops.add(new Op(r.nextInt(2), k, null));
      } else {
        byte[] v = new byte[40 + r.nextInt(360)];
        r.nextBytes(v);
        ops.add(new Op(r.nextInt(2), k, v));
      }
    }
    return ops;
  }

  /** Each keyspace's contents after the first {@code count} of {@code ops}. */
  static List<TreeMap<String, byte[]>> model(List<Op> ops, long count) {
    List<TreeMap<String, byte[]>> m = List.of(new TreeMap<>(), new TreeMap<>());
    for (int i = 0; i < count; i++) {
      Op op = ops.get(i);
      if (op.value == null) m.get(op.keyspace).remove(op.key);
      else m.get(op.keyspace).put(op.key, op.value);
    }
    return m;
  }

  /** The two keyspaces the tests load, created if the store has none yet. */
  static Keyspace[] keyspaces(Basalt db) {
    Keyspace[] ks = new Keyspace[2];
    for (int k = 0; k < 2; k++) {
      String name = "ks" + k;
      ks[k] = db.keyspaceNames().contains(name) ? db.keyspace(name) : db.createKeyspace(name);
    }
    return ks;
  }

  static void load(BulkLoad load, Keyspace[] ks, List<Op> ops) {
    for (Op op : ops) {
      if (op.value == null) load.delete(ks[op.keyspace], b(op.key));
      else load.put(ks[op.keyspace], b(op.key), op.value);
    }
  }

  /** Whether {@code db}'s two keyspaces hold exactly {@code model}'s keys. */
  static boolean holds(Basalt db, List<TreeMap<String, byte[]>> model) {
    for (int k = 0; k < 2; k++) {
      java.util.Set<String> keys = new java.util.TreeSet<>();
      try (Cursor c = db.keyspace("ks" + k).scan(null, null)) {
        while (c.next()) keys.add(new String(c.key(), StandardCharsets.UTF_8));
      }
      if (!keys.equals(model.get(k).keySet())) return false;
    }
    return true;
  }

  static void check(Basalt db, List<TreeMap<String, byte[]>> model) {
    for (int k = 0; k < 2; k++) {
      Keyspace ks = db.keyspace("ks" + k);
      TreeMap<String, byte[]> actual = new TreeMap<>();
      try (Cursor c = ks.scan(null, null)) {
        while (c.next()) actual.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
      }
      assertEquals(model.get(k).keySet(), actual.keySet(), "keys of ks" + k);
      for (Map.Entry<String, byte[]> e : model.get(k).entrySet()) {
        assertArrayEquals(e.getValue(), actual.get(e.getKey()), e.getKey());
        assertArrayEquals(e.getValue(), ks.get(b(e.getKey())), e.getKey());
      }
    }
  }

  @Test
  void aLoad_leavesWhatItsWritesInOrderWould_beforeAndAfterAReopen() {
    MemStorage storage = new MemStorage(1);
    List<Op> ops = ops(1, 6000);
    List<TreeMap<String, byte[]>> model;
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace[] ks = keyspaces(db);
      // Writes before the load, some of which it overwrites or deletes.
      for (int i = 0; i < 500; i++) ks[i % 2].put(b("key" + i * 6), b("before" + i));
      List<Op> all = new ArrayList<>();
      for (int i = 0; i < 500; i++) all.add(new Op(i % 2, "key" + i * 6, b("before" + i)));
      all.addAll(ops);
      model = model(all, all.size());
      try (BulkLoad load = db.bulkLoad(CHUNK)) {
        load(load, ks, ops);
        assertEquals(ops.size(), load.writes());
        load.flush();
        assertEquals(ops.size(), load.appliedWrites());
      }
      check(db, model);
      Stats s = db.stats();
      // About 1.3 MB of writes in 64 KiB chunks: each full chunk skipped the WAL.
      assertTrue(
          s.get("walSkippedBatches") >= 15, "chunks past the WAL: " + s.get("walSkippedBatches"));
    }
    try (Basalt db = Basalt.open(storage, options())) {
      check(db, model);
    }
  }

  @Test
  void writesOfAPartialChunk_areVisibleOnlyOnceFlushed() {
    try (Basalt db = Basalt.open(new MemStorage(2), options())) {
      Keyspace ks = keyspaces(db)[0];
      try (BulkLoad load = db.bulkLoad(CHUNK)) {
        load.put(ks, b("a"), b("1")).put(ks, b("b"), b("2")).delete(ks, b("b"));
        assertNull(ks.get(b("a")));
        assertEquals(0, load.appliedWrites());
        load.flush();
        assertArrayEquals(b("1"), ks.get(b("a")));
        assertNull(ks.get(b("b")));
        assertEquals(3, load.appliedWrites());
        load.put(ks, b("c"), b("3"));
      } // close flushes
      assertArrayEquals(b("3"), ks.get(b("c")));
    }
  }

  @Test
  void badInput_isRefusedBeforeAnythingIsAdded() {
    try (Basalt db = Basalt.open(new MemStorage(3), options());
        Basalt other = Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20))) {
      Keyspace ks = keyspaces(db)[0];
      assertThrows(InvalidArgumentException.class, () -> db.bulkLoad(1024));
      assertThrows(InvalidArgumentException.class, () -> db.bulkLoad(BulkLoad.MAX_CHUNK_BYTES + 1));
      BulkLoad load = db.bulkLoad();
      assertThrows(InvalidArgumentException.class, () -> load.put(ks, null, b("v")));
      assertThrows(InvalidArgumentException.class, () -> load.put(ks, b("k"), null));
      assertThrows(InvalidArgumentException.class, () -> load.put(null, b("k"), b("v")));
      assertThrows(InvalidArgumentException.class, () -> load.put(ks, b("k"), b("v"), -1));
      assertThrows(
          InvalidArgumentException.class,
          () -> load.put(ks, b("k"), new byte[db.options().maxValueSize() + 1]));
      assertThrows(
          InvalidArgumentException.class,
          () -> load.put(other.createKeyspace("x"), b("k"), b("v")));
      assertThrows(InvalidArgumentException.class, () -> load.delete(ks, new byte[70_000]));
      assertEquals(0, load.writes());
      load.close();
      load.close(); // a second close does nothing
      assertThrows(InvalidArgumentException.class, () -> load.put(ks, b("k"), b("v")));
      assertThrows(InvalidArgumentException.class, load::flush);
      assertNull(ks.get(b("k")));
    }
    Basalt closed = Basalt.open(new MemStorage(4), options());
    closed.close();
    assertThrows(ClosedException.class, closed::bulkLoad);
  }

  /**
   * A storage that halts during a chunk's write: the load reports the failure, and the reopened
   * store holds exactly the first {@link BulkLoad#appliedWrites} writes, for crash points all
   * through a chunk's write.
   */
  @Test
  void aChunkThatFails_leavesExactlyTheWritesCountedApplied() {
    List<Op> ops = ops(5, 1500);
    Options o = options().syncMode(SyncMode.SYNC);
    // The storage operations of the load's second part, uninterrupted: the crash points spread over
    // them.
    long mutations;
    MemStorage measured = new MemStorage(99);
    try (Basalt db = Basalt.open(measured, o);
        BulkLoad load = db.bulkLoad(CHUNK)) {
      load(load, keyspaces(db), ops.subList(0, 400));
      load.flush();
      long start = measured.mutationCount();
      load(load, keyspaces(db), ops.subList(400, ops.size()));
      load.flush();
      mutations = measured.mutationCount() - start;
    }
    int partial = 0, none = 0;
    for (int point = 0; point < 12; point++) {
      long crashAt = 1 + mutations * point * 2 / 30; // over the first 80%
      MemStorage storage = new MemStorage(100 + point);
      long applied;
      long inDoubt = 0;
      Basalt db = Basalt.open(storage, o);
      try {
        Keyspace[] ks = keyspaces(db);
        BulkLoad load = db.bulkLoad(CHUNK);
        // The first part is applied whole, then the storage halts inside a later chunk.
        load(load, ks, ops.subList(0, 400));
        load.flush();
        storage.crashAfterMutations(crashAt);
        try {
          load(load, ks, ops.subList(400, ops.size()));
          load.flush();
          applied = ops.size(); // background work took the crash budget after the load was done
        } catch (BasaltException e) {
          assertTrue(e.getMessage().contains("bulk load"), e.getMessage());
          applied = load.appliedWrites();
          inDoubt = load.inDoubtWrites();
          assertTrue(inDoubt > 0, "the failed chunk's writes");
          assertTrue(applied >= 400 && applied < ops.size(), "applied " + applied);
          assertThrows(BasaltException.class, () -> load.put(ks[0], b("k"), b("v")));
        }
        if (applied < ops.size()) {
          // A failed load's close ends it and throws its failure again; a second close does
          // nothing.
          assertThrows(BasaltException.class, load::close);
        }
        load.close();
        storage.crashAfterMutations(0);
      } finally {
        ChangeFeedTest.closeCrashed(db);
      }
      if (applied == 400) none++;
      else if (applied < ops.size()) partial++;
      storage.crash(MemStorage.CrashMode.KEEP_NONE);
      try (Basalt again = Basalt.open(storage, o)) {
        // The failed chunk is in the store whole or not at all (its write may fail after commit).
        List<TreeMap<String, byte[]>> without = model(ops, applied);
        List<TreeMap<String, byte[]>> with = model(ops, applied + inDoubt);
        boolean whole = again.keyspaceNames().contains("ks0") && holds(again, with);
        check(again, whole ? with : without);
      } catch (AssertionError err) {
        throw new AssertionError(
            "crash after " + crashAt + " of " + mutations + " mutations: " + err.getMessage(), err);
      }
    }
    assertTrue(none > 0, "no crash point failed the first chunk after the flush");
    assertTrue(partial > 0, "no crash point came after a chunk was applied");
  }

  /** On an in-memory store (no WAL to skip), a load's chunks are ordinary batches. */
  @Test
  void anInMemoryStore_takesALoadAsBatches() {
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(64L << 20))) {
      Keyspace[] ks = keyspaces(db);
      List<Op> ops = ops(9, 3000);
      try (BulkLoad load = db.bulkLoad(CHUNK)) {
        load(load, ks, ops);
      }
      check(db, model(ops, ops.size()));
    }
  }
}
