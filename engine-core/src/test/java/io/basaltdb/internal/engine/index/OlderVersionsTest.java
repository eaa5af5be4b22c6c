package io.basaltdb.internal.engine.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link OlderVersions} against a brute-force search: random level-0 tables (overlapping, newest
 * first) over deeper levels of non-overlapping tables, probed with ascending keys (present in one
 * table, in several, or in none), must find each key's newest version, tombstones included, as a
 * point lookup in search order would.
 */
class OlderVersionsTest {
  private final MemStorage storage = new MemStorage(7);
  private final List<TableReader> readers = new ArrayList<>();
  private long nextFile = 1;
  private long nextSeqno = 1;

  @AfterEach
  void close() {
    for (TableReader r : readers) r.close();
  }

  /** A version of a key in the model: its seqno, size and whether it is a tombstone. */
  private record Version(long seqno, int size, boolean tombstone) {}

  private static byte[] key(int k) {
    return String.format("key-%06d", k).getBytes(StandardCharsets.US_ASCII);
  }

  /** A table of {@code keys} (sorted), each a new version; the versions go to {@code into}. */
  private KeyspaceFiles.Table table(
      int level, int[] keys, Random r, TreeMap<Integer, Version> into, int bloomBits) {
    long n = nextFile++;
    StorageFile f = storage.create(n + ".sst");
    TableWriter w =
        new TableWriter(
            f, TableOptions.defaults().withBlockSize(256).withBloomBitsPerKey(bloomBits));
    for (int k : keys) {
      Version v = new Version(nextSeqno++, 1 + r.nextInt(2000), r.nextInt(6) == 0);
      w.add(key(k), v.seqno, v.size, v.tombstone, -1);
      into.put(k, v);
    }
    w.finish();
    TableReader reader = TableReader.open(f, n + ".sst");
    readers.add(reader);
    return new KeyspaceFiles.Table(n, level, reader);
  }

  private static int[] sortedSample(Random r, int from, int to, int count) {
    java.util.TreeSet<Integer> s = new java.util.TreeSet<>();
    while (s.size() < count) s.add(from + r.nextInt(to - from));
    return s.stream().mapToInt(Integer::intValue).toArray();
  }

  @Test
  void findsTheNewestVersionBelow_inSearchOrder() {
    for (int seed = 0; seed < 20; seed++) {
      Random r = new Random(seed);
      int space = 5000;
      // Oldest first: level 2, then level 1 (each in key-range slices), then level-0 tables.
      List<TreeMap<Integer, Version>> byTable =
          new ArrayList<>(); // newest first, for the brute force
      List<List<KeyspaceFiles.Table>> levels = new ArrayList<>();
      for (int l = 1; l <= 6; l++) levels.add(new ArrayList<>());
      for (int l = 2; l >= 1; l--) {
        int slices = 1 + r.nextInt(4);
        for (int s = 0; s < slices; s++) {
          int lo = s * space / slices, hi = (s + 1) * space / slices;
          TreeMap<Integer, Version> m = new TreeMap<>();
          levels
              .get(l - 1)
              .add(
                  table(
                      l,
                      sortedSample(r, lo, hi, (hi - lo) / (l == 2 ? 2 : 5)),
                      r,
                      m,
                      seed % 3 == 0 ? 0 : 10));
          byTable.add(0, m);
        }
      }
      List<KeyspaceFiles.Table> level0 = new ArrayList<>();
      int l0 = r.nextInt(5);
      for (int t = 0; t < l0; t++) { // each newer than the last: at the front
        TreeMap<Integer, Version> m = new TreeMap<>();
        int lo = r.nextInt(space / 2), hi = lo + 1 + r.nextInt(space / 2);
        level0.add(0, table(0, sortedSample(r, lo, hi, Math.max(1, (hi - lo) / 10)), r, m, 10));
        byTable.add(0, m);
      }
      // Within one level the slices were added newest-first too, which does not matter: they do not
      // overlap.
      int found = 0;
      try (OlderVersions older = leveled(level0, levels)) {
        for (int k : sortedSample(r, 0, space, 1500)) {
          Version want = null;
          for (TreeMap<Integer, Version> m : byTable) {
            want = m.get(k);
            if (want != null) break;
          }
          boolean got = older.find(key(k));
          assertEquals(want != null, got, "seed " + seed + " key " + k);
          if (want != null) {
            found++;
            assertEquals(want.seqno, older.seqno, "seed " + seed + " key " + k);
            assertEquals(want.size, older.docSize, "seed " + seed + " key " + k);
            assertEquals(want.tombstone, older.tombstone, "seed " + seed + " key " + k);
          }
        }
      }
      assertTrue(found > 100, "seed " + seed + ": probes found versions: " + found);
    }
  }

  @Test
  void keysOutOfOrder_areRefused() {
    TreeMap<Integer, Version> m = new TreeMap<>();
    List<List<KeyspaceFiles.Table>> levels = new ArrayList<>();
    levels.add(List.of(table(1, new int[] {1, 2, 3}, new Random(1), m, 10)));
    try (OlderVersions older = leveled(List.of(), levels)) {
      older.find(key(2));
      assertThrows(IllegalStateException.class, () -> older.find(key(2)));
      assertThrows(IllegalStateException.class, () -> older.find(key(1)));
    }
  }

  /** {@code level0} newest first, then each leveled level's tables, one group each. */
  private static OlderVersions leveled(
      List<KeyspaceFiles.Table> level0, List<List<KeyspaceFiles.Table>> levels) {
    List<List<List<KeyspaceFiles.Table>>> grouped = new java.util.ArrayList<>();
    for (List<KeyspaceFiles.Table> level : levels) {
      List<List<KeyspaceFiles.Table>> g = new java.util.ArrayList<>();
      for (KeyspaceFiles.Table t : level) g.add(List.of(t));
      grouped.add(g);
    }
    return new OlderVersions(level0, grouped);
  }
}
