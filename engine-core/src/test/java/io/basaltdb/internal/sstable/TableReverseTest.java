package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRecord;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.MemStorage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Backward moves of {@link TableIterator} ({@code seekLast}, {@code seekBefore}, {@code prev})
 * against the sorted-map model, over block sizes and restart intervals from 1 to 1024: a whole
 * backward walk, the floor below keys at and around every record and block separator, and walks
 * that turn around, with and without a block cache. Replay with {@code -Dbasalt.sstable.seed=N}.
 */
class TableReverseTest {
  private static final TableOptions[] OPTION_SETS = {
    TableOptions.defaults(),
    new TableOptions(64, 1, 10),
    new TableOptions(128, 3, 0),
    new TableOptions(32, 16, 4),
    new TableOptions(1024, 1024, 20),
  };

  @Test
  void backwardMoves_matchTheModel() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      for (TableOptions o : OPTION_SETS) {
        for (int n : new int[] {0, 1, 2, 7, 100, 1500}) {
          TableModel m = TableModel.random(r, n, 80);
          check(m, o, null, r, "n=" + n + " " + o);
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  /** The same through a block cache: blocks a backward move caches are read back from it. */
  @Test
  void backwardMoves_throughABlockCache() {
    long seed = TableRoundTripTest.seed();
    try (BlockCache cache = new BlockCache(4L << 20)) {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 800, 40);
      check(m, new TableOptions(256, 4, 10), cache, r, "cached");
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void longKeysSharingLongPrefixes_backward() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      byte[] base = TableModel.bytes(r, 20_000);
      TableModel m = new TableModel();
      for (int i = 0; i < 60; i++) {
        byte[] k = Arrays.copyOf(base, r.nextInt(19_000, 20_000));
        k[k.length - 1 - r.nextInt(3)] = (byte) r.nextInt(256); // differ only near the end
        m.put(k, i, i, false, i);
      }
      m.put(new byte[0], 1, 2, true, 3);
      check(m, new TableOptions(32, 8, 10), null, r, "long keys");
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void misuse_throws() {
    TableModel m = new TableModel();
    m.put(new byte[] {1}, 1, 1, false, 1);
    MemStorage storage = new MemStorage(0);
    m.write(storage.create("t.sst"), TableOptions.defaults());
    try (TableReader t = TableReader.open(storage.open("t.sst"), "t.sst")) {
      TableIterator it = t.iterator();
      assertThrows(NoSuchElementException.class, it::prev); // not positioned
      assertThrows(InvalidArgumentException.class, () -> it.seekBefore(null));
      it.seekLast();
      it.prev();
      assertFalse(it.valid());
      assertThrows(NoSuchElementException.class, it::prev);
      it.close();
      assertThrows(ClosedException.class, it::seekLast);
      assertThrows(ClosedException.class, () -> it.seekBefore(new byte[] {2}));
    }
  }

  private static void check(
      TableModel m, TableOptions o, BlockCache cache, SplittableRandom r, String ctx) {
    MemStorage storage = new MemStorage(0);
    m.write(storage.create("t.sst"), o);
    List<KeyRecord> all = new ArrayList<>(m.map.values());
    List<KeyRecord> reversed = new ArrayList<>(all);
    java.util.Collections.reverse(reversed);
    try (TableReader t = TableReader.open(storage.open("t.sst"), "t.sst", cache)) {
      for (boolean fill : new boolean[] {false, true}) {
        // A whole backward walk, twice (the second through the cache if there is one).
        for (int pass = 0; pass < 2; pass++) {
          try (TableIterator it = t.iterator(fill)) {
            it.seekLast();
            assertBackward(it, reversed, ctx + " seekLast walk");
          }
        }
        // seekBefore at and around every record (and so around every block's separator), and
        // beyond both ends; from each, a few steps back and then forward again.
        List<byte[]> probes = new ArrayList<>();
        probes.add(new byte[0]);
        probes.add(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF});
        for (KeyRecord rec : all) {
          probes.add(rec.key);
          probes.add(Arrays.copyOf(rec.key, rec.key.length + 1));
          if (rec.key.length > 0) {
            probes.add(Arrays.copyOf(rec.key, rec.key.length - 1));
            byte[] less = rec.key.clone();
            less[less.length - 1]--;
            probes.add(less);
          }
        }
        for (int i = 0; i < 30; i++) probes.add(TableModel.bytes(r, r.nextInt(10)));
        try (TableIterator it = t.iterator(fill)) {
          KeyRecord got = new KeyRecord();
          for (byte[] p : probes) {
            it.seekBefore(p);
            Map.Entry<byte[], KeyRecord> want = m.map.lowerEntry(p);
            String what = ctx + " seekBefore " + Arrays.toString(p);
            if (want == null) {
              assertFalse(it.valid(), what);
              continue;
            }
            assertTrue(it.valid(), what);
            assertRecord(want.getValue(), it.record(got), what);
            assertTrue(it.compareKey(p) < 0, what);
            byte[] at = want.getKey();
            int steps = r.nextInt(6);
            for (int s = 0; s < steps; s++) { // back
              it.prev();
              Map.Entry<byte[], KeyRecord> e = m.map.lowerEntry(at);
              if (e == null) {
                assertFalse(it.valid(), what + " back " + s);
                break;
              }
              assertRecord(e.getValue(), it.record(got), what + " back " + s);
              at = e.getKey();
            }
            if (!it.valid()) continue;
            for (int s = 0; s < 6; s++) { // and forward, turning around
              if (r.nextInt(3) == 0) {
                it.prev();
                Map.Entry<byte[], KeyRecord> e = m.map.lowerEntry(at);
                if (e == null) {
                  assertFalse(it.valid(), what + " turn " + s);
                  break;
                }
                assertRecord(e.getValue(), it.record(got), what + " turn " + s);
                at = e.getKey();
              } else {
                it.next();
                Map.Entry<byte[], KeyRecord> e = m.map.higherEntry(at);
                if (e == null) {
                  assertFalse(it.valid(), what + " turn " + s);
                  break;
                }
                assertRecord(e.getValue(), it.record(got), what + " turn " + s);
                at = e.getKey();
              }
            }
          }
        }
      }
      if (!all.isEmpty()) { // from a forward position, back to the start
        try (TableIterator it = t.iterator()) {
          KeyRecord mid = all.get(all.size() / 2);
          it.seek(mid.key);
          assertArrayEquals(mid.key, it.key(), ctx);
          assertBackward(it, reversed.subList(all.size() - 1 - all.size() / 2, all.size()), ctx);
        }
      }
    }
  }

  /** From its position, the iterator yields exactly {@code expected} walking backward. */
  private static void assertBackward(TableIterator it, List<KeyRecord> expected, String ctx) {
    KeyRecord got = new KeyRecord();
    int i = 0;
    for (KeyRecord want : expected) {
      assertTrue(it.valid(), ctx + ": ended at record " + i + ", expected " + want);
      assertRecord(want, it.record(got), ctx + " record " + i);
      it.prev();
      i++;
    }
    assertFalse(it.valid(), ctx + ": records before the expected " + i);
    assertEquals(expected.size(), i);
  }
}
