package io.basaltdb.internal.skiplist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Randomized multi-threaded stress: writers, readers holding snapshots, the garbage collector and
 * memory reclamation all run at once. Checks that every snapshot is stable (two scans and point
 * reads agree), that each snapshot is a consistent cut of every writer's history, that the final
 * state matches the model, and that no byte leaks.
 *
 * <p>Replay: the seed is printed; {@code -Dbasalt.stress.seed=N} reruns the same operation
 * sequences (thread interleavings differ). {@code -Dbasalt.stress.ops=N} sets operations per
 * writer; bin/stress runs long settings.
 */
class SkipListStressTest {
  private static final int WRITERS = 2;
  private static final int READERS = 2;
  private static final int KEYS_PER_WRITER = 300;

  private static final int SHARED_KEYS = 16;

  /** One writer's operation on its own keys: key index, put or delete. */
  record Op(int key, boolean delete) {}

  /** An operation on a shared key, outside the per-writer histories. */
  private static final Op SHARED = new Op(-1, false);

  @Test
  void writersReadersGcAndReclamation_snapshotsStable_noLeak() throws Exception {
    long seed = Long.getLong("basalt.stress.seed", System.nanoTime());
    int ops = Integer.getInteger("basalt.stress.ops", 60_000);
    String replay = " (replay: -Dbasalt.stress.seed=" + seed + " -Dbasalt.stress.ops=" + ops + ")";
    System.out.println("SkipListStressTest seed=" + seed + " ops=" + ops);
    SkipListConfig config =
        SkipListConfig.defaults()
            .withMemoryQuota(256L << 20)
            .withGcBacklog(512)
            .withGcIntervalMillis(5)
            .withRetireBatch(64)
            .withGcWorkers(2);
    SkipList list = new SkipList(config);
    try {
      Op[][] histories = new Op[WRITERS][ops];
      AtomicBoolean writing = new AtomicBoolean(true);
      ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
      ConcurrentLinkedQueue<TreeMap<String, byte[]>> scans = new ConcurrentLinkedQueue<>();
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        int id = w;
        threads.add(
            new Thread(
                () -> {
                  try {
                    SplittableRandom r = new SplittableRandom(seed * 31 + id);
                    for (int i = 0; i < ops; i++) {
                      if (r.nextInt(10) == 0) { // a key every writer races on
                        histories[id][i] = SHARED;
                        byte[] k = sharedKey(r.nextInt(SHARED_KEYS));
                        if (r.nextInt(4) == 0) list.delete(k);
                        else list.put(k, value(id, i, r.nextInt(40)));
                        continue;
                      }
                      int k = r.nextInt(KEYS_PER_WRITER);
                      boolean delete = r.nextInt(10) < 3;
                      histories[id][i] = new Op(k, delete);
                      if (delete) list.delete(key(id, k));
                      else list.put(key(id, k), value(id, i, r.nextInt(40)));
                    }
                  } catch (Throwable t) {
                    failures.add(t);
                  }
                },
                "writer-" + w));
      }
      for (int rd = 0; rd < READERS; rd++) {
        int id = rd;
        threads.add(
            new Thread(
                () -> {
                  SplittableRandom r = new SplittableRandom(seed * 17 + id);
                  try {
                    while (writing.get()) {
                      try (Snapshot snap = list.snapshot()) {
                        TreeMap<String, byte[]> first = scan(snap);
                        for (int i = 0; i < 20; i++) { // point reads agree with the scan
                          int w = r.nextInt(WRITERS);
                          int k = r.nextInt(KEYS_PER_WRITER);
                          byte[] got = snap.get(key(w, k));
                          byte[] want = first.get(keyString(w, k));
                          if (!Arrays.equals(got, want)) {
                            throw new AssertionError(
                                "snapshot "
                                    + snap.sn()
                                    + " get("
                                    + keyString(w, k)
                                    + ") disagrees with its scan");
                          }
                        }
                        if (r.nextInt(4) == 0)
                          Thread.sleep(1); // let writers and GC move on under the snapshot
                        TreeMap<String, byte[]> second = scan(snap);
                        if (!sameContents(first, second)) {
                          throw new AssertionError(
                              "snapshot " + snap.sn() + " changed between two scans");
                        }
                        scans.add(first);
                      }
                    }
                  } catch (Throwable t) {
                    failures.add(t);
                  }
                },
                "reader-" + rd));
      }
      for (Thread t : threads) t.start();
      for (int w = 0; w < WRITERS; w++) threads.get(w).join();
      writing.set(false);
      for (Thread t : threads) t.join();
      if (!failures.isEmpty()) {
        AssertionError e = new AssertionError("stress failure" + replay, failures.peek());
        failures.forEach(e::addSuppressed);
        throw e;
      }
      assertTrue(scans.size() > 0, "readers took snapshots" + replay);
      for (TreeMap<String, byte[]> scan : scans) {
        checkConsistentCut(scan, histories, replay);
      }
      // final state equals the model
      TreeMap<String, byte[]> model = new TreeMap<>();
      for (int w = 0; w < WRITERS; w++) {
        Map<Integer, Integer> state = stateAfter(histories[w], ops);
        for (Map.Entry<Integer, Integer> e : state.entrySet()) {
          model.put(keyString(w, e.getKey()), null);
          byte[] got = list.get(key(w, e.getKey()));
          assertTrue(
              got != null && ByteBuffer.wrap(got).getInt(4) == e.getValue(),
              "final value of " + keyString(w, e.getKey()) + replay);
        }
        for (int k = 0; k < KEYS_PER_WRITER; k++) {
          if (!state.containsKey(k))
            assertEquals(null, list.get(key(w, k)), "deleted " + keyString(w, k) + replay);
        }
      }
      for (int k = 0; k < SHARED_KEYS; k++) { // a shared key holds a value some writer put there
        byte[] got = list.get(sharedKey(k));
        if (got != null) {
          ByteBuffer v = ByteBuffer.wrap(got);
          int w = v.getInt(0);
          int op = v.getInt(4);
          assertTrue(
              w >= 0 && w < WRITERS && histories[w][op] == SHARED, "shared key " + k + replay);
          model.put("s-" + k, null);
        }
      }
      list.quiesce();
      SkipListStats st = list.stats();
      assertEquals(model.size(), st.items(), "items" + replay);
      assertEquals(model.size(), st.nodes(), "every dead version was collected and freed" + replay);
      assertEquals(0, st.liveSnapshots(), replay);
    } finally {
      list.close(); // MemoryLeakException if a single node was lost
    }
  }

  private static TreeMap<String, byte[]> scan(Snapshot snap) {
    TreeMap<String, byte[]> out = new TreeMap<>();
    try (SnapshotIterator it = snap.iterator()) {
      for (it.seekFirst(); it.valid(); it.next()) {
        out.put(new String(it.key(), java.nio.charset.StandardCharsets.US_ASCII), it.value());
      }
    }
    return out;
  }

  private static boolean sameContents(TreeMap<String, byte[]> a, TreeMap<String, byte[]> b) {
    if (!a.keySet().equals(b.keySet())) return false;
    for (Map.Entry<String, byte[]> e : a.entrySet()) {
      if (!Arrays.equals(e.getValue(), b.get(e.getKey()))) return false;
    }
    return true;
  }

  /**
   * A snapshot must show, for each writer, the state after some prefix of its operations. The
   * prefix ends after the newest op the snapshot shows; it may include later puts that later
   * deletes in the prefix undid, so every end point is tried until the state gains a put that no
   * later op removes.
   */
  private static void checkConsistentCut(
      TreeMap<String, byte[]> scan, Op[][] histories, String replay) {
    for (int w = 0; w < WRITERS; w++) {
      Map<Integer, Integer> shown = new TreeMap<>();
      int newest = -1;
      String prefix = "w" + w + "-";
      for (Map.Entry<String, byte[]> e : scan.subMap(prefix, prefix + "~").entrySet()) {
        int k = Integer.parseInt(e.getKey().substring(prefix.length()));
        int op = ByteBuffer.wrap(e.getValue()).getInt(4);
        shown.put(k, op);
        newest = Math.max(newest, op);
      }
      Op[] h = histories[w];
      Map<Integer, Integer> state = stateAfter(h, newest + 1);
      int foreign = 0; // entries of state put after the newest op shown: they must be deleted again
      boolean found = state.equals(shown);
      for (int p = newest + 1; !found && p < h.length; p++) {
        if (h[p] == SHARED) continue;
        Integer before = h[p].delete() ? state.remove(h[p].key()) : state.put(h[p].key(), p);
        if (before != null && before > newest) foreign--;
        if (!h[p].delete()) foreign++;
        found = foreign == 0 && state.equals(shown);
      }
      if (!found) {
        fail(
            "snapshot is not a consistent cut of writer "
                + w
                + "'s history (newest op shown "
                + newest
                + ")"
                + replay);
      }
    }
  }

  private static Map<Integer, Integer> stateAfter(Op[] history, int n) {
    Map<Integer, Integer> state = new TreeMap<>();
    for (int i = 0; i < n; i++) {
      if (history[i] == SHARED) continue;
      if (history[i].delete()) state.remove(history[i].key());
      else state.put(history[i].key(), i);
    }
    return state;
  }

  private static String keyString(int writer, int k) {
    return "w" + writer + "-" + String.format("%05d", k);
  }

  private static byte[] sharedKey(int k) {
    return String.format("s-%03d", k).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  private static byte[] key(int writer, int k) {
    return keyString(writer, k).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  private static byte[] value(int writer, int op, int pad) {
    return ByteBuffer.allocate(8 + pad).putInt(writer).putInt(op).array();
  }
}
