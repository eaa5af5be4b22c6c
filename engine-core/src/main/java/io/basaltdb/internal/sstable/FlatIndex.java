package io.basaltdb.internal.sstable;

import io.basaltdb.internal.memory.Mem;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * A table's decoded index block as one flat array of bytes, the form the block cache holds: binary
 * search reads it in place (on the heap or off it, through {@link Mem}'s {@code (base, address)}
 * addressing) with no per-entry objects. Built from a checked index block by {@link #build}; never
 * written to disk, so its layout is private to this class and in native byte order:
 *
 * <pre>
 *   int count, int 0
 *   long blockOffset[count]
 *   int  blockSize[count]
 *   int  keyStart[count + 1]     separator i is bytes [keyStart[i], keyStart[i + 1]) of this array
 *   separators, back to back
 * </pre>
 *
 * <p>Thread-safety: stateless; a flat index is immutable once built.
 */
final class FlatIndex {
  private static final int HEADER = 8;

  private FlatIndex() {}

  static byte[] build(List<byte[]> separators, long[] offsets, int[] sizes) {
    int n = separators.size();
    long keyBytes = 0;
    for (byte[] s : separators) keyBytes += s.length;
    long total = HEADER + 16L * n + 4 + keyBytes;
    if (total > Integer.MAX_VALUE - 16)
      throw new IllegalStateException("table index of " + total + " bytes");
    ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.nativeOrder());
    b.putInt(n).putInt(0);
    for (int i = 0; i < n; i++) b.putLong(offsets[i]);
    for (int i = 0; i < n; i++) b.putInt(sizes[i]);
    int keyStart = HEADER + 16 * n + 4;
    for (int i = 0; i <= n; i++) {
      b.putInt(keyStart);
      if (i < n) keyStart += separators.get(i).length;
    }
    for (byte[] s : separators) b.put(s);
    return b.array();
  }

  static int count(Object base, long a) {
    return Mem.lpInt(base, a);
  }

  static long blockOffset(Object base, long a, int i) {
    return Mem.lpLong(base, a + HEADER + 8L * i);
  }

  static int blockSize(Object base, long a, int i) {
    return Mem.lpInt(base, a + HEADER + 8L * count(base, a) + 4L * i);
  }

  private static int keyStart(Object base, long a, int n, int i) {
    return Mem.lpInt(base, a + HEADER + 12L * n + 4L * i);
  }

  /** Index of the first block whose separator is at or after {@code key}; count if none. */
  static int find(Object base, long a, byte[] key) {
    int n = count(base, a);
    int lo = 0;
    int hi = n;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      int from = keyStart(base, a, n, mid);
      int len = keyStart(base, a, n, mid + 1) - from;
      if (compare(base, a + from, len, key) < 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Unsigned lexicographic order of the {@code len} bytes at {@code (base, at)} against {@code
   * key}.
   */
  static int compare(Object base, long at, int len, byte[] key) {
    return Mem.compareUnsigned(base, at, len, key);
  }
}
