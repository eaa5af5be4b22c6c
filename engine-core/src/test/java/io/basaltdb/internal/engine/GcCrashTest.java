package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A crash at every storage operation of garbage collection. A store is built with garbage and
 * collection off; then, for k = 0, 1, 2, ..., it is opened with collection on and the storage halts
 * after k more mutations (in the open, a delete list compaction, a segment compaction, its commit,
 * the deletion of the replaced segments), followed by a power loss that keeps a random share of
 * what was not synced. After each: the files' accounting holds (discarded = garbage + collected:
 * nothing counted twice or lost), every key reads the value last written (no stale version
 * reappears, nothing is lost), and the reopened store then collects what the crash interrupted. k
 * runs until a clean run's number of mutations.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class GcCrashTest {
  static final int KEYS = 200;

  static Options off() {
    return CompactionTest.tinyLevels()
        .segmentSize(64 << 10)
        .compactionThreads(1)
        .fragmentationThreshold(1.0)
        .checkpointIntervalMillis(0)
        .checkpointRetentionMillis(0);
  }

  /** Collection on, and flushes reporting what they supersede (their commits crash too). */
  static Options on() {
    return off().fragmentationThreshold(0.2).flushLookups(true);
  }

  /** The store with garbage; {@code model} gets every key's last value. */
  static MemStorage build(long seed, Map<String, byte[]> model) throws Exception {
    MemStorage storage = new MemStorage(seed);
    Random r = new Random(seed);
    try (Engine e = Engine.open(storage, off())) {
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < KEYS; i += 20) {
          Batch b = new Batch(20);
          for (int j = i; j < i + 20; j++) {
            byte[] v = new byte[150];
            r.nextBytes(v);
            String k = "key-" + (j * 7 + round) % KEYS;
            b.add(1, Batch.PUT, k.getBytes(), v);
            model.put(k, v);
          }
          e.write(b);
        }
      }
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
    }
    return storage;
  }

  @org.junit.jupiter.api.BeforeAll
  static void shortQuiet() {
    SegmentCompactor.quietNanos = 100_000_000L; // each run waits for the quiet pass twice
  }

  @org.junit.jupiter.api.AfterAll
  static void defaultQuiet() {
    SegmentCompactor.quietNanos = 2_000_000_000L;
  }

  @Test
  void aCrashAtEveryStorageOperationOfCollection_losesNothing_andCollectionCatchesUp()
      throws Exception {
    Map<String, byte[]> model = new HashMap<>();
    MemStorage clean = build(1, model);
    long before = clean.mutationCount();
    try (Engine e = Engine.open(clean, on())) {
      assertTrue(e.waitForCompactions(30_000));
      assertTrue(e.stats().get("gcRuns") > 0, "collection ran: " + e.stats());
    }
    long span = clean.mutationCount() - before;
    System.out.println("GcCrashTest: " + span + " mutations in a clean run");
    int crashes = 0;
    for (long k = 0; k < span; k++) {
      Map<String, byte[]> m = new HashMap<>();
      MemStorage storage = build(1, m);
      long start = storage.mutationCount();
      storage.crashAfterMutations(k);
      try (Engine e = Engine.open(storage, on())) {
        long deadline =
            System.currentTimeMillis() + 10_000; // until the halt, or collection is done
        while (storage.mutationCount() - start < k
            && !e.waitForCompactions(10)
            && System.currentTimeMillis() < deadline) {
          Thread.onSpinWait();
        }
      } catch (BasaltException halted) {
        // the open, a flush or the close met the halt
      }
      if (storage.mutationCount() - start == k)
        crashes++; // the halt was reached (runs vary a little)
      storage.crash(MemStorage.CrashMode.RANDOM);
      try {
        assertNull(DiscardAccounting.checkStore(storage), "the files after the crash");
        try (Engine e = Engine.open(storage, on())) {
          check(e, m);
          assertTrue(e.waitForCompactions(30_000));
          check(e, m);
          assertNull(DiscardAccounting.check(e));
          // nothing is left to collect but garbage in the tail segment, which is never rewritten
          KeyspaceFiles f = e.versions().current().files(1);
          assertNull(
              SegmentCompactor.pick(f, 0.1, on().segmentSize(), 0),
              "collection caught up: " + e.stats());
        }
      } catch (Throwable t) {
        throw new AssertionError("crash after " + k + " mutations: " + t, t);
      }
    }
    assertTrue(crashes > span / 2, crashes + " of " + span + " runs crashed");
  }

  private static void check(Engine e, Map<String, byte[]> model) {
    for (Map.Entry<String, byte[]> x : model.entrySet()) {
      assertArrayEquals(x.getValue(), e.get(1, x.getKey().getBytes()), x.getKey());
    }
  }
}
