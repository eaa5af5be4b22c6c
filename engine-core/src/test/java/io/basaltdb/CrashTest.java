package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.basaltdb.ModelTest.Key;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Simulated crashes through {@link MemStorage} (LevelDB's fault-injection env): each run opens a
 * store with a tiny write cache and tiny segments, arms a crash after a random number of file
 * mutations, writes until the storage halts, drops a random share of the unsynced data, reopens and
 * compares with a model of the acknowledged writes. With {@link SyncMode#SYNC} the store must hold
 * exactly the acknowledged writes, plus possibly the one in flight; with the other modes it must
 * equal the model after some prefix of the writes (nothing out of order, no holes) no older than
 * the last flush. Some runs crash inside close instead, while it writes and syncs the clean-close
 * marker. Key index levels are tiny, so many crashes land in the middle of a compaction; the
 * largest puts skip the WAL, so some crashes land inside such a batch's segment and table writes;
 * half the runs keep key index guards (dense ones, so crashes land in guard pushes and in-place
 * merges too), and a quarter run the cold pass on every segment but the tail as soon as it is
 * written (so crashes land in its recompressions). Each mode runs {@code basalt.crash.points} crash
 * points (default 220, so 660 per suite run; {@code bin/crashpoints} runs more, with new seeds each
 * run).
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class CrashTest {
  static final int POINTS = Integer.getInteger("basalt.crash.points", 220);

  /** Guard pushes and in-place merges the runs with guards made before their crash, across runs. */
  private final java.util.concurrent.atomic.AtomicLong guardJobs =
      new java.util.concurrent.atomic.AtomicLong();

  /**
   * {@code guards}: the key index keeps guards, so dense that crashes land in every kind of guard
   * job.
   */
  static Options options(SyncMode mode, boolean guards) {
    Options o =
        ModelTest.tinyLevels(
            Options.defaults()
                .memoryQuota(8L << 20)
                .writeCacheSize(64 << 10)
                .segmentSize(64 << 10)
                .blockSize(512)
                .syncMode(mode)
                .syncIntervalMillis(2)
                .exactItemCounts(true)
                .walSkipBytes(
                    4096)); // the rare puts of over 4 KiB skip the WAL: crashes land inside them
    // too
    return guards ? ModelTest.tinyGuards(o) : o;
  }

  @ParameterizedTest
  @EnumSource(SyncMode.class)
  void recoversEveryAcknowledgedWrite(SyncMode mode) {
    Random seeds = new Random();
    long only = Long.getLong("basalt.crash.seed", 0L);
    int points = only != 0 ? 1 : POINTS;
    for (int p = 0; p < points; p++) {
      long seed = only != 0 ? only : seeds.nextLong();
      try {
        runOne(seed, mode);
      } catch (Throwable t) {
        throw new AssertionError(
            "crash run failed, mode "
                + mode
                + ", seed "
                + seed
                + " (replay: -Dbasalt.crash.seed="
                + seed
                + "): "
                + t,
            t);
      }
    }
    if (only == 0 && points >= 100)
      assertTrue(guardJobs.get() > 0, "no crash run made a guard job");
  }

  private void runOne(long seed, SyncMode mode) {
    Random rnd = new Random(seed);
    MemStorage storage = new MemStorage(seed);
    Options options = options(mode, (seed & 1) == 0); // half the runs with key index guards
    // a quarter with the cold pass recompressing every segment but the tail as soon as it is
    // written, so crashes land in its jobs too
    if ((seed & 12) == 0) options.coldSegmentMillis(1).coldPassBytesPerSecond(1L << 40);
    // half the runs collect on two threads, so crashes land while two segment jobs are under way
    if ((seed & 16) != 0) options.gcThreads(2);
    // Histories: model after each acknowledged write; index of the last state known durable.
    List<TreeMap<Key, byte[]>> states = new ArrayList<>();
    states.add(new TreeMap<>());
    int durable = 0;
    Consumer<TreeMap<Key, byte[]>> inFlight = null;
    Basalt db = Basalt.open(storage, options);
    // half the runs write to a keyspace of HB+-trie tables
    String name = (seed & 2) == 0 ? "default" : "trie";
    if (!name.equals("default")) {
      db.createKeyspace(
          name, KeyspaceOptions.defaults().keyIndexFormat(KeyspaceOptions.KeyIndexFormat.HB_TRIE));
    }
    try {
      Keyspace ks = db.keyspace(name);
      storage.crashAfterMutations(
          rnd.nextInt(4) == 0 ? Long.MAX_VALUE : rnd.nextInt(400)); // or crash in close
      for (int i = 0; i < 300 && inFlight == null; i++) {
        TreeMap<Key, byte[]> next = new TreeMap<>(states.get(states.size() - 1));
        Consumer<TreeMap<Key, byte[]>> change;
        int p = rnd.nextInt(100);
        try {
          if (p < 60) {
            byte[] key = ("k" + rnd.nextInt(60)).getBytes();
            byte[] value = new byte[rnd.nextInt(rnd.nextInt(10) == 0 ? 5000 : 300)];
            rnd.nextBytes(value);
            change = m -> m.put(new Key(key), value);
            inFlight = change;
            ks.put(key, value);
          } else if (p < 75) {
            byte[] key = ("k" + rnd.nextInt(60)).getBytes();
            change = m -> m.remove(new Key(key));
            inFlight = change;
            ks.delete(key);
          } else if (p < 97) {
            WriteBatch b = new WriteBatch();
            List<Consumer<TreeMap<Key, byte[]>>> parts = new ArrayList<>();
            for (int j = rnd.nextInt(8); j >= 0; j--) {
              byte[] key = ("k" + rnd.nextInt(60)).getBytes();
              byte[] value = new byte[rnd.nextInt(200)];
              rnd.nextBytes(value);
              b.put(ks, key, value);
              parts.add(m -> m.put(new Key(key), value));
            }
            change = m -> parts.forEach(c -> c.accept(m));
            inFlight = change;
            db.write(b);
          } else {
            change = m -> {};
            inFlight = null;
            db.flush();
            durable = states.size() - 1;
            continue;
          }
        } catch (BasaltException e) {
          if (e instanceof InvalidArgumentException || e instanceof MemoryLimitException) throw e;
          break; // the simulated crash (or the failure it caused); inFlight holds the
          // unacknowledged write
        }
        change.accept(next);
        states.add(next);
        inFlight = null;
        if (mode == SyncMode.SYNC) durable = states.size() - 1;
      }
      // The armed point was not reached: halt now, or a few mutations into close (its marker
      // record)
      storage.crashAfterMutations(rnd.nextBoolean() ? 0 : rnd.nextInt(4));
    } finally {
      try {
        if (options.keyIndexGuards())
          guardJobs.addAndGet(db.stats().get("guardPushes") + db.stats().get("guardMerges"));
      } catch (BasaltException failed) {
        // a store the crash failed may refuse its stats; its guard jobs are not counted
      }
      try {
        db.close();
      } catch (BasaltException expected) {
        // closing a store whose storage has halted fails to sync; nothing acknowledged depends on
        // it
      }
    }
    storage.crash(MemStorage.CrashMode.RANDOM);
    try (Basalt again = Basalt.open(storage, options)) {
      TreeMap<Key, byte[]> actual = new TreeMap<>();
      try (Cursor c = again.keyspace(name).scan(null, null)) {
        while (c.next()) actual.put(new Key(c.key()), c.value());
      }
      List<TreeMap<Key, byte[]>> allowed = new ArrayList<>(states.subList(durable, states.size()));
      if (inFlight != null) {
        TreeMap<Key, byte[]> plus = new TreeMap<>(states.get(states.size() - 1));
        inFlight.accept(plus);
        allowed.add(plus);
      }
      for (TreeMap<Key, byte[]> s : allowed) {
        if (same(s, actual)) {
          assertEquals(
              s.size(), again.keyspace(name).itemCount(), "the exact item count after recovery");
          // Reads through get agree with the scan.
          for (var e : s.entrySet()) {
            assertTrue(Arrays.equals(e.getValue(), again.keyspace(name).get(e.getKey().bytes())));
          }
          return;
        }
      }
      fail(
          "recovered state matches no allowed state: "
              + actual.size()
              + " keys, acknowledged "
              + (states.size() - 1)
              + " writes, durable from "
              + durable
              + ", last state has "
              + states.get(states.size() - 1).size()
              + " keys");
    }
  }

  static boolean same(TreeMap<Key, byte[]> a, TreeMap<Key, byte[]> b) {
    if (a.size() != b.size()) return false;
    for (var e : a.entrySet()) {
      byte[] v = b.get(e.getKey());
      if (v == null || !Arrays.equals(v, e.getValue())) return false;
    }
    return true;
  }
}
