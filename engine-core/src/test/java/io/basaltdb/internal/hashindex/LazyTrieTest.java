package io.basaltdb.internal.hashindex;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.sstable.KeyRecord;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link LazyTrie} against a {@link HashMap} model, with its invariants checked as it grows and
 * shrinks, under the real hash and under degenerate ones that force lists past s at full depth.
 */
class LazyTrieTest {
  private static final MemoryQuota QUOTA = new MemoryQuota(1L << 32);

  /** Degenerate hashes, by name; each test names the one it ran so a failure is reproducible. */
  static KeyHasher hasher(String name) {
    KeyHasher real = KeyHasher.xxh64(0x5eed);
    return switch (name) {
      case "xxh64" -> real;
      case "constant" -> k -> 0x4242_4242_4242_4242L;
      case "two" -> k -> (real.hash(k) & 1) == 0 ? 7L : -7L;
      // every hash shares its top 56 bits: all keys meet at the last levels
      case "prefix" -> k -> 0xABCD_EF01_2345_6700L | (real.hash(k) & 0xFF);
      // 4096 distinct hashes: lists past s at full depth hold several keys per hash
      case "narrow" -> k -> real.hash(k) & 0xF000_0000_0000_0FFFL;
      default -> throw new IllegalArgumentException(name);
    };
  }

  record Val(long seqno, int docSize, long hint, long expiry, int flags) {}

  @ParameterizedTest(name = "b={0} s={1} hash={2}")
  @CsvSource({
    "256, 16, xxh64, 300000",
    "256, 4, xxh64, 150000",
    "256, 1, xxh64, 60000",
    "16, 16, xxh64, 150000",
    "16, 4, xxh64, 100000",
    "16, 1, xxh64, 60000",
    "256, 16, constant, 20000",
    "16, 4, two, 60000",
    "256, 4, prefix, 60000",
    "16, 1, narrow, 60000",
    "256, 16, narrow, 60000",
  })
  void matchesHashMapModel(int b, int s, String hash, int ops) {
    long seed = new Random().nextLong();
    String where = "b=" + b + " s=" + s + " hash=" + hash + " seed=" + seed;
    Random rnd = new Random(seed);
    int keySpace = hash.equals("constant") || hash.equals("two") ? 300 : 20_000;
    Map<ByteBuffer, Val> model = new HashMap<>();
    Map<Long, byte[]> file = new HashMap<>(); // the checkpoint's pages, written incrementally
    try (LazyTrie trie = new LazyTrie(b, s, hasher(hash), QUOTA, "trie-test")) {
      KeyRecord out = new KeyRecord();
      long seqno = 0;
      for (int op = 0; op < ops; op++) {
        // phases: grow, churn, shrink, so paths split and collapse
        int phase = (op * 3) / ops;
        byte[] key = key(rnd.nextInt(keySpace), rnd);
        ByteBuffer k = ByteBuffer.wrap(key);
        int dice = rnd.nextInt(100);
        boolean doDelete = phase == 0 ? dice < 15 : phase == 1 ? dice < 45 : dice < 85;
        if (dice % 7 == 0) {
          Val want = model.get(k);
          boolean found = trie.get(key, out);
          assertEquals(want != null, found, where);
          if (want != null) assertSame(want, out, where);
          continue;
        }
        if (doDelete) {
          Val had = model.remove(k);
          assertEquals(had != null, trie.delete(key, out), where);
          if (had != null) {
            assertSame(had, out, where);
            assertArrayEquals(key, out.key, where);
          }
        } else {
          Val v =
              new Val(
                  ++seqno,
                  rnd.nextInt(1 << 20),
                  rnd.nextLong(),
                  rnd.nextInt(3) == 0 ? 0 : rnd.nextLong() & Long.MAX_VALUE,
                  rnd.nextInt(256));
          Val had = model.put(k, v);
          assertEquals(
              had != null,
              trie.put(key, v.seqno, v.docSize, v.hint, v.expiry, v.flags, out),
              where);
          if (had != null) assertSame(had, out, where);
        }
        if (op % 50_000 == 0) {
          trie.publishRetired();
          check(trie, model, where);
          checkpointAndLoad(trie, file, model, where + " op=" + op);
        }
      }
      trie.publishRetired();
      check(trie, model, where);
      for (ByteBuffer k : new ArrayList<>(model.keySet())) {
        assertTrue(trie.delete(k.array(), null), where);
      }
      trie.publishRetired();
      checkpointAndLoad(trie, file, new HashMap<>(), where + " emptied");
      LazyTrie.Shape empty = trie.checkInvariants();
      assertEquals(0, empty.records, where);
      assertEquals(1, empty.nodes, "every node but the root merged away: " + where);
      assertEquals(0, trie.size(), where);
    }
  }

