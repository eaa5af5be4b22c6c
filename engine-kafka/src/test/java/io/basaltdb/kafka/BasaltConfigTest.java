package io.basaltdb.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

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
}
