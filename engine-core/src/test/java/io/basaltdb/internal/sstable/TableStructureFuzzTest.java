package io.basaltdb.internal.sstable;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.basaltdb.CorruptionException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Damages bytes inside blocks and the footer and then recomputes their checksums, so the damage
 * gets past the CRC32C and reaches the structural checks. Answers may then be wrong (the checksum
 * was forged), but the only exception any read may throw is {@link CorruptionException}: never an
 * out-of-bounds access, a negative array size or a runaway loop.
 */
class TableStructureFuzzTest {
  @Test
  void forgedChecksums_giveOnlyCorruptionExceptions() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 30, 20);
      byte[] good = m.tableBytes(new TableOptions(128, 4, 10));
      List<long[]> blocks = blocks(good);
      List<byte[]> probes = new ArrayList<>(m.map.keySet());
      for (int i = 0; i < 10; i++) probes.add(TableModel.bytes(r, r.nextInt(6)));
      int corruptions = 0;
      for (long[] b : blocks) {
        int off = (int) b[0];
        int size = (int) b[1];
        for (int pos = off; pos < off + size; pos++) {
          for (int mask : new int[] {0x01, 0x80, r.nextInt(1, 256)}) {
            byte[] bad = good.clone();
            bad[pos] ^= (byte) mask;
            Format.putIntLE(
                bad, off + size + Format.TRAILER_CRC_OFFSET, Format.crc(bad, off, size + 1));
            corruptions += readEverything(bad, probes);
          }
        }
      }
      int footer = good.length - Format.FOOTER_SIZE;
      for (int pos = footer; pos < footer + Format.FOOTER_CRC_OFFSET; pos++) {
        for (int bit = 0; bit < 8; bit++) {
          byte[] bad = good.clone();
          bad[pos] ^= (byte) (1 << bit);
          Format.putIntLE(
              bad,
              footer + Format.FOOTER_CRC_OFFSET,
              Format.crc(bad, footer, Format.FOOTER_CRC_OFFSET));
          corruptions += readEverything(bad, probes);
        }
      }
      System.out.println(
          "TableStructureFuzzTest: "
              + corruptions
              + " structural corruptions reported, seed "
              + seed);
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  /** {offset, content size} of every block of a valid table, found from its footer and index. */
  static List<long[]> blocks(byte[] table) {
    int footerOffset = table.length - Format.FOOTER_SIZE;
    Footer f =
        Footer.decode(Arrays.copyOfRange(table, footerOffset, table.length), footerOffset, "t");
    List<long[]> out = new ArrayList<>();
    byte[] index =
        Arrays.copyOfRange(table, (int) f.indexOffset(), (int) f.indexOffset() + f.indexSize());
    BlockIter it = new BlockIter(true);
    it.reset(Block.parse(index, index.length, f.indexOffset(), "t"));
    for (it.seekToFirst(); it.valid(); it.next())
      out.add(new long[] {it.handleOffset, it.handleSize});
    if (f.hasFilter()) out.add(new long[] {f.filterOffset(), f.filterSize()});
    out.add(new long[] {f.metaOffset(), f.metaSize()});
    out.add(new long[] {f.indexOffset(), f.indexSize()});
    long covered =
        out.stream().mapToLong(b -> b[1] + Format.TRAILER_SIZE).sum() + Format.FOOTER_SIZE;
    assertEquals(table.length, covered, "blocks and footer tile the file");
    return out;
  }

  /** Runs every kind of read; returns how many reported corruption. Other exceptions propagate. */
  static int readEverything(byte[] contents, List<byte[]> probes) {
    TableReader t;
    try {
      t = TableReader.open(TableModel.file(contents), "t.sst");
    } catch (CorruptionException e) {
      return 1;
    }
    int detected = 0;
    try (t) {
      KeyRecord out = new KeyRecord();
      for (byte[] p : probes) {
        try {
          t.get(p, out);
        } catch (CorruptionException e) {
          detected++;
        }
        try (TableIterator it = t.iterator()) {
          it.seek(p);
          for (int i = 0; i < 3 && it.valid(); i++) {
            it.record(out);
            it.next();
          }
        } catch (CorruptionException e) {
          detected++;
        }
      }
      try (TableIterator it = t.iterator()) {
        long steps = 0;
        for (it.seekFirst(); it.valid() && steps < 1_000_000; it.next()) {
          it.record(out);
          steps++;
        }
      } catch (CorruptionException e) {
        detected++;
      }
      // Backward moves decode restart intervals their own way: the same holds for them.
      for (byte[] p : probes) {
        try (TableIterator it = t.iterator()) {
          it.seekBefore(p);
          for (int i = 0; i < 3 && it.valid(); i++) {
            it.record(out);
            it.prev();
          }
        } catch (CorruptionException e) {
          detected++;
        }
      }
      try (TableIterator it = t.iterator()) {
        long steps = 0;
        for (it.seekLast(); it.valid() && steps < 1_000_000; it.prev()) {
          it.record(out);
          steps++;
        }
      } catch (CorruptionException e) {
        detected++;
      }
    }
    return detected;
  }
}
