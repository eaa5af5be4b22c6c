package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRest;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A table iterator that reads ahead: the same records as one that reads block by block, in few
 * reads.
 */
class ReadaheadTest {
  private static final TableOptions OPTIONS = new TableOptions(256, 4, 10);

  @Test
  void aWholeScan_readsChunks_notBlocks_andYieldsEveryRecord() {
    TableModel m = TableModel.random(new SplittableRandom(5), 20_000, 24);
    byte[] bytes = m.tableBytes(OPTIONS);
    try (TableReader t = TableReader.open(TableModel.file(bytes), "t.sst");
        TableIterator it = t.sequentialIterator()) {
      assertTrue(t.blockCount() > 1000, "a table of many blocks: " + t.blockCount());
      it.seekFirst();
      assertRest(it, m.map.values(), "scan with readahead");
      // chunks double from 32 KiB to 256 KiB: the whole data region in about bytes / 256 KiB + 3
      // reads
      int most = bytes.length / Readahead.MAX + 4;
      assertTrue(
          it.chunkReads() <= most,
          it.chunkReads() + " reads for " + t.blockCount() + " blocks, expected at most " + most);
      try (TableIterator plain = t.iterator(false)) {
        assertEquals(-1, plain.chunkReads(), "a plain iterator reads block by block");
      }
    }
  }

  @Test
  void seeksAnywhere_andForwardProbes_agreeWithAPlainIterator() {
    SplittableRandom r = new SplittableRandom(9);
    TableModel m = TableModel.random(r, 5_000, 16);
    byte[] bytes = m.tableBytes(OPTIONS);
    List<byte[]> keys = new ArrayList<>(m.map.keySet());
    try (TableReader t = TableReader.open(TableModel.file(bytes), "t.sst");
        TableIterator ahead = t.sequentialIterator();
        TableIterator plain = t.iterator(false)) {
      KeyRecord a = new KeyRecord();
      KeyRecord b = new KeyRecord();
      for (int i = 0; i < 300; i++) { // jumps back and forth: each refill starts small again
        byte[] key =
            r.nextBoolean()
                ? keys.get(r.nextInt(keys.size()))
                : TableModel.bytes(r, 1 + r.nextInt(6));
        ahead.seek(key);
        plain.seek(key);
        for (int step = 0; step < 3 && plain.valid(); step++) {
          assertTrue(ahead.valid(), "seek " + i);
          TableModel.assertRecord(plain.record(b), ahead.record(a), "seek " + i);
          ahead.next();
          plain.next();
        }
      }
      ahead.seekFirst();
      plain.seekFirst();
      for (int i = 0;
          i < keys.size();
          i += 1 + r.nextInt(40)) { // ascending probes, as a revealing merge makes
        ahead.seekForward(keys.get(i));
        plain.seekForward(keys.get(i));
        assertTrue(ahead.valid() && plain.valid());
        assertArrayEquals(plain.record(b).key, ahead.record(a).key, "probe " + i);
      }
    }
  }
}
