package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRecord;
import static io.basaltdb.internal.sstable.TableModel.assertRest;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Writes random tables under several option sets and checks every read path against a sorted-map
 * model: info, full iteration, get of every present key and of absent neighbours, and seek at and
 * around every key and every block boundary. Replay a failure with {@code -Dbasalt.sstable.seed=N}.
 */
class TableRoundTripTest {
  private static final TableOptions[] OPTION_SETS = {
    TableOptions.defaults(),
    new TableOptions(64, 1, 10),
    new TableOptions(128, 3, 0),
    new TableOptions(32, 16, 4),
    new TableOptions(1024, 1024, 20),
    TableOptions.defaults().withTrie(8),
    new TableOptions(64, 1, 10).withTrie(4),
    new TableOptions(128, 3, 0).withTrie(16),
    new TableOptions(256, 1, 4).withTrie(1),
    new TableOptions(256, 1, 4).withTrie(2).withTrieSkewRule(false),
  };

  static long seed() {
    return Long.getLong("basalt.sstable.seed", System.nanoTime());
  }

  @Test
  void roundTrip_randomTables() {
    long seed = seed();
    int[] sizes = {0, 1, 2, 7, 100, 1500};
    try {
      SplittableRandom r = new SplittableRandom(seed);
      for (TableOptions o : OPTION_SETS) {
        for (int n : sizes) {
          checkTable(TableModel.random(r, n, 80), o, r, "n=" + n + " " + o);
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void roundTrip_longKeysWithLongSharedPrefixes() {
    long seed = seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      byte[] base = TableModel.bytes(r, KeyRecord.MAX_KEY_SIZE);
      TableModel m = new TableModel();
      for (int i = 0; i < 40; i++) {
        int len =
            r.nextInt(4) == 0
                ? KeyRecord.MAX_KEY_SIZE
                : r.nextInt(KeyRecord.MAX_KEY_SIZE - 1000, KeyRecord.MAX_KEY_SIZE);
        byte[] k = Arrays.copyOf(base, len);
        k[len - 1 - r.nextInt(3)] = (byte) r.nextInt(256); // differ only near the end
        m.put(k, i, i, false, i);
      }
      m.put(new byte[0], 1, 2, true, 3);
      m.put(new byte[] {(byte) 0xFF}, 4, 5, false, 6);
      for (TableOptions o :
          new TableOptions[] {
            TableOptions.defaults(),
            new TableOptions(32, 2, 10),
            TableOptions.defaults().withTrie(8),
            new TableOptions(32, 2, 10).withTrie(4)
          }) {
        checkTable(m, o, r, "long keys " + o);
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void everyHint_roundTrips_theUsualOnesAsVarints_andNoHintInOneByte() {
    long[] hints = {
      -1, 0, 1, 127, 128, 64L << 20, Long.MAX_VALUE - 1, Long.MAX_VALUE, -2, Long.MIN_VALUE
    };
    TableModel m = new TableModel();
    for (int i = 0; i < hints.length; i++) m.put(new byte[] {(byte) i}, i, i, i % 2 == 0, hints[i]);
    checkTable(m, TableOptions.defaults(), new SplittableRandom(3), "hints");
    // Records without a hint cost one byte for it (format 2), not eight (format 1).
    TableModel none = new TableModel();
    TableModel far = new TableModel();
    for (int i = 0; i < 1000; i++) {
      byte[] k = String.format("k%05d", i).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      none.put(k, i, 100, false, -1);
      far.put(k, i, 100, false, Long.MIN_VALUE); // fixed-width: outside the varint form's range
    }
    MemStorage storage = new MemStorage(0);
    long small = none.write(storage.create("a.sst"), TableOptions.defaults()).fileSize();
    long big = far.write(storage.create("b.sst"), TableOptions.defaults()).fileSize();
    assertTrue(big - small >= 7 * 1000, "no hint: " + small + " bytes, fixed hints: " + big);
  }

  @Test
  void seqnoInKey_roundTrips_andSavesTheSeqnoField() {
    long base = 1L << 22; // four-byte varints
    TableModel same = new TableModel();
    TableModel other = new TableModel();
    for (int i = 0; i < 1000; i++) {
      long seqno = base + 3L * i;
      byte[] k = new byte[8];
      for (int b = 7, v = 0; b >= 0; b--, v += 8) k[b] = (byte) (seqno >>> v);
      same.put(k, seqno, 1000 + i, false, -1); // a delete list record
      other.put(k, seqno + 1, 1000 + i, false, -1); // an 8-byte key that is not its seqno
    }
    byte[] shortKey = {1, 2, 3};
    same.put(shortKey, 0x010203, 5, true, 7); // not 8 bytes: the seqno is stored
    checkTable(same, TableOptions.defaults(), new SplittableRandom(4), "seqno in key");
    checkTable(
        other, new TableOptions(64, 2, 10), new SplittableRandom(5), "8-byte keys, other seqnos");
    MemStorage storage = new MemStorage(0);
    long small = same.write(storage.create("a.sst"), TableOptions.defaults()).fileSize();
    long big = other.write(storage.create("b.sst"), TableOptions.defaults()).fileSize();
    assertTrue(big - small >= 3 * 1000, "seqno in key: " + small + " bytes, stored: " + big);
  }

  @Test
  void seekForward_probingAscendingKeys_findsEachCeiling() {
    long seed = seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      for (TableOptions o :
          new TableOptions[] {
            TableOptions.defaults(),
            new TableOptions(64, 2, 0),
            TableOptions.defaults().withTrie(8),
            new TableOptions(64, 2, 0).withTrie(1)
          }) {
        TableModel m = TableModel.random(r, 1500, 12);
        MemStorage storage = new MemStorage(0);
        m.write(storage.create("t.sst"), o);
        try (TableReader t = TableReader.open(storage.open("t.sst"), "t.sst")) {
          java.util.TreeSet<byte[]> probes = new java.util.TreeSet<>(KeyRecord::compareKeys);
          for (byte[] k : m.map.keySet()) {
            if (r.nextInt(3) == 0) probes.add(k);
            if (r.nextInt(5) == 0) probes.add(Arrays.copyOf(k, k.length + 1)); // just after k
          }
          for (int i = 0; i < 50; i++) probes.add(TableModel.bytes(r, 1 + r.nextInt(12)));
          long readsBefore = t.blockReads();
          TableIterator it = t.iterator();
          boolean first = true;
          for (byte[] p : probes) {
            if (first) it.seek(p);
            else it.seekForward(p);
            first = false;
            java.util.Map.Entry<byte[], KeyRecord> want = m.ceiling(p);
            if (want == null) {
              assertFalse(it.valid(), "past the end at " + Arrays.toString(p));
              continue;
            }
            assertTrue(it.valid(), "a ceiling exists for " + Arrays.toString(p));
            assertArrayEquals(want.getKey(), it.key(), "ceiling of " + Arrays.toString(p));
            assertEquals(
                Integer.signum(KeyRecord.compareKeys(want.getKey(), p)),
                Integer.signum(it.compareKey(p)));
            assertEquals(want.getValue().seqno, it.seqno());
          }
          // Forward probes read each block at most once.
          assertTrue(
              t.blockReads() - readsBefore <= t.blockCount(),
              "blocks read: " + (t.blockReads() - readsBefore));
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void emptyKey_aloneAndFirst() {
    TableModel alone = new TableModel();
    alone.put(new byte[0], 7, 8, false, 9);
    checkTable(alone, TableOptions.defaults(), new SplittableRandom(1), "empty key alone");
    TableModel first = new TableModel();
    first.put(new byte[0], 1, 1, true, 1);
    first.put(new byte[] {0}, 2, 2, false, 2);
    first.put(new byte[] {0, 0}, 3, 3, false, 3);
    checkTable(first, new TableOptions(32, 1, 10), new SplittableRandom(2), "empty key first");
  }

  @Test
  void emptyTable() {
    StorageFile f = TableModel.newFile();
    TableInfo w = new TableModel().write(f, TableOptions.defaults());
    assertEquals(0, w.entryCount());
    assertNull(w.smallestKey());
    try (TableReader t = TableReader.open(f, "t.sst")) {
      assertEquals(0, t.info().entryCount());
      assertNull(t.info().largestKey());
      assertFalse(t.get(new byte[0], new KeyRecord()));
      TableIterator it = t.iterator();
      it.seekFirst();
      assertFalse(it.valid());
      it.seek(new byte[0]);
      assertFalse(it.valid());
      assertEquals(0, t.blockReads());
    }
  }

  /** Writes {@code m}, reopens it and checks every read path; {@code r} picks extra probe keys. */
  static void checkTable(TableModel m, TableOptions o, SplittableRandom r, String ctx) {
    checkTable(m, o, r, ctx, null);
  }

  /**
   * As {@link #checkTable(TableModel, TableOptions, SplittableRandom, String)}, through a cache.
   */
  static void checkTable(
      TableModel m, TableOptions o, SplittableRandom r, String ctx, BlockCache cache) {
    MemStorage storage = new MemStorage(0);
    TableInfo written = m.write(storage.create("t.sst"), o);
    storage.crash(
        MemStorage.CrashMode.KEEP_NONE); // finish() synced: the table survives a power loss
    StorageFile f = storage.open("t.sst");
    List<KeyRecord> all = new ArrayList<>(m.map.values());
    try (TableReader t = TableReader.open(f, storage.describe("t.sst"), cache)) {
      TableInfo info = t.info();
      assertEquals(TableModel.contents(f).length, written.fileSize(), ctx);
      assertEquals(written.fileSize(), info.fileSize(), ctx);
      assertEquals(all.size(), info.entryCount(), ctx);
      assertEquals(written.entryCount(), info.entryCount(), ctx);
      if (!all.isEmpty()) {
        assertArrayEquals(m.map.firstKey(), info.smallestKey(), ctx);
        assertArrayEquals(m.map.lastKey(), info.largestKey(), ctx);
        assertArrayEquals(written.largestKey(), info.largestKey(), ctx);
        assertEquals(all.stream().mapToLong(k -> k.seqno).min().getAsLong(), info.minSeqno(), ctx);
        assertEquals(all.stream().mapToLong(k -> k.seqno).max().getAsLong(), info.maxSeqno(), ctx);
        assertEquals(written.maxSeqno(), info.maxSeqno(), ctx);
      }
      if (all.size() > 50 && o.blockSize() <= 128) {
        assertTrue(
            t.blockCount() > all.size() / 20,
            ctx + ": small blocks give many blocks, got " + t.blockCount());
      }
      // Full scan.
      TableIterator it = t.iterator();
      it.seekFirst();
      assertRest(it, all, ctx + " scan");
      // Every present key: one block read per get.
      KeyRecord out = new KeyRecord();
      for (KeyRecord want : all) {
        long reads = t.blockReads();
        assertTrue(t.mayContain(want.key), ctx);
        assertTrue(t.get(want.key, out), ctx);
        assertRecord(want, out, ctx + " get");
        if (cache == null) assertEquals(reads + 1, t.blockReads(), ctx + " block reads per get");
      }
      // Seeks at and around every key; the neighbours also probe absent keys and block separators.
      List<byte[]> probes = new ArrayList<>();
      probes.add(new byte[0]);
      probes.add(new byte[] {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF});
      for (int i = 0; i < all.size(); i++) {
        byte[] k = all.get(i).key;
        probes.add(k);
        probes.add(Arrays.copyOf(k, k.length + 1)); // the smallest key after k
        if (k.length > 0) probes.add(Arrays.copyOf(k, k.length - 1));
        if (i + 1 < all.size()) probes.add(TableWriter.shortestSeparator(k, all.get(i + 1).key));
      }
      for (int i = 0; i < 200; i++)
        probes.add(TableModel.randomKey(r, new byte[][] {new byte[0]}, 12));
      for (int i = 0; i < probes.size(); i++) {
        byte[] p = probes.get(i);
        String pc = ctx + " probe " + i;
        KeyRecord want = m.map.get(p);
        boolean found = t.get(p, out);
        assertEquals(want != null, found, pc + " get");
        if (found) assertRecord(want, out, pc);
        it.seek(p);
        var ceiling = m.ceiling(p);
        if (ceiling == null) {
          assertFalse(it.valid(), pc + " seek past the end");
        } else if (i % 16 == 0) {
          assertRest(it, m.map.tailMap(p, true).values(), pc + " seek+scan");
        } else {
          assertTrue(it.valid(), pc);
          assertRecord(ceiling.getValue(), it.record(out), pc + " seek");
          assertArrayEquals(ceiling.getKey(), it.key(), pc);
        }
      }
      it.close();
    }
    assertTrue(TableModel.isClosed(f), ctx + ": reader closes its file");
  }
}
