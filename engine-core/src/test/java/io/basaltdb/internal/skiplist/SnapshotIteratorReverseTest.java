package io.basaltdb.internal.skiplist;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Backward moves of {@link SnapshotIterator} ({@code seekLast}, {@code seekBefore}, {@code prev})
 * against a {@code TreeMap} model of each snapshot: keys with many versions, deleted keys, keys
 * born after the snapshot, walks that turn around, and a walk while writers and the collector
 * unlink the versions no snapshot sees. A failure names its seed; {@code -Dbasalt.reverse.seed=N}
 * replays it.
 */
class SnapshotIteratorReverseTest {
  record Key(byte[] b) implements Comparable<Key> {
    @Override
    public int compareTo(Key o) {
      return Arrays.compareUnsigned(b, o.b);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && Arrays.equals(b, k.b);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(b);
    }

    @Override
    public String toString() {
      return Arrays.toString(b);
    }
  }

  /**
   * About 500 keys of 0-12 bytes over a small alphabet, many sharing 8-byte prefixes, the empty key
   * too.
   */
  static byte[] key(Random r) {
    if (r.nextInt(60) == 0) return new byte[0];
    byte[] k = new byte[r.nextBoolean() ? 1 + r.nextInt(3) : 9 + r.nextInt(4)];
    for (int i = 0; i < k.length; i++) k[i] = (byte) (i < 8 && k.length > 8 ? 'p' : r.nextInt(4));
    if (k.length > 8) k[k.length - 1] = (byte) (0xFC + r.nextInt(4));
    return k;
  }

  static long seed() {
    return Long.getLong("basalt.reverse.seed", new Random().nextLong());
  }

  @Test
  void backwardMoves_matchEachSnapshotsModel() {
    long seed = seed();
    Random r = new Random(seed);
    try (SkipList list = new SkipList(SkipListConfig.defaults().withMemoryQuota(64L << 20))) {
      TreeMap<Key, byte[]> model = new TreeMap<>();
      List<Snapshot> snaps = new ArrayList<>();
      List<TreeMap<Key, byte[]>> frozen = new ArrayList<>();
      try {
        for (int round = 0; round < 12; round++) {
          for (int i = 0; i < 150; i++) {
            byte[] k = key(r);
            if (r.nextInt(3) == 0) {
              list.delete(k);
              model.remove(new Key(k));
            } else {
              byte[] v = ("v" + round + "." + i).getBytes();
              list.put(k, v);
              model.put(new Key(k), v);
            }
          }
          if (round % 3 == 0) { // kept open: later rounds give its keys versions it must not see
            snaps.add(list.snapshot());
            frozen.add(new TreeMap<>(model));
          }
        }
        Snapshot last = list.snapshot();
        snaps.add(last);
        frozen.add(new TreeMap<>(model));
        for (int i = 0; i < 50; i++) list.put(key(r), "after".getBytes()); // seen by no snapshot
        for (int s = 0; s < snaps.size(); s++) {
          try (SnapshotIterator it = snaps.get(s).iterator()) {
            check(it, frozen.get(s), r, "seed " + seed + ", snapshot " + s);
          }
        }
      } finally {
        for (Snapshot s : snaps) s.close();
      }
    }
  }

  private static void check(SnapshotIterator it, TreeMap<Key, byte[]> m, Random r, String what) {
    // seekLast and prev all the way: the model backward.
    List<Key> back = new ArrayList<>();
    for (it.seekLast(); it.valid(); it.prev()) {
      Key k = new Key(it.key());
      assertArrayEquals(m.get(k), it.value(), what + ": value of " + k);
      back.add(k);
    }
    assertEquals(new ArrayList<>(m.descendingKeySet()), back, what + ": backward walk");
    assertThrows(NoSuchElementException.class, it::prev, what);
    // seekBefore: the greatest key strictly below the bound.
    for (int i = 0; i < 200; i++) {
      byte[] bound = key(r);
      it.seekBefore(bound);
      Key expect = m.lowerKey(new Key(bound));
      if (expect == null) {
        assertFalse(it.valid(), what + ": seekBefore " + Arrays.toString(bound));
      } else {
        assertTrue(it.valid(), what + ": seekBefore " + Arrays.toString(bound));
        assertEquals(expect, new Key(it.key()), what + ": seekBefore " + Arrays.toString(bound));
      }
    }
    // Walks that turn around: each step a next or a prev, from a seek either way.
    for (int walk = 0; walk < 30; walk++) {
      Key at;
      byte[] bound = key(r);
      if (r.nextBoolean()) {
        it.seek(bound);
        at = m.ceilingKey(new Key(bound));
      } else {
        it.seekBefore(bound);
        at = m.lowerKey(new Key(bound));
      }
      for (int step = 0; step < 20 && at != null; step++) {
        assertTrue(it.valid(), what);
        assertEquals(at, new Key(it.key()), what + ": walk " + walk + " step " + step);
        if (r.nextBoolean()) {
          it.next();
          at = m.higherKey(at);
        } else {
          it.prev();
          at = m.lowerKey(at);
        }
      }
      if (at == null) assertFalse(it.valid(), what + ": walk " + walk + " should have ended");
    }
  }

