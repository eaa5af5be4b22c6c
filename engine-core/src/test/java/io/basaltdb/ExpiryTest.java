package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Document expiry (Magma section 7.1) on an injected clock: a put with an expiry reads as present
 * until that instant and absent from it on, wherever its version lives (the write cache, any key
 * index level, the WAL across a crash) and through every read (get, getAll, scans, snapshots, the
 * change feed, which reports a deletion); snapshots judge by the instant they were taken;
 * compaction drops expired records and the expiry check finds them through the tables' histograms,
 * so their disk space is reclaimed; expiring keys stay out of exact item counts.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class ExpiryTest {
  private final AtomicLong clock = new AtomicLong(1_000_000L);

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Tiny caches, tables and segments, the injected clock, counts, an expiry check every few ms. */
  Options options() {
    return ChangeFeedTest.tiny().clock(clock::get).exactItemCounts(true).expiryCheckMillis(5);
  }

  /**
   * What {@code ks} holds by get, getAll, a scan and a snapshot, all checked equal; key to value.
   */
  static Map<String, byte[]> visible(Basalt db, Keyspace ks, List<String> keys) {
    Map<String, byte[]> byGet = new TreeMap<>();
    List<byte[]> raw = new ArrayList<>();
    for (String k : keys) {
      raw.add(b(k));
      byte[] v = ks.get(b(k));
      if (v != null) byGet.put(k, v);
    }
    List<byte[]> all = ks.getAll(raw);
    Map<String, byte[]> byScan = new TreeMap<>();
    try (Cursor c = ks.scan(null, null)) {
      while (c.next()) byScan.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
    }
    assertEquals(byGet.keySet(), byScan.keySet(), "scan and gets disagree");
    try (Snapshot s = db.snapshot()) {
      for (int i = 0; i < keys.size(); i++) {
        byte[] v = byGet.get(keys.get(i));
        assertArrayEquals(v, all.get(i), "getAll " + keys.get(i));
        assertArrayEquals(v, s.get(ks, raw.get(i)), "snapshot " + keys.get(i));
        if (v != null) assertArrayEquals(v, byScan.get(keys.get(i)));
      }
    }
    return byGet;
  }

  @Test
  void expiredAtItsInstant_inTheWriteCacheAndInEveryLevel_andAcrossAReopen() {
    MemStorage storage = new MemStorage(11);
    long t = clock.get();
    List<String> keys = new ArrayList<>();
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      // Generations of expiring keys, each flushed and pushed down by later ones; the last stays
      // cached.
      for (int gen = 0; gen < 4; gen++) {
        for (int i = 0; i < 150; i++) {
          String k = "g" + gen + "-" + i;
          keys.add(k);
          ks.put(b(k), b("v" + k), t + 100 + gen); // generation g expires at t + 100 + g
          if (gen == 3 && i == 74) { // half of the last generation in a level-0 table, left there
            QuietTime.set(60_000_000_000L);
            db.flush();
          }
        }
        ks.put(b("plain" + gen), b("p" + gen));
        keys.add("plain" + gen);
        if (gen < 3) {
          db.flush();
          db.waitForCompactions(10_000);
        }
      }
      long deep = 0;
      for (int l = 1; l < 7; l++) deep += db.stats().get("tablesAtLevel" + l);
      assertTrue(
          deep > 0 && db.stats().get("tablesAtLevel0") > 0,
          "tables at level 0 and below: " + db.stats());
      assertEquals(4 * 151, visible(db, ks, keys).size(), "nothing has expired yet");
      assertEquals(4, ks.itemCount(), "expiring keys are not counted");
      clock.set(t + 101); // generations 0 and 1 expire: 0 just past, 1 at its instant
      Map<String, byte[]> now = visible(db, ks, keys);
      for (String k : keys) {
        boolean gone = k.startsWith("g0-") || k.startsWith("g1-");
        assertEquals(!gone, now.containsKey(k), k);
      }
      clock.set(t + 99);
      assertEquals(
          4 * 151,
          visible(db, ks, keys).size(),
          "an injected clock may go back: expiry is judged at each read");
      clock.set(t + 102);
    }
    try (Basalt db =
        Basalt.open(storage, options())) { // the WAL replays the rest of generation 3's expiries
      Keyspace ks = db.keyspace("default");
      Map<String, byte[]> now = visible(db, ks, keys);
      assertEquals(
          150 + 4,
          now.size(),
          "generation 2 expired at its instant: only generation 3 and the plain keys");
      for (String k : now.keySet()) assertTrue(k.startsWith("g3-") || k.startsWith("plain"), k);
      clock.set(t + 103);
      assertEquals(4, visible(db, ks, keys).size());
      assertEquals(4, ks.itemCount());
    }
  }

  @Test
  void snapshotsJudgeByTheirOwnInstant_andTheFeedReportsADeletion() {
    try (Basalt db = Basalt.open(new MemStorage(12), options())) {
      Keyspace ks = db.keyspace("default");
      long t = clock.get();
      ks.put(b("a"), b("1"), t + 10);
      ks.put(b("b"), b("2"));
      db.flush();
      ks.put(b("c"), b("3"), t + 10); // in the write cache
      try (Snapshot before = db.snapshot()) {
        clock.set(t + 10);
        assertArrayEquals(
            b("1"), before.get(ks, b("a")), "a snapshot taken before the expiry still sees it");
        assertArrayEquals(b("3"), before.get(ks, b("c")));
        try (ChangeFeed feed = before.changes(ks, 0, ChangeFeed.NOW, ChangeFeed.Mode.FAST)) {
          int values = 0;
          while (feed.next()) if (feed.value() != null) values++;
          assertEquals(3, values);
        }
        assertNull(ks.get(b("a")));
        assertNull(ks.get(b("c")));
        Map<String, Boolean> deleted = new TreeMap<>();
        long[] seqnos = new long[3];
        try (ChangeFeed feed = ks.changes(0, ChangeFeed.NOW)) {
          while (feed.next()) {
            String k = new String(feed.key(), StandardCharsets.UTF_8);
            deleted.put(k, feed.value() == null);
            seqnos[k.charAt(0) - 'a'] = feed.seqno();
          }
        }
        assertEquals(
            Map.of("a", true, "b", false, "c", true),
            deleted,
            "expiries are reported as deletions");
        assertTrue(seqnos[0] < seqnos[1] && seqnos[1] < seqnos[2], "at their puts' seqnos");
      }
      ks.put(b("a"), b("again")); // a key written again after its expiry lives again
      assertArrayEquals(b("again"), ks.get(b("a")));
      assertEquals(2, ks.itemCount());
    }
  }

  @org.junit.jupiter.params.ParameterizedTest(name = "guards {0}")
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void expiredDocuments_areDroppedByCompactionAndTheirSpaceReclaimed(boolean guards)
      throws Exception {
    MemStorage storage = new MemStorage(13);
    // Guards every 64 keys or so (the model tests' every 4 would make hundreds of one-record tables
    // to expire).
    try (Basalt db =
        Basalt.open(
            storage, guards ? ModelTest.tinyGuards(options()).guardLastLevelBits(6) : options())) {
      Keyspace ks = db.keyspace("default");
      long t = clock.get();
      // Keys that never expire, first, across the range the expiring ones take: they settle at the
      // bottom,
      // so the expiring records above overlap them and reach the bottom only level by level.
      for (int i = 0; i < 200; i++) ks.put(b("e" + i * 7 + "!"), b("kept" + i));
      db.flush();
      assertTrue(db.waitForCompactions(20_000));
      java.util.Random r = new java.util.Random(13);
      for (int i = 0;
          i < 1500;
          i++) { // about 1.4 MB that will expire (random: LZ4 cannot shrink it)
        byte[] big = new byte[900];
        r.nextBytes(big);
        ks.put(b("e" + i), big, t + 1_000);
      }
      db.flush();
      assertTrue(db.waitForCompactions(20_000));
      long before = db.stats().get("segmentBytes");
      assertTrue(before > 1_300_000, "segment bytes " + before);
      assertEquals(0, db.stats().get("expiredRecordsCompacted"));
      clock.set(t + 1_000);
      // No write follows: only the expiry check can start the compactions that drop the records,
      // and
      // collection then reclaims their documents.
      long deadline = System.currentTimeMillis() + 20_000;
      while (db.stats().get("segmentBytes") > before / 4 && System.currentTimeMillis() < deadline) {
        db.waitForCompactions(1_000);
        Thread.sleep(20);
      }
      Stats st = db.stats();
      assertTrue(st.get("expiryCompactions") > 0, "the expiry check started no compaction: " + st);
      assertTrue(
          st.get("expiredRecordsCompacted") >= 1000,
          "expired records compacted: " + st.get("expiredRecordsCompacted"));
      assertTrue(
          st.get("segmentBytes") <= before / 4,
          "segment bytes " + before + " -> " + st.get("segmentBytes"));
      for (int i = 0; i < 200; i += 7)
        assertArrayEquals(b("kept" + i), ks.get(b("e" + i * 7 + "!")));
      assertNull(ks.get(b("e5")));
      assertEquals(200, ks.itemCount());
    }
  }

  @Test
  void expiryInBatchesAndInMemory_andBadExpiriesAreRefused() {
    try (Basalt db =
        Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20).clock(clock::get))) {
      Keyspace ks = db.keyspace("default");
      long t = clock.get();
      db.write(new WriteBatch().put(ks, b("x"), b("1"), t + 5).put(ks, b("y"), b("2")));
      assertArrayEquals(b("1"), ks.get(b("x")));
      clock.set(t + 5);
      assertNull(ks.get(b("x")));
      assertArrayEquals(b("2"), ks.get(b("y")));
      try (Cursor c = ks.scan(null, null)) {
        assertTrue(c.next());
        assertArrayEquals(b("y"), c.key());
        assertTrue(!c.next());
      }
      assertThrows(InvalidArgumentException.class, () -> ks.put(b("z"), b("3"), -1));
      assertThrows(
          InvalidArgumentException.class, () -> new WriteBatch().put(ks, b("z"), b("3"), -5));
      assertNull(ks.get(b("z")));
      ks.put(b("past"), b("4"), t - 100); // already expired: invisible at once
      assertNull(ks.get(b("past")));
    }
    assertThrows(InvalidArgumentException.class, () -> Options.defaults().clock(null).validate());
    assertThrows(
        InvalidArgumentException.class,
        () -> Options.defaults().expiryCompactionRatio(0).validate());
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().expiryCheckMillis(-1).validate());
  }
}
