package io.basaltdb.internal.engine.write;

import io.basaltdb.internal.engine.writecache.Batch;
import java.util.Arrays;

/**
 * Puts a batch's operations in store key order (keyspace, then key, unsigned) with a primitive
 * sort, for a batch that skips the WAL ({@link Flusher#sortedEntries}): no key is copied or boxed
 * to be compared. Operations are packed into longs, a 4-byte key prefix above the operation's
 * index, and sorted with {@link Arrays#sort(long[])}; a run of equal prefixes is sorted again on
 * the next four bytes (most significant digit first), and keys equal in every byte they have are
 * ordered shorter first, then by index. Equal keys end up adjacent in operation order, so the
 * newest is the last of its run.
 */
public final class BatchOrder {
  private BatchOrder() {}

  /**
   * The indexes of {@code b}'s operations that no later operation of the batch overwrites (the
   * newest write of each keyspace and key), in store key order.
   */
  public static int[] newestInKeyOrder(Batch b) {
    int n = b.count;
    int[] ops = new int[n];
    for (int i = 0; i < n; i++) ops[i] = i;
    sort(b, ops);
    int kept = 0;
    for (int j = 0; j < n; j++) {
      if (j + 1 < n && sameKey(b, ops[j], ops[j + 1])) continue; // a newer write follows
      ops[kept++] = ops[j];
    }
    return kept == n ? ops : Arrays.copyOf(ops, kept);
  }

  /**
   * The indexes of {@code b}'s operations {@code ops} (changed in place) in store key order, equal
   * keys in operation order.
   */
  static void sort(Batch b, int[] ops) {
    int n = ops.length;
    if (n < 2 || ascending(b, ops)) return;
    int first = b.keyspaces[ops[0]];
    boolean oneKeyspace = true;
    for (int i : ops) {
      if (b.keyspaces[i] != first) {
        oneKeyspace = false;
        break;
      }
    }
    if (oneKeyspace) {
      sortKeys(b, ops, 0, n, 0);
      return;
    }
    long[] packed = new long[n];
    for (int j = 0; j < n; j++) packed[j] = (long) b.keyspaces[ops[j]] << 32 | ops[j];
    Arrays.sort(packed); // keyspace ids are never negative
    for (int j = 0; j < n; j++) ops[j] = (int) packed[j];
    for (int j = 0; j < n; ) {
      int k = j + 1;
      while (k < n && packed[k] >>> 32 == packed[j] >>> 32) k++;
      sortKeys(b, ops, j, k, 0);
      j = k;
    }
  }

  /**
   * Whether {@code ops} are already in strictly ascending store key order (a {@link
   * io.basaltdb.BulkLoad} chunk is): one pass over the keys in order, which stops at the first
   * descent.
   */
  private static boolean ascending(Batch b, int[] ops) {
    byte[] d = b.data();
    for (int j = 1; j < ops.length; j++) {
      int p = ops[j - 1], i = ops[j];
      int c = Integer.compare(b.keyspaces[p], b.keyspaces[i]);
      if (c == 0) {
        int kp = b.keyOffset(p), ki = b.keyOffset(i);
        c = Arrays.compareUnsigned(d, kp, kp + b.keyLength(p), d, ki, ki + b.keyLength(i));
      }
      if (c >= 0) return false;
    }
    return true;
  }

  /** Whether operations {@code i} and {@code j} of {@code b} write the same keyspace and key. */
  static boolean sameKey(Batch b, int i, int j) {
    if (b.keyspaces[i] != b.keyspaces[j]) return false;
    byte[] d = b.data();
    int ki = b.keyOffset(i), kj = b.keyOffset(j), len = b.keyLength(i);
    return len == b.keyLength(j) && Arrays.equals(d, ki, ki + len, d, kj, kj + len);
  }

  /**
   * Prefix passes before a run of equal prefixes is sorted by comparisons instead (keys sharing
   * more than 64 bytes): bounds the recursion for keys of up to 64 KiB.
   */
  private static final int MAX_PASSES = 16;

  /** Runs this short or shorter are sorted by comparisons. */
  private static final int SMALL_RUN = 12;

  /** Sorts {@code ops[from, to)}, whose keys agree in their first {@code depth} bytes. */
  private static void sortKeys(Batch b, int[] ops, int from, int to, int depth) {
    int m = to - from;
    if (m < 2) return;
    if (m <= SMALL_RUN || depth >= 4 * MAX_PASSES) {
      compareSort(b, ops, from, to);
      return;
    }
    int maxLength = 0;
    for (int j = from; j < to; j++) maxLength = Math.max(maxLength, b.keyLength(ops[j]));
    long[] packed = new long[m];
    if (depth >= maxLength) {
      // Equal in every byte each has: the shorter is the lesser key; equal keys by index.
      for (int j = 0; j < m; j++) {
        int i = ops[from + j];
        packed[j] = (long) b.keyLength(i) << 32 | i;
      }
      Arrays.sort(packed);
      for (int j = 0; j < m; j++) ops[from + j] = (int) packed[j];
      return;
    }
    byte[] d = b.data();
    for (int j = 0; j < m; j++) {
      int i = ops[from + j];
      // The flip of the sign bit makes the signed sort order the prefixes unsigned.
      packed[j] =
          (long) (prefix(d, b.keyOffset(i), b.keyLength(i), depth) ^ Integer.MIN_VALUE) << 32 | i;
    }
    Arrays.sort(packed);
    for (int j = 0; j < m; j++) ops[from + j] = (int) packed[j];
    for (int j = 0; j < m; ) {
      int k = j + 1;
      while (k < m && packed[k] >>> 32 == packed[j] >>> 32) k++;
      if (k - j > 1) sortKeys(b, ops, from + j, from + k, depth + 4);
      j = k;
    }
  }

  /**
   * Sorts {@code ops[from, to)} (one keyspace) by key, unsigned, then by index: an insertion sort
   * for a short run, else a merge sort of boxed indexes.
   */
  private static void compareSort(Batch b, int[] ops, int from, int to) {
    byte[] d = b.data();
    java.util.Comparator<Integer> byKey =
        (x, y) -> {
          int kx = b.keyOffset(x), ky = b.keyOffset(y);
          int c = Arrays.compareUnsigned(d, kx, kx + b.keyLength(x), d, ky, ky + b.keyLength(y));
          return c != 0 ? c : Integer.compare(x, y);
        };
    if (to - from <= SMALL_RUN) {
      for (int j = from + 1; j < to; j++) {
        int v = ops[j];
        int k = j - 1;
        while (k >= from && byKey.compare(ops[k], v) > 0) {
          ops[k + 1] = ops[k];
          k--;
        }
        ops[k + 1] = v;
      }
      return;
    }
    Integer[] boxed = new Integer[to - from];
    for (int j = from; j < to; j++) boxed[j - from] = ops[j];
    Arrays.sort(boxed, byKey);
    for (int j = from; j < to; j++) ops[j] = boxed[j - from];
  }

  /** Bytes {@code [depth, depth + 4)} of a key of {@code len} bytes at {@code off}, zero-padded. */
  private static int prefix(byte[] d, int off, int len, int depth) {
    int p = 0;
    for (int i = 0; i < 4; i++) {
      int at = depth + i;
      p = p << 8 | (at < len ? d[off + at] & 0xFF : 0);
    }
    return p;
  }
}
