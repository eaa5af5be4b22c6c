package io.basaltdb.internal.engine.read;

import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;

/**
 * Merges sorted sources into one stream of keys, newest version first (LevelDB's {@code
 * table/merger.h}): a heap over the sources, ordered by key, then by seqno descending, then by
 * source position. The rules of which version a reader sees are written here once and serve cursors
 * and compaction alike (garbage collection and the change feed will use them too):
 *
 * <ol>
 *   <li>Newest wins: of the versions of one key, the one with the highest seqno is the key's
 *       version; each older one is shadowed and handed to {@link Discards} (compaction counts it as
 *       garbage).
 *   <li>Tombstones: a version whose expiry has passed at the merge's {@code now} counts as one (an
 *       expiry is a deletion nobody wrote; Magma section 7.1). With {@code dropTombstones}, a key
 *       whose newest version is a tombstone is skipped, and the tombstone handed to {@link
 *       Discards} as well (a cursor hides deleted keys; a compaction into the bottom of the tree
 *       has nothing older left for the tombstone to hide). Without it the tombstone is the key's
 *       version (a compaction above data that it must still shadow).
 * </ol>
 *
 * A reverse merge (a descending cursor) orders the heap by key descending, its sources walking
 * backward; the versions of one key still come newest first and the rules are the same.
 *
 * <p>After {@link #next()} returns true, {@link #current()} is the source positioned on the key's
 * version; read what is needed from it before the next call.
 *
 * <p>Thread-safety: one thread at a time, as its sources.
 */
public final class MergingIterator implements AutoCloseable {
  /**
   * One sorted input: one version of each key, keys ascending (descending for a reverse merge,
   * whose sources' {@link #next} moves back).
   */
  public interface Source {
    boolean valid();

    /** The current key; the merge reads it often, so a source should not copy it per call. */
    byte[] key();

    long seqno();

    boolean tombstone();

    /** When the current version expires (ms since the epoch), 0 for never. */
    default long expiry() {
      return 0;
    }

    void next();

    void close();
  }

  /**
   * Receives each version the merge skips, with its source positioned on it. For each key, {@link
   * #newest} comes first, then the older versions newest first, then (a tombstone dropped) the
   * newest.
   */
  public interface Discards {
    void discarded(Source positioned);

    /** The newest version of the next key, before any of the key's versions is discarded. */
    default void newest(Source positioned) {}
  }

  private final List<? extends Source> sources;
  private final PriorityQueue<Source> heap;
  private final boolean dropTombstones;
  private final Discards discards;

  /** The instant expiries are judged at (ms since the epoch); 0: nothing has expired. */
  private final long now;

  /**
   * The source positioned on the current key's version, not yet advanced; null before and after.
   */
  private Source current;

  public MergingIterator(
      List<? extends Source> sources, boolean dropTombstones, Discards discards, long now) {
    this(sources, dropTombstones, discards, now, false);
  }

  /** As above; with {@code reverse}, keys descending over sources that walk backward. */
  public MergingIterator(
      List<? extends Source> sources,
      boolean dropTombstones,
      Discards discards,
      long now,
      boolean reverse) {
    this.now = now;
    this.sources = sources;
    this.dropTombstones = dropTombstones;
    this.discards = discards;
    this.heap =
        new PriorityQueue<>(
            Math.max(1, sources.size()), reverse ? this::compareReverse : this::compare);
    for (Source s : sources) {
      if (s.valid()) heap.add(s);
    }
  }

  private int compare(Source a, Source b) {
    int c = Arrays.compareUnsigned(a.key(), b.key());
    return c != 0 ? c : newestFirst(a, b);
  }

  /** As {@link #compare}, keys descending (a reverse merge). */
  private int compareReverse(Source a, Source b) {
    int c = Arrays.compareUnsigned(b.key(), a.key());
    return c != 0 ? c : newestFirst(a, b);
  }

  /** The versions of one key: seqno descending, then by source position. */
  private int newestFirst(Source a, Source b) {
    int c = Long.compare(b.seqno(), a.seqno());
    return c != 0 ? c : Integer.compare(indexOf(a), indexOf(b));
  }

  private int indexOf(Source s) {
    for (int i = 0; i < sources.size(); i++) {
      if (sources.get(i) == s) return i;
    }
    return -1;
  }

  /** Moves to the next key's version; false when every source is exhausted. */
  public boolean next() {
    if (current != null) {
      advance(current);
      current = null;
    }
    while (true) {
      Source top = heap.poll();
      if (top == null) return false;
      byte[] key = top.key();
      if (discards != null) discards.newest(top);
      while (!heap.isEmpty() && Arrays.equals(heap.peek().key(), key)) {
        Source shadowed = heap.poll();
        if (discards != null) discards.discarded(shadowed);
        advance(shadowed);
      }
      if (dropTombstones && deleted(top, now)) {
        if (discards != null) discards.discarded(top);
        advance(top);
        continue;
      }
      current = top;
      return true;
    }
  }

  /**
   * Whether {@code s}'s current version is a deletion at {@code now}: a tombstone, or expired at or
   * before it.
   */
  public static boolean deleted(Source s, long now) {
    if (s.tombstone()) return true;
    long e = s.expiry();
    return e != 0 && e <= now;
  }

  /** The instant this merge judges expiries at. */
  long now() {
    return now;
  }

  /** The source positioned on the current key's version. */
  public Source current() {
    if (current == null) throw new IllegalStateException("the merge is not on a key");
    return current;
  }

  private void advance(Source s) {
    s.next();
    if (s.valid()) heap.add(s);
  }

  @Override
  public void close() {
    for (Source s : sources) s.close();
  }
}