  /**
   * Writes the trie's dirty pages over {@code file} (what a checkpoint writes in place), then loads
   * a second trie from the file alone and checks it against the model: every page the first trie
   * changed since the last checkpoint must have been marked dirty, or the load differs.
   */
  static void checkpointAndLoad(
      LazyTrie trie, Map<Long, byte[]> file, Map<ByteBuffer, Val> model, String where) {
    TrieSpace space = trie.space();
    for (long p : space.dirtyPages()) {
      byte[] page = new byte[TrieSpace.PAGE];
      space.copyPage(p, page, 0);
      file.put(p, page);
    }
    space.clearDirty();
    try (LazyTrie loaded =
        new LazyTrie(trie.branching(), trie.sluggishness(), trie.hasher(), QUOTA, "trie-load")) {
      loaded.beginLoad(space.top());
      for (long p = 0; p < space.pages(); p++) {
        loaded.space().loadPage(p, file.get(p), 0);
      }
      loaded.finishLoad(model.size());
      check(loaded, model, where + " (loaded from its checkpoint pages)");
      assertEquals(0, loaded.space().dirtyCount(), where);
      // the loaded trie keeps working: its free blocks are reused, nothing overlaps
      byte[] k = key(12345, new Random(1));
      loaded.put(k, 1, 1, 1, 0, 0, null);
      loaded.delete(k, null);
      loaded.publishRetired();
      loaded.checkInvariants();
    }
  }

  private static void check(LazyTrie trie, Map<ByteBuffer, Val> model, String where) {
    LazyTrie.Shape shape = trie.checkInvariants();
    assertEquals(model.size(), shape.records, where);
    Map<ByteBuffer, Val> seen = new HashMap<>();
    trie.forEach(
        r -> seen.put(ByteBuffer.wrap(r.key), new Val(r.seqno, r.docSize, r.hint, r.expiry, 0)));
    assertEquals(model.size(), seen.size(), where);
    KeyRecord out = new KeyRecord();
    for (Map.Entry<ByteBuffer, Val> e : model.entrySet()) {
      assertEquals(e.getValue().seqno, seen.get(e.getKey()).seqno(), where);
      assertTrue(trie.get(e.getKey().array(), out), where);
      assertSame(e.getValue(), out, where);
    }
  }

  private static void assertSame(Val want, KeyRecord got, String where) {
    assertEquals(want.seqno, got.seqno, where);
    assertEquals(want.docSize, got.docSize, where);
    assertEquals(want.hint, got.hint, where);
    assertEquals(want.expiry, got.expiry, where);
    assertFalse(got.tombstone, where);
  }

  /** Keys of 0 to 40 bytes: their length varies with the id, so records pad differently. */
  private static byte[] key(int id, Random rnd) {
    int len = id % 41;
    byte[] k = new byte[Math.max(len, 4)];
    ByteBuffer.wrap(k).putInt(id);
    for (int i = 4; i < k.length; i++) k[i] = (byte) (id * 31 + i);
    return id % 997 == 0 ? new byte[0] : k;
  }