  @Test
  void emptyList_andBoundsBeyondEveryKey() {
    try (SkipList list = new SkipList(SkipListConfig.defaults().withMemoryQuota(16L << 20))) {
      try (Snapshot s = list.snapshot();
          SnapshotIterator it = s.iterator()) {
        it.seekLast();
        assertFalse(it.valid());
        it.seekBefore(new byte[] {5});
        assertFalse(it.valid());
      }
      list.put(new byte[] {1}, new byte[] {10});
      list.put(new byte[] {2}, new byte[] {20});
      list.delete(new byte[] {2});
      try (Snapshot s = list.snapshot();
          SnapshotIterator it = s.iterator()) {
        it.seekBefore(new byte[] {(byte) 0xFF, (byte) 0xFF});
        assertArrayEquals(new byte[] {1}, it.key()); // 2 is deleted
        it.seekBefore(new byte[] {1});
        assertFalse(it.valid());
        it.seekBefore(new byte[0]);
        assertFalse(it.valid());
        assertThrows(InvalidArgumentException.class, () -> it.seekBefore(null));
        it.close();
        assertThrows(ClosedException.class, it::seekLast);
        assertThrows(ClosedException.class, it::prev);
      }
    }
  }

  /**
   * The key a backward move remembers as the next to examine (the node before the current key's
   * versions) may be one the snapshot does not see, whose nodes are gone by the next {@code prev}:
   * the walk then goes on below it.
   */
  @Test
  void prev_afterTheRememberedKeyBeforeWasUnlinked() {
    try (SkipList list = new SkipList(SkipListConfig.defaults().withMemoryQuota(16L << 20))) {
      list.put(new byte[] {1}, new byte[] {10});
      list.put(new byte[] {3}, new byte[] {30});
      try (Snapshot s = list.snapshot();
          SnapshotIterator it = s.iterator()) {
        list.put(new byte[] {2}, new byte[] {20}); // after the snapshot: invisible to it
        it.seekLast();
        assertArrayEquals(new byte[] {3}, it.key()); // remembers key 2, the node before 3
        list.delete(new byte[] {2}); // born and killed in one term: unlinked at once
        list.put(new byte[] {0}, new byte[] {0}); // invisible too
        it.prev();
        assertArrayEquals(new byte[] {1}, it.key());
        assertArrayEquals(new byte[] {10}, it.value());
        it.prev();
        assertFalse(it.valid());
        it.seek(new byte[] {3}); // forward, then back: from the current key's own search
        it.prev();
        assertArrayEquals(new byte[] {1}, it.key());
        it.next();
        assertArrayEquals(new byte[] {3}, it.key());
      }
    }
  }

  /**
   * A snapshot walked backward again and again while a writer rewrites and deletes its keys and
   * takes snapshots of its own, so the collector unlinks and frees the versions nobody sees,
   * between and during the walk's calls: every walk is the snapshot's model. The writer makes a
   * fixed number of writes; the walks go on until it is done.
   */
  @Test
  void backwardWalk_whileWritersAndCollectorRun_seesItsSnapshot() throws Exception {
    long seed = seed();
    Random r = new Random(seed);
    SkipListConfig config =
        SkipListConfig.defaults()
            .withMemoryQuota(64L << 20)
            .withGcIntervalMillis(1)
            .withGcBacklog(16)
            .withRetireBatch(8);
    try (SkipList list = new SkipList(config)) {
      TreeMap<Key, byte[]> model = new TreeMap<>();
      for (int i = 0; i < 2000; i++) {
        byte[] k = key(r);
        if (r.nextInt(4) == 0) {
          list.delete(k);
          model.remove(new Key(k));
        } else {
          list.put(k, ("v" + i).getBytes());
          model.put(new Key(k), ("v" + i).getBytes());
        }
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Thread writer =
          new Thread(
              () -> {
                Random w = new Random(seed + 1);
                try {
                  for (int i = 0; i < 20_000 && !stop.get(); i++) {
                    byte[] k = key(w);
                    if (w.nextInt(3) == 0) list.delete(k);
                    else list.put(k, ("w" + i).getBytes());
                    if (i % 64 == 0) list.snapshot().close(); // lets the collector run
                  }
                } catch (Throwable t) {
                  failed.set(t);
                }
              });
      try (Snapshot s = list.snapshot();
          SnapshotIterator it = s.iterator()) {
        writer.start();
        try {
          List<Key> expect = new ArrayList<>(model.descendingKeySet());
          for (int pass = 0; pass < 5 || writer.isAlive(); pass++) {
            List<Key> back = new ArrayList<>();
            for (it.seekLast(); it.valid(); it.prev()) {
              Key k = new Key(it.key());
              assertArrayEquals(model.get(k), it.value(), "seed " + seed + ": value of " + k);
              back.add(k);
            }
            assertEquals(expect, back, "seed " + seed + ", pass " + pass);
          }
        } finally {
          stop.set(true);
          writer.join();
        }
      }
      if (failed.get() != null) throw new AssertionError("writer failed", failed.get());
    }
  }
}
