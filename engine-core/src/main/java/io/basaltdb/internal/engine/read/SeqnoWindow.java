package io.basaltdb.internal.engine.read;

/**
 * The {@code capacity} entries with the lowest seqnos offered to it, as a bounded max-heap on
 * seqno: a change feed's window over write cache entries that come in key order ({@link
 * EngineFeed}). An entry above the heap's top once it is full is refused without a copy of its key,
 * so a pass over many entries costs a comparison each and a key copy only for the few that enter.
 * {@link #sort()} then orders what it holds by seqno, ascending.
 *
 * <p>Thread-safety: one thread.
 */
final class SeqnoWindow {
  private final long[] seqnos;
  private final byte[][] keys;
  private final boolean[] flags;
  private int size;

  SeqnoWindow(int capacity) {
    seqnos = new long[capacity];
    keys = new byte[capacity][];
    flags = new boolean[capacity];
  }

  /**
   * Whether an entry with {@code seqno} would enter (the heap has room, or it is below the top).
   */
  boolean admits(long seqno) {
    return size < seqnos.length || seqno < seqnos[0];
  }

  /** Adds an entry {@link #admits} let in, evicting the highest seqno if full. */
  void add(long seqno, byte[] key, boolean flag) {
    if (size < seqnos.length) {
      int i = size++;
      while (i > 0) { // sift up
        int parent = (i - 1) >>> 1;
        if (seqnos[parent] >= seqno) break;
        set(i, seqnos[parent], keys[parent], flags[parent]);
        i = parent;
      }
      set(i, seqno, key, flag);
    } else {
      siftDown(0, size, seqno, key, flag); // replaces the top
    }
  }

  int size() {
    return size;
  }

  /** Orders the entries by seqno, ascending (a heapsort in place); the heap is spent after. */
  void sort() {
    for (int end = size - 1; end > 0; end--) {
      long s = seqnos[end];
      byte[] k = keys[end];
      boolean f = flags[end];
      set(end, seqnos[0], keys[0], flags[0]);
      siftDown(0, end, s, k, f);
    }
  }

  long seqno(int i) {
    return seqnos[i];
  }

  /** The key at {@code i}, handed over: the window keeps no reference to it. */
  byte[] takeKey(int i) {
    byte[] k = keys[i];
    keys[i] = null;
    return k;
  }

  boolean flag(int i) {
    return flags[i];
  }

  private void siftDown(int i, int n, long seqno, byte[] key, boolean flag) {
    while (true) {
      int c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && seqnos[c + 1] > seqnos[c]) c++;
      if (seqnos[c] <= seqno) break;
      set(i, seqnos[c], keys[c], flags[c]);
      i = c;
    }
    set(i, seqno, key, flag);
  }

  private void set(int i, long seqno, byte[] key, boolean flag) {
    seqnos[i] = seqno;
    keys[i] = key;
    flags[i] = flag;
  }
}
