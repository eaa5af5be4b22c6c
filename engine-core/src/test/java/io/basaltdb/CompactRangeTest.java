package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Basalt#compactRange}: after a bulk delete the space comes back at once, where the store
 * left to itself keeps it (collection set never to start, level 0 never to merge on its own).
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class CompactRangeTest {
  static final int KEYS = 6000;

  static Options options(String layout) {
    return Options.defaults()
        .memoryQuota(32L << 20)
        .writeCacheSize(128 << 10)
        .segmentSize(128 << 10)
        .blockSize(1024)
        .level1Bytes(64 << 10)
        .tableTargetBytes(32 << 10)
        .l0CompactionTrigger(20)
        .l0StopWritesTrigger(40)
        .fragmentationThreshold(0.99) // collection never starts on its own
        .keyIndexGuards(layout.equals("guarded"));
  }

  /**
   * Keyspace "k": hashed for the "hashed" layout, ordered otherwise (guards are a store option).
   */
  static Keyspace createKeyspace(Basalt db, String layout) {
    return layout.equals("hashed")
        ? db.createKeyspace(
            "k", KeyspaceOptions.defaults().kind(KeyspaceOptions.Kind.HASHED).branching(16))
        : db.createKeyspace("k");
  }

  static byte[] key(int k) {
    return ByteBuffer.allocate(8).putInt(k).putInt(k * 7).array();
  }

  static byte[] value(int k) {
    byte[] v = new byte[200];
    new Random(k).nextBytes(v);
    return v;
  }

  /** Keys deleted in the test: all but every tenth in {@code [from, to)}. */
  static boolean deleted(int k, int from, int to) {
    return k >= from && k < to && k % 10 != 0;
  }

  @ParameterizedTest
  @ValueSource(strings = {"leveled", "guarded", "hashed"})
  void aBulkDelete_givesItsSpaceBack(String layout) throws InterruptedException {
    try (Basalt db = Basalt.open(new MemStorage(1), options(layout))) {
      Keyspace ks = createKeyspace(db, layout);
      for (int round = 0; round < 2; round++) { // overwritten once: garbage in the deeper levels
        for (int k = 0; k < KEYS; k++) ks.put(key(k), value(k));
        db.flush();
      }
      db.waitForCompactions(30_000);
      for (int k = 0; k < KEYS; k++) if (deleted(k, 0, KEYS)) ks.delete(key(k));
      db.flush();
      long before = db.stats().get("segmentBytes");
      // a writer goes on meanwhile (1,000 puts over 500 keys, about 200 KB): compactRange waits
      // only for what was written before it
      AtomicBoolean stop = new AtomicBoolean();
      Thread writer =
          new Thread(
              () -> {
                for (int i = 0; i < 1000 && !stop.get(); i++) ks.put(key(KEYS + i % 500), value(i));
              });
      writer.start();
      try {
        db.compactRange(ks, null, null);
      } finally {
        stop.set(true);
        writer.join();
      }
      long after = db.stats().get("segmentBytes");
      // 10% of the keys live, once each (the writer's 500 keys beside them)
      assertTrue(after < before / 3, layout + ": segments " + before + " -> " + after);
      for (int k = 0; k < KEYS; k++) {
        if (deleted(k, 0, KEYS)) assertNull(ks.get(key(k)), "key " + k);
        else assertArrayEquals(value(k), ks.get(key(k)), "key " + k);
      }
      if (!layout.equals("hashed")) {
        // level 0 merges only at 20 tables: the deletions went down through compactRange's jobs
        assertTrue(db.stats().get("compactions") > 0, db.stats().toString());
      }
    }
  }

  /**
   * A range's tombstones reach the bottom and go; versions outside it stay where they were: the
   * keys after the range keep their level-0 tables.
   */
  @ParameterizedTest
  @ValueSource(strings = {"leveled", "guarded"})
  void aRange_compactsWhatItCovers(String layout) {
    try (Basalt db = Basalt.open(new MemStorage(2), options(layout))) {
      Keyspace ks = db.createKeyspace("k");
      for (int k = 0; k < KEYS; k++) ks.put(key(k), value(k));
      db.flush();
      db.compactRange(ks, null, null); // everything at the bottom
      for (int k = 0; k < KEYS; k++) if (deleted(k, 0, KEYS / 2)) ks.delete(key(k));
      db.flush();
      long discarded = db.stats().get("discardedVersions");
      db.compactRange(ks, key(0), key(KEYS / 2 - 1));
      // every deleted version, and the tombstone that deleted it, reported
      long deletes = 0;
      for (int k = 0; k < KEYS; k++) if (deleted(k, 0, KEYS / 2)) deletes++;
      assertEquals(
          discarded + 2 * deletes, db.stats().get("discardedVersions"), db.stats().toString());
      for (int k = 0; k < KEYS; k++) {
        if (deleted(k, 0, KEYS / 2)) assertNull(ks.get(key(k)), "key " + k);
        else assertArrayEquals(value(k), ks.get(key(k)), "key " + k);
      }
    }
  }

  /**
   * A writer overwriting the keyspace without pause makes new garbage all along: compactRange
   * collects the segments that existed when it was called, and returns.
   */
  @ParameterizedTest
  @ValueSource(strings = {"leveled", "hashed"})
  void aWriterThatNeverStops_doesNotHoldCompactRangeUp(String layout) throws Exception {
    try (Basalt db = Basalt.open(new MemStorage(4), options(layout))) {
      Keyspace ks = createKeyspace(db, layout);
      for (int k = 0; k < KEYS; k++) ks.put(key(k), value(k));
      AtomicBoolean stop = new AtomicBoolean();
      Thread writer =
          new Thread(
              () -> {
                for (int i = 0; !stop.get(); i++) ks.put(key(i % 300), value(i));
              });
      writer.start();
      java.util.concurrent.ExecutorService pool =
          java.util.concurrent.Executors.newSingleThreadExecutor();
      try {
        java.util.concurrent.Future<?> done = pool.submit(() -> db.compactRange(ks, null, null));
        done.get(60, java.util.concurrent.TimeUnit.SECONDS); // throws TimeoutException if held up
      } finally {
        stop.set(true);
        writer.join();
        pool.shutdownNow();
      }
      for (int k = 300; k < KEYS; k++) assertArrayEquals(value(k), ks.get(key(k)), "key " + k);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"leveled"})
  void badArguments_andClosedStores_areRefused(String layout) {
    Basalt db = Basalt.open(new MemStorage(3), options(layout));
    Keyspace ks = db.createKeyspace("k");
    try (Basalt other = Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20))) {
      Keyspace foreign = other.createKeyspace("k");
      assertThrows(InvalidArgumentException.class, () -> db.compactRange(foreign, null, null));
      other.compactRange(foreign, null, null); // in memory: nothing to do
    }
    assertThrows(InvalidArgumentException.class, () -> db.compactRange(null, null, null));
    assertThrows(
        InvalidArgumentException.class, () -> db.compactRange(ks, key(5), key(4)), "from > to");
    db.compactRange(ks, key(4), key(4)); // one key, none written: nothing to do
    db.compactRange(); // every keyspace
    db.dropKeyspace("k");
    assertThrows(ClosedException.class, () -> db.compactRange(ks, null, null));
    db.close();
    Keyspace closed = ks;
    assertThrows(ClosedException.class, () -> db.compactRange(closed, null, null));
  }
}
