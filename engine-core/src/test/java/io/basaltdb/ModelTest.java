package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Model-based randomized test (LevelDB's model test, Pebble's metamorphic test): seeded sequences
 * of puts, deletes, batches across keyspaces, gets, scans (forward and reverse), snapshots, flushes
 * and reopens run against the store and a {@code TreeMap} model, over several option sets (a tiny
 * write cache that flushes often, tiny segments that roll, each sync mode, the in-memory engine). A
 * failure names the seed and the option set; {@code -Dbasalt.model.seed=N} replays one seed.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ModelTest {
  static final int OPS = Integer.getInteger("basalt.model.ops", 1500);
  static final int SEEDS = Integer.getInteger("basalt.model.seeds", 4);

  static Stream<Arguments> configs() {
    return Stream.of(
        Arguments.of(
            "defaults", Options.defaults().memoryQuota(64L << 20).writeCacheSize(16L << 20), false),
        Arguments.of("tiny-cache", tiny().syncMode(SyncMode.SYNC), false),
        Arguments.of(
            "tiny-cache-periodic", tiny().syncMode(SyncMode.PERIODIC).syncIntervalMillis(5), false),
        Arguments.of(
            "tiny-cache-nosync",
            tiny().syncMode(SyncMode.NONE).bloomBitsPerKey(0).walSkipBytes(8192),
            false),
        Arguments.of("tiny-levels", tinyLevels(tiny()).walSkipBytes(8192), false),
        Arguments.of("tiny-levels-guards", tinyGuards(tinyLevels(tiny())), false),
        Arguments.of("in-memory", Options.defaults().memoryQuota(64L << 20), true));
  }

  /**
   * Key index levels so small that compactions run all the time and reach the deepest level, a
   * block cache so small that index and filter blocks are evicted and read again all the time, and
   * garbage collection at a low threshold, so segment and delete list compactions run all the time
   * too.
   */
  static Options tinyLevels(Options o) {
    return o.l0CompactionTrigger(2)
        .l0StopWritesTrigger(8)
        .level1Bytes(1024)
        .levelMultiplier(2)
        .tableTargetBytes(1024)
        .blockCacheSize(4 << 10)
        .fragmentationThreshold(0.2);
  }

  /** Key index guards so dense that every kind of guard job runs at these sizes. */
  static Options tinyGuards(Options o) {
    return o.keyIndexGuards(true).guardLastLevelBits(2).guardBitsStep(1).guardMaxTables(3);
  }

  static Options tiny() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(64 << 10)
        .segmentSize(64 << 10)
        .blockSize(512);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("configs")
  void matchesModel(String name, Options options, boolean inMemory) {
    Long only = Long.getLong("basalt.model.seed");
    for (int i = 0; i < SEEDS; i++) {
      long seed = only != null ? only : new Random().nextLong();
      try {
        new Run(seed, options, inMemory).run();
      } catch (Throwable t) {
        throw new AssertionError(
            "model test failed with options "
                + name
                + ", seed "
                + seed
                + " (replay: -Dbasalt.model.seed="
                + seed
                + "): "
                + t,
            t);
      }
      if (only != null) return;
    }
  }

  /**
   * On a real directory with {@link Options#directWrites} (segments, tables and the WAL written
   * around the page cache, partial blocks re-sent) and {@link Options#gcThreads} 2, levels tiny so
   * every kind of file is written, rewritten and reopened all the time; the store's staging buffers
   * are counted in its memory.
   */
  @Test
  void matchesModel_withDirectWritesOnDisk(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    Options options =
        tinyLevels(tiny()).syncMode(SyncMode.PERIODIC).directWrites(true).gcThreads(2);
    long seed = Long.getLong("basalt.model.seed", new Random().nextLong());
    java.util.concurrent.atomic.AtomicLong staged = new java.util.concurrent.atomic.AtomicLong();
    // this store's writes are small: every one that covers a whole block goes direct
    io.basaltdb.internal.storage.FileStorage.minDirectWriteBytes = 4096;
    try {
      Run run =
          new Run(seed, options, false, dir) {
            @Override
            void verifyAll() {
              super.verifyAll();
              db.flush(); // its segment and table writes, the large ones, go direct
              java.util.Map<String, Long> st = db.stats().asMap();
              staged.accumulateAndGet(st.get("writeBufferBytes"), Math::max);
              assertTrue(
                  st.get("memoryInUse") >= st.get("writeBufferBytes"),
                  "counted in memoryInUse: " + st);
            }
          };
      run.ops = Math.min(OPS, 800); // a real disk's syncs: the CI's time
      run.run();
    } catch (Throwable t) {
      throw new AssertionError(
          "model test with direct writes failed, seed "
              + seed
              + " (replay: -Dbasalt.model.seed="
              + seed
              + "): "
              + t,
          t);
    } finally {
      io.basaltdb.internal.storage.FileStorage.minDirectWriteBytes = 64 << 10;
    }
    assertTrue(staged.get() > 0, "writes staged through the store's aligned buffers");
  }

  /** One seeded run. */
  static class Run {
    final Random rnd;
    final Options options;
    final boolean inMemory;
    final MemStorage storage;

    /**
     * A directory on disk to run against instead of {@code storage} (engine-io's run through
     * io_uring).
     */
    final java.nio.file.Path dir;

    final String[] names = {"default", "second", "hashed"};

    /** The third keyspace's index: a hashed keyspace (seed 004), in every option set. */
    static final int HASHED = 2;

    /** Operations of the run; {@link #OPS} unless a caller sets fewer. */
    int ops = OPS;

    final List<TreeMap<Key, byte[]>> model = new ArrayList<>();
    Basalt db;
    Keyspace[] ks;

    /**
     * A change feed consumer per keyspace: what it has applied, and the seqno it resumes from; it
     * must always converge on the model.
     */
    final List<TreeMap<Key, byte[]>> replica =
        List.of(new TreeMap<>(), new TreeMap<>(), new TreeMap<>());

    final long[] resume = new long[3];

    /** Per keyspace: a rollback undid changes its consumer read, so it must be told to restart. */
    final boolean[] mustRestart = new boolean[3];

    /** The in-memory store's checkpoints this run took, by id, with the model at each. */
    final TreeMap<Long, List<TreeMap<Key, byte[]>>> checkpoints = new TreeMap<>();

    Run(long seed, Options options, boolean inMemory) {
      this(seed, options, inMemory, null);
    }

    Run(long seed, Options options, boolean inMemory, java.nio.file.Path dir) {
      this.rnd = new Random(seed);
      this.options = options;
      this.inMemory = inMemory;
      this.dir = dir;
      this.storage = inMemory || dir != null ? null : new MemStorage(seed);
    }

    void open() {
      db =
          inMemory
              ? Basalt.openInMemory(options)
              : dir != null ? Basalt.open(dir, options) : Basalt.open(storage, options);
      // on disk the second keyspace keeps HB+-trie tables: every option set checks them too
      if (!db.keyspaceNames().contains("second")) {
        db.createKeyspace(
            "second",
            inMemory
                ? KeyspaceOptions.defaults()
                : KeyspaceOptions.defaults()
                    .keyIndexFormat(KeyspaceOptions.KeyIndexFormat.HB_TRIE)
                    .trieChunkBytes(4));
      }
      // the third is hashed, with a small trie (b=16, s=2) so paths split and merge all the time
      if (!db.keyspaceNames().contains("hashed")) {
        db.createKeyspace(
            "hashed",
            KeyspaceOptions.defaults()
                .kind(KeyspaceOptions.Kind.HASHED)
                .branching(16)
                .sluggishness(2));
      }
      ks = new Keyspace[] {db.keyspace("default"), db.keyspace("second"), db.keyspace("hashed")};
    }

    void run() {
      model.add(new TreeMap<>());
      model.add(new TreeMap<>());
      model.add(new TreeMap<>());
      open();
      try {
        for (int op = 0; op < ops; op++) step();
        verifyAll();
        if (options.l0CompactionTrigger()
            == 2) { // tiny levels: compaction must have pushed data deep
          Stats st = db.stats();
          long deep = 0;
          for (int l = 2; l < 7; l++) deep += st.get("tablesAtLevel" + l);
          assertTrue(deep > 0, "no table below level 1: " + st);
        }
      } finally {
        db.close();
      }
    }

    byte[] key() {
      int n = rnd.nextInt(rnd.nextBoolean() ? 40 : 400);
      byte[] k = ("k" + n).getBytes();
      if (rnd.nextInt(50) == 0) {
        k = Arrays.copyOf(k, k.length + rnd.nextInt(3000)); // long keys sharing a prefix
      }
      return rnd.nextInt(200) == 0 ? new byte[0] : k;
    }

    byte[] value() {
      int len = rnd.nextInt(20) == 0 ? rnd.nextInt(20_000) : rnd.nextInt(200);
      byte[] v = new byte[len];
      rnd.nextBytes(v);
      return v;
    }

    void step() {
      int k = rnd.nextInt(3);
      int p = rnd.nextInt(100);
      if (p < 40) {
        byte[] key = key(), v = value();
        // One put in eight carries an expiry far in the future: its formats (WAL, write cache,
        // segment,
        // key index table 5) go through every flush, compaction, collection and reopen, and never
        // expire.
        if (rnd.nextInt(8) == 0) ks[k].put(key, v, Long.MAX_VALUE / 4);
        else ks[k].put(key, v);
        model.get(k).put(new Key(key), v);
      } else if (p < 50) {
        byte[] key = key();
        ks[k].delete(key);
        model.get(k).remove(new Key(key));
      } else if (p < 58) {
        WriteBatch b = new WriteBatch();
        List<Runnable> apply = new ArrayList<>();
        for (int i = rnd.nextInt(10); i >= 0; i--) {
          int kk = rnd.nextInt(3);
          byte[] key = key();
          if (rnd.nextInt(4) == 0) {
            b.delete(ks[kk], key);
            apply.add(() -> model.get(kk).remove(new Key(key)));
          } else {
            byte[] v = value();
            b.put(ks[kk], key, v);
            apply.add(() -> model.get(kk).put(new Key(key), v));
          }
        }
        db.write(b);
        apply.forEach(Runnable::run);
      } else if (p < 76) {
        byte[] key = key();
        assertArrayEquals(model.get(k).get(new Key(key)), ks[k].get(key), "get " + new Key(key));
      } else if (p < 80) {
        List<byte[]> keys = new ArrayList<>();
        for (int i = rnd.nextInt(60); i >= 0; i--)
          keys.add(rnd.nextInt(3) == 0 ? ("k" + rnd.nextInt(400)).getBytes() : key());
        List<byte[]> got = ks[k].getAll(keys);
        assertEquals(keys.size(), got.size());
        for (int i = 0; i < keys.size(); i++) {
          assertArrayEquals(
              model.get(k).get(new Key(keys.get(i))), got.get(i), "getAll " + new Key(keys.get(i)));
        }
      } else if (p < 86) {
        scanCheck(k);
      } else if (p < 91) {
        snapshotCheck();
      } else if (p < 94) {
        if (!inMemory) db.flush();
      } else if (p < 96) {
        if (!inMemory) {
          db.close();
          open();
        }
      } else if (p < 98) {
        feedCheck(k);
      } else if (p < 99) {
        if (inMemory && checkpoints.size() < 4) checkpoints.put(db.checkpoint().id(), copyModel());
      } else if (inMemory && !checkpoints.isEmpty()) {
        rollbackCheck();
      }
    }

    List<TreeMap<Key, byte[]>> copyModel() {
      return List.of(
          new TreeMap<>(model.get(0)), new TreeMap<>(model.get(1)), new TreeMap<>(model.get(2)));
    }

    /**
     * The consumer of keyspace {@code k} reads the changes since its last feed and applies them: it
     * must then hold exactly the model (FAST mode: stale versions may come first, the newest last).
     * A purge since it last read (or a rollback of what it read) makes it start from 0.
     */
    void feedCheck(int k) {
      ChangeFeed f;
      try {
        f = ks[k].changes(resume[k], ChangeFeed.NOW);
        assertFalse(mustRestart[k], "a rollback undid changes the consumer read, unreported");
      } catch (ChangesPurgedException e) {
        replica.get(k).clear();
        f = ks[k].changes(0, ChangeFeed.NOW);
      }
      mustRestart[k] = false;
      try (ChangeFeed feed = f) {
        long last = -1;
        while (feed.next()) {
          assertTrue(feed.seqno() > last, "feed out of order");
          last = feed.seqno();
          if (feed.isDeletion()) replica.get(k).remove(new Key(feed.key()));
          else replica.get(k).put(new Key(feed.key()), feed.value());
        }
        resume[k] = feed.endSeqno() + 1;
      }
      TreeMap<Key, byte[]> m = model.get(k), r = replica.get(k);
      assertEquals(m.keySet(), r.keySet(), "the feed's consumer holds other keys");
      for (Map.Entry<Key, byte[]> e : m.entrySet())
        assertArrayEquals(e.getValue(), r.get(e.getKey()), "feed value of " + e.getKey());
    }

    /**
     * Rolls the live in-memory store back to one of its checkpoints: the model becomes the one
     * saved with it, later checkpoints go, and consumers that read past it must be told.
     */
    void rollbackCheck() {
      List<Long> ids = new ArrayList<>(checkpoints.keySet());
      long id = ids.get(rnd.nextInt(ids.size()));
      Checkpoint now = db.rollback(id);
      List<TreeMap<Key, byte[]>> saved = checkpoints.get(id);
      for (int i = 0; i < 3; i++) {
        model.set(i, new TreeMap<>(saved.get(i)));
        if (resume[i] > 1) mustRestart[i] = true;
      }
      checkpoints.tailMap(id, false).clear();
      checkpoints.put(now.id(), copyModel());
      assertEquals(
          new ArrayList<>(checkpoints.keySet()),
          db.checkpoints().stream().map(Checkpoint::id).toList());
    }

    void scanCheck(int k) {
      if (k == HASHED) { // no key order: refused, naming the kind
        assertThrows(UnsupportedOperationException.class, () -> ks[HASHED].scan(null, null));
        return;
      }
      byte[] from = rnd.nextInt(4) == 0 ? null : key();
      byte[] to = rnd.nextInt(4) == 0 ? null : key();
      int readAhead =
          rnd.nextInt(3) == 0
              ? 1 + rnd.nextInt(rnd.nextBoolean() ? 4 : 200)
              : 0; // fixed, or growing
      if (rnd.nextBoolean()) { // a reverse scan of the same range
        try (Cursor c =
            readAhead == 0 ? ks[k].reverseScan(from, to) : ks[k].reverseScan(from, to, readAhead)) {
          compareScan(c, model.get(k), from, to, true);
        }
        return;
      }
      try (Cursor c = readAhead == 0 ? ks[k].scan(from, to) : ks[k].scan(from, to, readAhead)) {
        compareScan(c, model.get(k), from, to);
      }
    }

    static void compareScan(Cursor c, TreeMap<Key, byte[]> m, byte[] from, byte[] to) {
      compareScan(c, m, from, to, false);
    }

    /** Checks a scan of {@code [from, to)}, ascending or ({@code reverse}) descending. */
    static void compareScan(
        Cursor c, TreeMap<Key, byte[]> m, byte[] from, byte[] to, boolean reverse) {
      java.util.NavigableMap<Key, byte[]> expect = m;
      if (from != null && to != null) {
        if (Arrays.compareUnsigned(from, to) >= 0) expect = new TreeMap<>();
        else expect = m.subMap(new Key(from), true, new Key(to), false);
      } else if (from != null) {
        expect = m.tailMap(new Key(from), true);
      } else if (to != null) {
        expect = m.headMap(new Key(to), false);
      }
      if (reverse) expect = expect.descendingMap();
      for (Map.Entry<Key, byte[]> e : expect.entrySet()) {
        assertTrue(c.next(), "scan ended early, missing " + e.getKey());
        assertEquals(e.getKey(), new Key(c.key()));
        assertArrayEquals(e.getValue(), c.value(), "value of " + e.getKey());
      }
      assertFalse(c.next(), "scan has extra keys");
    }

    /**
     * Takes a snapshot, writes and flushes over it, then checks it still shows the frozen model.
     */
    void snapshotCheck() {
      List<TreeMap<Key, byte[]>> frozen =
          List.of(
              new TreeMap<>(model.get(0)),
              new TreeMap<>(model.get(1)),
              new TreeMap<>(model.get(2)));
      try (Snapshot s = db.snapshot()) {
        for (int i = rnd.nextInt(30); i > 0; i--) step0();
        if (!inMemory && rnd.nextBoolean()) db.flush();
        int k = rnd.nextInt(3);
        for (int i = 0; i < 10; i++) {
          byte[] key = key();
          assertArrayEquals(
              frozen.get(k).get(new Key(key)), s.get(ks[k], key), "snapshot get " + new Key(key));
        }
        if (k == HASHED) {
          for (Map.Entry<Key, byte[]> e : frozen.get(k).entrySet()) {
            assertArrayEquals(
                e.getValue(), s.get(ks[k], e.getKey().bytes), "snapshot get " + e.getKey());
          }
          return;
        }
        try (Cursor c = s.scan(ks[k], null, null)) {
          compareScan(c, frozen.get(k), null, null);
        }
        try (Cursor c = s.reverseScan(ks[k], null, null)) {
          compareScan(c, frozen.get(k), null, null, true);
        }
      }
    }

    /** A plain write step (no nested snapshot, reopen). */
    void step0() {
      int k = rnd.nextInt(3);
      byte[] key = key();
      if (rnd.nextInt(4) == 0) {
        ks[k].delete(key);
        model.get(k).remove(new Key(key));
      } else {
        byte[] v = value();
        ks[k].put(key, v);
        model.get(k).put(new Key(key), v);
      }
    }

    void verifyAll() {
      for (int k = 0; k < 3; k++) {
        feedCheck(k);
        for (Map.Entry<Key, byte[]> e : model.get(k).entrySet()) {
          assertArrayEquals(e.getValue(), ks[k].get(e.getKey().bytes), "final get " + e.getKey());
        }
        if (k == HASHED) continue;
        try (Cursor c = ks[k].scan(null, null)) {
          compareScan(c, model.get(k), null, null);
        }
      }
      assertNull(ks[0].get("never-written".getBytes()));
    }
  }

  /** A byte[] with unsigned lexicographic order, for the model. */
  record Key(byte[] bytes) implements Comparable<Key> {
    @Override
    public int compareTo(Key o) {
      return Arrays.compareUnsigned(bytes, o.bytes);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && Arrays.equals(bytes, k.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      String s =
          new String(
              bytes, 0, Math.min(bytes.length, 12), java.nio.charset.StandardCharsets.ISO_8859_1);
      return "'" + s.replaceAll("[^ -~]", "?") + "'(" + bytes.length + "B)";
    }
  }
}
