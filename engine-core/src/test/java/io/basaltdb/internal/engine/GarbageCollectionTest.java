package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.read.EngineCursor;
import io.basaltdb.internal.engine.read.EngineFeed;
import io.basaltdb.internal.engine.read.EngineSnapshot;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Magma's garbage collection (section 4) end to end: the delete list fed by key index compaction,
 * fragmentation, segment compaction, and space that stays bounded under updates.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class GarbageCollectionTest {
  static final int KEYS = 1500;

  /** Tiny segments and levels: compactions and garbage collection run all the time. */
  static Options gcOptions() {
    return CompactionTest.tinyLevels()
        .segmentSize(64 << 10)
        .fragmentationThreshold(0.3)
        .checkpointIntervalMillis(0)
        .checkpointRetentionMillis(0);
  }

  static byte[] value(int key, int round) {
    byte[] v = new byte[200];
    new Random(key * 1_000_003L + round).nextBytes(v);
    return v;
  }

  static byte[] key(int i) {
    return String.format("key-%06d", i).getBytes();
  }

  /**
   * Writes every key {@code rounds} times in a shuffled order; returns the last round written per
   * key.
   */
  /**
   * Six rounds of updates with collection off, flushed and compacted: garbage for a test to
   * collect.
   */
  private static Map<Integer, Integer> withGarbage(MemStorage storage, long seed) throws Exception {
    try (Engine e = Engine.open(storage, gcOptions().fragmentationThreshold(1.0))) {
      Map<Integer, Integer> last = update(e, 6, 0, seed);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      return last;
    }
  }

  static Map<Integer, Integer> update(Engine e, int rounds, int firstRound, long seed) {
    Map<Integer, Integer> last = new HashMap<>();
    Random r = new Random(seed);
    for (int round = firstRound; round < firstRound + rounds; round++) {
      List<Integer> order = new ArrayList<>();
      for (int i = 0; i < KEYS; i++) order.add(i);
      java.util.Collections.shuffle(order, r);
      for (int start = 0; start < KEYS; start += 50) {
        Batch b = new Batch(50);
        for (int i = start; i < Math.min(KEYS, start + 50); i++) {
          int k = order.get(i);
          b.add(1, Batch.PUT, key(k), value(k, round));
          last.put(k, round);
        }
        e.write(b);
      }
    }
    return last;
  }

  static void checkAll(Engine e, Map<Integer, Integer> last) {
    for (Map.Entry<Integer, Integer> x : last.entrySet()) {
      assertArrayEquals(
          value(x.getKey(), x.getValue()), e.get(1, key(x.getKey())), "key " + x.getKey());
    }
  }

  @org.junit.jupiter.api.BeforeAll
  static void shortQuiet() {
    SegmentCompactor.quietNanos = 200_000_000L; // every waitForCompactions waits for the quiet pass
    Flusher.parallelLookups = 16; // flush lookups take their two-thread path in these small flushes
  }

  @org.junit.jupiter.api.AfterAll
  static void defaultQuiet() {
    SegmentCompactor.quietNanos = 2_000_000_000L;
    Flusher.parallelLookups = 1024;
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "flushLookups={0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void updates_keepTheLogBounded_andEveryKeyReadsItsNewestValue(boolean lookups) throws Exception {
    MemStorage storage = new MemStorage(3);
    Map<Integer, Integer> last;
    try (Engine e = Engine.open(storage, gcOptions().flushLookups(lookups))) {
      last = update(e, 12, 0, 1);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      Map<String, Long> s = e.stats();
      assertNull(e.state().failure());
      assertTrue(s.get("gcRuns") > 0, "segment compactions ran: " + s);
      assertTrue(s.get("gcDocumentsDropped") > 0);
      // 12 rounds of 1500 x ~210 bytes: without collection the log would hold ~3.8 MB for ~0.3 MB
      // live.
      long live = (long) KEYS * 230;
      assertTrue(
          s.get("segmentBytes") < 3 * live,
          "segment bytes " + s.get("segmentBytes") + " for ~" + live + " live");
      // waitForCompactions includes the quiet pass, which collects down to half the threshold
      // (0.15)
      assertTrue(
          s.get("fragmentationPermille") <= 200, "fragmentation " + s.get("fragmentationPermille"));
      checkAll(e, last);
      assertNull(DiscardAccounting.check(e));
    }
    try (Engine e = Engine.open(storage, gcOptions().flushLookups(lookups))) {
      checkAll(e, last);
      assertNull(DiscardAccounting.check(e));
    }
  }

  /**
   * With {@link io.basaltdb.Options#flushLookups}, the flush that writes a key's new version
   * reports the version it supersedes (a put, not a tombstone) as garbage in its own commit, before
   * any compaction; the compactions that later drop those versions do not report them again, and a
   * tombstone is reported where it is dropped. Without, the flush reports nothing.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "flushLookups={0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void theFlushOfAnUpdate_reportsTheVersionItSupersedes_once(boolean lookups) throws Exception {
    MemStorage storage = new MemStorage(11);
    // No automatic compaction until the end: level 0 takes many tables before it merges.
    Options o =
        gcOptions()
            .fragmentationThreshold(1.0)
            .flushLookups(lookups)
            .l0CompactionTrigger(30)
            .l0StopWritesTrigger(60);
    try (Engine e = Engine.open(storage, o)) {
      List<long[]> calls = java.util.Collections.synchronizedList(new ArrayList<>());
      e.setDiscardListener((ks, seqno, size) -> calls.add(new long[] {seqno, size}));
      Map<Long, Integer> superseded =
          new HashMap<>(); // seqno -> document size expected in the reports
      Map<Integer, Long> seqnoOf = new HashMap<>();
      Batch b = new Batch(100);
      for (int k = 0; k < 100; k++) b.add(1, Batch.PUT, key(k), value(k, 0));
      e.write(b);
      long first = e.versions().lastSeqno() - 99;
      for (int k = 0; k < 100; k++) seqnoOf.put(k, first + k);
      e.flush();
      Map<String, Long> before = e.stats();
      b = new Batch(51);
      for (int k = 0; k < 50; k++) b.add(1, Batch.PUT, key(k), value(k, 1));
      b.add(1, Batch.DELETE, key(60), null);
      e.write(b);
      long tombstone = e.versions().lastSeqno();
      for (int k = 0; k < 50; k++) superseded.put(seqnoOf.get(k), 0);
      superseded.put(seqnoOf.get(60), 0);
      e.flush();
      Map<String, Long> s = e.stats();
      assertEquals(
          0,
          s.get("compactions") - before.get("compactions"),
          "no compaction between the flushes: " + s);
      if (!lookups) {
        assertEquals(0L, s.get("flushStaleReported"), s.toString());
        assertEquals(0, calls.size(), "nothing reported before a compaction");
        return;
      }
      assertEquals(51L, s.get("flushStaleReported"), s.toString());
      assertEquals(51, calls.size());
      for (long[] c : calls)
        assertTrue(superseded.containsKey(c[0]), "reported seqno " + c[0] + " was not superseded");
      assertEquals(51L, s.get("discardedVersions"), s.toString());
      assertEquals(51L, s.get("deleteListRecords"), s.toString());
      assertTrue(
          s.get("segmentGarbageBytes") > 0 && s.get("pendingGarbageBytes") == 0, s.toString());
      assertNull(DiscardAccounting.check(e));
      // The quiet store merges level 0 to the bottom: the superseded versions go from the tables
      // without a second report; the
      // tombstone, dropped at the bottom, is reported once.
      assertTrue(e.waitForCompactions(60_000));
      Set<Long> named = new HashSet<>();
      for (long[] c : calls) assertTrue(named.add(c[0]), "seqno " + c[0] + " reported twice");
      Set<Long> expected = new HashSet<>(superseded.keySet());
      expected.add(tombstone);
      assertEquals(expected, named);
      assertNull(DiscardAccounting.check(e));
      for (int k = 0; k < 100; k++) {
        if (k == 60) assertNull(e.get(1, key(k)));
        else assertArrayEquals(value(k, k < 50 ? 1 : 0), e.get(1, key(k)));
      }
    }
  }

  @Test
  void segmentCompaction_neverReadsTheKeyIndex() throws Exception {
    MemStorage storage = new MemStorage(5);
    Map<Integer, Integer> last;
    try (Engine e =
        Engine.open(storage, gcOptions().fragmentationThreshold(1.0))) { // collection off
      last = update(e, 8, 0, 2);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      assertEquals(0, e.stats().get("gcRuns"));
      assertTrue(e.stats().get("fragmentationPermille") > 300, "garbage built up: " + e.stats());
    }
    try (Engine e = Engine.open(storage, gcOptions())) {
      // Opening reads nothing of the key index's data; collection starts at once. Count the key
      // index
      // tables' reads from before it can have done anything to after it is done.
      long before = keyIndexReads(e);
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("gcRuns") > 0, "collection ran: " + e.stats());
      assertEquals(0, e.stats().get("compactions"), "no key index compaction ran meanwhile");
      assertEquals(before, keyIndexReads(e), "segment compaction read the key index");
      checkAll(e, last);
    }
  }

  /**
   * With {@link Options#gcThreads} 2, two segment compactions of disjoint segments run at once: the
   * first job to write its output waits (up to 10 s) for a second one to write its own; one thread
   * would time out. Both commit, and every key reads its newest value, with the discard accounting
   * exact, before and after a reopen.
   */
  @Test
  void twoGcThreads_compactDisjointSegmentsAtOnce() throws Exception {
    MemStorage storage = new MemStorage(17);
    Map<Integer, Integer> last = withGarbage(storage, 9);
    java.util.concurrent.CountDownLatch both = new java.util.concurrent.CountDownLatch(2);
    Set<String> outputs = java.util.concurrent.ConcurrentHashMap.newKeySet();
    java.util.concurrent.atomic.AtomicBoolean overlapped =
        new java.util.concurrent.atomic.AtomicBoolean();
    HookedStorage hooked =
        HookedStorage.beforeWrite(
            storage,
            name -> {
              if (!name.endsWith(".seg")
                  || !Thread.currentThread().getName().startsWith("basalt-gc")
                  || outputs.size() >= 2
                  || !outputs.add(name)) return;
              boolean first = both.getCount() == 2;
              both.countDown();
              try {
                // the first job's output waits for the second's: true only if they overlapped
                if (both.await(10, java.util.concurrent.TimeUnit.SECONDS) && first)
                  overlapped.set(true);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    try (Engine e = Engine.open(hooked, gcOptions().gcThreads(2))) {
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(overlapped.get(), "two segment compactions ran at once: " + outputs);
      assertTrue(e.stats().get("gcRuns") >= 2, "both committed: " + e.stats());
      assertNull(e.state().failure());
      checkAll(e, last);
      assertNull(DiscardAccounting.check(e));
    }
    try (Engine e = Engine.open(storage, gcOptions().gcThreads(2))) {
      checkAll(e, last);
      assertNull(DiscardAccounting.check(e));
    }
  }

  @Test
  void aFullDisk_failsCollectionCleanly_andCollectionResumesWhenSpaceReturns() throws Exception {
    MemStorage storage = new MemStorage(13);
    Map<Integer, Integer> last = withGarbage(storage, 5);
    java.util.concurrent.atomic.AtomicBoolean full =
        new java.util.concurrent.atomic.AtomicBoolean();
    storage.setFaultInjector(
        (op, name) ->
            full.get()
                    && (op == MemStorage.Op.WRITE
                        || op == MemStorage.Op.PREALLOCATE
                        || op == MemStorage.Op.CREATE)
                    && !name.startsWith("manifest/")
                ? MemStorage.Fault.NO_SPACE
                : MemStorage.Fault.NONE);
    try (Engine e = Engine.open(storage, gcOptions())) {
      full.set(true); // after the open, which writes a WAL file; collection starts at once
      long deadline = System.currentTimeMillis() + 10_000;
      while (e.stats().get("gcFailures") == 0 && System.currentTimeMillis() < deadline)
        Thread.sleep(10);
      assertTrue(e.stats().get("gcFailures") > 0, "collection tried and failed: " + e.stats());
      // While the disk stays full, no rewritten segment lands and the job keeps retrying (segments
      // that
      // are all garbage are still dropped: that needs no space, and frees some).
      long written = e.stats().get("gcBytesWritten"), failures = e.stats().get("gcFailures");
      Thread.sleep(1_500);
      assertEquals(written, e.stats().get("gcBytesWritten"));
      assertTrue(e.stats().get("gcFailures") > failures, "retried: " + e.stats());
      assertNull(
          e.state().failure(), "a collection that cannot write its output does not fail the store");
      checkAll(e, last);
      full.set(false); // space returns: collection goes on by itself
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("gcRuns") > 0, "collection resumed: " + e.stats());
      assertTrue(e.stats().get("fragmentationPermille") <= 400, "garbage collected: " + e.stats());
      checkAll(e, last);
      full.set(
          true); // full again: a write is refused having written nothing (the store then wants a
      // reopen)
      Batch b = new Batch(1);
      b.add(1, Batch.PUT, key(0), "refused".getBytes());
      assertThrows(
          io.basaltdb.StorageException.class,
          () -> e.write(b),
          "a write to a full disk is refused");
      checkAll(e, last);
    } catch (io.basaltdb.StorageException closeFailure) {
      // the refused WAL write failed the store; closing it may fail too
    }
    full.set(false);
    try (Engine e = Engine.open(storage, gcOptions())) {
      checkAll(e, last);
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("fragmentationPermille") <= 400, "garbage collected: " + e.stats());
      assertNull(DiscardAccounting.check(e));
    }
  }

  @Test
  void aCheckpointHoldsTheSegmentsCollectionReplaced_andRollsBackToThem() throws Exception {
    MemStorage storage = new MemStorage(17);
    Options o =
        gcOptions().checkpointIntervalMillis(3_600_000).checkpointRetentionMillis(3_600_000);
    Map<Integer, Integer> atCheckpoint;
    Engine.CheckpointInfo cp;
    try (Engine e = Engine.open(storage, o)) {
      atCheckpoint = update(e, 3, 0, 6);
      cp = e.checkpoint();
      update(e, 8, 3, 7);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("gcRuns") > 0);
      assertTrue(
          e.stats().get("checkpointOnlyBytes") > 0,
          "the checkpoint holds replaced segments: " + e.stats());
    }
    Engine.rollback(storage, cp.id());
    try (Engine e = Engine.open(storage, o)) {
      checkAll(e, atCheckpoint);
      assertNull(DiscardAccounting.check(e));
      Map<Integer, Integer> after =
          update(e, 4, 20, 8); // collection goes on from the rolled-back state
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      checkAll(e, after);
      assertNull(DiscardAccounting.check(e));
    }
  }

  /** Block and meta reads of the key index tables of the current version (they stay open). */
  private static long keyIndexReads(Engine e) {
    long n = 0;
    for (KeyspaceFiles f : e.versions().current().files.values()) {
      for (KeyspaceFiles.Table t : f.tables) n += t.reader().blockReads() + t.reader().metaReads();
    }
    return n;
  }

  @Test
  void
      aNearlyFullDisk_refusesPuts_letsDeletesUseHalfTheReserve_keepsTheRestForCollection_andWritesResume()
          throws Exception {
    MemStorage storage = new MemStorage(17);
    Map<Integer, Integer> last = withGarbage(storage, 11);
    long reserve = 512 << 10;
    assertEquals(Long.MAX_VALUE, storage.usableSpace(), "no capacity: no limit");
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key(0), "refused".getBytes());
    try (Engine e =
        Engine.open(storage, gcOptions().fragmentationThreshold(1.0).diskReserveBytes(reserve))) {
      // The limit is set once the open has freed what it frees (the pool of recycled WAL files,
      // one or two files of about 44 KiB depending on when the last close ran, and the last WAL
      // truncated) and its compactions are idle: set before the open, an open that found two
      // pooled files freed more than a quarter of the reserve and the put below went through
      // (about one run in eight). No collection in this open (threshold 1.0), so nothing frees
      // space before the write.
      assertTrue(e.waitForCompactions(60_000));
      // Three quarters of the reserve free: puts are refused, deletes may use the upper half of
      // the reserve.
      storage.setCapacity(storage.usedBytes() + reserve * 3 / 4);
      io.basaltdb.StorageException refused =
          assertThrows(io.basaltdb.StorageException.class, () -> e.write(b));
      assertTrue(refused.getMessage().contains("diskReserveBytes"), refused.getMessage());
      assertNull(e.state().failure(), "a refused write does not fail the store");
      assertTrue(e.stats().get("diskFullRefusals") > 0);
      checkAll(e, last); // nothing of it was written
      Batch delete = new Batch(1);
      delete.add(1, Batch.DELETE, key(1), null);
      e.write(delete); // deletes are how a user frees space
      assertNull(e.get(1, key(1)));
      last.remove(1);
      storage.setCapacity(storage.usedBytes() + reserve / 2 - 1);
      io.basaltdb.StorageException floor =
          assertThrows(io.basaltdb.StorageException.class, () -> e.write(delete));
      assertTrue(
          floor.getMessage().contains("diskReserveBytes"),
          "below half the reserve deletes wait too: " + floor);
    }
    try (Engine e = Engine.open(storage, gcOptions().diskReserveBytes(reserve))) {
      // The open itself may free some space (it empties the pool of recycled WAL files), so wait
      // for
      // collection to have run too; a segment that is all garbage is dropped without rewriting it.
      long deadline = System.currentTimeMillis() + 20_000;
      while ((storage.usableSpace() < reserve || e.stats().get("gcRuns") == 0)
          && System.currentTimeMillis() < deadline) {
        Thread.sleep(20);
      }
      Map<String, Long> s = e.stats();
      assertTrue(
          s.get("gcBytesReclaimed") > 0, "collection reclaimed segments in the reserve: " + s);
      assertTrue(
          storage.usableSpace() >= reserve,
          "collection freed space: " + storage.usableSpace() + " " + s);
      e.write(b); // room again: writes go on
      last.remove(0);
      assertNull(e.get(1, key(1)), "the delete made under the reserve stayed");
      assertArrayEquals("refused".getBytes(), e.get(1, key(0)));
      checkAll(e, last);
    }
  }

  /** A compressible value: zstd shrinks it well, LZ4 less. */
  static byte[] textValue(int key, int round) {
    return ("{\"id\":"
            + key
            + ",\"round\":"
            + round
            + ",\"tags\":[\"alpha\",\"beta\",\"gamma\"],\"note\":\"value of key "
            + key
            + "\"}")
        .repeat(3)
        .getBytes();
  }

  /**
   * Writes every key in round 0, a quarter of them (every fourth) in later rounds, with {@link
   * #textValue}.
   */
  private static void writeText(Engine e, int round, Map<Integer, Integer> last) {
    for (int start = 0; start < KEYS; start += 50) {
      Batch b = new Batch(50);
      for (int k = start; k < Math.min(KEYS, start + 50); k++) {
        if (round > 0 && k % 4 != 0) continue;
        b.add(1, Batch.PUT, key(k), textValue(k, round));
        last.put(k, round);
      }
      if (b.count > 0) e.write(b);
    }
  }

  @Test
  void coldSegments_areRewrittenWithZstd_andReadBackAfterAReopen() throws Exception {
    MemStorage storage = new MemStorage(31);
    Map<Integer, Integer> last = new HashMap<>();
    try (Engine e = Engine.open(storage, gcOptions())) { // every key once: no garbage yet
      writeText(e, 0, last);
      e.flush();
    }
    try (Engine e = Engine.open(storage, gcOptions().coldSegmentMillis(1))) {
      Thread.sleep(20); // every segment found at the open is now older than coldSegmentMillis
      // A quarter of the keys updated three times: the load's segments, cold, hold garbage and the
      // other keys' only versions, which collection moves into zstd outputs.
      for (int round = 1; round < 4; round++) writeText(e, round, last);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      Map<String, Long> s = e.stats();
      assertTrue(
          s.get("gcColdSegments") > 0 && s.get("gcColdBytesWritten") > 0,
          "cold outputs in zstd: " + s);
      assertTrue(s.get("gcRuns") >= s.get("gcColdSegments"));
    }
    try (Engine e = Engine.open(storage, gcOptions().fragmentationThreshold(1.0))) {
      for (Map.Entry<Integer, Integer> x : last.entrySet()) {
        assertArrayEquals(
            textValue(x.getKey(), x.getValue()), e.get(1, key(x.getKey())), "key " + x.getKey());
      }
      try (EngineFeed f =
          e.changes(null, 1, 0, Long.MAX_VALUE, true)) { // the zstd blocks in seqno order
        int n = 0;
        while (f.next()) n++;
        assertEquals(KEYS, n);
      }
    }
  }

  /**
   * The cold pass: with no garbage at all, every segment but the tail that nothing wrote for
   * coldSegmentMillis is rewritten in zstd, paced, and read back; its state says so, so a reopen
   * (which makes every segment cold again after coldSegmentMillis) rewrites none twice.
   */
  @Test
  void theColdPass_recompressesUntouchedSegments_onceAcrossReopens() throws Exception {
    MemStorage storage = new MemStorage(33);
    Map<Integer, Integer> last = new HashMap<>();
    Options cold = gcOptions().fragmentationThreshold(1.0).coldSegmentMillis(1);
    long segments;
    try (Engine e = Engine.open(storage, cold.coldPassBytesPerSecond(4L << 20))) {
      writeText(e, 0, last); // every key once: no garbage, so only the cold pass rewrites
      e.flush();
      Thread.sleep(20);
      assertTrue(e.waitForCompactions(60_000));
      Map<String, Long> s = e.stats();
      segments = s.get("coldPassSegments");
      assertTrue(s.get("segments") > 2, "several segments: " + s);
      assertEquals(s.get("segments") - 1, segments, "every segment but the tail: " + s);
      assertEquals(segments, s.get("gcColdSegments"));
      assertEquals(0, s.get("gcDocumentsDropped"));
      // every segment but the tail is zstd now
      try (EngineSnapshot snap = e.snapshot()) {
        List<KeyspaceFiles.Segment> segs = snap.version.files(1).segments;
        for (int i = 0; i < segs.size() - 1; i++)
          assertTrue(segs.get(i).state().zstd(), "segment " + i + " of " + segs.size());
        assertFalse(segs.get(segs.size() - 1).state().zstd(), "the tail stays LZ4");
      }
    }
    try (Engine e = Engine.open(storage, cold)) {
      Thread.sleep(20);
      assertTrue(e.waitForCompactions(60_000));
      assertEquals(0, e.stats().get("coldPassSegments"), "no segment is recompressed twice");
      for (Map.Entry<Integer, Integer> x : last.entrySet()) {
        assertArrayEquals(
            textValue(x.getKey(), x.getValue()), e.get(1, key(x.getKey())), "key " + x.getKey());
      }
    }
  }

  /** A segment that gets keep reading is not cold, however long ago it was written. */
  @Test
  void theColdPass_leavesSegmentsThatAreRead() throws Exception {
    Map<Integer, Integer> last = new HashMap<>();
    Options cold = gcOptions().fragmentationThreshold(1.0).coldSegmentMillis(400);
    try (Engine e = Engine.open(new MemStorage(35), cold)) {
      writeText(e, 0, last);
      e.flush();
      long until = System.currentTimeMillis() + 1_500;
      while (System.currentTimeMillis() < until) { // every key, every 50 ms or so
        for (int k = 0; k < KEYS; k++) assertArrayEquals(textValue(k, 0), e.get(1, key(k)));
        Thread.sleep(50);
      }
      assertEquals(0, e.stats().get("coldPassSegments"), "read segments are not cold");
      long deadline = System.currentTimeMillis() + 20_000; // no reads: cold 400 ms later
      while (e.stats().get("coldPassSegments") == 0 && System.currentTimeMillis() < deadline)
        Thread.sleep(20);
      assertTrue(e.stats().get("coldPassSegments") > 0, "unread, they are cold: " + e.stats());
    }
  }

  @Test
  void withoutColdSegmentMillis_collectionKeepsLz4() throws Exception {
    try (Engine e = Engine.open(new MemStorage(32), gcOptions().coldSegmentMillis(0))) {
      update(e, 4, 0, 3);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("gcRuns") > 0);
      assertEquals(0, e.stats().get("gcColdSegments"));
    }
  }

  @Test
  void
      hintsNamingReplacedSegments_areFollowedThroughTheSeqnoIndexByBatchedReads_andRefreshedByCompaction()
          throws Exception {
    MemStorage storage = new MemStorage(21);
    Map<Integer, Integer> last;
    try (Engine e = Engine.open(storage, gcOptions())) {
      last = update(e, 1, 0, 7);
      // Half the keys updated again and again: collection moves the other half's only versions,
      // whose
      // newest records then name the segments it replaced.
      for (int round = 1; round < 6; round++) {
        for (int start = 0; start < KEYS / 2; start += 50) {
          Batch b = new Batch(50);
          for (int k = start; k < Math.min(KEYS / 2, start + 50); k++) {
            b.add(1, Batch.PUT, key(k), value(k, round));
            last.put(k, round);
          }
          e.write(b);
        }
      }
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("gcRuns") > 0, "collection ran: " + e.stats());
    }
    try (Engine e =
        Engine.open(storage, gcOptions().fragmentationThreshold(1.0))) { // no collection from here
      assertTrue(
          hints(e, 0)[0] > 0, "collection moved documents whose records name the old segments");
      // A batched read of every key, the cache cold: the documents behind stale hints are found in
      // the
      // seqno index and read through the transport with the rest, not one by one on the caller's
      // thread.
      List<byte[]> keys = new ArrayList<>();
      for (int k = 0; k < KEYS; k++) keys.add(key(k));
      Thread caller = Thread.currentThread();
      java.util.concurrent.atomic.AtomicLong onCaller =
          new java.util.concurrent.atomic.AtomicLong();
      java.util.concurrent.atomic.AtomicLong elsewhere =
          new java.util.concurrent.atomic.AtomicLong();
      Map<String, Long> before = e.stats();
      storage.setFaultInjector(
          (op, name) -> {
            if (op == MemStorage.Op.READ && name.endsWith(".seg"))
              (Thread.currentThread() == caller ? onCaller : elsewhere).incrementAndGet();
            return MemStorage.Fault.NONE;
          });
      List<byte[]> got;
      try {
        int[] ks = new int[KEYS];
        java.util.Arrays.fill(ks, 1);
        got = e.getAll(ks, keys);
      } finally {
        storage.setFaultInjector(null);
      }
      Map<String, Long> after = e.stats();
      for (int k = 0; k < KEYS; k++)
        assertArrayEquals(value(k, last.get(k)), got.get(k), "key " + k);
      assertTrue(
          after.get("hintMisses") - before.get("hintMisses") > 0, "stale hints met: " + after);
      long rounds = after.get("batchedReadRounds") - before.get("batchedReadRounds");
      assertTrue(
          onCaller.get() <= rounds,
          "segment reads on the caller: "
              + onCaller
              + ", at most one per hand-over ("
              + rounds
              + ")");
      assertTrue(
          elsewhere.get() > onCaller.get(),
          "the transport made the segment reads: " + elsewhere + " against " + onCaller);
      checkAll(e, last); // a cold block cache: every document read from its segment
      long stale = e.stats().get("hintMisses");
      assertTrue(stale > 0, "reads found moved documents through the seqno index: " + e.stats());
      long newer = 0;
      for (KeyspaceFiles.Table t : e.versions().current().files(1).tables)
        newer = Math.max(newer, t.fileNumber());
      // Keys between every two existing ones: merging them down rewrites the tables they fall
      // between.
      for (int start = 0; start < KEYS; start += 50) {
        Batch b = new Batch(50);
        for (int i = start; i < Math.min(KEYS, start + 50); i++) {
          b.add(1, Batch.PUT, (new String(key(i)) + "x").getBytes(), value(i, 99));
        }
        e.write(b);
      }
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      assertTrue(e.stats().get("hintsRefreshed") > 0, "hints were refreshed: " + e.stats());
      long[] rewritten = hints(e, newer + 1);
      assertTrue(
          rewritten[1] > KEYS, "the tables written since hold the old keys too: " + rewritten[1]);
      assertEquals(
          0,
          rewritten[0],
          "a table written after the collection names a replaced segment (superseded versions"
              + " whose documents were collected: "
              + rewritten[2]
              + ")");
      System.out.println("superseded versions in the rewritten tables: " + rewritten[2]);
      checkAll(e, last);
    }
  }

  /**
   * In the tables numbered {@code fromFile} or above: {records whose hint names a segment not in
   * the store although a live segment holds their document (moved by collection, hint not yet
   * refreshed), records whose hint names a live segment, records whose document collection dropped
   * as stale}; each of the second kind must name the block the segment's seqno index finds. The
   * third kind are superseded versions a merge has not yet met with their newer version (it sits in
   * a level the merge did not read): their hints cannot be refreshed, and no read follows them.
   */
  private static long[] hints(Engine e, long fromFile) {
    KeyspaceFiles f = e.versions().current().files(1);
    Map<Long, KeyspaceFiles.Segment> live = new HashMap<>();
    for (KeyspaceFiles.Segment s : f.segments) live.put(s.state().segmentId(), s);
    long[] n = new long[3];
    for (KeyspaceFiles.Table t : f.tables) {
      if (t.fileNumber() < fromFile) continue;
      try (var it = t.reader().iterator()) {
        for (it.seekFirst(); it.valid(); it.next()) {
          long hint = it.hint();
          if (hint < 0) continue;
          KeyspaceFiles.Segment s = live.get(hint >>> 32);
          if (s == null) {
            KeyspaceFiles.Segment holder = f.segmentFor(it.seqno());
            n[holder != null && holder.reader().hintFor(it.seqno()) >= 0 ? 0 : 2]++;
          } else {
            n[1]++;
            assertEquals(s.reader().hintFor(it.seqno()), hint, "hint of seqno " + it.seqno());
          }
        }
      }
    }
    return n;
  }

  @Test
  void snapshotsAndCursors_heldAcrossSegmentCompaction_readTheSameData() throws Exception {
    MemStorage storage = new MemStorage(9);
    try (Engine e = Engine.open(storage, gcOptions())) {
      Map<Integer, Integer> before = update(e, 3, 0, 3);
      e.flush();
      assertTrue(e.waitForCompactions(60_000));
      long runs = e.stats().get("gcRuns");
      try (EngineSnapshot snap = e.snapshot();
          EngineCursor cursor = e.scan(1, null, null)) {
        Map<Integer, Integer> after = update(e, 8, 3, 4);
        e.flush();
        assertTrue(e.waitForCompactions(60_000));
        assertTrue(
            e.stats().get("gcRuns") > runs, "segments were compacted while the snapshot was open");
        for (Map.Entry<Integer, Integer> x : before.entrySet()) {
          assertArrayEquals(value(x.getKey(), x.getValue()), snap.get(1, key(x.getKey())));
        }
        int seen = 0;
        while (cursor.next()) {
          int k = Integer.parseInt(new String(cursor.key()).substring(4));
          assertArrayEquals(value(k, before.get(k)), cursor.value(), "cursor at key " + k);
          seen++;
        }
        assertEquals(KEYS, seen);
        checkAll(e, after);
      }
    }
  }
}
