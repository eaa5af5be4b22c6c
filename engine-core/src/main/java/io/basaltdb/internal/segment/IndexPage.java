package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.CRC_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.CRC_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.ENTRY_CHILD_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.ENTRY_SEQNO_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.ENTRY_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_COUNT_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_FLAGS_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_FLAG_CHILD_LAST;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_FLAG_PARTIAL;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_LEVEL_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_RESERVED_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_SEGMENT_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_PAGE;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.memory.Mem;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * One page of a segment's seqno index (docs/format.md, "Index page"): entries {@code (firstSeqno,
 * child offset)} sorted by seqno, where a child is a data block at level 0 and a page one level
 * down above it. The writer keeps one of these per level as the level's in-memory tail page; the
 * reader decodes the pages it descends through. On disk a page takes {@code PAGE_HEADER_SIZE +
 * ENTRY_SIZE * count} bytes, at most the segment's page size.
 *
 * <p>Thread-safety: a tail page is owned by its writer; a decoded page is not changed after
 * decoding.
 */
final class IndexPage {
  final int level;

  /** PAGE_FLAG_* of a decoded page; 0 for a tail page. */
  final int flags;

  private final long[] seqnos;
  private final long[] children;
  private int count;

  IndexPage(int level, int capacity) {
    this(level, 0, new long[capacity], new long[capacity], 0);
  }

  private IndexPage(int level, int flags, long[] seqnos, long[] children, int count) {
    this.level = level;
    this.flags = flags;
    this.seqnos = seqnos;
    this.children = children;
    this.count = count;
  }

  /** Entries a page of {@code pageSize} bytes holds. */
  static int capacity(int pageSize) {
    return (pageSize - PAGE_HEADER_SIZE) / ENTRY_SIZE;
  }

  int count() {
    return count;
  }

  long seqno(int i) {
    return seqnos[i];
  }

  long child(int i) {
    return children[i];
  }

  boolean isFull() {
    return count == seqnos.length;
  }

  void add(long seqno, long child) {
    seqnos[count] = seqno;
    children[count++] = child;
  }

  void clear() {
    count = 0;
  }

  /** Index of the last entry whose seqno is at or below {@code seqno}, or -1. */
  int floor(long seqno) {
    int i = Arrays.binarySearch(seqnos, 0, count, seqno);
    return i >= 0 ? i : -i - 2;
  }

  /**
   * The page record of this page's entries followed, if {@code extraChild} is not 0, by the entry
   * {@code (extraSeqno, extraChild)}.
   */
  ByteBuffer encode(long segmentId, int pageFlags, long extraSeqno, long extraChild) {
    int n = count + (extraChild != 0 ? 1 : 0);
    byte[] b = new byte[PAGE_HEADER_SIZE + ENTRY_SIZE * n];
    b[TYPE_OFFSET] = TYPE_PAGE;
    b[PAGE_LEVEL_OFFSET] = (byte) level;
    b[PAGE_FLAGS_OFFSET] = (byte) pageFlags;
    SegmentFormat.putInt(b, PAGE_SEGMENT_OFFSET, (int) segmentId);
    SegmentFormat.putInt(b, PAGE_COUNT_OFFSET, n);
    for (int i = 0; i < n; i++) {
      int p = PAGE_HEADER_SIZE + ENTRY_SIZE * i;
      SegmentFormat.putLong(b, p + ENTRY_SEQNO_OFFSET, i < count ? seqnos[i] : extraSeqno);
      SegmentFormat.putInt(b, p + ENTRY_CHILD_OFFSET, (int) (i < count ? children[i] : extraChild));
    }
    SegmentFormat.putInt(b, CRC_OFFSET, SegmentFormat.crc(b, CRC_SIZE, b.length));
    return ByteBuffer.wrap(b);
  }

  /** Bytes of the page record starting at {@code b[off]}, from its header; -1 if not a page. */
  static int recordLength(byte[] b, int off) {
    if (b[off + TYPE_OFFSET] != TYPE_PAGE) {
      return -1;
    }
    int n = SegmentFormat.getInt(b, off + PAGE_COUNT_OFFSET);
    return n < 1 || n > capacity(SegmentOptions.MAX_PAGE_SIZE)
        ? -1
        : PAGE_HEADER_SIZE + ENTRY_SIZE * n;
  }

