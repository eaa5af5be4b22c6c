package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRecord;
import static io.basaltdb.internal.sstable.TableModel.assertRest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import io.basaltdb.internal.storage.StorageFile;
import org.junit.jupiter.api.Test;

/**
 * Damages a small table one byte at a time and checks that every read either throws {@link
 * CorruptionException} or gives exactly the right answer. Since every byte of a table is covered by a
 * CRC32C (which catches any error within 32 consecutive bits) or compared against the magic number,
 * every damaged copy must also be detected by at least one of the reads.
 */
class TableCorruptionTest {
  private static final TableOptions OPTIONS = new TableOptions(128, 4, 10);

  @Test
  void everyFlippedByte_isDetectedAndNeverGivesAWrongAnswer() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 40, 20);
      StorageFile f = TableModel.newFile();
      m.write(f, OPTIONS);
      byte[] good = TableModel.contents(f);
      assertEquals(0, readAll(good, m, r), "the undamaged table reads back");
      List<byte[]> absent = absentKeys(m, r);
      for (int pos = 0; pos < good.length; pos++) {
        for (int mask : new int[] {0x01, 0x80, 0xFF}) {
          byte[] bad = good.clone();
          bad[pos] ^= (byte) mask;
          int detected = readAll(bad, m, absent);
          assertTrue(detected > 0, "flip of byte " + pos + " with mask " + mask + " of " + good.length + " went unnoticed");
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError("failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void truncatedOrExtendedFile_isCorruption() {
    TableModel m = TableModel.random(new SplittableRandom(7), 30, 16);
    StorageFile f = TableModel.newFile();
    m.write(f, OPTIONS);
    byte[] good = TableModel.contents(f);
    for (int len = 0; len < good.length; len++) {
      byte[] cut = Arrays.copyOf(good, len);
      assertThrows(CorruptionException.class, () -> TableReader.open(TableModel.file(cut), "t.sst"),
          "truncated to " + len);
    }
    byte[] longer = Arrays.copyOf(good, good.length + 1);
    CorruptionException e = assertThrows(CorruptionException.class,
        () -> TableReader.open(TableModel.file(longer), "dir/t.sst"));
    assertTrue(e.getMessage().contains("dir/t.sst"), e.getMessage());
  }

  @Test
  void failedOpen_closesTheFile() {
    StorageFile f = TableModel.file(new byte[200]);
    assertThrows(CorruptionException.class, () -> TableReader.open(f, "t.sst"));
    assertTrue(TableModel.isClosed(f));
  }

  private static int readAll(byte[] contents, TableModel m, SplittableRandom r) {
    return readAll(contents, m, absentKeys(m, r));
  }

  private static List<byte[]> absentKeys(TableModel m, SplittableRandom r) {
    List<byte[]> absent = new ArrayList<>();
    for (byte[] k : m.map.keySet()) {
      byte[] next = Arrays.copyOf(k, k.length + 1);
      if (!m.map.containsKey(next)) absent.add(next);
    }
    while (absent.size() < 2 * m.map.size()) {
      byte[] k = TableModel.bytes(r, r.nextInt(6));
      if (!m.map.containsKey(k)) absent.add(k);
    }
    return absent;
  }

  /**
   * Opens {@code contents} and runs every read, asserting each answer that is not a corruption is right;
   * returns how many operations reported corruption.
   */
  private static int readAll(byte[] contents, TableModel m, List<byte[]> absent) {
    TableReader t;
    try {
      t = TableReader.open(TableModel.file(contents), "t.sst");
    } catch (CorruptionException e) {
      return 1;
    }
    int detected = 0;
    try (t) {
      assertEquals(m.map.size(), t.info().entryCount());
      KeyRecord out = new KeyRecord();
      for (KeyRecord want : m.map.values()) {
        try {
          assertTrue(t.get(want.key, out), "present key not found");
          assertRecord(want, out, "get");
        } catch (CorruptionException e) {
          detected++;
        }
      }
      for (byte[] k : absent) {
        try {
          assertTrue(!t.get(k, out), "absent key found");
        } catch (CorruptionException e) {
          detected++;
        }
      }
      try {
        TableIterator it = t.iterator();
        it.seekFirst();
        assertRest(it, m.map.values(), "scan");
      } catch (CorruptionException e) {
        detected++;
      }
    }
    return detected;
  }
}
