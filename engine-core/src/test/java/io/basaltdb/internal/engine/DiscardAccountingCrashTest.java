package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.base.DiscardListener;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.write.Flusher;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The {@link DiscardListener} contract across crashes and reruns. Each seed runs a store with tiny
 * key index levels (so compactions run all the time) through {@link #ROUNDS} rounds on one {@link
 * MemStorage}: open, write to two keyspaces, then either close cleanly or crash (after a random
 * number of file mutations; during recovery; or, armed from inside the listener, a few mutations
 * into the manifest commit that follows its calls: before that commit's rename or just after it),
 * dropping a random share of the unsynced data. Garbage collection runs all the while (threshold
 * 0.2, 64 KiB segments), so crashes land in segment and delete list compactions too. Checked, per
 * keyspace:
 *
 * <ol>
 *   <li>after every crash on the files alone, and after every recovery on the open store: the
 *       persisted {@code flushedVersions} = records in the tables + {@code discardedVersions}, and
 *       the same for bytes, and discarded = the segments' garbage + collected ({@link
 *       DiscardAccounting}). A count made twice or never breaks it (a compaction rerun after a
 *       crash must not add its garbage again), and so does a counter bumped outside the commit that
 *       drops the versions, at a crash in between;
 *   <li>the listener's calls since it was installed never name a (keyspace, seqno) twice;
 *   <li>the calls made before the newest durable manifest are exactly its discarded delta since the
 *       listener was installed, and their versions are gone from its tables; calls after it (a
 *       crash between the calls and the commit) name versions still in its tables; after a clean
 *       close there are none such.
 * </ol>
 *
 * Compaction threads make crash points vary between runs of a seed, but a failing seed usually
 * reproduces with {@code -Dbasalt.discard.seed=S}; {@code basalt.discard.seeds} sets the number of
 * seeds (default 24).
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class DiscardAccountingCrashTest {
  static final int SEEDS = Integer.getInteger("basalt.discard.seeds", 24);
  static final int ROUNDS = 6;
  static final int OPS = 500;

  /**
   * Garbage collection runs too (a low threshold), so crashes land in its jobs and its commits. A
   * seed's two low bits pick who else reports superseded versions: 0, the flushes ({@link
   * Options#flushLookups}); 3, the flushes from the item-count lookups of the writes ({@link
   * Options#exactItemCounts}); 2, every level-0 merge ({@link Options#l0RevealRatio}, with a base
   * level large enough for level 0 to tier); 1, only the merges that drop them. Crashes then land
   * in those commits, and later compactions must not report those versions again. Bit 2 picks the
   * key index layout: set, guards so dense that every kind of guard job runs ({@link
   * Options#keyIndexGuards}). Bit 4 (the middle third of the seeds) turns the cold pass on for
   * every segment but the tail ({@link Options#coldSegmentMillis}). Bit 5 (half the seeds, each
   * reporting and layout among them) runs collection on two threads ({@link Options#gcThreads}), so
   * crashes land while two segment jobs are under way.
   */
  static Options options(
      CompactionTest.Reporting reporting, boolean guards, boolean cold, boolean twoGcThreads) {
    Options o = options(reporting, guards).gcThreads(twoGcThreads ? 2 : 1);
    // the cold pass recompressing every segment but the tail at once: crashes land in its jobs
    return cold ? o.coldSegmentMillis(1).coldPassBytesPerSecond(1L << 40) : o;
  }

  static Options options(CompactionTest.Reporting reporting, boolean guards) {
    Options o =
        CompactionTest.tinyLevels()
            .segmentSize(64 << 10)
            .syncMode(SyncMode.NONE)
            .fragmentationThreshold(0.2)
            .flushLookups(reporting == CompactionTest.Reporting.LOOKUPS)
            .exactItemCounts(reporting == CompactionTest.Reporting.COUNTS)
            .l0RevealRatio(reporting == CompactionTest.Reporting.REVEALS ? 1 << 20 : 0);
    // Under guards the pushes reveal too, and the tiny levels make many of them.
    if (reporting == CompactionTest.Reporting.REVEALS && !guards)
      o.level1Bytes(1 << 20).tableTargetBytes(16 << 10).l0BaseRatio(4);
    if (guards) o.keyIndexGuards(true).guardLastLevelBits(2).guardBitsStep(1).guardMaxTables(3);
    return o;
  }

  static CompactionTest.Reporting reporting(long seed) {
    int bits = (int) (seed & 3);
    return bits == 1
        ? CompactionTest.Reporting.DROPS
        : bits == 2
            ? CompactionTest.Reporting.REVEALS
            : bits == 3 ? CompactionTest.Reporting.COUNTS : CompactionTest.Reporting.LOOKUPS;
  }

  /** Who reports in the seed running, and its layout ({@link #options}). */
  private CompactionTest.Reporting reporting;

  private boolean guards;

  /** Whether the seed running has the cold pass on (seed bit 4). */
  private boolean cold;

  /** Whether the seed running collects on two threads (seed bit 5). */
  private boolean twoGcThreads;

  /** Segments the cold pass rewrote, across the seeds. */
  private long coldRuns;

  /** How a round ends. */
  private enum Ending {
    CLEAN_CLOSE,
    AFTER_MUTATIONS,
    IN_COMMIT,
    IN_RECOVERY
  }

  /** Rounds that crashed between the listener's calls and their commit, across the seeds. */
  private int crashesBetweenCallsAndCommit;

  /** Segment compactions the rounds' stores committed, across the seeds. */
  private long gcRuns;

  /** Versions revealing level-0 merges reported, across the seeds. */
  private long revealed;

  /** Guard pushes and in-place merges, across the seeds. */
  private long guardJobs;

  @Test
  void discardedVersions_areCountedExactlyOnce_acrossCrashesAndReruns() {
    Long only = Long.getLong("basalt.discard.seed");
    Random seeds = new Random();
    SegmentCompactor.quietNanos = 100_000_000L; // waitForCompactions waits for the quiet passes
    Flusher.parallelLookups = 16; // the lookups of these small flushes take the two-thread path
    try {
      for (int i = 0; i < (only != null ? 1 : SEEDS); i++) {
        // lookups, drops, reveals, counts in turn; the leveled and the guarded layout in turn
        long seed =
            only != null
                ? only
                : (seeds.nextLong() & ~55L)
                    | (i % 4)
                    | ((i / 4 & 1) << 2)
                    | ((i / 8 & 1) << 4)
                    | ((i + i / 4 & 1) << 5);
        try {
          runSeed(seed);
        } catch (Throwable t) {
          throw new AssertionError(
              "seed " + seed + " (replay: -Dbasalt.discard.seed=" + seed + "): " + t, t);
        }
      }
    } finally {
      SegmentCompactor.quietNanos = 2_000_000_000L;
      Flusher.parallelLookups = 1024;
    }
    if (only == null) {
      assertTrue(
          crashesBetweenCallsAndCommit > 0,
          "no crash landed between the listener's calls and the commit");
      assertTrue(gcRuns > 0, "garbage collection never ran");
      assertTrue(revealed > 0, "no level-0 merge revealed a version");
      assertTrue(guardJobs > 0, "no guard job ran");
      assertTrue(coldRuns > 0, "the cold pass never ran");
    }
  }

  /**
   * The listener: every call with the number of the manifest current then (the commit makes it +1).
   */
  private static final class Recorder implements DiscardListener {
    final Engine engine;
    final MemStorage storage;

    /** Guarded by the engine's manifest lock (the calls hold it); read by the test after close. */
    final List<long[]> calls = new ArrayList<>();

    final Set<List<Long>> named = new HashSet<>();
    String duplicate;

    /** Arms the storage's halt at this call (1-based; 0: never), that many mutations ahead. */
    final int crashAtCall;

    final int mutationsAhead;

    Recorder(Engine engine, MemStorage storage, int crashAtCall, int mutationsAhead) {
      this.engine = engine;
      this.storage = storage;
      this.crashAtCall = crashAtCall;
      this.mutationsAhead = mutationsAhead;
    }

    @Override
    public void discarded(int keyspace, long seqno, int docSize) {
      calls.add(new long[] {keyspace, seqno, docSize, engine.versionSet().manifest().number()});
      if (!named.add(List.of((long) keyspace, seqno)) && duplicate == null) {
        duplicate =
            "keyspace #"
                + keyspace
                + " seqno "
                + seqno
                + " named twice since the listener was installed";
      }
      // The commit writes MANIFEST-n.tmp in 4 mutations (delete, create, write, sync), then renames
      // it:
      // halting 0 to 4 mutations ahead fails the commit, 5 or more lets it land first.
      if (calls.size() == crashAtCall) storage.crashAfterMutations(mutationsAhead);
    }
  }

  private void runSeed(long seed) {
    Random rnd = new Random(seed);
    reporting = reporting(seed);
    guards = (seed & 4) != 0;
    cold = (seed & 16) != 0;
    twoGcThreads = (seed & 32) != 0;
    MemStorage storage = new MemStorage(seed);
    int second;
    try (Engine e = Engine.open(storage, options(reporting, guards, cold, twoGcThreads))) {
      second = e.createKeyspace("second", (seed & 8) != 0 ? 8 : 0); // HB+-trie tables in turn
    }
    for (int round = 0; round < ROUNDS; round++) {
      Ending ending = Ending.values()[rnd.nextInt(Ending.values().length)];
      try {
        runRound(storage, rnd, ending, second);
      } catch (Throwable t) {
        throw new AssertionError("round " + round + " (" + ending + "): " + t, t);
      }
    }
    if (cold) awaitColdPass(storage);
  }

  /**
   * Opens a cold seed's store once more, writes new keys until the tail has been closed on some,
   * and waits for the cold pass to recompress such a segment: the rounds may all have ended, by a
   * crash or a close, before its first job committed, and collection, whose outputs from cold
   * inputs are zstd too, may have taken every older segment first (the test's count then said it
   * never ran, one run in four). New keys make no garbage, so only the cold pass takes their
   * segments. The files are checked again after it.
   */
  private void awaitColdPass(MemStorage storage) {
    try (Engine e = Engine.open(storage, options(reporting, guards, true, twoGcThreads))) {
      byte[] value = new byte[200];
      Random random = new Random(7);
      for (int i = 0; i < 2000; i++) { // 400 KB that do not compress: several 64 KiB segments
        random.nextBytes(value);
        Batch b = new Batch(1);
        b.add(1, Batch.PUT, ("cold-" + i).getBytes(), value);
        e.write(b);
      }
      e.flush();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (e.stats().get("coldPassSegments") == 0) {
        assertTrue(System.nanoTime() < deadline, "the cold pass recompresses: " + e.stats());
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
      }
      coldRuns += e.stats().get("coldPassSegments");
    }
    checkFiles(storage);
  }

  private void runRound(MemStorage storage, Random rnd, Ending ending, int second) {
    if (ending == Ending.IN_RECOVERY) storage.crashAfterMutations(rnd.nextInt(40));
    Engine e;
    try {
      e = Engine.open(storage, options(reporting, guards, cold, twoGcThreads));
    } catch (BasaltException crashed) {
      storage.crash(MemStorage.CrashMode.RANDOM);
      checkFiles(storage);
      return;
    }
    Manifest base;
    Recorder rec;
    try {
      if (ending != Ending.IN_RECOVERY)
        checkOpen(e); // the recovered store, replayed flushes included
      rec =
          new Recorder(
              e, storage, ending == Ending.IN_COMMIT ? 1 + rnd.nextInt(300) : 0, rnd.nextInt(10));
      synchronized (
          e.versionSet().lock) { // no compaction commits between reading the base and installing
        base = e.versionSet().manifest();
        e.setDiscardListener(rec);
      }
      if (ending == Ending.AFTER_MUTATIONS) storage.crashAfterMutations(rnd.nextInt(300));
      write(e, rnd, second);
      if (ending == Ending.CLEAN_CLOSE) {
        if (rnd.nextBoolean()) {
          e.flush();
          if (e.waitForCompactions(10_000)) checkStats(e); // nothing changes the manifest meanwhile
        }
      } else {
        storage.crashAfterMutations(
            rnd.nextInt(3)); // if it has not crashed yet: now, with compaction going
      }
    } finally {
      gcRuns += e.stats().get("gcRuns");
      coldRuns += e.stats().get("coldPassSegments");
      revealed += e.stats().get("l0MergeStaleReported");
      guardJobs += e.stats().get("guardPushes") + e.stats().get("guardMerges");
      try {
        e.close();
      } catch (BasaltException expected) {
        // closing a store whose storage halted fails; the crash below is what counts
      }
    }
    if (ending != Ending.CLEAN_CLOSE) storage.crash(MemStorage.CrashMode.RANDOM);
    Map<Integer, DiscardAccounting.Census> census = checkFiles(storage);
    checkCalls(rec, base, DiscardAccounting.newest(storage), census, ending == Ending.CLEAN_CLOSE);
  }

  private static void write(Engine e, Random rnd, int second) {
    for (int i = 0; i < OPS; i++) {
      try {
        if (rnd.nextInt(100) < 3) {
          e.flush();
          continue;
        }
        Batch b = new Batch(1);
        int ks = rnd.nextBoolean() ? 1 : second;
        byte[] key = ("k" + rnd.nextInt(80)).getBytes();
        if (rnd.nextInt(5) == 0) {
          b.add(ks, Batch.DELETE, key, null);
        } else {
          byte[] v = new byte[rnd.nextInt(300)];
          rnd.nextBytes(v);
          b.add(ks, Batch.PUT, key, v);
        }
        e.write(b);
      } catch (BasaltException crashed) {
        return; // the storage halted, or the store failed because it did
      }
    }
  }

  /** Invariant 1 on the newest durable manifest and the table files it names. */
  private static Map<Integer, DiscardAccounting.Census> checkFiles(MemStorage storage) {
    Manifest m = DiscardAccounting.newest(storage);
    Map<Integer, DiscardAccounting.Census> census = DiscardAccounting.census(storage, m);
    assertNull(DiscardAccounting.check(m, census), "after the crash");
    return census;
  }

  /** Invariant 1 on the open store: its manifest against the tables of its current version. */
  private static void checkOpen(Engine e) {
    var c = DiscardAccounting.census(e);
    assertNull(DiscardAccounting.check(c.getKey(), c.getValue()), "after recovery");
  }

  /**
   * With compaction idle: the stats are the manifest's totals, and liveDataBytes what the tables
   * reference.
   */
  private static void checkStats(Engine e) {
    var c = DiscardAccounting.census(e);
    Map<String, Long> st = e.stats();
    long flushed = 0, flushedBytes = 0, discarded = 0, discardedBytes = 0, tableBytes = 0;
    for (Manifest.KeyspaceMeta k : c.getKey().keyspaces()) {
      flushed += k.counters().flushedVersions();
      flushedBytes += k.counters().flushedBytes();
      discarded += k.counters().discardedVersions();
      discardedBytes += k.counters().discardedBytes();
      tableBytes += c.getValue().get(k.id()).docBytes();
    }
    assertEquals(flushed, st.get("flushedRecords"), st.toString());
    assertEquals(flushedBytes, st.get("flushedBytes"), st.toString());
    assertEquals(discarded, st.get("discardedVersions"), st.toString());
    assertEquals(discardedBytes, st.get("discardedBytes"), st.toString());
    assertEquals(tableBytes, st.get("liveDataBytes"), st.toString());
    assertTrue(st.get("diskBytes") > 0, st.toString());
  }

  /** Invariants 2 and 3: {@code durable} is the newest manifest on disk after the round. */
  private void checkCalls(
      Recorder rec,
      Manifest base,
      Manifest durable,
      Map<Integer, DiscardAccounting.Census> census,
      boolean clean) {
    assertNull(rec.duplicate);
    Map<Integer, long[]> committed = new HashMap<>(); // keyspace -> (versions, bytes)
    int lost = 0;
    for (long[] call : rec.calls) {
      int ks = (int) call[0];
      long seqno = call[1];
      boolean inTables = census.containsKey(ks) && census.get(ks).seqnos().contains(seqno);
      if (call[3] < durable.number()) { // its commit, manifest call[3] + 1, is durable
        long[] sum = committed.computeIfAbsent(ks, k -> new long[2]);
        sum[0]++;
        sum[1] += call[2];
        assertTrue(
            !inTables,
            "keyspace #"
                + ks
                + " seqno "
                + seqno
                + " discarded by a durable commit, still in a table");
      } else {
        assertEquals(
            durable.number(),
            call[3],
            "calls after the last durable commit belong to the one that failed");
        assertTrue(
            inTables,
            "keyspace #"
                + ks
                + " seqno "
                + seqno
                + " lost its commit, yet is gone from the tables");
        lost++;
      }
    }
    if (clean) assertEquals(0, lost, "a clean close left calls without a commit");
    if (lost > 0) crashesBetweenCallsAndCommit++;
    for (Manifest.KeyspaceMeta k : durable.keyspaces()) {
      Manifest.Counters before = Manifest.Counters.ZERO;
      for (Manifest.KeyspaceMeta b : base.keyspaces()) {
        if (b.id() == k.id()) before = b.counters();
      }
      long[] sum = committed.getOrDefault(k.id(), new long[2]);
      assertEquals(
          sum[0],
          k.counters().discardedVersions() - before.discardedVersions(),
          "keyspace #"
              + k.id()
              + ": listener calls with a durable commit vs the persisted discarded delta");
      assertEquals(
          sum[1],
          k.counters().discardedBytes() - before.discardedBytes(),
          "keyspace #" + k.id() + " bytes");
    }
  }
}
