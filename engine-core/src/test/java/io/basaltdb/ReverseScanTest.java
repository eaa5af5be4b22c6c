package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Reverse scans ({@link Keyspace#reverseScan}, {@link Snapshot#reverseScan}) against a {@code
 * TreeMap} model and against the forward scan of the same range reversed: seeded puts, overwrites,
 * deletes and expiries (on an injected clock) in two keyspaces, with the data in the write cache
 * only, flushed, compacted down a leveled and a guarded key index, and in the in-memory engine;
 * random bounds, open ones, empty and inverted ranges, bounds beyond every key. A failure names its
 * seed; {@code -Dbasalt.reverse.seed=N} replays it.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class ReverseScanTest {
  private final AtomicLong clock = new AtomicLong(1_000_000L);

  static Stream<Arguments> configs() {
    return Stream.of(
        Arguments.of(
            "write-cache", Options.defaults().memoryQuota(64L << 20).writeCacheSize(16L << 20)),
        Arguments.of("flushed", ModelTest.tiny()),
        Arguments.of("tiny-levels", ModelTest.tinyLevels(ModelTest.tiny())),
        Arguments.of(
            "tiny-levels-guards", ModelTest.tinyGuards(ModelTest.tinyLevels(ModelTest.tiny()))),
        Arguments.of("in-memory", null));
  }

  static long seed() {
    return Long.getLong("basalt.reverse.seed", new Random().nextLong());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("configs")
  void reverseScans_matchTheModel_andTheForwardScanReversed(String name, Options options) {
    long seed = seed();
    try {
      new Run(seed, options).run(name);
    } catch (Throwable t) {
      throw new AssertionError(
          name + " failed with seed " + seed + " (replay: -Dbasalt.reverse.seed=" + seed + ")", t);
    }
  }

  /** A value and when it expires (0: never). */
  record Entry(byte[] value, long expiresAt) {
    boolean liveAt(long now) {
      return expiresAt == 0 || expiresAt > now;
    }
  }

  /** One seeded run of writes and checks. */
  class Run {
    final Random rnd;
    final Options options;
    final boolean inMemory;
    final List<TreeMap<ModelTest.Key, Entry>> model = List.of(new TreeMap<>(), new TreeMap<>());
    Basalt db;
    Keyspace[] ks;

    Run(long seed, Options options) {
      this.rnd = new Random(seed);
      this.inMemory = options == null;
      this.options =
          (inMemory ? Options.defaults().memoryQuota(64L << 20) : options).clock(clock::get);
    }

    void run(String name) {
      db = inMemory ? Basalt.openInMemory(options) : Basalt.open(new MemStorage(7), options);
      try {
        db.createKeyspace("second");
        ks = new Keyspace[] {db.keyspace("default"), db.keyspace("second")};
        for (int op = 0; op < 1500; op++) step();
        if (!inMemory) {
          db.flush();
          assertTrue(db.waitForCompactions(60_000), "compactions did not settle");
        }
        for (int k = 0; k < 2; k++) {
          check(k, null, null, 0);
          for (int i = 0; i < 20; i++) check(k, bound(), bound(), rnd.nextInt(3) * 7);
        }
        if (name.startsWith("tiny-levels")) { // compaction pushed data deep
          long deep = 0;
          for (int l = 2; l < 7; l++) deep += db.stats().get("tablesAtLevel" + l);
          assertTrue(deep > 0, "no table below level 1: " + db.stats());
        } else if (name.equals("flushed")) {
          assertTrue(db.stats().get("flushes") > 0, "nothing was flushed");
        }
      } finally {
        db.close();
      }
    }

    byte[] key() {
      int n = rnd.nextInt(rnd.nextBoolean() ? 30 : 300);
      byte[] k = ("k" + n).getBytes();
      if (rnd.nextInt(40) == 0) k = Arrays.copyOf(k, k.length + rnd.nextInt(200)); // long keys
      if (rnd.nextInt(60) == 0) k = new byte[] {(byte) 0xFF, (byte) rnd.nextInt(256)};
      return rnd.nextInt(150) == 0 ? new byte[0] : k;
    }

    /** A scan bound: null, a key, or one beyond every key at either end. */
    byte[] bound() {
      int p = rnd.nextInt(10);
      if (p == 0) return null;
      if (p == 1) return new byte[0]; // below every key but the empty one
      if (p == 2) return new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF}; // above every key
      return key();
    }

    byte[] value() {
      byte[] v = new byte[rnd.nextInt(20) == 0 ? rnd.nextInt(5000) : rnd.nextInt(100)];
      rnd.nextBytes(v);
      return v;
    }

    void step() {
      int k = rnd.nextInt(2);
      int p = rnd.nextInt(100);
      if (p < 50) {
        byte[] key = key(), v = value();
        long expires = rnd.nextInt(8) == 0 ? clock.get() + 1 + rnd.nextInt(40) : 0;
        ks[k].put(key, v, expires);
        model.get(k).put(new ModelTest.Key(key), new Entry(v, expires));
      } else if (p < 65) {
        byte[] key = key();
        ks[k].delete(key);
        model.get(k).remove(new ModelTest.Key(key));
      } else if (p < 80) {
        clock.addAndGet(rnd.nextInt(10)); // some expiries pass
      } else if (p < 92) {
        byte[] from = bound(), to = bound();
        if (rnd.nextInt(10) == 0) to = from; // an empty range
        check(k, from, to, rnd.nextBoolean() ? 0 : 1 + rnd.nextInt(rnd.nextBoolean() ? 4 : 100));
      } else if (p < 96) {
        snapshotCheck();
      } else if (!inMemory) {
        db.flush();
      }
    }

    /** The model's live keys of keyspace {@code k} in {@code [from, to)}, descending. */
    List<Map.Entry<ModelTest.Key, Entry>> expected(int k, byte[] from, byte[] to) {
      NavigableMap<ModelTest.Key, Entry> m = model.get(k);
      if (from != null && to != null && Arrays.compareUnsigned(from, to) >= 0) return List.of();
      if (from != null) m = m.tailMap(new ModelTest.Key(from), true);
      if (to != null) m = m.headMap(new ModelTest.Key(to), false);
      List<Map.Entry<ModelTest.Key, Entry>> out = new ArrayList<>();
      long now = clock.get();
      for (Map.Entry<ModelTest.Key, Entry> e : m.descendingMap().entrySet())
        if (e.getValue().liveAt(now)) out.add(Map.entry(e.getKey(), e.getValue())); // a copy
      return out;
    }

    /** A reverse scan against the model, and against the forward scan of the range reversed. */
    void check(int k, byte[] from, byte[] to, int readAhead) {
      String what = "reverseScan(" + str(from) + ", " + str(to) + ", " + readAhead + ")";
      List<byte[][]> back;
      try (Cursor c =
          readAhead == 0 ? ks[k].reverseScan(from, to) : ks[k].reverseScan(from, to, readAhead)) {
        back = drain(c);
      }
      compare(expected(k, from, to), back, what);
      List<byte[][]> forward;
      try (Cursor c = ks[k].scan(from, to)) {
        forward = drain(c);
      }
      Collections.reverse(forward);
      assertEquals(forward.size(), back.size(), what + ": against the forward scan");
      for (int i = 0; i < back.size(); i++) {
        assertArrayEquals(forward.get(i)[0], back.get(i)[0], what + ": key " + i);
        assertArrayEquals(forward.get(i)[1], back.get(i)[1], what + ": value " + i);
      }
    }

    /** A snapshot's reverse scan keeps showing its state while writes, expiries, flushes go on. */
    void snapshotCheck() {
      int k = rnd.nextInt(2);
      byte[] from = bound(), to = bound();
      List<Map.Entry<ModelTest.Key, Entry>> frozen = expected(k, from, to);
      try (Snapshot s = db.snapshot()) {
        for (int i = rnd.nextInt(40); i > 0; i--) {
          int p = rnd.nextInt(3);
          if (p == 0) {
            byte[] key = key();
            ks[k].delete(key);
            model.get(k).remove(new ModelTest.Key(key));
          } else {
            byte[] key = key(), v = value();
            ks[k].put(key, v);
            model.get(k).put(new ModelTest.Key(key), new Entry(v, 0));
          }
        }
        clock.addAndGet(rnd.nextInt(20)); // the snapshot judges expiries as of when it was taken
        if (!inMemory && rnd.nextBoolean()) db.flush();
        try (Cursor c = s.reverseScan(ks[k], from, to)) {
          compare(frozen, drain(c), "snapshot reverseScan(" + str(from) + ", " + str(to) + ")");
        }
      }
    }
  }

  static List<byte[][]> drain(Cursor c) {
    List<byte[][]> out = new ArrayList<>();
    while (c.next()) out.add(new byte[][] {c.key(), c.value()});
    assertFalse(c.next(), "a cursor past its end stays there");
    return out;
  }

  static void compare(List<Map.Entry<ModelTest.Key, Entry>> want, List<byte[][]> got, String what) {
    for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
      assertEquals(want.get(i).getKey(), new ModelTest.Key(got.get(i)[0]), what + ": key " + i);
      assertArrayEquals(
          want.get(i).getValue().value(), got.get(i)[1], what + ": value of " + want.get(i));
    }
    assertEquals(want.size(), got.size(), what + ": keys returned");
  }

  static String str(byte[] b) {
    return b == null ? "null" : new ModelTest.Key(b).toString();
  }

  static byte[] b(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** Values of keys whose versions all live in the key index and the log, read ahead together. */
  @Test
  void valuesReadFromDisk_withReadAhead() {
    try (Basalt db = Basalt.open(new MemStorage(3), ModelTest.tinyLevels(ModelTest.tiny()))) {
      Keyspace ks = db.keyspace("default");
      TreeMap<ModelTest.Key, byte[]> model = new TreeMap<>();
      Random r = new Random(5);
      for (int i = 0; i < 600; i++) {
        byte[] k = b(String.format("key%04d", r.nextInt(400)));
        byte[] v = new byte[200 + r.nextInt(2000)];
        r.nextBytes(v);
        ks.put(k, v);
        model.put(new ModelTest.Key(k), v);
      }
      db.flush(); // the write cache holds nothing now: every value comes from a segment
      assertTrue(db.waitForCompactions(60_000));
      for (int readAhead : new int[] {16, 100, 1}) {
        long reads = db.stats().get("documentReads") + db.stats().get("batchedReads");
        long batched = db.stats().get("batchedReads");
        List<Map.Entry<ModelTest.Key, byte[]>> want =
            new ArrayList<>(model.descendingMap().entrySet());
        try (Cursor c = ks.reverseScan(null, null, readAhead)) {
          for (Map.Entry<ModelTest.Key, byte[]> e : want) {
            assertTrue(c.next(), "ended before " + e.getKey());
            assertEquals(e.getKey(), new ModelTest.Key(c.key()));
            assertArrayEquals(e.getValue(), c.value(), "value of " + e.getKey());
          }
          assertFalse(c.next());
        }
        assertTrue(
            db.stats().get("documentReads") + db.stats().get("batchedReads") > reads
                || db.stats().get("blockCacheDocumentHits") > 0,
            "values did not come from the log");
        if (readAhead == 16) {
          assertTrue(db.stats().get("batchedReads") > batched, "no batched reads: " + readAhead);
        }
      }
      // A range in the middle, from a key that is absent.
      try (Cursor c = ks.reverseScan(b("key0100x"), b("key0300x"), 8)) {
        for (byte[] v :
            model
                .subMap(
                    new ModelTest.Key(b("key0100x")), true, new ModelTest.Key(b("key0300x")), false)
                .descendingMap()
                .values()) {
          assertTrue(c.next());
          assertArrayEquals(v, c.value());
        }
        assertFalse(c.next());
      }
    }
  }

  /**
   * Keyspace ids of one byte and of five (from 0xF0 on) in one write cache: a reverse scan with an
   * open end starts at its own keyspace's last key and stops at its first.
   */
  @Test
  void openEnds_stayInsideTheKeyspace_shortAndLongIds() {
    for (boolean inMemory : new boolean[] {true, false}) {
      Options o = Options.defaults().memoryQuota(64L << 20).writeCacheSize(16L << 20);
      try (Basalt db = inMemory ? Basalt.openInMemory(o) : Basalt.open(new MemStorage(9), o)) {
        List<Keyspace> all = new ArrayList<>();
        all.add(db.keyspace("default"));
        for (int i = 1; i <= 0xF2; i++) all.add(db.createKeyspace("ks" + i));
        byte[][] keys = {new byte[0], {0}, b("m"), {(byte) 0xFF}, {(byte) 0xFF, (byte) 0xFF}};
        for (int i : new int[] {0, 1, 0xEE, 0xEF, 0xF0, 0xF1, 0xF2}) {
          for (byte[] k : keys) all.get(i).put(k, b("ks" + i));
        }
        for (int i : new int[] {0, 1, 0xEE, 0xEF, 0xF0, 0xF1, 0xF2}) {
          try (Cursor c = all.get(i).reverseScan(null, null)) {
            for (int j = keys.length - 1; j >= 0; j--) {
              assertTrue(c.next(), "keyspace " + i);
              assertArrayEquals(keys[j], c.key(), "keyspace " + i);
              assertArrayEquals(b("ks" + i), c.value());
            }
            assertFalse(c.next(), "keyspace " + i + " ran into another");
          }
        }
        try (Cursor c = all.get(2).reverseScan(null, null)) {
          assertFalse(c.next(), "an empty keyspace between full ones");
        }
      }
    }
  }

  @Test
  void snapshotReverseScan_seesTheSnapshotAfterLaterWrites() {
    for (boolean inMemory : new boolean[] {true, false}) {
      Options o = ModelTest.tiny();
      try (Basalt db = inMemory ? Basalt.openInMemory(o) : Basalt.open(new MemStorage(4), o)) {
        Keyspace ks = db.keyspace("default");
        for (int i = 0; i < 100; i++) ks.put(b(String.format("%03d", i)), b("old" + i));
        try (Snapshot s = db.snapshot()) {
          for (int i = 0; i < 100; i += 2) ks.delete(b(String.format("%03d", i)));
          for (int i = 1; i < 100; i += 2) ks.put(b(String.format("%03d", i)), b("new" + i));
          ks.put(b("050x"), b("added"));
          if (!inMemory) db.flush();
          try (Cursor c = s.reverseScan(ks, b("010"), b("090"))) {
            for (int i = 89; i >= 10; i--) {
              assertTrue(c.next());
              assertArrayEquals(b(String.format("%03d", i)), c.key());
              assertArrayEquals(b("old" + i), c.value());
            }
            assertFalse(c.next());
          }
          try (Cursor c = ks.reverseScan(b("010"), b("090"))) { // the store now
            for (int i = 89; i >= 11; i -= 2) {
              if (i == 49) {
                assertTrue(c.next());
                assertArrayEquals(b("050x"), c.key());
              }
              assertTrue(c.next());
              assertArrayEquals(b(String.format("%03d", i)), c.key());
              assertArrayEquals(b("new" + i), c.value());
            }
            assertFalse(c.next());
          }
        }
      }
    }
  }

  @Test
  void closedCursorStoreAndSnapshot_andBadArguments_throw() {
    for (boolean inMemory : new boolean[] {true, false}) {
      Options o = ModelTest.tiny();
      Basalt db = inMemory ? Basalt.openInMemory(o) : Basalt.open(new MemStorage(5), o);
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      ks.put(b("b"), b("2"));
      assertThrows(InvalidArgumentException.class, () -> ks.reverseScan(null, null, 0));
      assertThrows(InvalidArgumentException.class, () -> ks.reverseScan(null, null, 4097));
      assertThrows(
          InvalidArgumentException.class,
          () -> ks.reverseScan(new byte[Options.MAX_KEY_SIZE + 1], null));
      assertThrows(
          InvalidArgumentException.class,
          () -> ks.reverseScan(null, new byte[Options.MAX_KEY_SIZE + 1], 4));
      Cursor closed = ks.reverseScan(null, null);
      assertTrue(closed.next());
      assertArrayEquals(b("b"), closed.key());
      closed.close();
      closed.close(); // idempotent
      assertThrows(ClosedException.class, closed::next);
      assertThrows(ClosedException.class, closed::key);
      Snapshot s = db.snapshot();
      assertThrows(InvalidArgumentException.class, () -> s.reverseScan(null, null, null));
      Cursor fromSnapshot = s.reverseScan(ks, null, null);
      s.close();
      assertThrows(ClosedException.class, fromSnapshot::next);
      assertThrows(ClosedException.class, () -> s.reverseScan(ks, null, null));
      fromSnapshot.close();
      Keyspace dropped = db.createKeyspace("gone");
      db.dropKeyspace("gone");
      assertThrows(ClosedException.class, () -> dropped.reverseScan(null, null));
      Cursor open = ks.reverseScan(null, null, 2);
      db.close();
      assertThrows(ClosedException.class, open::next);
      assertThrows(ClosedException.class, () -> ks.reverseScan(null, null));
      open.close();
    }
  }
}
