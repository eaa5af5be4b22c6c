package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The memory quota split between the block cache and the write cache's allocator leaves the write
 * cache enough to take plain writes, with the default split and with the largest cache validation
 * accepts (found by review: 100 KB values failed at a 32 MiB quota).
 */
class MemorySplitTest {
  private static void put(Engine e, int i, byte[] v) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, ("key-" + i).getBytes(), v);
    e.write(b);
  }

  @ParameterizedTest
  @ValueSource(longs = {32L << 20, 64L << 20})
  void defaultSplit_takesLargeValuesFromOneWriter(long quota, @TempDir Path dir) {
    Options o = Options.defaults().memoryQuota(quota).syncMode(SyncMode.PERIODIC);
    byte[] v = new byte[100_000];
    int n = (int) (6 * quota / v.length);
    try (Engine e = Engine.open(new FileStorage(dir), o)) {
      assertTrue(e.stats().get("blockCacheCapacity") > 0, "the default split has a block cache");
      for (int i = 0; i < n; i++) put(e, i, v);
      assertArrayEquals(v, e.get(1, ("key-" + (n - 1)).getBytes()));
    }
  }

  @Test
  void defaultSplit_smallestQuota_takesPlainWrites() {
    try (Engine e = Engine.open(new MemStorage(11), Options.defaults().memoryQuota(1 << 20))) {
      byte[] v = new byte[1000];
      for (int i = 0; i < 5000; i++) put(e, i, v);
      assertArrayEquals(v, e.get(1, "key-4999".getBytes()));
    }
  }

  @Test
  void largestAcceptedCache_leavesTheWriteCacheRoomForPlainWrites() {
    long max = 15L << 20;
    while (!accepted(
        Options.defaults().memoryQuota(16L << 20).writeCacheSize(1 << 20).blockCacheSize(max))) {
      max -= 64 << 10;
    }
    assertTrue(max >= 8L << 20, "validation leaves a useful range: " + max);
    Options o =
        Options.defaults().memoryQuota(16L << 20).writeCacheSize(1 << 20).blockCacheSize(max);
    try (Engine e = Engine.open(new MemStorage(12), o)) {
      byte[] v = new byte[1000];
      for (int i = 0; i < 5000; i++) put(e, i, v);
      assertArrayEquals(v, e.get(1, "key-4999".getBytes()));
    }
  }

  private static boolean accepted(Options o) {
    try {
      o.validate();
      return true;
    } catch (InvalidArgumentException e) {
      return false;
    }
  }
}
