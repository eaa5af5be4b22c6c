package io.basaltdb.internal.skiplist;

import static io.basaltdb.internal.skiplist.SkipListTest.b;
import static io.basaltdb.internal.skiplist.SkipListTest.s;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.memory.Mem;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The skiplist's side of Nitro's backup and restore (seed 001 section 5): split keys cut the list
 * into ranges of about equal size, a scan at a term sees exactly that term's items, a list built
 * bottom-up from segments behaves as one built by puts (reads, later writes, snapshots, collection,
 * and every node freed at close), and a capture hands over exactly the nodes of its term the
 * collector unlinks.
 */
class SkipListBackupTest {
  private SkipList list;

  @BeforeEach
  void open() {
    list = new SkipList(SkipListConfig.defaults().withMemoryQuota(64L << 20));
  }

  @AfterEach
  void close() {
    list.close(); // throws MemoryLeakException if a node was lost
  }

  static String key(int i) {
    return String.format("key%06d", i);
  }

  /** Collects items as strings; a sink's addresses are valid only during the call. */
  static final class Collect implements ItemSink {
    final List<String> keys = new ArrayList<>();
    final List<String> values = new ArrayList<>();

    @Override
    public void item(long keyAddr, int keyLen, long valueAddr, int valueLen) {
      byte[] k = new byte[keyLen], v = new byte[valueLen];
      Mem.copyToArray(keyAddr, k, 0, keyLen);
      Mem.copyToArray(valueAddr, v, 0, valueLen);
      keys.add(s(k));
      values.add(s(v));
    }
  }

