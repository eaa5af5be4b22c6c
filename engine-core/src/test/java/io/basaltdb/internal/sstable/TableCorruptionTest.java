package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRecord;
import static io.basaltdb.internal.sstable.TableModel.assertRest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.storage.StorageFile;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Damages a small table one byte at a time and checks that every read either throws {@link
 * CorruptionException} or gives exactly the right answer. Since every byte of a table is covered by
 * a CRC32C (which catches any error within 32 consecutive bits) or compared against the magic
 * number, every damaged copy must also be detected by at least one of the reads.
 */
class TableCorruptionTest {
  private static final TableOptions OPTIONS = new TableOptions(128, 4, 10);

  @Test
  void everyFlippedByte_isDetectedAndNeverGivesAWrongAnswer() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 40, 20);
      byte[] good = m.tableBytes(OPTIONS);
      assertEquals(0, readAll(good, m, r), "the undamaged table reads back");
      List<byte[]> absent = absentKeys(m, r);
      for (int pos = 0; pos < good.length; pos++) {
        for (int mask : new int[] {0x01, 0x80, 0xFF}) {
          byte[] bad = good.clone();
          bad[pos] ^= (byte) mask;
          int detected = readAll(bad, m, absent);
          assertTrue(
              detected > 0,
              "flip of byte "
                  + pos
                  + " with mask "
                  + mask
                  + " of "
                  + good.length
                  + " went unnoticed");
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void truncatedOrExtendedFile_isCorruption() {
    TableModel m = TableModel.random(new SplittableRandom(7), 30, 16);
    byte[] good = m.tableBytes(OPTIONS);
    for (int len = 0; len < good.length; len++) {
      byte[] cut = Arrays.copyOf(good, len);
      assertThrows(
          CorruptionException.class,
          () -> TableReader.open(TableModel.file(cut), "t.sst"),
          "truncated to " + len);
    }
    byte[] longer = Arrays.copyOf(good, good.length + 1);
    CorruptionException e =
        assertThrows(
            CorruptionException.class,
            () -> TableReader.open(TableModel.file(longer), "dir/t.sst"));
    assertTrue(e.getMessage().contains("dir/t.sst"), e.getMessage());
  }

  @Test
  void failedOpen_closesTheFile() {
    StorageFile f = TableModel.file(new byte[200]);
    assertThrows(CorruptionException.class, () -> TableReader.open(f, "t.sst"));
    assertTrue(TableModel.isClosed(f));
  }

  @Test
  void failedSeek_leavesTheIteratorInvalid() {
    TableModel m = TableModel.random(new SplittableRandom(11), 200, 16);
    byte[] bad = m.tableBytes(OPTIONS);
    List<long[]> blocks = TableStructureFuzzTest.blocks(bad);
    try (TableReader good = TableReader.open(TableModel.file(bad), "t.sst")) {
      long[] last = blocks.get(good.blockCount() - 1); // the data block holding the largest key
      bad[(int) last[0]] ^= 0x40;
    }
    try (TableReader t = TableReader.open(TableModel.file(bad), "t.sst");
        TableIterator it = t.iterator()) {
      it.seekFirst();
      assertTrue(it.valid());
      assertThrows(CorruptionException.class, () -> it.seek(m.map.lastKey()));
      assertFalse(it.valid(), "a failed seek must not leave the iterator on the record it was on");
      it.seekFirst();
      assertTrue(it.valid(), "a later seek positions it again");
      assertThrows(
          CorruptionException.class,
          () -> {
            while (it.valid()) it.next();
          });
      assertFalse(it.valid(), "a failed next must not leave the iterator on the record it was on");
    }
  }

  /**
   * Footers and index entries that name blocks of nearly 2 GiB, in a sparse file that big: the
   * block plus its trailer does not fit in an int. Must be CorruptionException at a real offset,
   * never a negative array size or offset.
   */
  @Test
  void blockSizesNear2GiB_areCorruptionAtTheirOffset() {
    // A footer whose index block is Integer.MAX_VALUE - 2 bytes: one array cannot hold it and its
    // trailer.
    long indexSize = Integer.MAX_VALUE - 2;
    long footerOffset = Format.TRAILER_SIZE + indexSize + Format.TRAILER_SIZE;
    byte[] footer =
        new Footer(0, 0, 0, 0, Format.TRAILER_SIZE, (int) indexSize, 0, 0, 0, 4).encode();
    CorruptionException e =
        assertThrows(
            CorruptionException.class,
            () -> TableReader.open(new SparseFile(footerOffset, footer), "big.sst"));
    assertTrue(e.getMessage().contains("big.sst at offset " + Format.TRAILER_SIZE), e.getMessage());

    // An index whose one entry names a data block of Integer.MAX_VALUE - 2 bytes at offset 0.
    int dataSize = Integer.MAX_VALUE - 2;
    long metaOffset = (long) dataSize + Format.TRAILER_SIZE;
    Output meta = new Output(16);
    MetaBlock.encode(meta, new byte[] {1}, new byte[] {1}, null, 0, Format.VERSION_WITHOUT_EXPIRY);
    BlockBuilder index = new BlockBuilder(1, 16);
    index.addHandle(new byte[] {1}, 0, dataSize);
    Output idx = index.finish();
    long indexOffset = metaOffset + meta.size() + Format.TRAILER_SIZE;
    Footer f = new Footer(0, 0, metaOffset, meta.size(), indexOffset, idx.size(), 1, 0, 0, 4);
    byte[] tail = concat(withTrailer(meta), withTrailer(idx), f.encode());
    e =
        assertThrows(
            CorruptionException.class,
            () -> TableReader.open(new SparseFile(metaOffset, tail), "big.sst"));
    assertTrue(e.getMessage().contains("big.sst at offset " + indexOffset), e.getMessage());
  }

  private static byte[] withTrailer(Output contents) {
    int size = contents.size();
    byte[] b = Arrays.copyOf(contents.array(), size + Format.TRAILER_SIZE);
    b[size] = Format.COMPRESSION_NONE;
    Format.putIntLE(b, size + Format.TRAILER_CRC_OFFSET, Format.crc(b, 0, size + 1));
    return b;
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) out.writeBytes(p);
    return out.toByteArray();
  }

  /**
   * A read-only file of zeros up to {@code tailOffset}, then {@code tail}; nothing is allocated for
   * the zeros.
   */
  private static final class SparseFile implements StorageFile {
    private final long tailOffset;
    private final byte[] tail;

    SparseFile(long tailOffset, byte[] tail) {
      this.tailOffset = tailOffset;
      this.tail = tail;
    }

    @Override
    public String name() {
      return "big.sst";
    }

    @Override
    public int read(long position, ByteBuffer dst) {
      int n = (int) Math.max(0, Math.min(dst.remaining(), size() - position));
      for (int i = 0; i < n; i++) {
        long at = position + i;
        dst.put(at < tailOffset ? 0 : tail[(int) (at - tailOffset)]);
      }
      return n;
    }

    @Override
    public long size() {
      return tailOffset + tail.length;
    }

    @Override
    public void write(long position, ByteBuffer src) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void truncate(long size) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void preallocate(long size) {}

    @Override
    public void sync() {}

    @Override
    public void close() {}
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
   * Opens {@code contents} and runs every read, asserting each answer that is not a corruption is
   * right; returns how many operations reported corruption.
   */
  private static int readAll(byte[] contents, TableModel m, List<byte[]> absent) {
    TableReader t;
    try {
      t = TableReader.open(TableModel.file(contents), "t.sst");
    } catch (CorruptionException e) {
      return 1;
    }
    try (t) {
      assertEquals(m.map.size(), t.info().entryCount());
      return probeAll(t, m, absent, false);
    }
  }

  /**
   * Gets every key of {@code m} and of {@code absent}, then scans (filling the reader's block cache
   * if {@code fillCache}), asserting each answer that is not a corruption is right; returns how
   * many operations reported corruption.
   */
  static int probeAll(TableReader t, TableModel m, List<byte[]> absent, boolean fillCache) {
    int detected = 0;
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
    try (TableIterator it = t.iterator(fillCache)) {
      it.seekFirst();
      assertRest(it, m.map.values(), "scan");
    } catch (CorruptionException e) {
      detected++;
    }
    try (TableIterator it =
        t.sequentialIterator()) { // blocks cut from chunks: checked all the same
      it.seekFirst();
      assertRest(it, m.map.values(), "scan with readahead");
    } catch (CorruptionException e) {
      detected++;
    }
    return detected;
  }
}
