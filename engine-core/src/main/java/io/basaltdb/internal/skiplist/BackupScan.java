package io.basaltdb.internal.skiplist;

import io.basaltdb.internal.memory.Mem;
import java.util.ArrayList;
import java.util.List;

/**
 * The scan side of Nitro's backup (seed 001 sections 5.1 and 6.4): range partitions of the level-0
 * list chosen from a higher level's nodes, and a scan of one partition at a term that does not rely
 * on the term's snapshot being held (the non-intrusive backup releases it).
 *
 * <p>Memory safety: a scan enters the access barrier for a batch of keys at a time and leaves
 * between batches (the refresh of a long iterator, section 6.4), so it never holds back reclamation
 * for long. Between batches it keeps the last key it passed as bytes, not a node address, and the
 * next batch seeks past that key: a node it passed may be unlinked and freed meanwhile.
 *
 * <p>Thread-safety: static methods; any number of scans may run at once, beside writers and the
 * collector.
 */
final class BackupScan {
  /**
   * Nodes of the chosen level per range: each stands for about 4^level nodes below it, at random,
   * so a range's size varies by about 1/sqrt(this) (12%); the walk copies at most 4 times this many
   * keys per range.
   */
  static final int NODES_PER_PART = 64;

  /** Keys a scan passes per barrier session. */
  static final int BATCH = 1024;

  /** Written with what the touching loads read, so the compiler keeps them. */
  static long touchSink;

  private BackupScan() {}

  /**
   * Loads one byte of each cache line of {@code node} after its first (whose header it reads), up
   * to its value's end: the loads do not depend on one another, so their misses overlap.
   */
  private static long touchLines(long node) {
    long end = Node.valueAddr(node) + Node.valueLen(node);
    long t = 0;
    for (long a = (node | 63) + 1; a < end; a += 64) t += Mem.lpUnsignedByte(null, a);
    return t;
  }

  /**
   * Up to {@code parts - 1} keys, strictly increasing, that cut the list into {@code parts} ranges
   * of about as many nodes each: the keys of evenly spaced nodes of the highest level with at least
   * {@link #NODES_PER_PART} nodes per range (level l has about n/4^l nodes; {@link SkipListStats}
   * counts them). Fewer keys for a small list; none for one part.
   */
  static List<byte[]> splitKeys(SkipList list, int parts) {
    List<byte[]> out = new ArrayList<>();
    if (parts <= 1) return out;
    long[] levels = list.stats().nodesPerLevel();
    int level = 0;
    while (level + 1 < levels.length && levels[level + 1] >= (long) NODES_PER_PART * parts) level++;
    List<byte[]> keys = new ArrayList<>();
    AccessBarrier.Session s = list.barrier.enter();
    try {
      list.checkOpen();
      long limit =
          Math.max(levels[level] * 2, 1024); // nodes linked meanwhile: a bound, not an exact count
      // lv: pairs with the CAS that linked each successor, so its header and key are visible
      for (long n = Node.ptr(Node.lvNext(list.head, level));
          n != 0 && keys.size() < limit;
          n = Node.ptr(Node.lvNext(n, level))) {
        byte[] k = SkipList.keyOf(n);
        if (keys.isEmpty() || java.util.Arrays.compareUnsigned(keys.get(keys.size() - 1), k) < 0)
          keys.add(k);
      }
    } finally {
      list.barrier.exit(s);
    }
    for (int i = 1; i < parts; i++) {
      int at = (int) ((long) keys.size() * i / parts);
      if (at == 0 || at >= keys.size()) continue;
      byte[] k = keys.get(at);
      if (out.isEmpty() || java.util.Arrays.compareUnsigned(out.get(out.size() - 1), k) < 0)
        out.add(k);
    }
    return out;
  }

