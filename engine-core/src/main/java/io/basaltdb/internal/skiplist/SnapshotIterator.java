package io.basaltdb.internal.skiplist;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.Mem;
import java.util.NoSuchElementException;

/**
 * A cursor over the keys visible in one {@link Snapshot}, in key order, both ways (seed 001 section
 * 3.2). It yields the same sequence however many writes run concurrently.
 *
 * <p>Memory safety without pinning: the iterator enters the access barrier for each call and leaves
 * before returning, so a long or abandoned scan never holds back reclamation (Nitro refreshes the
 * token of a long iterator; here every call is a refresh). Between calls it keeps only the address
 * of its current node, which is visible to the snapshot it holds open and therefore is never
 * unlinked or freed (SkipList invariant 4).
 *
 * <p>Backward moves ({@link #seekLast}, {@link #seekBefore}, {@link #prev}): the list links forward
 * only, so a step back is a search from the top, as LevelDB's {@code Prev}: O(log n), where {@link
 * #next} is O(1). The search that lands on a key also finds the node before the key's newest
 * version; the iterator copies that node's key, and the next {@code prev} examines it directly, so
 * a backward walk costs one search (and one key copy) per key examined, keys with no version the
 * snapshot sees included. The copy stays right across calls: a key the snapshot sees was linked
 * before the snapshot and is never unlinked while it is open (SkipList invariant 4), so no key
 * between the copied one and the current one can ever be visible.
 *
 * <p>Thread-safety: not thread-safe; one thread at a time. Using it after {@link #close()}, after
 * its snapshot is closed, or after the skiplist is closed throws {@link ClosedException}.
 */
public final class SnapshotIterator implements AutoCloseable {
  private final SkipList list;
  private final Snapshot snapshot;
  private final long sn;

  /** The visible version the iterator is on, or 0 when not positioned. */
  private long cur;

  /** The node {@link #before} belongs to ({@link #cur} when a backward move landed there), or 0. */
  private long beforeOf;

  /**
   * For {@link #beforeOf}: the key of the node a search found just before the newest version of its
   * key (a heap copy), the next key a {@link #prev} examines; null if the search reached the head.
   */
  private byte[] before;

  private boolean closed;

  SnapshotIterator(SkipList list, Snapshot snapshot) {
    this.list = list;
    this.snapshot = snapshot;
    this.sn = snapshot.sn();
  }

  /** Positions on the first visible key. */
  public void seekFirst() {
    AccessBarrier.Session s = enter();
    try {
      // lv: pairs with the CAS that linked the successor, so its header and key are visible
      position(Node.ptr(Node.lvNext(list.head, 0)));
    } finally {
      list.barrier.exit(s);
    }
  }

  /** Positions on the first visible key at or after {@code key}. */
  public void seek(byte[] key) {
    SkipList.checkKey(key);
    AccessBarrier.Session s = enter();
    try {
      position(list.findFirstAtOrAfter(key, Mem.ARRAY_BASE, key.length));
    } finally {
      list.barrier.exit(s);
    }
  }

  /** Positions on the last visible key. */
  public void seekLast() {
    AccessBarrier.Session s = enter();
    try {
      positionAtOrBefore(list.findLast());
    } finally {
      list.barrier.exit(s);
    }
  }

  /** Positions on the last visible key strictly before {@code key}. */
  public void seekBefore(byte[] key) {
    SkipList.checkKey(key);
    AccessBarrier.Session s = enter();
    try {
      positionAtOrBefore(list.findPredecessor(key, Mem.ARRAY_BASE, key.length));
    } finally {
      list.barrier.exit(s);
    }
  }

  public boolean valid() {
    checkOpen();
    snapshot.checkUsable();
    return cur != 0;
  }

