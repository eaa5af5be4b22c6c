package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The in-memory store's change feed, retained deletions and live checkpoints with rollback (issue
 * 40 item 1): the same feed guarantees as on disk, deletions forgotten after {@link
 * Options#deletionRetentionMillis} (or when the store is full) with the purge seqno raised, and a
 * rollback that brings back exactly a checkpoint's state and tells feed consumers.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class InMemoryChangesTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static Options mem() {
    return Options.defaults().memoryQuota(64L << 20);
  }

  /** Every change of a feed, as (seqno, key, value or null). */
  static List<Change> drain(ChangeFeed f) {
    List<Change> out = new ArrayList<>();
    long last = -1;
    while (f.next()) {
      assertTrue(f.seqno() > last, "seqnos ascend: " + f.seqno() + " after " + last);
      last = f.seqno();
      out.add(f.change());
    }
    return out;
  }

  /** Applies a feed's changes to {@code replica}; returns the next seqno to resume from. */
  static long follow(Keyspace ks, long from, TreeMap<String, String> replica) {
    try (ChangeFeed f = ks.changes(from, ChangeFeed.NOW)) {
      for (Change c : drain(f)) {
        if (c.deletion()) replica.remove(s(c.key()));
        else replica.put(s(c.key()), s(c.value()));
      }
      return f.endSeqno() + 1;
    }
  }

  static TreeMap<String, String> contents(Keyspace ks) {
    TreeMap<String, String> m = new TreeMap<>();
    try (Cursor c = ks.scan(null, null)) {
      while (c.next()) m.put(s(c.key()), s(c.value()));
    }
    return m;
  }

  @Test
  void aFeed_returnsNewestVersionsInSeqnoOrder_withDeletions_andResumes() {
    try (Basalt db = Basalt.openInMemory(mem())) {
      Keyspace ks = db.keyspace("default");
      Keyspace other = db.createKeyspace("other");
      Random r = new Random(1);
      TreeMap<String, String> model = new TreeMap<>();
      TreeMap<String, String> replica = new TreeMap<>();
      long next = 0;
      for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 3000; i++) {
          String k = "k" + r.nextInt(2000);
          if (r.nextInt(5) == 0) {
            ks.delete(b(k));
            model.remove(k);
          } else {
            String v = "v" + round + "-" + i;
            ks.put(b(k), b(v));
            model.put(k, v);
          }
          other.put(b(k), b("noise")); // another keyspace's seqnos between
        }
        next = follow(ks, next, replica);
        assertEquals(model, replica, "round " + round);
      }
      // A feed from 0 returns each live key once, at its newest version, and the deletions still
      // held: more than one window (4096 entries) of them.
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        List<Change> all = drain(f);
        TreeMap<String, String> fromZero = new TreeMap<>();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (Change c : all) {
          assertTrue(seen.add(s(c.key())), "one change per key: " + s(c.key()));
          if (!c.deletion()) fromZero.put(s(c.key()), s(c.value()));
        }
        assertEquals(model, fromZero);
        assertTrue(all.size() > model.size(), "deletions appear too: " + all.size());
        assertEquals(0, f.purgeSeqno());
      }
      long end = next;
      try (ChangeFeed f = ks.changes(end - 500, ChangeFeed.NOW)) {
        List<Change> tail = drain(f);
        assertTrue(tail.stream().allMatch(c -> c.seqno() >= end - 500));
      }
      assertThrows(InvalidArgumentException.class, () -> ks.changes(end + 5, ChangeFeed.NOW));
    }
  }

  @Test
  void aFeedOverManyWindows_matchesAScanSortedBySeqno() {
    try (Basalt db = Basalt.openInMemory(mem())) {
      Keyspace ks = db.keyspace("default");
      Random r = new Random(2);
      for (int i = 0; i < 40_000; i++) ks.put(b("key" + r.nextInt(30_000)), b("v" + i));
      List<Change> all;
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        all = drain(f);
      }
      TreeMap<String, String> live = contents(ks);
      assertEquals(live.size(), all.size());
      for (Change c : all) assertEquals(live.get(s(c.key())), s(c.value()));
      // bounded: from a middle seqno to another
      long lo = all.get(all.size() / 3).seqno(), hi = all.get(2 * all.size() / 3).seqno();
      try (ChangeFeed f = ks.changes(lo, hi)) {
        List<Change> mid = drain(f);
        assertEquals(all.subList(all.size() / 3, 2 * all.size() / 3 + 1).size(), mid.size());
        assertEquals(hi, f.endSeqno());
      }
    }
  }

  @Test
  void deletions_areForgottenAfterTheRetention_withThePurgeSeqnoRaised() throws Exception {
    AtomicLong clock = new AtomicLong(1_000_000);
    try (Basalt db = Basalt.openInMemory(mem().clock(clock::get).deletionRetentionMillis(1_000))) {
      Keyspace ks = db.keyspace("default");
      Keyspace other = db.createKeyspace("other");
      for (int i = 0; i < 100; i++) ks.put(b("k" + i), b("v"));
      for (int i = 0; i < 50; i++) ks.delete(b("k" + i));
      other.put(b("x"), b("y"));
      long deletedUpTo;
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        List<Change> all = drain(f);
        assertEquals(100, all.size(), "50 puts and 50 deletions");
        deletedUpTo =
            all.stream().filter(Change::deletion).mapToLong(Change::seqno).max().orElse(0);
      }
      Snapshot before = db.snapshot();
      clock.addAndGet(2_000); // older than the retention: the next passes forget them
      long deadline = System.currentTimeMillis() + 10_000;
      while (feedSize(ks) != 50 && System.currentTimeMillis() < deadline) {
        Thread.sleep(20);
        clock.addAndGet(100);
      }
      assertEquals(50, feedSize(ks), "the deletions are forgotten");
      long d = deletedUpTo;
      ChangesPurgedException e =
          assertThrows(ChangesPurgedException.class, () -> ks.changes(d, ChangeFeed.NOW));
      assertTrue(e.getMessage().contains("default"), e.getMessage());
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        assertTrue(f.purgeSeqno() >= deletedUpTo, f.purgeSeqno() + " < " + deletedUpTo);
      }
      // another keyspace with no deletions keeps its history
      try (ChangeFeed f = other.changes(2, ChangeFeed.NOW)) {
        assertEquals(0, f.purgeSeqno());
      }
      // A snapshot taken before still reports them.
      try (ChangeFeed f = before.changes(ks, 0, ChangeFeed.NOW, ChangeFeed.Mode.FAST)) {
        assertEquals(100, drain(f).size());
      }
      before.close();
      for (int i = 0; i < 50; i++) assertNull(ks.get(b("k" + i)));
      assertEquals(50, contents(ks).size());
    }
  }

  static int feedSize(Keyspace ks) {
    try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
      return drain(f).size();
    }
  }

  @Test
  void retentionZero_forgetsEachDeletionAtOnce() {
    try (Basalt db = Basalt.openInMemory(mem().deletionRetentionMillis(0))) {
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      ks.put(b("b"), b("2"));
      ks.delete(b("a"));
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        List<Change> all = drain(f);
        assertEquals(1, all.size());
        assertEquals("b", s(all.get(0).key()));
        assertEquals(3, f.purgeSeqno());
      }
      assertThrows(ChangesPurgedException.class, () -> ks.changes(2, ChangeFeed.NOW));
    }
  }

  @Test
  void aFullStore_forgetsItsDeletions_beforeItRefusesAWrite() {
    Options o = Options.defaults().memoryQuota(16L << 20);
    try (Basalt db = Basalt.openInMemory(o)) {
      Keyspace ks = db.keyspace("default");
      byte[] v = new byte[1000];
      int n = 0;
      while (true) { // fill it with values
        try {
          ks.put(b("fill" + n), v);
          n++;
        } catch (MemoryLimitException e) {
          break;
        }
      }
      db.checkpoint(); // it keeps every value in memory
      for (int i = 0; i < n; i++) ks.delete(b("fill" + i));
      // The checkpoint and the tombstones hold memory: without giving them up, no put fits.
      for (int i = 0; i < n / 2; i++) ks.put(b("again" + i), v);
      assertEquals(List.of(), db.checkpoints(), "the full store dropped its checkpoint");
      assertThrows(ChangesPurgedException.class, () -> ks.changes(2, ChangeFeed.NOW));
      assertEquals(n / 2, contents(ks).size());
    }
  }

  /**
   * A full store refusing a put does not walk all of itself to forget a single deletion: the
   * deletions must be a share of its entries worth the walk (a 32nd), or every refused put of a
   * full store taking deletes would cost a scan of the whole skiplist.
   */
  @Test
  void aFullStore_refusingAPut_keepsAFewDeletions_ratherThanWalkAllOfItForThem() {
    Options o = Options.defaults().memoryQuota(16L << 20);
    try (Basalt db = Basalt.openInMemory(o)) {
      Keyspace ks = db.keyspace("default");
      byte[] v = new byte[1000];
      int n = 0;
      while (true) { // fill it with values
        try {
          ks.put(b("fill" + n), v);
          n++;
        } catch (MemoryLimitException e) {
          break;
        }
      }
      ks.delete(b("fill0"));
      // The deleted value's room (about 1 KB) is far from what this put needs kept free.
      assertThrows(MemoryLimitException.class, () -> ks.put(b("large"), new byte[8000]));
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        List<Change> all = drain(f);
        assertEquals(n, all.size(), n + " keys, one of them deleted");
        assertTrue(all.get(all.size() - 1).deletion(), "the deletion is still reported");
        assertEquals(0, f.purgeSeqno());
      }
    }
  }

  @Test
  void rollback_bringsBackTheCheckpoint_andTellsFeedConsumers() {
    Options o = mem().exactItemCounts(true);
    try (Basalt db = Basalt.openInMemory(o)) {
      Keyspace ks = db.keyspace("default");
      Keyspace dropped = db.createKeyspace("dropped-later");
      Random r = new Random(3);
      for (int i = 0; i < 2000; i++) {
        String k = "k" + r.nextInt(800);
        if (r.nextInt(4) == 0) ks.delete(b(k));
        else ks.put(b(k), b("v" + i));
      }
      dropped.put(b("x"), b("1"));
      TreeMap<String, String> atCheckpoint = contents(ks);
      long countAt = ks.itemCount();
      assertEquals(atCheckpoint.size(), countAt, "retained tombstones count as absent");
      Checkpoint cp = db.checkpoint();
      assertEquals(List.of("default", "dropped-later"), cp.keyspaces());
      TreeMap<String, String> replica = new TreeMap<>();
      long resume = follow(ks, 0, replica);
      for (int i = 0; i < 2000; i++) {
        String k = "k" + r.nextInt(1200);
        if (r.nextInt(4) == 0) ks.delete(b(k));
        else ks.put(b(k), b("w" + i));
      }
      Keyspace created = db.createKeyspace("created-later");
      created.put(b("y"), b("2"));
      db.dropKeyspace("dropped-later");
      Checkpoint later = db.checkpoint();
      resume = follow(ks, resume, replica);
      Snapshot before = db.snapshot();
      TreeMap<String, String> beforeState = contents(ks);
      long lastBefore = before.seqno();

      Checkpoint now = db.rollback(cp.id());

      assertEquals(atCheckpoint, contents(ks));
      assertEquals(countAt, ks.itemCount());
      assertEquals(
          List.of("default", "dropped-later"), db.keyspaceNames().stream().sorted().toList());
      assertEquals(
          "1", s(db.keyspace("dropped-later").get(b("x"))), "the dropped keyspace is back");
      assertThrows(ClosedException.class, () -> created.get(b("y")));
      assertEquals(lastBefore + 1, now.seqno(), "the rollback spends a seqno of its own");
      List<Long> ids = db.checkpoints().stream().map(Checkpoint::id).toList();
      assertEquals(List.of(cp.id(), now.id()), ids, "later checkpoints are gone: " + later);
      // A snapshot taken before keeps its view.
      try (Cursor c = before.scan(ks, null, null)) {
        TreeMap<String, String> m = new TreeMap<>();
        while (c.next()) m.put(s(c.key()), s(c.value()));
        assertEquals(beforeState, m);
      }
      before.close();
      // The consumer that read the undone writes is told to start over; from 0 it converges.
      long from = resume;
      assertThrows(ChangesPurgedException.class, () -> ks.changes(from, ChangeFeed.NOW));
      replica.clear();
      long again = follow(ks, 0, replica);
      assertEquals(atCheckpoint, replica);
      // New writes take seqnos after the rollback's, and feeds from there on work.
      ks.put(b("new"), b("n"));
      TreeMap<String, String> tail = new TreeMap<>();
      follow(ks, again, tail);
      assertEquals(Map.of("new", "n"), tail);
      // Rolling back again to the same checkpoint, then to one that no longer exists.
      db.rollback(cp.id());
      assertEquals(atCheckpoint, contents(ks));
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> db.rollback(later.id()));
      assertTrue(e.getMessage().contains("no checkpoint " + later.id()), e.getMessage());
    }
  }

  /**
   * Gets never see part of a rollback: a reader that finds the first key rolled back must find the
   * last one rolled back too (the rollback rewrites them in key order, 5,000 keys apart). A pair of
   * gets that a fresh write may have come between (it too writes the first key before the last) is
   * not judged: {@code writes} is odd while one is under way.
   */
  @Test
  void getsSeeAWholeRollbackOrNone() throws Exception {
    try (Basalt db = Basalt.openInMemory(mem())) {
      Keyspace ks = db.keyspace("default");
      int n = 5_000;
      WriteBatch old = new WriteBatch();
      for (int i = 0; i < n; i++) old.put(ks, b(String.format("k%06d", i)), b("old"));
      db.write(old);
      Checkpoint cp = db.checkpoint();
      byte[] first = b(String.format("k%06d", 0)), last = b(String.format("k%06d", n - 1));
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.atomic.AtomicReference<String> torn =
          new java.util.concurrent.atomic.AtomicReference<>();
      AtomicLong reads = new AtomicLong();
      AtomicLong writes = new AtomicLong();
      Thread reader =
          new Thread(
              () -> {
                while (!stop.get()) {
                  long w = writes.get();
                  String a = s(ks.get(first));
                  String z = s(ks.get(last));
                  if (w % 2 != 0 || writes.get() != w) continue;
                  reads.incrementAndGet();
                  if ("old".equals(a) && !"old".equals(z)) torn.set("first " + a + ", last " + z);
                }
              });
      reader.start();
      try {
        for (int round = 0; round < 8 && torn.get() == null; round++) {
          WriteBatch fresh = new WriteBatch();
          for (int i = 0; i < n; i++) fresh.put(ks, b(String.format("k%06d", i)), b("new" + round));
          writes.incrementAndGet();
          db.write(fresh);
          writes.incrementAndGet();
          db.rollback(cp.id());
        }
      } finally {
        stop.set(true);
        reader.join();
      }
      assertNull(torn.get(), "a get saw part of a rollback");
      assertTrue(reads.get() > 0);
    }
  }

  @Test
  void checkpoints_expireAfterTheirRetention() throws Exception {
    AtomicLong clock = new AtomicLong(5_000_000);
    try (Basalt db =
        Basalt.openInMemory(mem().clock(clock::get).checkpointRetentionMillis(1_000))) {
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      Checkpoint cp = db.checkpoint();
      assertEquals(clock.get(), cp.createdMillis());
      assertEquals(List.of(cp), db.checkpoints());
      clock.addAndGet(1_000);
      long deadline = System.currentTimeMillis() + 10_000;
      while (!db.checkpoints().isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(10);
      assertEquals(List.of(), db.checkpoints());
      assertThrows(InvalidArgumentException.class, () -> db.rollback(cp.id()));
    }
  }

  @Test
  void aRestoredStore_hasForgottenItsDeletions(@TempDir Path dir) {
    Path backup = dir.resolve("backup");
    long last;
    try (Basalt db = Basalt.openInMemory(mem())) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(b("k" + i), b("v"));
      for (int i = 0; i < 30; i++) ks.delete(b("k" + i));
      db.backup(backup);
      last = db.stats().get("lastSeqno");
    }
    try (Basalt db = Basalt.openInMemory(mem(), backup)) {
      Keyspace ks = db.keyspace("default");
      assertEquals(70, contents(ks).size());
      try (ChangeFeed f = ks.changes(0, ChangeFeed.NOW)) {
        assertEquals(70, drain(f).size(), "no deletion was backed up");
        assertTrue(f.purgeSeqno() >= 130, "purge " + f.purgeSeqno() + ", last " + last);
      }
      assertThrows(ChangesPurgedException.class, () -> ks.changes(5, ChangeFeed.NOW));
      assertNull(ks.get(b("k0")));
      assertArrayEquals(b("v"), ks.get(b("k99")));
    }
  }
}
