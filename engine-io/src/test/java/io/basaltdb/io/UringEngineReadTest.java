package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.Stats;
import io.netty.channel.uring.IoUring;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With engine-io on the class path, a disk store's batched reads go through io_uring, and agree
 * with gets.
 */
class UringEngineReadTest {
  @TempDir Path dir;

  static boolean uringThreadRunning() {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().startsWith("basalt-uring-"));
  }

  @Test
  void getAll_throughIoUring_agreesWithGet() {
    getAllAgreesWithGet(false);
  }

  @Test
  void getAll_throughIoUring_withDirectReads_agreesWithGet() {
    getAllAgreesWithGet(true);
  }

  void getAllAgreesWithGet(boolean directReads) {
    assumeTrue(IoUring.isAvailable(), "io_uring is not available here");
    // Not mapped: the page cache holds these files, so mapped reads would make every batched read
    // in place
    // and the transport would never start.
    Options o =
        Options.defaults()
            .memoryQuota(32L << 20)
            .writeCacheSize(2L << 20)
            .directReads(directReads)
            .mappedReads(false);
    int n = 5000;
    try (Basalt db = Basalt.open(dir, o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < n; i++)
        ks.put(("key" + i).getBytes(), ("value-" + i + "-" + "x".repeat(i % 300)).getBytes());
      for (int i = 0; i < n; i += 7) ks.delete(("key" + i).getBytes());
      db.flush();
    }
    try (Basalt db = Basalt.open(dir, o)) { // a cold cache: the documents come from the segments
      Keyspace ks = db.keyspace("default");
      if (directReads) { // point gets read on their own thread, one buffer at a time: the pool
        // stays small
        for (int i = 1; i < 200; i += 7)
          assertArrayEquals(
              ("value-" + i + "-" + "x".repeat(i % 300)).getBytes(),
              ks.get(("key" + i).getBytes()));
        Stats st = db.stats();
        assertTrue(
            st.get("readBufferPoolBytes") > 0 && st.get("readBufferPoolBytes") <= 4 * (12 << 10),
            "a buffer or so, not the pool's quota: " + st);
        assertEquals(
            st.get("memoryQuota"),
            st.get("writeCacheQuota")
                + st.get("blockCacheCapacity")
                + st.get("readBufferPoolBytes"),
            "the cache keeps the rest: " + st);
      }
      Random rnd = new Random(5);
      for (int round = 0; round < 30; round++) {
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < 32; i++) keys.add(("key" + rnd.nextInt(n + 100)).getBytes());
        List<byte[]> values = ks.getAll(keys);
        // The transport starts at the store's first batch of reads (LazyReadTransport), not at
        // open.
        if (round == 0)
          assertTrue(
              uringThreadRunning(), "the store's batched reads run on an io_uring event loop");
        assertEquals(keys.size(), values.size());
        for (int i = 0; i < keys.size(); i++) {
          int k = Integer.parseInt(new String(keys.get(i)).substring(3));
          if (k >= n || k % 7 == 0) {
            assertNull(values.get(i));
          } else {
            assertArrayEquals(("value-" + k + "-" + "x".repeat(k % 300)).getBytes(), values.get(i));
            assertArrayEquals(ks.get(keys.get(i)), values.get(i));
          }
        }
      }
      Stats st = db.stats();
      long bufferQuota = st.get("readBufferQuota");
      assertEquals(
          (4 * 32 + 8) * (12 << 10),
          bufferQuota,
          "an aligned buffer per read in flight of four batches (readQueueDepth 32) and 8 more");
      long pooled = st.get("readBufferPoolBytes");
      assertTrue(
          pooled > 0 && pooled <= bufferQuota, "the pool grew as reads needed buffers: " + st);
      assertEquals(
          st.get("memoryQuota"),
          st.get("writeCacheQuota") + st.get("blockCacheCapacity") + pooled,
          "the pooled buffers' room comes out of the block cache's: " + st);
      assertTrue(
          st.get("readBufferBytes") > 0 && st.get("readBufferBytes") <= bufferQuota,
          "the reads staged through the pool, which kept within its part: " + st);
      assertTrue(
          st.get("memoryInUse") >= st.get("readBufferBytes") + st.get("blockCacheBytes"),
          st.toString());
    }
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (uringThreadRunning() && System.nanoTime() < deadline) Thread.onSpinWait();
    assertTrue(!uringThreadRunning(), "closing the store stops its event loop");
  }

  @Test
  void whereIoUringCannotStart_theStoreUsesItsBuiltInTransport() {
    System.setProperty(UringReadTransport.ENABLED_PROPERTY, "false");
    try (Basalt db = Basalt.open(dir, Options.defaults().memoryQuota(32L << 20))) {
      assertTrue(!uringThreadRunning(), "no io_uring event loop");
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(("k" + i).getBytes(), ("v" + i).getBytes());
      db.flush();
      List<byte[]> values =
          ks.getAll(List.of("k1".getBytes(), "k99".getBytes(), "nope".getBytes()));
      assertArrayEquals("v1".getBytes(), values.get(0));
      assertArrayEquals("v99".getBytes(), values.get(1));
      assertNull(values.get(2));
      // io_uring refused to start at the first batch: the store fell back to its built-in pool,
      // whose
      // heap reads stage through no buffer, so the block cache kept all its room.
      assertTrue(!uringThreadRunning(), "no io_uring event loop after the batch either");
      Stats st = db.stats();
      assertEquals(
          0,
          st.get("readBufferPoolBytes"),
          "heap reads on the built-in pool stage through no buffer: " + st);
      assertEquals(0, st.get("readBufferBytes"), st.toString());
      assertEquals(
          st.get("memoryQuota"),
          st.get("writeCacheQuota") + st.get("blockCacheCapacity"),
          st.toString());
    } finally {
      System.clearProperty(UringReadTransport.ENABLED_PROPERTY);
    }
  }
}