  /** Moves to the next visible key; the iterator becomes invalid past the last. */
  public void next() {
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      position(SkipList.skipVersions(cur));
    } finally {
      list.barrier.exit(s);
    }
  }

  /** Moves to the previous visible key; the iterator becomes invalid before the first. */
  public void prev() {
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      if (beforeOf != cur) {
        positionAtOrBefore(list.findPredecessor(null, Node.keyAddr(cur), Node.keyLen(cur)));
      } else if (before == null) {
        cur = 0;
      } else {
        positionAtOrBefore(before, Mem.ARRAY_BASE, before.length);
      }
    } finally {
      list.barrier.exit(s);
    }
  }

  public byte[] key() {
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      return SkipList.keyOf(cur);
    } finally {
      list.barrier.exit(s);
    }
  }

  public byte[] value() {
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      return SkipList.valueOf(cur);
    } finally {
      list.barrier.exit(s);
    }
  }

  /** Copies the current value into {@code out} if it fits; returns its length either way. */
  public int value(byte[] out) {
    if (out == null) throw new InvalidArgumentException("output buffer must not be null");
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      return SkipList.copyValue(cur, out);
    } finally {
      list.barrier.exit(s);
    }
  }

  /**
   * The first eight bytes of the current value as a big-endian long (a write cache entry's seqno),
   * read in place: 0 if the value is shorter.
   */
  public long valueLong() {
    AccessBarrier.Session s = enter();
    try {
      requireValid();
      return Node.valueLen(cur) < 8 ? 0 : Mem.lpLongBE(null, Node.valueAddr(cur));
    } finally {
      list.barrier.exit(s);
    }
  }

  @Override
  public void close() {
    closed = true;
    cur = 0;
    beforeOf = 0;
    before = null;
  }

  // ---- internals
  // ---------------------------------------------------------------------------------------

  /** From {@code node}, the newest version of some key, to the first key with a visible version. */
  private void position(long node) {
    while (node != 0) {
      long v = SkipList.decisiveVersion(node, sn);
      if (v != 0 && Node.visibleAt(v, sn)) {
        cur = v;
        return;
      }
      node = SkipList.skipVersions(node);
    }
    cur = 0;
  }

  /**
   * To the last key with a visible version at or before the key of {@code node} (the head: none), a
   * node a search found.
   */
  private void positionAtOrBefore(long node) {
    if (node == list.head) {
      cur = 0;
    } else {
      positionAtOrBefore(null, Node.keyAddr(node), Node.keyLen(node));
    }
  }

  /**
   * To the last key with a visible version at or before the key {@code (kb, ko, kl)}, a key with no
   * visible key between it and the bound of the move (one a search found just before the bound, or
   * {@link #before}). Each key examined costs one search, for the node before its newest version,
   * whose key is the next to examine.
   */
  private void positionAtOrBefore(Object kb, long ko, int kl) {
    while (true) {
      long pred = list.findPredecessor(kb, ko, kl);
      long first = list.firstAtOrAfter(pred, kb, ko, kl);
      long v =
          first != 0 && Keys.compare(kb, ko, kl, first) == 0
              ? SkipList.decisiveVersion(first, sn)
              : 0;
      if (v != 0 && Node.visibleAt(v, sn)) {
        cur = v;
        beforeOf = v;
        before = pred == list.head ? null : SkipList.keyOf(pred);
        return;
      }
      if (pred == list.head) {
        cur = 0;
        return;
      }
      kb = null; // pred is safe to read until the session ends
      ko = Node.keyAddr(pred);
      kl = Node.keyLen(pred);
    }
  }

  private AccessBarrier.Session enter() {
    checkOpen();
    AccessBarrier.Session s = list.barrier.enter();
    try {
      snapshot.checkUsable();
    } catch (RuntimeException e) {
      list.barrier.exit(s);
      throw e;
    }
    return s;
  }

  private void checkOpen() {
    if (closed) throw new ClosedException("iterator is closed; create a new one from the snapshot");
  }

  private void requireValid() {
    if (cur == 0)
      throw new NoSuchElementException("iterator is not positioned on a key; check valid() first");
  }
}