  @Test
  void emptyAndLargestKeys_absentDeletes() {
    try (LazyTrie trie = new LazyTrie(16, 1, hasher("constant"), QUOTA, "trie-test")) {
      KeyRecord out = new KeyRecord();
      byte[] empty = new byte[0];
      byte[] big = new byte[64 * 1024];
      new Random(1).nextBytes(big);
      byte[] bigToo = big.clone();
      bigToo[bigToo.length - 1] ^= 1;
      assertFalse(trie.delete(empty, out));
      assertFalse(trie.put(empty, 1, 10, 100, 0, 0, out));
      assertFalse(trie.put(big, 2, 20, 200, 0, 0, out));
      assertFalse(trie.put(bigToo, 3, 30, 300, 0, 0, out));
      assertTrue(trie.get(big, out));
      assertEquals(2, out.seqno);
      assertTrue(trie.get(bigToo, out));
      assertEquals(3, out.seqno);
      assertFalse(trie.delete(new byte[] {0}, out), "absent key under the same hash");
      assertTrue(trie.put(empty, 4, 40, 400, 0, 0, out));
      assertEquals(1, out.seqno);
      assertEquals(3, trie.size());
      LazyTrie.Shape shape = trie.checkInvariants();
      assertEquals(3, shape.records);
      assertTrue(trie.delete(big, out));
      assertEquals(2, out.seqno);
      assertFalse(trie.get(big, out));
      trie.publishRetired();
      trie.checkInvariants();
    }
  }

  @Test
  void listPastSluggishness_atFullDepthOnly() {
    // two hashes, s=1: every list that holds both must be at the last depth
    try (LazyTrie trie = new LazyTrie(16, 1, k -> (k[0] & 1) == 0 ? 0x10L : 0x11L, QUOTA, "t")) {
      for (int i = 0; i < 50; i++) trie.put(new byte[] {(byte) i}, i + 1, 1, 1, 0, 0, null);
      LazyTrie.Shape shape = trie.checkInvariants();
      assertEquals(15, shape.maxDepth, "the two hashes differ only in the last 4-bit character");
      assertEquals(1, shape.maxListHashes);
      for (int i = 0; i < 50; i += 2) trie.delete(new byte[] {(byte) i}, null);
      trie.publishRetired();
      shape = trie.checkInvariants();
      assertEquals(0, shape.maxDepth, "one hash left: the path collapsed into the root");
      assertEquals(1, shape.nodes);
    }
  }

  /** A damaged checkpoint page is reported by the load's walk; it never crashes the JVM. */
  @Test
  void damagedCheckpoint_isReported() {
    Map<Long, byte[]> file = new HashMap<>();
    Map<ByteBuffer, Val> model = new HashMap<>();
    try (LazyTrie trie = new LazyTrie(16, 2, hasher("xxh64"), QUOTA, "trie-test")) {
      Random rnd = new Random(9);
      for (int i = 0; i < 2000; i++) {
        byte[] k = key(i, rnd);
        trie.put(k, i + 1, 10, 0, 0, 0, null);
        model.put(ByteBuffer.wrap(k), new Val(i + 1, 10, 0, 0, 0));
      }
      checkpointAndLoad(trie, file, model, "intact");
      long top = trie.space().top();
      for (long bad : new long[] {top + 64, 4, -8 & ~1L, TrieSpace.FIRST | 1}) {
        byte[] page0 = file.get(0L).clone();
        // the root's first child slot (root at FIRST, slots after its 8-byte header)
        ByteBuffer.wrap(page0)
            .order(java.nio.ByteOrder.nativeOrder())
            .putLong((int) TrieSpace.FIRST + 8, bad);
        try (LazyTrie loaded = new LazyTrie(16, 2, hasher("xxh64"), QUOTA, "trie-load")) {
          loaded.beginLoad(top);
          for (long p = 0; p < trie.space().pages(); p++) {
            loaded.space().loadPage(p, p == 0 ? page0 : file.get(p), 0);
          }
          assertThrows(IllegalStateException.class, () -> loaded.finishLoad(model.size()));
        }
      }
    }
  }

  @Test
  void useAfterClose_throws() {
    LazyTrie trie = new LazyTrie(256, 16, KeyHasher.xxh64(1), QUOTA, "t");
    trie.put(new byte[] {1}, 1, 1, 1, 0, 0, null);
    trie.close();
    assertThrows(ClosedException.class, () -> trie.get(new byte[] {1}, new KeyRecord()));
    assertThrows(ClosedException.class, () -> trie.put(new byte[] {1}, 2, 1, 1, 0, 0, null));
    trie.close();
  }

