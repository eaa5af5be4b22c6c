package io.basaltdb.internal.skiplist;

import io.basaltdb.internal.memory.Mem;

/**
 * Unsigned lexicographic comparison of a search key with a node's key. A search key is addressed as
 * {@code (base, offset, length)}: base null for native memory, otherwise a {@code byte[]} with
 * offset counted from {@link Mem#ARRAY_BASE}, so one loop serves heap and off-heap keys. Eight
 * bytes are compared at a time as big-endian longs.
 *
 * <p>Thread-safety: stateless; the caller holds an access token so the node cannot be freed.
 */
final class Keys {
  private Keys() {}

  /**
   * The first 8 bytes of a key, zero-padded, as a big-endian long. Comparing two prefixes unsigned
   * orders the keys whenever the prefixes differ; equal prefixes need the full comparison.
   */
  static long prefix(Object base, long offset, int len) {
    if (len >= 8) {
      return Mem.lpLongBE(base, offset);
    }
    long p = 0;
    for (int i = 0; i < len; i++) {
      p |= (long) Mem.lpUnsignedByte(base, offset + i) << (56 - 8 * i);
    }
    return p;
  }

  /**
   * Negative, zero or positive as the search key sorts before, equal to or after the node's key;
   * {@code prefix} is {@link #prefix} of the search key.
   */
  static int compare(Object base, long offset, int len, long prefix, long node) {
    long nodePrefix = Node.prefix(node);
    if (prefix != nodePrefix) {
      return Long.compareUnsigned(prefix, nodePrefix);
    }
    return compareFull(base, offset, len, node);
  }

  /** As {@link #compare(Object, long, int, long, long)}, computing the search key's prefix. */
  static int compare(Object base, long offset, int len, long node) {
    return compare(base, offset, len, prefix(base, offset, len), node);
  }

  private static int compareFull(Object base, long offset, int len, long node) {
    long nodeKey = Node.keyAddr(node);
    int nodeLen = Node.keyLen(node);
    int min = Math.min(len, nodeLen);
    int i = 0;
    for (; i + 8 <= min; i += 8) {
      long a = Mem.lpLongBE(base, offset + i);
      long b = Mem.lpLongBE(null, nodeKey + i);
      if (a != b) {
        return Long.compareUnsigned(a, b);
      }
    }
    for (; i < min; i++) {
      int a = Mem.lpUnsignedByte(base, offset + i);
      int b = Mem.lpUnsignedByte(null, nodeKey + i);
      if (a != b) {
        return a - b;
      }
    }
    return len - nodeLen;
  }

  /** Compares the keys of two nodes. */
  static int compareNodes(long a, long b) {
    return compare(null, Node.keyAddr(a), Node.keyLen(a), Node.prefix(a), b);
  }

  static boolean sameKey(long a, long b) {
    return Node.prefix(a) == Node.prefix(b)
        && Node.keyLen(a) == Node.keyLen(b)
        && compareNodes(a, b) == 0;
  }
}