  /**
   * As {@link #scan} for several ranges at once on the calling thread: range i is {@code
   * [bounds[i], bounds[i+1])} (a null first or last bound is open), its items handed in key order
   * to {@code sinks[i]}. The cursors advance in turn, one key each, so their loads do not depend on
   * one another and the processor overlaps their cache misses: a level-0 walk over nodes scattered
   * in memory waits on one miss per key, and one cursor alone leaves the memory system idle most of
   * the time (a backup of 10M random keys scanned about 3x faster from a restored store, whose
   * nodes lie in key order). Returns each range's item count.
   */
  static long[] scanInterleaved(SkipList list, long sn, byte[][] bounds, ItemSink[] sinks) {
    int m = sinks.length;
    if (bounds.length != m + 1)
      throw new IllegalArgumentException(bounds.length + " bounds for " + m + " ranges");
    byte[][] resume = new byte[m][];
    boolean[] past = new boolean[m], done = new boolean[m];
    long[] nodes = new long[m], lasts = new long[m], items = new long[m];
    for (int c = 0; c < m; c++) resume[c] = bounds[c];
    int active = m;
    while (active > 0) {
      AccessBarrier.Session s = list.barrier.enter();
      try {
        list.checkOpen();
        for (int c = 0; c < m; c++) {
          if (done[c]) continue;
          byte[] r = resume[c];
          long node =
              r == null
                  ? Node.ptr(
                      Node.lvNext(
                          list.head, 0)) // lv: pairs with the CAS that linked the first node
                  : list.findFirstAtOrAfter(r, Mem.ARRAY_BASE, r.length);
          if (past[c] && node != 0 && Keys.compare(r, Mem.ARRAY_BASE, r.length, node) == 0) {
            node = SkipList.skipVersions(node);
          }
          nodes[c] = node;
          lasts[c] = 0;
        }
        long touched = 0;
        for (int step = 0; step < BATCH && active > 0; step++) {
          // the cursors' next nodes, loaded together so their misses overlap: first each one's
          // first
          // line (its header), then the lines after it (its key and value)
          for (int c = 0; c < m; c++) {
            if (!done[c] && nodes[c] != 0) touched += Mem.lpLong(nodes[c]);
          }
          for (int c = 0; c < m; c++) {
            if (!done[c] && nodes[c] != 0) touched += touchLines(nodes[c]);
          }
          for (int c = 0; c < m; c++) {
            if (done[c]) continue;
            long node = nodes[c];
            long last = lasts[c];
            while (node != 0 && last != 0 && Keys.sameKey(last, node)) {
              node =
                  Node.ptr(
                      Node.lvNext(node, 0)); // an older version of the key just passed; lv as below
            }
            byte[] to = bounds[c + 1];
            if (node == 0
                || (to != null && Keys.compare(to, Mem.ARRAY_BASE, to.length, node) <= 0)) {
              done[c] = true;
              active--;
              continue;
            }
            long v = SkipList.decisiveVersion(node, sn);
            if (v != 0 && Node.visibleAt(v, sn)) {
              sinks[c].item(Node.keyAddr(v), Node.keyLen(v), Node.valueAddr(v), Node.valueLen(v));
              items[c]++;
            }
            lasts[c] = node;
            // lv: pairs with the CAS that linked the successor, so its header and key are visible;
            // it may
            // be another version of this key, skipped above once its lines are in the cache
            nodes[c] = Node.ptr(Node.lvNext(node, 0));
          }
        }
        touchSink = touched; // keeps the touching loads
        for (int c = 0; c < m; c++) {
          if (done[c] || lasts[c] == 0) continue;
          resume[c] =
              SkipList.keyOf(
                  lasts[c]); // bytes, not the node: it may be freed before the next batch
          past[c] = true;
        }
      } finally {
        list.barrier.exit(s);
      }
    }
    return items;
  }

  /**
   * Hands {@code sink} every item visible at term {@code sn} with a key in {@code [from, to)} (null
   * bounds are open), in key order, and returns how many: {@link #scanInterleaved} with one range.
   * The caller keeps the term's nodes from being collected (its snapshot) or captures what the
   * collector unlinks ({@link UnlinkCapture}).
   */
  static long scan(SkipList list, long sn, byte[] from, byte[] to, ItemSink sink) {
    return scanInterleaved(list, sn, new byte[][] {from, to}, new ItemSink[] {sink})[0];
  }
}
