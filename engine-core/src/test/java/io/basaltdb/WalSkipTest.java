package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Batches that skip the WAL (Magma section 8.1, {@link Options#walSkipBytes}): they are written to
 * the segments and the key index, visible only once durable and then all at once, counted, fed to
 * the change feed in seqno order, larger than the write cache, and all or nothing across a crash at
 * every storage operation they make.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class WalSkipTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Tiny caches and segments; batches of 16 KiB or more skip the WAL; counts kept. */
  static Options options() {
    return ChangeFeedTest.tiny().walSkipBytes(16 << 10).exactItemCounts(true);
  }

  /**
   * A batch over the threshold: {@code n} puts of 300-byte values of "b" + i, with deletes and
   * repeats.
   */
  static WriteBatch bigBatch(
      Keyspace ks,
      Keyspace other,
      int n,
      String tag,
      TreeMap<String, byte[]> model,
      TreeMap<String, byte[]> otherModel) {
    WriteBatch batch = new WriteBatch();
    for (int i = 0; i < n; i++) {
      String k = "k" + (i * 7 % 150);
      byte[] v = new byte[300];
      Arrays.fill(v, (byte) i);
      v[0] = (byte) tag.charAt(0);
      if (i % 9 == 4) {
        batch.delete(ks, b(k));
        model.remove(k);
      } else {
        batch.put(ks, b(k), v);
        model.put(k, v);
      }
      if (other != null && i % 5 == 0) {
        batch.put(other, b(k), v);
        otherModel.put(k, v);
      }
    }
    return batch;
  }

  static void check(Keyspace ks, TreeMap<String, byte[]> model) {
    TreeMap<String, byte[]> actual = new TreeMap<>();
    try (Cursor c = ks.scan(null, null)) {
      while (c.next()) actual.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
    }
    assertEquals(model.keySet(), actual.keySet());
    for (Map.Entry<String, byte[]> e : model.entrySet()) {
      assertArrayEquals(e.getValue(), actual.get(e.getKey()), e.getKey());
      assertArrayEquals(e.getValue(), ks.get(b(e.getKey())), e.getKey());
    }
    assertEquals(model.size(), ks.itemCount());
  }

  @Test
  void largeBatch_skipsTheWal_andIsVisibleDurableAndCounted() {
    MemStorage storage = new MemStorage(1);
    TreeMap<String, byte[]> model = new TreeMap<>(), second = new TreeMap<>();
    Basalt db = Basalt.open(storage, options());
    long batchFirst;
    try {
      Keyspace ks = db.keyspace("default");
      Keyspace other = db.createKeyspace("second");
      for (int i = 0; i < 100; i++) { // small writes through the WAL, some still in the write cache
        ks.put(b("k" + i), b("small" + i));
        model.put("k" + i, b("small" + i));
      }
      ks.delete(b("k3"));
      model.remove("k3");
      Stats before = db.stats();
      WriteBatch batch = bigBatch(ks, other, 200, "a", model, second);
      try (Snapshot old = db.snapshot()) {
        db.write(batch);
        batchFirst = old.seqno() + 1;
        assertArrayEquals(
            b("small10"),
            old.get(ks, b("k10")),
            "a snapshot taken before the batch does not see it");
        assertNull(old.get(other, b("k0")));
      }
      Stats after = db.stats();
      assertEquals(1, after.get("walSkippedBatches") - before.get("walSkippedBatches"));
      assertTrue(
          after.get("walBytesWritten") - before.get("walBytesWritten") < 4096,
          "the batch's bytes went to the WAL: "
              + (after.get("walBytesWritten") - before.get("walBytesWritten")));
      assertTrue(after.get("walSkippedBytes") - before.get("walSkippedBytes") >= batch.bytes());
      assertEquals(batchFirst + batch.size() - 1, after.lastSeqno());
      check(ks, model);
      check(other, second);
      // The change feed holds the batch's newest put of each key, in seqno order, after the small
      // writes
      // (its deletions too, unless compaction already dropped their tombstones at the bottom: tiny
      // levels),
      // and applying it in order gives the model.
      long last = -1;
      int putsFromBatch = 0;
      TreeMap<String, byte[]> applied = new TreeMap<>();
      try (ChangeFeed feed = ks.changes(0, ChangeFeed.NOW)) {
        while (feed.next()) {
          assertTrue(feed.seqno() > last, "seqno order");
          last = feed.seqno();
          String k = new String(feed.key(), StandardCharsets.UTF_8);
          if (feed.value() == null) applied.remove(k);
          else applied.put(k, feed.value());
          if (feed.seqno() >= batchFirst && feed.value() != null) putsFromBatch++;
        }
      }
      assertEquals(model.size(), putsFromBatch, "one change per key the batch left live");
      assertEquals(model.keySet(), applied.keySet());
      ks.put(b("after"), b("wal again")); // the WAL path after a skip: replay must find no gap
      model.put("after", b("wal again"));
      storage.crash(MemStorage.CrashMode.KEEP_NONE); // NONE sync mode: the last put may be lost
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, options())) {
      Keyspace ks = again.keyspace("default");
      if (ks.get(b("after")) == null) model.remove("after");
      check(ks, model); // the batch was durable when it returned, whatever the sync mode
      check(again.keyspace("second"), second);
    }
  }

  @Test
  void batchLargerThanTheWriteCache_isWrittenOnlyBySkippingTheWal() {
    Options o = options().memoryQuota(4L << 20).writeCacheSize(256 << 10);
    WriteBatch batch = new WriteBatch();
    TreeMap<String, byte[]> model = new TreeMap<>();
    try (Basalt db = Basalt.open(new MemStorage(2), o.copy().walSkipBytes(0))) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 3000; i++)
        batch.put(ks, b("key" + i), new byte[1000]); // 3 MB, most of the quota
      assertThrows(
          MemoryLimitException.class,
          () -> db.write(batch),
          "through the write cache it cannot fit");
      assertNull(ks.get(b("key0")));
    }
    MemStorage storage = new MemStorage(3);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.keyspace("default");
      WriteBatch big = new WriteBatch();
      for (int i = 0; i < 3000; i++) {
        byte[] v = new byte[1000];
        new Random(i).nextBytes(v);
        big.put(ks, b("key" + i), v);
        model.put("key" + i, v);
      }
      db.write(big);
      check(ks, model);
    }
    try (Basalt db = Basalt.open(storage, o)) {
      check(db.keyspace("default"), model);
    }
  }

  /**
   * A crash at every storage operation of a batch that skips the WAL, in each crash mode: the
   * reopened store holds the whole batch or none of it, every write acknowledged before it, the
   * right item count, and takes writes again.
   */
  @Test
  void crashInsideTheBatch_leavesAllOrNothing() {
    Options o = options().syncMode(SyncMode.SYNC).blockSize(4096).segmentSize(256 << 10);
    int ops = -1;
    int wholeSeen = 0, noneSeen = 0;
    for (int crashAt = 0; ops < 0 || crashAt <= ops; crashAt++) {
      for (MemStorage.CrashMode mode : MemStorage.CrashMode.values()) {
        MemStorage storage = new MemStorage(crashAt * 3L + mode.ordinal());
        TreeMap<String, byte[]> model = new TreeMap<>(), withBatch;
        boolean acknowledged = false;
        Basalt db = Basalt.open(storage, o);
        try {
          Keyspace ks = db.keyspace("default");
          for (int i = 0; i < 250; i++) { // flushed and unflushed small writes before the batch
            ks.put(b("k" + (i % 170)), b("small" + i));
            model.put("k" + (i % 170), b("small" + i));
          }
          withBatch = new TreeMap<>(model);
          WriteBatch batch = bigBatch(ks, null, 120, "c", withBatch, null);
          long start = storage.mutationCount();
          storage.crashAfterMutations(crashAt);
          try {
            db.write(batch);
            acknowledged = true;
            if (ops < 0)
              ops = (int) (storage.mutationCount() - start); // the batch's storage operations
          } catch (BasaltException e) {
            if (e instanceof InvalidArgumentException || e instanceof MemoryLimitException) throw e;
          }
          storage.crashAfterMutations(0);
        } finally {
          ChangeFeedTest.closeCrashed(db);
        }
        storage.crash(mode);
        try (Basalt again = Basalt.open(storage, o)) {
          Keyspace ks = again.keyspace("default");
          byte[] probe = ks.get(b("k0"));
          boolean whole = probe != null && probe.length == 300;
          if (acknowledged && !whole)
            fail("crash at " + crashAt + ", " + mode + ": an acknowledged batch was lost");
          check(ks, whole ? withBatch : model);
          if (whole) wholeSeen++;
          else noneSeen++;
          ks.put(b("later"), b("x"));
          assertArrayEquals(b("x"), ks.get(b("later")));
        } catch (AssertionError e) {
          throw new AssertionError(
              "crash at mutation " + crashAt + " of the batch, " + mode + ": " + e.getMessage(), e);
        }
      }
    }
    assertTrue(ops > 5, "the batch made " + ops + " storage operations");
    assertTrue(wholeSeen > 0 && noneSeen > 0, "whole " + wholeSeen + ", none " + noneSeen);
  }

  @Test
  void walSkipBytes_isValidated() {
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().walSkipBytes(100).validate());
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().walSkipBytes(-1).validate());
    Options.defaults().walSkipBytes(0).validate();
    assertEquals(4L << 20, Options.defaults().walSkipBytes());
  }

  /** A batch over the threshold on an in-memory store is an ordinary batch (no WAL to skip). */
  @Test
  void inMemoryStore_ignoresTheThreshold() {
    try (Basalt db =
        Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20).walSkipBytes(4096))) {
      Keyspace ks = db.keyspace("default");
      WriteBatch batch = new WriteBatch();
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        keys.add(b("m" + i));
        batch.put(ks, keys.get(i), new byte[200]);
      }
      db.write(batch);
      assertEquals(50, ks.getAll(keys).stream().filter(v -> v != null).count());
      assertEquals(0, db.stats().get("walSkippedBatches"));
    }
  }
}
