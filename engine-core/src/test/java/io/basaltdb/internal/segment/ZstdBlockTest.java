package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import java.util.HashMap;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Segments whose data blocks are zstd-compressed (cold segments): they read back, and damage is
 * corruption.
 */
class ZstdBlockTest {
  /**
   * Compressible documents (text with repeats) into a writer at {@code level}; the model and hints.
   */
  static SegmentState write(
      ByteArrayFile file, int level, NavigableMap<Long, Document> model, Map<Long, Long> hints) {
    SegmentWriter w =
        SegmentWriter.create(file, 9, 100, SegmentOptions.defaults().withZstdLevel(level));
    Random r = new Random(level);
    for (long q = 100; q < 1100; q++) {
      byte[] key = ("user:" + (q * 7919 % 5000)).getBytes();
      byte[] value =
          ("{\"name\":\"person-"
                  + r.nextInt(100)
                  + "\",\"city\":\"town-"
                  + r.nextInt(20)
                  + "\",\"visits\":"
                  + r.nextInt(1000)
                  + "}")
              .repeat(1 + r.nextInt(6))
              .getBytes();
      boolean tombstone = q % 50 == 0;
      Document d = new Document(q, key, tombstone ? new byte[0] : value, tombstone);
      hints.put(q, w.append(q, d.key(), d.value(), d.tombstone()));
      model.put(q, d);
      if (q % 300 == 0) w.checkpoint();
    }
    return w.checkpoint();
  }

  /** How many data blocks of the file carry each flag value. */
  static Map<Integer, Integer> blockFlags(byte[] bytes, SegmentState s) {
    Map<Integer, Integer> out = new HashMap<>();
    for (int p = SegmentFormat.FILE_HEADER_SIZE; p < s.tailOffset(); ) {
      boolean block = bytes[p + SegmentFormat.TYPE_OFFSET] == SegmentFormat.TYPE_BLOCK;
      int n = block ? Block.recordLength(bytes, p) : IndexPage.recordLength(bytes, p);
      if (block) out.merge((int) bytes[p + SegmentFormat.BLOCK_FLAGS_OFFSET], 1, Integer::sum);
      p += n;
    }
    return out;
  }

  @Test
  void zstdBlocks_readBack_byHint_byIndex_andInOrder_andAreSmallerThanLz4() {
    NavigableMap<Long, Document> model = new TreeMap<>();
    Map<Long, Long> hints = new HashMap<>();
    ByteArrayFile zstd = new ByteArrayFile();
    SegmentState s = write(zstd, 3, model, hints);
    Map<Integer, Integer> flags = blockFlags(zstd.contents(), s);
    assertTrue(flags.getOrDefault(SegmentFormat.BLOCK_FLAG_ZSTD, 0) > 10, "zstd blocks: " + flags);
    assertEquals(0, flags.getOrDefault(SegmentFormat.BLOCK_FLAG_LZ4, 0), flags.toString());
    SegmentReader r = new SegmentReader(zstd, s);
    TestDocs.checkAllReads(r, model, hints);
    long q = 100;
    for (DocumentIterator it = r.iterator(100); it.hasNext(); q++) {
      Document d = it.next();
      assertEquals(model.get(q), d);
    }
    assertEquals(1100, q);
    ByteArrayFile lz4 = new ByteArrayFile();
    SegmentState l = write(lz4, 0, new TreeMap<>(), new HashMap<>());
    assertTrue(
        s.tailOffset() < l.tailOffset(),
        "zstd " + s.tailOffset() + " bytes, LZ4 " + l.tailOffset());
  }

  @Test
  void aDamagedZstdPayloadBehindAValidChecksum_isCorruption() {
    NavigableMap<Long, Document> model = new TreeMap<>();
    Map<Long, Long> hints = new HashMap<>();
    ByteArrayFile file = new ByteArrayFile();
    SegmentState s = write(file, 3, model, hints);
    byte[] bytes = file.contents();
    int p = SegmentFormat.FILE_HEADER_SIZE; // the first record is a data block
    assertEquals(SegmentFormat.TYPE_BLOCK, bytes[p + SegmentFormat.TYPE_OFFSET]);
    assertEquals(SegmentFormat.BLOCK_FLAG_ZSTD, bytes[p + SegmentFormat.BLOCK_FLAGS_OFFSET]);
    int end = p + Block.recordLength(bytes, p);
    for (int i = p + SegmentFormat.BLOCK_HEADER_SIZE; i < end; i += 3)
      bytes[i] ^= 0x5A; // scramble the frame
    SegmentFormat.putInt(bytes, p, SegmentFormat.crc(bytes, p + SegmentFormat.CRC_SIZE, end));
    SegmentReader r = new SegmentReader(new ByteArrayFile(bytes), s);
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> r.read(100, hints.get(100L)));
    assertNotNull(e.getMessage());
    // Both codec flags at once is corruption too.
    byte[] both = file.contents();
    both[p + SegmentFormat.BLOCK_FLAGS_OFFSET] =
        SegmentFormat.BLOCK_FLAG_ZSTD | SegmentFormat.BLOCK_FLAG_LZ4;
    SegmentFormat.putInt(both, p, SegmentFormat.crc(both, p + SegmentFormat.CRC_SIZE, end));
    SegmentReader r2 = new SegmentReader(new ByteArrayFile(both), s);
    CorruptionException flagged =
        assertThrows(CorruptionException.class, () -> r2.read(100, hints.get(100L)));
    assertTrue(flagged.getMessage().contains("unknown flags"), flagged.getMessage());
    // Blocks after the damaged one still read.
    assertArrayEquals(model.get(1099L).value(), r.read(1099, hints.get(1099L)).value());
  }

  @Test
  void aZstdLevelOutOfRange_isRefused() {
    assertThrows(
        InvalidArgumentException.class,
        () -> SegmentOptions.defaults().withZstdLevel(23).validate());
    assertThrows(
        InvalidArgumentException.class,
        () -> SegmentOptions.defaults().withZstdLevel(-1).validate());
  }
}
