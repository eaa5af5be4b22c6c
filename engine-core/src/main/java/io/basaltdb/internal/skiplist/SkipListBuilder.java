package io.basaltdb.internal.skiplist;

import io.basaltdb.internal.memory.Mem;

/**
 * Nitro's bottom-up build (seed 001 section 5.2): builds one segment of a skiplist from items in
 * strictly increasing key order in O(n), without a search or a CAS. A level buffer holds each
 * level's last node; a node of height h becomes the successor of the buffer's nodes at levels 0 to
 * h-1 and takes their place. Segments built on several threads from consecutive key ranges are
 * joined in key order by {@link SkipList#load}, which publishes them.
 *
 * <p>Nodes are born in the list's current term, dead at none, with finished towers, as if each had
 * been inserted by a put in that term. Nothing is visible before {@link SkipList#load}: a builder's
 * nodes are reachable only from it.
 *
 * <p>Thread-safety: one builder per thread; builders of one list may run at once. A builder not
 * loaded must be {@link Segment#discard discarded}, or its nodes leak.
 */
public final class SkipListBuilder {
  private final SkipList list;
  private final long term;
  private final Segment segment = new Segment();

  SkipListBuilder(SkipList list) {
    this.list = list;
    this.term = list.currentTerm();
  }

  /**
   * Appends {@code key[koff, koff+klen)} with {@code value[voff, voff+vlen)}; the key must sort
   * after the previous one.
   *
   * @throws IllegalArgumentException if it does not (nothing is added)
   * @throws io.basaltdb.InvalidArgumentException if the key or the value is over the list's limits
   *     (nothing is added)
   * @throws io.basaltdb.MemoryLimitException if the list's allocator cannot serve the node (nothing
   *     is added)
   */
  public void add(byte[] key, int koff, int klen, byte[] value, int voff, int vlen) {
    Segment g = segment;
    if (g.built) throw new IllegalStateException("the segment is finished");
    long prev = g.last[0];
    if (prev != 0 && Keys.compare(key, Mem.ARRAY_BASE + koff, klen, prev) <= 0) {
      throw new IllegalArgumentException(
          "keys out of order: a key of " + klen + " bytes does not sort after the one before it");
    }
    if (klen > SkipList.MAX_KEY_SIZE || vlen > list.config.maxValueSize()) {
      throw new io.basaltdb.InvalidArgumentException(
          "an item of a "
              + klen
              + "-byte key and a "
              + vlen
              + "-byte value is over"
              + " the list's limits ("
              + SkipList.MAX_KEY_SIZE
              + " and "
              + list.config.maxValueSize()
              + " bytes)");
    }
    list.checkOpen();
    int height = SkipList.randomHeight();
    long node = list.allocator.allocate(Node.size(height, klen, vlen), Node.arena(height));
    Node.initBuilt(node, height, klen, vlen, term);
    long keyAddr = Node.keyAddr(node);
    Mem.copyFromArray(key, koff, keyAddr, klen);
    Mem.copyFromArray(value, voff, keyAddr + klen, vlen);
    Node.setPrefix(node, Keys.prefix(key, Mem.ARRAY_BASE + koff, klen));
    long link = Node.link(node);
    for (int l = 0; l < height; l++) {
      Node.spNext(node, l, 0);
      if (g.last[l] == 0) g.first[l] = node;
      else Node.spNext(g.last[l], l, link);
      g.last[l] = node;
      g.levels[l]++;
    }
    if (height > g.height) g.height = height;
    g.items++;
    g.userBytes += klen + vlen;
  }

  /** The segment built so far, for {@link SkipList#load}; the builder takes no more items. */
  public Segment finish() {
    segment.built = true;
    return segment;
  }

  /** Discards the items added so far (a failed restore). */
  public void discard() {
    segment.discard(list);
  }

  /**
   * One built segment: each level's first and last node, and its counts. Joined to the segments
   * around it by {@link SkipList#load}; freed by {@link #discard} if never loaded.
   */
  public static final class Segment {
    final long[] first = new long[SkipList.MAX_HEIGHT];
    final long[] last = new long[SkipList.MAX_HEIGHT];
    final long[] levels = new long[SkipList.MAX_HEIGHT];
    int height;
    long items;
    long userBytes;
    boolean built;
    boolean loaded;

    public long items() {
      return items;
    }

    /** Frees every node (a segment that will not be loaded); idempotent. */
    void discard(SkipList list) {
      if (loaded) throw new IllegalStateException("a loaded segment belongs to the list");
      long n = first[0];
      while (n != 0) {
        long next =
            Node.ptr(Node.lvNext(n, 0)); // built on this thread, or joined before: plain would do
        list.allocator.free(n, Node.size(n), Node.arena(Node.height(n)));
        n = next;
      }
      java.util.Arrays.fill(first, 0);
      java.util.Arrays.fill(last, 0);
      java.util.Arrays.fill(levels, 0);
      height = 0;
      items = 0;
      userBytes = 0;
    }
  }
}
