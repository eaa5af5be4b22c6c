package io.basaltdb.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.basaltdb.BulkLoad;
import io.basaltdb.InvalidArgumentException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Streams-specific defaults {@link BasaltConfig} derives from the configs it is given. */
class BasaltConfigTest {
  @Test
  void walSkip_defaultsToAnEighthOfTheWriteCache_andFollowsTheMemoryQuota_unlessSet() {
    // 256 MiB of memory: a 64 MiB write cache, so restore batches under 8 MiB go through the log.
    assertEquals(8L << 20, BasaltConfig.from(Map.of()).options().walSkipBytes());
    assertEquals(
        1L << 20,
        BasaltConfig.from(Map.of("basalt.memoryQuota", String.valueOf(32L << 20)))
            .options()
            .walSkipBytes(),
        "a 32 MiB quota: an 8 MiB write cache");
    assertEquals(
        512L << 10,
        BasaltConfig.from(Map.of("basalt.writeCacheSize", String.valueOf(4L << 20)))
            .options()
            .walSkipBytes());
    assertEquals(
        0, BasaltConfig.from(Map.of("basalt.walSkipBytes", "0")).options().walSkipBytes(), "off");
    assertEquals(
        65536, BasaltConfig.from(Map.of("basalt.walSkipBytes", "65536")).options().walSkipBytes());
  }

  @Test
  void restoreBuffer_defaultsToAQuarterOfTheHeap_atMost192MiB_andIsValidated() {
    assertEquals(
        Math.min(192L << 20, Runtime.getRuntime().maxMemory() / 4),
        BasaltConfig.from(Map.of()).restoreBufferBytes());
    assertEquals(
        0, BasaltConfig.from(Map.of("basalt.restoreBufferBytes", "0")).restoreBufferBytes());
    assertThrows(
        InvalidArgumentException.class,
        () -> BasaltConfig.from(Map.of("basalt.restoreBufferBytes", "-1")));
    assertThrows(
        InvalidArgumentException.class,
        () -> BasaltConfig.from(Map.of("basalt.restoreBufferBytes", "lots")));
  }

  /** Restores at once share the buffer: each takes a third of what is left, within the bounds. */
  @Test
  void restoreChunks_shareTheBuffer(@TempDir Path dir) {
    BasaltConfig c =
        BasaltConfig.from(Map.of("basalt.restoreBufferBytes", String.valueOf(96L << 20)));
    SharedBasalt s = SharedBasalt.acquire(dir, c);
    try {
      assertEquals(32L << 20, s.reserveRestoreChunk());
      long second = s.reserveRestoreChunk(); // 96 MiB less 3 x 32: nothing left, the least
      assertEquals(BulkLoad.MIN_CHUNK_BYTES, second);
      s.releaseRestoreChunk(second);
      s.releaseRestoreChunk(32L << 20);
      assertEquals(32L << 20, s.reserveRestoreChunk(), "given back");
    } finally {
      s.release();
    }
    SharedBasalt big =
        SharedBasalt.acquire(
            dir.resolve("big"),
            BasaltConfig.from(Map.of("basalt.restoreBufferBytes", String.valueOf(1L << 30))));
    try {
      assertEquals(BasaltConfig.MAX_RESTORE_CHUNK, big.reserveRestoreChunk());
    } finally {
      big.release();
    }
  }
}
