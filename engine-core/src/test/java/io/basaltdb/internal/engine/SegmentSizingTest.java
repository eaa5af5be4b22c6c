package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Segment size derived from the log's size (Magma section 3.5, {@link Options#segmentSizeRatio}): a
 * small keyspace closes its tail segments early, so collection has many segments to choose from.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class SegmentSizingTest {
  private static final long MIB = 1L << 20;

  @Test
  void segmentLimit_isTheRatioOfTheLog_betweenTwoMiBAndSegmentSize() {
    Options o = Options.defaults(); // 64 MiB segments, ratio 1/16
    assertEquals(
        2 * MIB, KeyspaceFiles.segmentLimit(o, 0), "an empty log: the smallest derived size");
    assertEquals(2 * MIB, KeyspaceFiles.segmentLimit(o, 20 * MIB));
    assertEquals(8 * MIB, KeyspaceFiles.segmentLimit(o, 128 * MIB));
    assertEquals(64 * MIB, KeyspaceFiles.segmentLimit(o, 1L << 30));
    assertEquals(64 * MIB, KeyspaceFiles.segmentLimit(o, 100L << 30), "never above segmentSize");
    assertEquals(
        64 * MIB,
        KeyspaceFiles.segmentLimit(o.copy().segmentSizeRatio(0), 0),
        "ratio 0: fixed size");
    assertEquals(
        256 << 10,
        KeyspaceFiles.segmentLimit(o.copy().segmentSize(256 << 10), 0),
        "a segmentSize below 2 MiB stays the size");
    assertEquals(32 * MIB, KeyspaceFiles.segmentLimit(o.copy().segmentSizeRatio(0.5), 64 * MIB));
  }

  @Test
  void segmentSizeRatio_isValidated() {
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().segmentSizeRatio(-0.1).validate());
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().segmentSizeRatio(1.5).validate());
    Options.defaults().segmentSizeRatio(0).validate();
    assertEquals(0.25, Options.defaults().set("segmentSizeRatio", "0.25").segmentSizeRatio());
  }

  @Test
  void aSmallLog_isCutIntoSegmentsOfTheDerivedSize() {
    // 12 MiB of incompressible documents into 8 MiB segments: at ratio 1/16 every tail closes at
    // the 2 MiB
    // floor (the log stays under 32 MiB), at ratio 0 at 8 MiB.
    long derived = segmentsAfterWriting(Options.defaults().segmentSizeRatio(1.0 / 16));
    long fixed = segmentsAfterWriting(Options.defaults().segmentSizeRatio(0));
    assertEquals(2, fixed, "12 MiB in 8 MiB segments");
    assertTrue(derived >= 6 && derived <= 7, "12 MiB in 2 MiB segments, was " + derived);
  }

  /** Writes 3,072 documents of 4 KiB, flushing every 256, and returns the segment count. */
  private static long segmentsAfterWriting(Options o) {
    o.memoryQuota(64 * MIB)
        .writeCacheSize(4 * MIB)
        .segmentSize(8 * MIB)
        .fragmentationThreshold(1.0)
        .checkpointIntervalMillis(0)
        .checkpointRetentionMillis(0);
    Random r = new Random(7);
    byte[][] values = new byte[3072][];
    try (Engine e = Engine.open(new MemStorage(3), o)) {
      int ks = e.keyspaceId("default");
      for (int i = 0; i < values.length; i++) {
        values[i] = new byte[4096];
        r.nextBytes(values[i]);
        Batch b = new Batch(1);
        b.add(ks, Batch.PUT, key(i), values[i]);
        e.write(b);
        if (i % 256 == 255) e.flush();
      }
      e.flush();
      for (int i = 0; i < values.length; i += 97) assertArrayEquals(values[i], e.get(ks, key(i)));
      return e.stats().get("segments");
    }
  }

  private static byte[] key(int i) {
    return String.format("key-%06d", i).getBytes();
  }
}