  @Test
  void splitKeysCutTheListIntoRangesOfAboutEqualSize_andScansSeeExactlyTheirTerm() {
    int n = 20_000;
    for (int i = 0; i < n; i++) list.put(b(key(i)), b("old" + i));
    try (Snapshot snap = list.snapshot()) {
      for (int i = 0; i < n; i += 2)
        list.put(b(key(i)), b("new" + i)); // after the snapshot: not in it
      for (int i = 1; i < n; i += 10) list.delete(b(key(i)));
      List<byte[]> splits = list.splitKeys(4);
      assertEquals(3, splits.size());
      List<String> all = new ArrayList<>();
      for (int r = 0; r <= splits.size(); r++) {
        Collect c = new Collect();
        long items =
            list.scan(
                snap.sn(),
                r == 0 ? null : splits.get(r - 1),
                r == splits.size() ? null : splits.get(r),
                c);
        assertEquals(c.keys.size(), items);
        assertTrue(
            items > n / 4 * 0.6 && items < n / 4 * 1.5,
            "range " + r + " holds " + items + " of " + n);
        for (int i = 0; i < c.keys.size(); i++)
          assertEquals(
              "old" + c.keys.get(i).substring(3).replaceFirst("^0+(?=.)", ""), c.values.get(i));
        all.addAll(c.keys);
      }
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < n; i++) expected.add(key(i));
      assertEquals(expected, all, "the ranges hold every key of the snapshot once, in order");
      // the same ranges scanned at once, their cursors in turn, give each range's items alike
      byte[][] bounds = new byte[splits.size() + 2][];
      for (int r = 0; r < splits.size(); r++) bounds[r + 1] = splits.get(r);
      Collect[] sinks = new Collect[splits.size() + 1];
      for (int r = 0; r < sinks.length; r++) sinks[r] = new Collect();
      long[] counts = list.scanInterleaved(snap.sn(), bounds, sinks);
      List<String> interleaved = new ArrayList<>();
      for (int r = 0; r < sinks.length; r++) {
        assertEquals(sinks[r].keys.size(), counts[r]);
        interleaved.addAll(sinks[r].keys);
        for (int i = 0; i < sinks[r].keys.size(); i++)
          assertTrue(sinks[r].values.get(i).startsWith("old"));
      }
      assertEquals(
          expected,
          interleaved,
          "interleaved cursors: every key once, each in its range, in order");
    }
    assertTrue(list.splitKeys(1).isEmpty());
  }

  @Test
  void aListBuiltBottomUpBehavesAsOneBuiltByPuts() {
    int n = 30_000, parts = 3;
    List<SkipListBuilder.Segment> segments = new ArrayList<>();
    for (int p = 0; p < parts; p++) {
      SkipListBuilder builder = list.builder();
      for (int i = p * n / parts; i < (p + 1) * n / parts; i++) {
        byte[] k = b(key(i)), v = b("v" + i);
        builder.add(k, 0, k.length, v, 0, v.length);
      }
      if (p == 1) {
        byte[] k = b(key(0));
        assertThrows(
            IllegalArgumentException.class,
            () -> builder.add(k, 0, k.length, k, 0, 1),
            "out of order");
      }
      segments.add(builder.finish());
    }
    segments.add(1, list.builder().finish()); // an empty segment in between is fine
    list.load(segments);
    SkipListStats stats = list.stats();
    assertEquals(n, stats.items());
    assertEquals(n, stats.nodes());
    assertTrue(
        stats.nodesPerLevel().length > 3
            && stats.nodesPerLevel()[1] > n / 8
            && stats.nodesPerLevel()[1] < n / 2,
        "towers of height 2 and more for about a quarter of the nodes: " + stats);
    for (int i = 0; i < n; i += 7) assertEquals("v" + i, s(list.get(b(key(i)))));
    assertNull(list.get(b("key")));
    try (Snapshot snap = list.snapshot();
        SnapshotIterator it = snap.iterator()) {
      for (int i = 0; i < n; i++) list.put(b(key(i)), b("w" + i)); // supersede every built node
      for (int i = 0; i < n; i += 3) list.delete(b(key(i)));
      int count = 0;
      for (it.seekFirst(); it.valid(); it.next())
        assertEquals(key(count), s(it.key()), "the snapshot's key " + count++);
      assertEquals(n, count);
      assertEquals("v5", s(snap.get(b(key(5)))));
    }
    list.quiesce(); // the built nodes are unlinked and freed like any other
    assertEquals(n - (n + 2) / 3, list.stats().items());
    assertEquals(list.stats().items(), list.stats().nodes());
    assertEquals("w4", s(list.get(b(key(4)))));
    assertNull(list.get(b(key(3))));
    SkipListBuilder late = list.builder();
    late.add(b("z"), 0, 1, b("z"), 0, 1);
    assertThrows(
        IllegalStateException.class,
        () -> list.load(List.of(late.finish())),
        "load needs an empty list");
    late.discard(); // its node goes back: close finds no leak
  }

  @Test
  void segmentsOutOfKeyOrderAreRefused_andDiscardedSegmentsFreeTheirNodes() {
    SkipListBuilder a = list.builder(), c = list.builder();
    a.add(b("m"), 0, 1, b("1"), 0, 1);
    c.add(b("a"), 0, 1, b("2"), 0, 1);
    assertThrows(IllegalArgumentException.class, () -> list.load(List.of(a.finish(), c.finish())));
    assertNull(list.get(b("m")), "nothing was loaded");
    a.discard();
    c.discard();
  }

  /**
   * With its snapshot released, the collector unlinks the term's superseded and deleted nodes; the
   * capture receives exactly those, so the scan plus the capture hold the whole snapshot.
   */
  @Test
  void aCaptureReceivesEveryNodeOfItsTermTheCollectorUnlinks() {
    int n = 5000;
    for (int i = 0; i < n; i++) list.put(b(key(i)), b("old" + i));
    Snapshot snap = list.snapshot();
    long sn = snap.sn();
    List<Collect> sinks = new ArrayList<>();
    UnlinkCapture capture =
        list.capture(
            snap,
            () -> {
              Collect c = new Collect();
              synchronized (sinks) {
                sinks.add(c);
              }
              return c;
            });
    capture.activate();
    snap.close();
    for (int i = 0; i < n; i++) {
      if (i % 4 == 0) list.delete(b(key(i)));
      else if (i % 4 == 1) list.put(b(key(i)), b("new" + i));
    }
    list.put(b(key(n)), b("born after"));
    list.quiesce();
    Collect scanned = new Collect();
    list.scan(sn, null, null, scanned);
    List<ItemSink> used = capture.terminate();
    assertEquals(sinks.size(), used.size());
    java.util.TreeMap<String, String> union = new java.util.TreeMap<>();
    for (int i = 0; i < scanned.keys.size(); i++)
      union.put(scanned.keys.get(i), scanned.values.get(i));
    int caught = 0;
    for (Collect c : sinks) {
      for (int i = 0; i < c.keys.size(); i++) {
        String before = union.put(c.keys.get(i), c.values.get(i));
        assertTrue(
            before == null || before.equals(c.values.get(i)),
            "a delta item differs from the scanned one");
        caught++;
      }
    }
    assertEquals(n / 2, caught, "the deleted and replaced nodes of the term, each once");
    assertEquals(n / 2, scanned.keys.size(), "the scan saw the untouched half");
    assertEquals(n, union.size());
    for (int i = 0; i < n; i++) assertEquals("old" + i, union.get(key(i)));
    assertEquals(n / 2, capture.captured());
  }
}