  /**
   * Readers race one writer that splits and merges paths (s=1, b=16: every insert and delete
   * reshapes), with freed memory poisoned by the debug allocator. Keys 0..999 are never deleted and
   * must always be found with a seqno the writer gave them; the other keys come and go, and a
   * reader that finds one must see a record the writer wrote for that key.
   */
  @Test
  void readers_acrossSplitsAndMerges() throws Exception {
    try (LazyTrie trie = new LazyTrie(16, 1, KeyHasher.xxh64(7), QUOTA, "t")) {
      int stable = 1000;
      int churn = 20_000;
      for (int i = 0; i < stable; i++) trie.put(intKey(i), i, i, i, 0, 0, null);
      trie.publishRetired();
      int growths = trie.space().growths();
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> readers = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        int id = t;
        Thread r =
            new Thread(
                () -> {
                  Random rnd = new Random(id);
                  KeyRecord out = new KeyRecord();
                  try {
                    while (!stop.get()) {
                      int k = rnd.nextInt(stable + churn);
                      boolean found = trie.get(intKey(k), out);
                      if (k < stable && !found)
                        throw new AssertionError("stable key " + k + " lost");
                      // the writer gives key k seqnos congruent to k modulo (stable + churn)
                      if (found && out.seqno % (stable + churn) != k) {
                        throw new AssertionError("key " + k + " read seqno " + out.seqno);
                      }
                    }
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                });
        r.start();
        readers.add(r);
      }
      Random rnd = new Random(42);
      long round = 0;
      for (int op = 0; op < 100_000 && failure.get() == null; op++) {
        int k = stable + rnd.nextInt(churn);
        if (rnd.nextBoolean()) {
          round++;
          trie.put(intKey(k), round * (stable + churn) + k, 1, 1, 0, 0, null);
        } else {
          trie.delete(intKey(k), null);
        }
        if (op % 64 == 0) trie.publishRetired();
        if (op % 997
            == 0) { // stable keys are rewritten too: their lists are replaced under readers
          int s = rnd.nextInt(stable);
          round++;
          trie.put(intKey(s), round * (stable + churn) + s, 1, 1, 0, 0, null);
        }
      }
      stop.set(true);
      for (Thread r : readers) r.join();
      if (failure.get() != null) throw new AssertionError(failure.get());
      assertTrue(
          trie.space().growths() > growths,
          "the space moved to a larger block while the readers ran (old block retired under them)");
      trie.publishRetired();
      trie.checkInvariants();
    }
  }

  private static byte[] intKey(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  /**
   * The expiry sweep's walk: the records under consecutive root slot ranges are every record once,
   * and with {@code expiringOnly} just those with an expiry.
   */
  @Test
  void recordsUnderRootSlotRanges_coverTheTrieOnce() {
    try (LazyTrie trie = new LazyTrie(16, 2, KeyHasher.xxh64(3), QUOTA, "t")) {
      for (int i = 0; i < 3000; i++) {
        byte[] k = ByteBuffer.allocate(4).putInt(i).array();
        trie.put(k, i + 1, 10, 0, i % 3 == 0 ? 5_000 + i : 0, 0, null);
      }
      Map<ByteBuffer, Long> all = new HashMap<>(), expiring = new HashMap<>();
      for (int from = 0; from < 16; from += 5) {
        int to = Math.min(16, from + 5);
        trie.forEachUnder(
            from, to, false, r -> assertNull(all.put(ByteBuffer.wrap(r.key), r.seqno), "twice"));
        trie.forEachUnder(
            from, to, true, r -> assertNull(expiring.put(ByteBuffer.wrap(r.key), r.expiry)));
      }
      assertEquals(3000, all.size());
      assertEquals(1000, expiring.size());
      for (Map.Entry<ByteBuffer, Long> e : expiring.entrySet()) {
        assertEquals(5_000 + e.getKey().getInt(0), e.getValue());
      }
      assertThrows(IllegalArgumentException.class, () -> trie.forEachUnder(3, 17, false, r -> {}));
      assertThrows(IllegalArgumentException.class, () -> trie.forEachUnder(4, 3, false, r -> {}));
    }
  }

  @Test
  void badConfiguration_isRefused() {
    assertThrows(RuntimeException.class, () -> new LazyTrie(3, 1, KeyHasher.xxh64(1), QUOTA, "t"));
    assertThrows(
        RuntimeException.class, () -> new LazyTrie(512, 1, KeyHasher.xxh64(1), QUOTA, "t"));
    assertThrows(RuntimeException.class, () -> new LazyTrie(16, 0, KeyHasher.xxh64(1), QUOTA, "t"));
  }
}