  /**
   * Decodes and checks the page at {@code b[off, off + avail)}, read from {@code file} at {@code
   * fileOffset}: its checksum, that it is a page of {@code level} (any level if negative) of this
   * segment, and that its entries are sorted and point before the page itself.
   */
  static IndexPage decode(
      byte[] b,
      int off,
      int avail,
      String file,
      long fileOffset,
      long segmentId,
      int level,
      int pageSize) {
    if (avail < PAGE_HEADER_SIZE) {
      throw new CorruptionException(file, fileOffset, "index page truncated");
    }
    int length = recordLength(b, off);
    if (length < 0 || length > avail || length > pageSize) {
      throw new CorruptionException(file, fileOffset, "not an index page");
    }
    if (SegmentFormat.getInt(b, off + CRC_OFFSET)
        != SegmentFormat.crc(b, off + CRC_SIZE, off + length)) {
      throw new CorruptionException(file, fileOffset, "index page checksum mismatch");
    }
    int pageLevel = b[off + PAGE_LEVEL_OFFSET];
    int pageFlags = b[off + PAGE_FLAGS_OFFSET];
    if ((level >= 0 ? pageLevel != level : pageLevel < 0)
        || (pageFlags & ~(PAGE_FLAG_PARTIAL | PAGE_FLAG_CHILD_LAST)) != 0
        || pageFlags == PAGE_FLAG_CHILD_LAST
        || b[off + PAGE_RESERVED_OFFSET] != 0
        || SegmentFormat.getInt(b, off + PAGE_SEGMENT_OFFSET) != (int) segmentId) {
      throw new CorruptionException(
          file,
          fileOffset,
          "index page of level "
              + pageLevel
              + " flags "
              + pageFlags
              + " where a page of level "
              + level
              + " of segment "
              + segmentId
              + " belongs");
    }
    int n = (length - PAGE_HEADER_SIZE) / ENTRY_SIZE;
    long[] seqnos = new long[n];
    long[] children = new long[n];
    for (int i = 0; i < n; i++) {
      int p = off + PAGE_HEADER_SIZE + ENTRY_SIZE * i;
      seqnos[i] = SegmentFormat.getLong(b, p + ENTRY_SEQNO_OFFSET);
      children[i] = SegmentFormat.getInt(b, p + ENTRY_CHILD_OFFSET) & 0xFFFF_FFFFL;
      boolean sorted =
          i == 0
              ? seqnos[0] >= 0 && children[0] >= FILE_HEADER_SIZE
              : seqnos[i] > seqnos[i - 1]
                  && (children[i] > children[i - 1]
                      // a key-ordered run's documents: seqno order is not block order
                      || (pageLevel == 0 && children[i] >= FILE_HEADER_SIZE));
      if (!sorted || children[i] >= fileOffset) {
        throw new CorruptionException(file, fileOffset, "index page entry " + i + " out of order");
      }
    }
    return new IndexPage(pageLevel, pageFlags, seqnos, children, n);
  }

  // ---- the flat form the block cache holds
  // ----------------------------------------------------------
  // Native order, private to this process: int count, int level, int length on disk, int 0, then
  // long seqno[count] and long child[count]. Read in place through Mem's (base, address)
  // addressing.

  private static final int FLAT_HEADER = 16;

  /** This decoded page, {@code length} bytes on disk, as a flat array for the block cache. */
  byte[] flat(int length) {
    java.nio.ByteBuffer b =
        java.nio.ByteBuffer.allocate(FLAT_HEADER + 16 * count)
            .order(java.nio.ByteOrder.nativeOrder());
    b.putInt(count).putInt(level).putInt(length).putInt(0);
    for (int i = 0; i < count; i++) b.putLong(seqnos[i]);
    for (int i = 0; i < count; i++) b.putLong(children[i]);
    return b.array();
  }

  static int flatCount(Object base, long a) {
    return Mem.lpInt(base, a);
  }

  static int flatLevel(Object base, long a) {
    return Mem.lpInt(base, a + 4);
  }

  static int flatLength(Object base, long a) {
    return Mem.lpInt(base, a + 8);
  }

  static long flatSeqno(Object base, long a, int i) {
    return Mem.lpLong(base, a + FLAT_HEADER + 8L * i);
  }

  static long flatChild(Object base, long a, int i) {
    return Mem.lpLong(base, a + FLAT_HEADER + 8L * (flatCount(base, a) + i));
  }

  /** As {@link #floor} on a flat page. */
  static int flatFloor(Object base, long a, long seqno) {
    int lo = 0;
    int hi = flatCount(base, a) - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      long s = flatSeqno(base, a, mid);
      if (s < seqno) {
        lo = mid + 1;
      } else if (s > seqno) {
        hi = mid - 1;
      } else {
        return mid;
      }
    }
    return lo - 1;
  }

  /**
   * A writable tail page of {@code capacity} holding this decoded page's first {@code n} entries.
   */
  IndexPage toTailPage(int n, int capacity) {
    IndexPage t = new IndexPage(level, capacity);
    for (int i = 0; i < n; i++) {
      t.add(seqnos[i], children[i]);
    }
    return t;
  }
}
