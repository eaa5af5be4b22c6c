package io.basaltdb.internal.skiplist;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.MemoryLimitException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class SkipListTest {
  private SkipList list;

  @BeforeEach
  void open() {
    list = new SkipList(SkipListConfig.defaults().withMemoryQuota(64L << 20));
  }

  @AfterEach
  void close() {
    list.close(); // throws MemoryLeakException if a node was lost
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, UTF_8);
  }

  @Test
  void put_get_delete() {
    assertNull(list.get(b("a")));
    list.put(b("a"), b("1"));
    list.put(b("b"), b("2"));
    assertEquals("1", s(list.get(b("a"))));
    assertEquals("2", s(list.get(b("b"))));
    assertTrue(list.delete(b("a")));
    assertNull(list.get(b("a")));
    assertEquals(1, list.stats().items());
  }

  @Test
  void delete_ofMissingKey_returnsFalse() {
    assertFalse(list.delete(b("nope")));
    list.put(b("k"), b("v"));
    assertTrue(list.delete(b("k")));
    assertFalse(list.delete(b("k")));
    assertEquals(0, list.stats().items());
  }

  @Test
  void manyVersionsOfOneKey_currentIsNewest_andOldOnesAreFreed() {
    for (int i = 0; i < 10_000; i++) {
      list.put(b("key"), b("v" + i));
    }
    assertEquals("v9999", s(list.get(b("key"))));
    assertEquals(1, list.stats().items());
    list.quiesce();
    assertEquals(
        1, list.stats().nodes(), "superseded versions of the current term are unlinked at once");
  }

  @Test
  void versionsAcrossSnapshots_eachSnapshotSeesItsOwn() {
    List<Snapshot> snaps = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      list.put(b("key"), b("v" + i));
      if (i % 7 == 3) list.delete(b("key"));
      snaps.add(list.snapshot());
    }
    for (int i = 0; i < 50; i++) {
      String expect = i % 7 == 3 ? null : "v" + i;
      assertEquals(expect, s(snaps.get(i).get(b("key"))), "snapshot " + i);
    }
    for (Snapshot sn : snaps) sn.close();
    list.quiesce();
    assertEquals(1, list.stats().nodes());
  }

  @Test
  void emptyValue_andEmptyKey() {
    list.put(b("k"), new byte[0]);
    assertArrayEquals(new byte[0], list.get(b("k")));
    list.put(new byte[0], b("empty key"));
    assertEquals("empty key", s(list.get(new byte[0])));
    assertEquals(0, list.get(b("k"), new byte[4]));
  }

  @Test
  void maxSizeKey_isAccepted_oneMoreIsRefused() {
    byte[] max = new byte[SkipList.MAX_KEY_SIZE];
    max[max.length - 1] = 7;
    list.put(max, b("big"));
    assertEquals("big", s(list.get(max)));
    byte[] over = new byte[SkipList.MAX_KEY_SIZE + 1];
    assertThrows(InvalidArgumentException.class, () -> list.put(over, b("x")));
    assertThrows(InvalidArgumentException.class, () -> list.get(over));
    assertEquals(1, list.stats().items());
  }

  @Test
  void nulls_areRefused_andChangeNothing() {
    assertThrows(InvalidArgumentException.class, () -> list.put(null, b("v")));
    assertThrows(InvalidArgumentException.class, () -> list.put(b("k"), null));
    assertThrows(InvalidArgumentException.class, () -> list.get(null));
    assertThrows(InvalidArgumentException.class, () -> list.delete(null));
    assertThrows(InvalidArgumentException.class, () -> list.get(b("k"), null));
    assertThrows(InvalidArgumentException.class, () -> list.put(b("k"), 0, 2, b("v"), 0, 1));
    assertEquals(0, list.stats().items());
    assertEquals(0, list.stats().nodes());
  }

  @Test
  void valueOverConfiguredMaximum_isRefused() {
    try (SkipList small =
        new SkipList(SkipListConfig.defaults().withMemoryQuota(8L << 20).withMaxValueSize(100))) {
      small.put(b("k"), new byte[100]);
      assertThrows(InvalidArgumentException.class, () -> small.put(b("k"), new byte[101]));
      assertEquals(100, small.get(b("k")).length);
    }
  }

  @Test
  void memoryQuota_refusesBeforeWriting() {
    try (SkipList small = new SkipList(SkipListConfig.defaults().withMemoryQuota(1L << 20))) {
      byte[] v = new byte[1000];
      int written = 0;
      try {
        while (true) {
          small.put(b("k" + written), v);
          written++;
        }
      } catch (MemoryLimitException expected) {
        // the refused put wrote nothing
      }
      assertEquals(written, small.stats().items());
      assertNull(small.get(b("k" + written)));
      assertTrue(written > 100);
    }
  }

  @Test
  void getIntoBuffer_reportsLength_copiesOnlyWhenItFits() {
    list.put(b("k"), b("hello"));
    byte[] small = new byte[2];
    assertEquals(5, list.get(b("k"), small));
    assertArrayEquals(new byte[2], small);
    byte[] big = new byte[8];
    assertEquals(5, list.get(b("k"), big));
    assertEquals("hello", new String(big, 0, 5, UTF_8));
    assertEquals(-1, list.get(b("missing"), big));
  }

  @Test
  void keysCompareAsUnsignedBytes() {
    list.put(new byte[] {(byte) 0xFF}, b("ff"));
    list.put(new byte[] {0x01}, b("01"));
    list.put(new byte[] {0x7F}, b("7f"));
    list.put(new byte[] {0x01, 0x00}, b("0100"));
    try (Snapshot snap = list.snapshot();
        SnapshotIterator it = snap.iterator()) {
      List<String> seen = new ArrayList<>();
      for (it.seekFirst(); it.valid(); it.next()) seen.add(s(it.value()));
      assertEquals(List.of("01", "0100", "7f", "ff"), seen);
    }
  }

  @Test
  void iterator_seekNextPrevLast_skipDeletedAndNewer() {
    for (int i = 0; i < 100; i++) list.put(key(i), b("v" + i));
    for (int i = 0; i < 100; i += 3) list.delete(key(i));
    try (Snapshot snap = list.snapshot();
        SnapshotIterator it = snap.iterator()) {
      for (int i = 0; i < 100; i++) list.put(key(i), b("new")); // after the snapshot: invisible
      list.put(key(1000), b("later"));
      List<Integer> forward = new ArrayList<>();
      for (it.seekFirst(); it.valid(); it.next()) forward.add(Integer.parseInt(s(it.key())));
      List<Integer> expect = new ArrayList<>();
      for (int i = 0; i < 100; i++) if (i % 3 != 0) expect.add(i);
      assertEquals(expect, forward);
      List<Integer> backward = new ArrayList<>();
      for (it.seekLast(); it.valid(); it.prev()) backward.add(Integer.parseInt(s(it.key())));
      java.util.Collections.reverse(backward);
      assertEquals(expect, backward);
      it.seek(key(30)); // deleted: lands on 31
      assertEquals("v31", s(it.value()));
      it.prev();
      assertEquals("v29", s(it.value()));
      it.seek(b("zzz"));
      assertFalse(it.valid());
      assertThrows(NoSuchElementException.class, it::next);
    }
  }

  @Test
  void closedSnapshot_andClosedIterator_throw() {
    list.put(b("k"), b("v"));
    Snapshot snap = list.snapshot();
    SnapshotIterator it = snap.iterator();
    it.seekFirst();
    snap.close();
    snap.close(); // idempotent
    assertThrows(ClosedException.class, it::valid);
    assertThrows(ClosedException.class, () -> snap.get(b("k")));
    assertThrows(ClosedException.class, it::next);
    assertThrows(ClosedException.class, snap::iterator);
    Snapshot other = list.snapshot();
    SnapshotIterator it2 = other.iterator();
    it2.close();
    assertThrows(ClosedException.class, it2::seekFirst);
    other.close();
  }

  @Test
  void closedList_throwsOnEveryOperation() {
    list.put(b("k"), b("v"));
    Snapshot snap = list.snapshot();
    list.close();
    assertThrows(ClosedException.class, () -> list.get(b("k")));
    assertThrows(ClosedException.class, () -> list.put(b("k"), b("v")));
    assertThrows(ClosedException.class, () -> list.delete(b("k")));
    assertThrows(ClosedException.class, () -> list.snapshot());
    assertThrows(ClosedException.class, () -> snap.get(b("k")));
    snap.close(); // allowed, does nothing
    list = new SkipList(SkipListConfig.defaults().withMemoryQuota(8L << 20)); // for @AfterEach
  }

  @Test
  void snapshotIsAnIncrementOfTheTerm() {
    long t = list.currentTerm();
    try (Snapshot a = list.snapshot();
        Snapshot c = list.snapshot()) {
      assertEquals(t, a.sn());
      assertEquals(t + 1, c.sn());
      assertEquals(t + 2, list.currentTerm());
    }
  }

  @Test
  void duplicate_keepsSnapshotAliveAfterOriginalCloses() {
    list.put(b("k"), b("old"));
    Snapshot snap = list.snapshot();
    Snapshot dup = snap.duplicate();
    list.put(b("k"), b("new"));
    snap.close();
    list.quiesce();
    assertEquals("old", s(dup.get(b("k"))));
    dup.close();
    list.quiesce();
    assertEquals(1, list.stats().nodes());
  }

  @Test
  void stats_countLevelsAndMetadata() {
    for (int i = 0; i < 20_000; i++) list.put(key(i), new byte[100]);
    SkipListStats st = list.stats();
    assertEquals(20_000, st.items());
    assertEquals(20_000, st.nodes());
    assertEquals(20_000, st.nodesPerLevel()[0]);
    long l1 = st.nodesPerLevel()[1];
    assertTrue(
        l1 > 20_000 / 4 * 0.8 && l1 < 20_000 / 4 * 1.2,
        "about a quarter of the nodes reach level 1: " + l1);
    assertTrue(st.metadataBytesPerNode() <= 48, "metadata per node: " + st.metadataBytesPerNode());
  }

  @Test
  void openIteratorMidScan_doesNotPinReclamation() {
    for (int i = 0; i < 100; i++) list.put(key(i), b("v" + i));
    try (Snapshot snap = list.snapshot();
        SnapshotIterator it = snap.iterator()) {
      it.seek(key(50));
      for (int i = 0; i < 20_000; i++)
        list.put(b("hot"), b("x" + i)); // each supersedes the last at once
      list.quiesce();
      assertTrue(
          list.stats().nodes() < 200,
          "versions superseded during the scan were freed: " + list.stats());
      assertEquals("v50", s(it.value()));
      it.next();
      assertEquals("v51", s(it.value()));
    }
  }

  @Test
  void closeDuringConcurrentPuts_neitherCrashesNorLeaks() throws Exception {
    SkipList racing = new SkipList(SkipListConfig.defaults().withMemoryQuota(64L << 20));
    java.util.concurrent.atomic.AtomicReference<Throwable> unexpected =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(2);
    Thread[] writers = new Thread[2];
    for (int t = 0; t < writers.length; t++) {
      int id = t;
      writers[t] =
          new Thread(
              () -> {
                started.countDown();
                try {
                  for (int i = 0; ; i++)
                    racing.put(key(id * 1_000_000 + i % 500), new byte[50 + i % 200]);
                } catch (ClosedException expected) {
                  // the list closed under us: the write was refused, nothing half-done
                } catch (Throwable e) {
                  unexpected.set(e);
                }
              });
      writers[t].start();
    }
    started.await();
    Thread.sleep(50);
    racing.close(); // MemoryLeakException if a write in flight lost its node
    for (Thread t : writers) t.join();
    if (unexpected.get() != null) throw new AssertionError("writer failed", unexpected.get());
  }

  /**
   * Nitro section 4: the collector's threads follow the writers (gcWorkers 0, the default): three
   * live writer threads give min(3, processors) workers, which collect their updates' old versions;
   * once the writers are gone, one. A fixed gcWorkers stays as set.
   */
  @Test
  void gcWorkers_scaleWithTheWriters() throws Exception {
    int expected = Math.min(3, Runtime.getRuntime().availableProcessors());
    try (SkipList l =
        new SkipList(
            SkipListConfig.defaults()
                .withMemoryQuota(32L << 20)
                .withGcIntervalMillis(2)
                .withGcBacklog(64))) {
      assertEquals(1, l.gc.workers(), "one worker before any writer");
      java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
      List<Thread> writers = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        int id = t;
        Thread th =
            new Thread(
                () -> {
                  for (int round = 0; round < 50; round++)
                    for (int k = 0; k < 100; k++) l.put(key(id * 1000 + k), b("v" + round));
                  try {
                    done.await(); // alive, so still a writer, until the test has looked
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
        th.start();
        writers.add(th);
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (l.gc.workers() != expected && System.nanoTime() < deadline) Thread.sleep(2);
      assertEquals(expected, l.gc.workers(), "a worker per live writer, up to the processors");
      done.countDown();
      for (Thread th : writers) th.join();
      l.quiesce(); // every old version collected and freed, whatever the pool's size
      assertEquals(300, l.stats().items());
      assertEquals(300, l.stats().nodes(), "old versions unlinked");
      deadline = System.nanoTime() + 5_000_000_000L;
      while (l.gc.workers() != 1 && System.nanoTime() < deadline) Thread.sleep(2);
      assertEquals(1, l.gc.workers(), "back to one once the writers are gone");
    }
    try (SkipList l =
        new SkipList(
            SkipListConfig.defaults()
                .withMemoryQuota(16L << 20)
                .withGcIntervalMillis(2)
                .withGcWorkers(2))) {
      Thread th = new Thread(() -> l.put(key(1), b("v")));
      th.start();
      th.join();
      Thread.sleep(20);
      assertEquals(2, l.gc.workers(), "a fixed number stays as set");
    }
  }

  @Test
  void writersOfDeadThreads_arePruned_countersKept() throws Exception {
    try (SkipList l =
        new SkipList(
            SkipListConfig.defaults().withMemoryQuota(16L << 20).withGcIntervalMillis(2))) {
      for (int t = 0; t < 20; t++) {
        int id = t;
        Thread th = new Thread(() -> l.put(key(id), b("v")));
        th.start();
        th.join();
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (l.writers.size() > 2 && System.nanoTime() < deadline) Thread.sleep(5);
      assertTrue(
          l.writers.size() <= 2, "writers of finished threads were dropped: " + l.writers.size());
      assertEquals(20, l.stats().items());
      assertEquals(20, l.stats().nodes());
    }
  }

  @Test
  void statsDuringPruning_countEachDeadWriterOnce() throws Exception {
    // The collector folds a dead thread's counters into the list's and drops its writer; a stats()
    // sum
    // running at that moment once read the writer in the list and again in the folded counters.
    try (SkipList l =
        new SkipList(
            SkipListConfig.defaults().withMemoryQuota(16L << 20).withGcIntervalMillis(1))) {
      for (int t = 0; t < 300; t++) {
        int id = t;
        Thread th = new Thread(() -> l.put(key(id), b("v")));
        th.start();
        th.join();
        for (int i = 0; i < 50; i++) {
          assertEquals(t + 1, l.stats().items(), "items after " + (t + 1) + " single-put threads");
        }
      }
    }
  }

  static byte[] key(int i) {
    return b(String.format("%08d", i));
  }
}
