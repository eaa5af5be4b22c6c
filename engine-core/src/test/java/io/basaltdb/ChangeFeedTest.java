package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The change feed (Magma section 3.4.3) against a model of every write: seqno order, completeness,
 * deletions, exact mode, the purge seqno, stability under flushes, compaction and garbage
 * collection, and resuming after a reopen or a crash.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ChangeFeedTest {
  @BeforeEach
  void shortQuiet() {
    QuietTime.set(200_000_000L); // waitForCompactions waits for a quiet store's passes
  }

  @AfterEach
  void defaultQuiet() {
    QuietTime.restore();
  }

  /**
   * Tiny write caches, tables and segments: flushes, compactions and garbage collection run all the
   * time.
   */
  static Options tiny() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(64 << 10)
        .segmentSize(64 << 10)
        .blockSize(512)
        .syncMode(SyncMode.NONE)
        .l0CompactionTrigger(2)
        .l0StopWritesTrigger(8)
        .level1Bytes(1024)
        .levelMultiplier(2)
        .tableTargetBytes(1024)
        .fragmentationThreshold(0.3)
        .checkpointIntervalMillis(0)
        .checkpointRetentionMillis(0);
  }

  /** One write of the model: its key and its value, null for a deletion. */
  record Write(String key, byte[] value) {}

  /**
   * Every write by seqno, and each key's newest seqno; a single writer, so seqnos follow one
   * another.
   */
  static final class Model {
    final TreeMap<Long, Write> history = new TreeMap<>();
    final Map<String, Long> newest = new HashMap<>();
    long last;

    Model(Basalt db) {
      try (Snapshot s = db.snapshot()) {
        last = s.seqno();
      }
    }

    void put(Keyspace ks, String key, byte[] value) {
      ks.put(b(key), value);
      record(key, value);
    }

    void delete(Keyspace ks, String key) {
      ks.delete(b(key));
      record(key, null);
    }

    private void record(String key, byte[] value) {
      last++;
      history.put(last, new Write(key, value));
      newest.put(key, last);
    }

    /** The live keys and their values. */
    Map<String, byte[]> state() {
      Map<String, byte[]> out = new TreeMap<>();
      for (Map.Entry<String, Long> e : newest.entrySet()) {
        byte[] v = history.get(e.getValue()).value();
        if (v != null) out.put(e.getKey(), v);
      }
      return out;
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  static List<Change> drain(ChangeFeed feed) {
    try (feed) {
      List<Change> out = new ArrayList<>();
      while (feed.next()) out.add(feed.change());
      return out;
    }
  }

  /**
   * Checks a feed's changes from {@code from} to {@code end} against the model: ascending seqnos,
   * each a real write of its key, every key's newest version in the range present; with {@code
   * exact}, nothing else.
   */
  static void check(Model m, List<Change> got, long from, long end, long purge, boolean exact) {
    long prev = -1;
    Map<Long, Change> bySeqno = new HashMap<>();
    for (Change c : got) {
      assertTrue(c.seqno() > prev, "seqno order: " + c.seqno() + " after " + prev);
      prev = c.seqno();
      assertTrue(
          c.seqno() >= from && c.seqno() <= end,
          "seqno " + c.seqno() + " outside [" + from + ", " + end + "]");
      Write w = m.history.get(c.seqno());
      assertNotNull(w, "no write has seqno " + c.seqno());
      assertEquals(w.key(), s(c.key()), "key of seqno " + c.seqno());
      assertEquals(w.value() == null, c.deletion(), "deletion flag of seqno " + c.seqno());
      assertArrayEquals(w.value(), c.value(), "value of seqno " + c.seqno());
      bySeqno.put(c.seqno(), c);
    }
    int newestInRange = 0;
    for (Map.Entry<String, Long> e : m.newest.entrySet()) {
      long sq = e.getValue();
      if (sq < from || sq > end) continue;
      if (from <= 1 && sq <= purge && m.history.get(sq).value() == null)
        continue; // a purged deletion: absent
      newestInRange++;
      assertTrue(
          bySeqno.containsKey(sq),
          "key "
              + e.getKey()
              + "'s newest version, seqno "
              + sq
              + ", is missing from ["
              + from
              + ", "
              + end
              + "]");
    }
    assertTrue(got.size() >= newestInRange);
    if (exact) {
      for (Change c : got) {
        assertEquals(
            m.newest.get(s(c.key())), c.seqno(), "an exact feed returns only newest versions");
      }
    }
  }

  @ParameterizedTest(name = "seed={0}")
  @ValueSource(longs = {7, 8})
  void feeds_matchTheModel_underFlushesCompactionAndCollection_andAcrossAReopen(long seed)
      throws Exception {
    MemStorage storage = new MemStorage(seed);
    Random r = new Random(seed);
    Basalt db = Basalt.open(storage, tiny());
    try {
      Keyspace ks = db.keyspace("default");
      Model m = new Model(db);
      long purgedFrom = 0; // a start the store refused as purged
      int purgeRefusals = 0, feeds = 0;
      for (int phase = 0; phase < 10; phase++) {
        for (int i = 0; i < 600; i++) {
          String key = "k" + r.nextInt(250);
          if (r.nextInt(5) == 0) {
            m.delete(ks, key);
          } else {
            byte[] v = new byte[50 + r.nextInt(250)];
            r.nextBytes(v);
            m.put(ks, key, v);
          }
        }
        if (phase % 2 == 1) assertTrue(db.waitForCompactions(60_000));
        if (phase == 4) { // the purge seqno is durable
          db.close();
          db = Basalt.open(storage, tiny());
          ks = db.keyspace("default");
          if (purgedFrom > 0) {
            long from = purgedFrom;
            Keyspace k = ks;
            assertThrows(
                ChangesPurgedException.class,
                () -> k.changes(from, ChangeFeed.NOW),
                "purged before the reopen");
          }
        }
        List<Long> starts =
            new ArrayList<>(
                List.of(0L, 1L + r.nextInt((int) m.last), m.last - r.nextInt(300), m.last + 1));
        for (int si = 0; si < starts.size(); si++) {
          long from = starts.get(si);
          for (ChangeFeed.Mode mode : ChangeFeed.Mode.values()) {
            List<Change> got;
            long end, purge;
            // Every other feed ends inside the range: segments and caches cut at `to`.
            long to =
                (si + phase) % 2 == 0
                    ? ChangeFeed.NOW
                    : from + r.nextInt((int) Math.max(1, m.last - from + 1));
            try (ChangeFeed feed = ks.changes(from, to, mode)) {
              end = feed.endSeqno();
              purge = feed.purgeSeqno();
              got = drain(feed);
            } catch (ChangesPurgedException e) {
              assertTrue(from > 1 && e.purgeSeqno() >= from, e.getMessage());
              Write w = m.history.get(e.purgeSeqno());
              assertTrue(
                  w != null && w.value() == null,
                  "the purge seqno " + e.purgeSeqno() + " is a deletion's");
              purgedFrom = from;
              purgeRefusals++;
              if (starts.size() < 12)
                starts.add(e.purgeSeqno() + 1); // just above it: allowed (unless purged further)
              continue;
            }
            assertEquals(Math.min(to, m.last), end);
            check(m, got, from, end, purge, mode == ChangeFeed.Mode.EXACT);
            feeds++;
          }
        }
        // Replaying the whole feed onto nothing gives the keyspace's state.
        Map<String, byte[]> replayed = new TreeMap<>();
        ks.forEachChange(
            0,
            ChangeFeed.NOW,
            c -> {
              if (c.deletion()) replayed.remove(s(c.key()));
              else replayed.put(s(c.key()), c.value());
            });
        assertStates(m.state(), replayed);
      }
      Map<String, Long> st = db.stats().asMap();
      assertTrue(st.get("gcRuns") > 0, "collection ran: " + st.get("gcRuns"));
      assertTrue(st.get("changesSkippedStale") > 0, "the delete list hid stale versions");
      assertTrue(purgeRefusals > 0, "some starts were refused as purged");
      assertTrue(feeds > 50, "feeds checked: " + feeds);
    } finally {
      db.close();
    }
  }

  static void assertStates(Map<String, byte[]> want, Map<String, byte[]> got) {
    assertEquals(want.keySet(), got.keySet());
    for (Map.Entry<String, byte[]> e : want.entrySet())
      assertArrayEquals(e.getValue(), got.get(e.getKey()), e.getKey());
  }

  @Test
  void aFeed_onASnapshot_isStable_whileWritesFlushesCompactionAndCollectionRun() throws Exception {
    MemStorage storage = new MemStorage(11);
    try (Basalt db = Basalt.open(storage, tiny())) {
      Keyspace ks = db.keyspace("default");
      Model m = new Model(db);
      Random r = new Random(11);
      for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 400; k++)
          m.put(ks, "k" + k, ("v" + round + "-" + k + "-" + r.nextInt()).repeat(8).getBytes());
      }
      for (int k = 0; k < 400; k += 7) m.delete(ks, "k" + k);
      try (Snapshot snap = db.snapshot()) {
        ChangeFeed first = snap.changes(ks, 0, ChangeFeed.NOW, ChangeFeed.Mode.FAST);
        long purge = first.purgeSeqno();
        List<Change> before = drain(first);
        check(m, before, 0, snap.seqno(), purge, false);
        long gcBefore = db.stats().asMap().get("gcRuns");
        List<Change> during = new ArrayList<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        try (ChangeFeed feed = snap.changes(ks, 0, ChangeFeed.NOW, ChangeFeed.Mode.FAST)) {
          for (int i = 0; i < before.size() / 3 && feed.next(); i++) during.add(feed.change());
          Thread writer =
              new Thread(
                  () -> {
                    try {
                      for (int round = 3; round < 10; round++) {
                        for (int k = 0; k < 400; k++)
                          ks.put(b("k" + k), ("w" + round + "-" + k).repeat(20).getBytes());
                        db.flush();
                      }
                      db.waitForCompactions(60_000);
                    } catch (Throwable t) {
                      failed.set(t);
                    }
                  });
          writer.start();
          while (feed.next()) { // read alongside the writer, then after it
            during.add(feed.change());
            if (during.size() == 2 * before.size() / 3) writer.join();
          }
          writer.join();
        }
        if (failed.get() != null) throw new AssertionError(failed.get());
        assertTrue(
            db.stats().asMap().get("gcRuns") > gcBefore,
            "collection rewrote segments under the feed");
        assertEquals(before.size(), during.size());
        for (int i = 0; i < before.size(); i++) {
          Change a = before.get(i), c = during.get(i);
          assertEquals(a.seqno(), c.seqno());
          assertArrayEquals(a.key(), c.key());
          assertArrayEquals(a.value(), c.value());
          assertEquals(a.deletion(), c.deletion());
        }
      }
    }
  }

  @Test
  void fastMode_mayRepeatAKey_exactMode_returnsOnlyItsNewestVersion() {
    Options o = Options.defaults().syncMode(SyncMode.NONE); // no level-0 merge after three flushes
    QuietTime.set(Long.MAX_VALUE / 4); // nor a quiet store's
    try (Basalt db = Basalt.open(new MemStorage(3), o)) {
      Keyspace ks = db.keyspace("default");
      Model m = new Model(db);
      for (int v = 0; v < 3; v++) {
        m.put(ks, "a", b("a" + v));
        m.put(ks, "b" + v, b("b" + v));
        db.flush();
      }
      m.put(ks, "a", b("a-cached")); // in the write cache
      m.delete(ks, "b0");
      List<Change> fast = drain(ks.changes(0, ChangeFeed.NOW));
      check(m, fast, 0, m.last, 0, false);
      assertEquals(List.of("a", "b0", "a", "b1", "a", "b2", "a", "b0"), keys(fast));
      List<Change> exact = drain(ks.changes(0, ChangeFeed.NOW, ChangeFeed.Mode.EXACT));
      check(m, exact, 0, m.last, 0, true);
      assertEquals(List.of("b1", "b2", "a", "b0"), keys(exact));
      assertArrayEquals(b("a-cached"), exact.get(2).value());
      assertTrue(exact.get(3).deletion());
      assertNull(exact.get(3).value());
      assertEquals(4, db.stats().asMap().get("changesSkippedExact"));
    }
  }

  static List<String> keys(List<Change> changes) {
    List<String> out = new ArrayList<>();
    for (Change c : changes) out.add(s(c.key()));
    return out;
  }

  @Test
  void aConsumer_resumesAfterACrash_withNoGap() throws Exception {
    int resumed = 0;
    for (long seed = 1; seed <= 3; seed++) {
      MemStorage storage = new MemStorage(seed);
      Options o = tiny().syncMode(SyncMode.SYNC);
      Model m;
      Map<String, byte[]> applied = new TreeMap<>();
      long next = 0;
      Random r = new Random(seed);
      Basalt db = Basalt.open(storage, o);
      try {
        Keyspace ks = db.keyspace("default");
        m = new Model(db);
        int writes = 800 + r.nextInt(400);
        for (int i = 0; i < writes; i++) {
          if (i % 6 == 5) m.delete(ks, "k" + r.nextInt(200));
          else m.put(ks, "k" + r.nextInt(200), b("v" + i));
          if (i % 100 == 99)
            next = consume(ks, next, applied); // the consumer keeps up, a hundred writes behind
        }
        storage.crash(MemStorage.CrashMode.RANDOM); // every write was synced before it returned
      } finally {
        closeCrashed(db);
      }
      try (Basalt again = Basalt.open(storage, o)) {
        Keyspace ks = again.keyspace("default");
        long from = next;
        try (ChangeFeed feed = ks.changes(from, ChangeFeed.NOW)) {
          while (feed.next()) apply(applied, feed.change());
          assertEquals(m.last, feed.endSeqno());
          resumed++;
        } catch (
            ChangesPurgedException behind) { // deletions it had not read were purged: start over
          applied.clear();
          ks.forEachChange(0, ChangeFeed.NOW, c -> apply(applied, c));
        }
        assertStates(m.state(), applied);
      }
    }
    assertTrue(resumed > 0, "a consumer resumed where it stopped");
  }

  /**
   * A consumer's step: applies the changes from {@code next} on (from 0 again if purged); returns
   * its next start.
   */
  private static long consume(Keyspace ks, long next, Map<String, byte[]> applied) {
    try {
      return 1 + ks.forEachChange(next, ChangeFeed.NOW, c -> apply(applied, c));
    } catch (ChangesPurgedException behind) {
      applied.clear();
      return 1 + ks.forEachChange(0, ChangeFeed.NOW, c -> apply(applied, c));
    }
  }

  /** Closes a store whose storage crashed under it: its handles are dead, so closing may fail. */
  static void closeCrashed(Basalt db) {
    try {
      db.close();
    } catch (BasaltException dead) {
      // what the crash left is for the next open to recover
    }
  }

  private static void apply(Map<String, byte[]> state, Change c) {
    if (c.deletion()) state.remove(s(c.key()));
    else state.put(s(c.key()), c.value());
  }

  @Test
  void aResumePointPastTheStore_lostInAPowerFailure_isRefused() {
    MemStorage storage = new MemStorage(9);
    Options o = tiny().syncMode(SyncMode.NONE);
    long next;
    Basalt db = Basalt.open(storage, o);
    try {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 50; i++)
        ks.put(b("k" + i), b("v" + i)); // in the write cache and an unsynced WAL
      next = 1 + ks.forEachChange(0, ChangeFeed.NOW, c -> {});
      storage.crash(MemStorage.CrashMode.KEEP_NONE);
    } finally {
      closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, o)) {
      long from = next;
      InvalidArgumentException e =
          assertThrows(
              InvalidArgumentException.class,
              () -> again.keyspace("default").changes(from, ChangeFeed.NOW));
      assertTrue(e.getMessage().contains("start again from 0"), e.getMessage());
    }
  }

  @Test
  void aPurgedDeletion_refusesAFeedFromBelowIt_evenAfterAReopen_andAFeedFromZeroOmitsTheKey() {
    MemStorage storage = new MemStorage(13);
    long deleted;
    long purge;
    try (Basalt db = Basalt.open(storage, tiny())) {
      Keyspace ks = db.keyspace("default");
      Model m = new Model(db);
      m.put(ks, "gone", b("soon"));
      m.delete(ks, "gone");
      deleted = m.last;
      ChangesPurgedException refused = null;
      for (int round = 0; round < 50 && refused == null; round++) {
        for (int k = 0; k < 200; k++) m.put(ks, "filler" + k, b("v" + round + "-" + k));
        db.flush();
        db.waitForCompactions(60_000);
        try (ChangeFeed f = ks.changes(deleted, ChangeFeed.NOW)) {
          assertTrue(f.next());
          assertEquals(
              deleted,
              f.seqno(),
              "the deletion is the first change from its seqno while not purged");
          assertTrue(f.isDeletion());
        } catch (ChangesPurgedException e) {
          refused = e;
        }
      }
      assertNotNull(refused, "the tombstone reached the bottom of the key index");
      purge = refused.purgeSeqno();
      assertTrue(purge >= deleted);
      assertEquals(deleted, refused.fromSeqno());
      long p = purge;
      assertFalse(
          keys(drain(ks.changes(0, ChangeFeed.NOW))).contains("gone"),
          "nothing of the key is left");
      drain(ks.changes(p + 1, ChangeFeed.NOW)); // above the purge seqno: allowed
    }
    try (Basalt db = Basalt.open(storage, tiny())) {
      Keyspace ks = db.keyspace("default");
      ChangesPurgedException e =
          assertThrows(ChangesPurgedException.class, () -> ks.changes(deleted, ChangeFeed.NOW));
      assertTrue(e.purgeSeqno() >= purge, "the purge seqno survives a reopen");
      assertTrue(e.getMessage().contains("start again from seqno 0"), e.getMessage());
    }
  }

  @Test
  void aRollback_restoresTheCheckpointsPurgeSeqno() {
    MemStorage storage = new MemStorage(17);
    Options o = tiny().checkpointRetentionMillis(600_000);
    long deleted;
    long checkpoint;
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.keyspace("default");
      Model m = new Model(db);
      m.put(ks, "gone", b("soon"));
      m.delete(ks, "gone");
      deleted = m.last;
      checkpoint =
          db.checkpoint().id(); // the deletion flushed, its tombstone not yet at the bottom
      try (ChangeFeed f = ks.changes(deleted, ChangeFeed.NOW)) {
        assertEquals(0, f.purgeSeqno(), "nothing purged at the checkpoint");
      }
      boolean purged = false;
      for (int round = 0; round < 50 && !purged; round++) {
        for (int k = 0; k < 200; k++) m.put(ks, "filler" + k, b("v" + round + "-" + k));
        db.flush();
        db.waitForCompactions(60_000);
        try (ChangeFeed f = ks.changes(deleted, ChangeFeed.NOW)) {
          assertTrue(f.next());
        } catch (ChangesPurgedException e) {
          purged = true;
        }
      }
      assertTrue(purged, "the tombstone reached the bottom after the checkpoint");
    }
    Basalt.rollback(storage, checkpoint);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.keyspace("default");
      try (ChangeFeed f = ks.changes(deleted, ChangeFeed.NOW)) { // the checkpoint's purge seqno: 0
        assertEquals(0, f.purgeSeqno());
        assertTrue(f.next());
        assertEquals(deleted, f.seqno());
        assertTrue(f.isDeletion(), "the deletion is back in the rolled-back store's feed");
      }
    }
  }

  @Test
  void badArguments_closedFeeds_andInMemoryStores_getClearErrors() {
    try (Basalt db = Basalt.open(new MemStorage(1), tiny())) {
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      assertThrows(InvalidArgumentException.class, () -> ks.changes(-1, 5));
      assertThrows(InvalidArgumentException.class, () -> ks.changes(0, -5));
      assertThrows(InvalidArgumentException.class, () -> ks.changes(0, 5, null));
      assertThrows(InvalidArgumentException.class, () -> ks.forEachChange(0, 5, null));
      InvalidArgumentException past =
          assertThrows(InvalidArgumentException.class, () -> ks.changes(3, ChangeFeed.NOW));
      assertTrue(past.getMessage().contains("last write has seqno 1"), past.getMessage());
      try (ChangeFeed empty = ks.changes(2, ChangeFeed.NOW)) { // the next seqno: nothing yet
        assertFalse(empty.next());
        assertEquals(1, empty.endSeqno());
        assertThrows(IllegalStateException.class, empty::key);
      }
      try (ChangeFeed reversed = ks.changes(1, 0)) {
        assertFalse(reversed.next());
      }
      ChangeFeed f = ks.changes(0, ChangeFeed.NOW);
      assertThrows(IllegalStateException.class, f::seqno, "not on a change before next()");
      assertTrue(f.next());
      assertArrayEquals(b("1"), f.value());
      f.close();
      f.close();
      assertThrows(ClosedException.class, f::next);
      ChangeFeed open = ks.changes(0, ChangeFeed.NOW);
      Snapshot snap = db.snapshot();
      ChangeFeed onSnap = snap.changes(ks, 0, ChangeFeed.NOW, ChangeFeed.Mode.FAST);
      snap.close();
      assertThrows(ClosedException.class, onSnap::next, "its snapshot is closed");
      onSnap.close();
      db.close();
      assertThrows(ClosedException.class, open::next, "the store is closed");
      open.close();
      assertThrows(ClosedException.class, () -> ks.changes(0, ChangeFeed.NOW));
    }
  }
}
