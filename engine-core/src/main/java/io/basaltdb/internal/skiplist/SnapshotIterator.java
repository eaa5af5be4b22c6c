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
 * <p>Thread-safety: not thread-safe; one thread at a time. Using it after {@link #close()}, after
 * its snapshot is closed, or after the skiplist is closed throws {@link ClosedException}.
 */
public final class SnapshotIterator implements AutoCloseable {
  private final SkipList list;
  private final Snapshot snapshot;
  private final long sn;

  /** The visible version the iterator is on, or 0 when not positioned. */
  private long cur;

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
      long last = list.findLast();
      if (last == list.head) {
        cur = 0;
        return;
      }
      long first = list.findFirstAtOrAfter(null, Node.keyAddr(last), Node.keyLen(last));
      long v = SkipList.decisiveVersion(first, sn);
      if (v != 0 && Node.visibleAt(v, sn)) {
        cur = v;
      } else {
        positionBefore(last);
      }
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
      positionBefore(cur);
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

  @Override
  public void close() {
    closed = true;
    cur = 0;
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

  /** To the last key before {@code bound}'s key with a visible version. */
  private void positionBefore(long bound) {
    long b = bound;
    while (true) {
      long pred = list.findPredecessor(null, Node.keyAddr(b), Node.keyLen(b));
      if (pred == list.head) {
        cur = 0;
        return;
      }
      long first = list.findFirstAtOrAfter(null, Node.keyAddr(pred), Node.keyLen(pred));
      long v = first != 0 && Keys.sameKey(first, pred) ? SkipList.decisiveVersion(first, sn) : 0;
      if (v != 0 && Node.visibleAt(v, sn)) {
        cur = v;
        return;
      }
      b = pred;
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
