package io.basaltdb.internal.segment;

import io.basaltdb.InvalidArgumentException;

/**
 * Options of a log segment writer. Immutable; the {@code with*} methods return modified copies.
 *
 * @param blockSize target uncompressed size of a data block in bytes: documents are packed into a
 *     block until the next one would not fit (a larger document makes a block of its own); default
 *     4,096; 64 B to 4 MiB
 * @param maxSegmentSize size at which the engine rolls to a new segment ({@link
 *     SegmentWriter#isFull}); default 64 MiB; 4 KiB to 1 GiB
 * @param preallocateBytes bytes {@link SegmentWriter#create} reserves in the new file; default
 *     equal to maxSegmentSize; 0 to maxSegmentSize
 * @param pageSize size of a full seqno-index page in bytes; default 4,096; 64 B (fan-out 4, for
 *     tests that need deep trees) to 64 KiB. Fixed when a segment is created: {@link
 *     SegmentWriter#reopen} keeps the segment's own
 * @param zstdLevel 0 (default): data blocks are LZ4-compressed; 1 to 22: zstd-compressed at that
 *     level (cold segments garbage collection rewrites). Either way a block stays raw if
 *     compressing does not make it smaller, and readers decode every kind
 */
public record SegmentOptions(
    int blockSize, long maxSegmentSize, long preallocateBytes, int pageSize, int zstdLevel) {
  public SegmentOptions(int blockSize, long maxSegmentSize, long preallocateBytes, int pageSize) {
    this(blockSize, maxSegmentSize, preallocateBytes, pageSize, 0);
  }

  public static final int DEFAULT_BLOCK_SIZE = 4096;
  public static final long DEFAULT_MAX_SEGMENT_SIZE = 64L << 20;
  public static final int DEFAULT_PAGE_SIZE = 4096;

  static final int MIN_BLOCK_SIZE = 64;
  static final int MAX_BLOCK_SIZE = 4 << 20;
  static final long MIN_SEGMENT_SIZE = 4096;
  static final long MAX_SEGMENT_SIZE = 1L << 30;
  static final int MIN_PAGE_SIZE = 64;
  static final int MAX_PAGE_SIZE = 64 << 10;

  public static SegmentOptions defaults() {
    return new SegmentOptions(
        DEFAULT_BLOCK_SIZE, DEFAULT_MAX_SEGMENT_SIZE, DEFAULT_MAX_SEGMENT_SIZE, DEFAULT_PAGE_SIZE);
  }

  public SegmentOptions withBlockSize(int n) {
    return new SegmentOptions(n, maxSegmentSize, preallocateBytes, pageSize, zstdLevel);
  }

  /**
   * Sets maxSegmentSize and preallocateBytes to {@code n}; call withPreallocateBytes after to
   * differ.
   */
  public SegmentOptions withMaxSegmentSize(long n) {
    return new SegmentOptions(blockSize, n, n, pageSize, zstdLevel);
  }

  public SegmentOptions withPreallocateBytes(long n) {
    return new SegmentOptions(blockSize, maxSegmentSize, n, pageSize, zstdLevel);
  }

  public SegmentOptions withPageSize(int n) {
    return new SegmentOptions(blockSize, maxSegmentSize, preallocateBytes, n, zstdLevel);
  }

  public SegmentOptions withZstdLevel(int level) {
    return new SegmentOptions(blockSize, maxSegmentSize, preallocateBytes, pageSize, level);
  }

  /** Returns this; throws InvalidArgumentException naming the first option out of range. */
  public SegmentOptions validate() {
    check("blockSize", blockSize, MIN_BLOCK_SIZE, MAX_BLOCK_SIZE);
    check("maxSegmentSize", maxSegmentSize, MIN_SEGMENT_SIZE, MAX_SEGMENT_SIZE);
    check("preallocateBytes", preallocateBytes, 0, maxSegmentSize);
    check("pageSize", pageSize, MIN_PAGE_SIZE, MAX_PAGE_SIZE);
    check("zstdLevel", zstdLevel, 0, 22);
    return this;
  }

  private static void check(String name, long v, long min, long max) {
    if (v < min || v > max) {
      throw new InvalidArgumentException(
          "segment option " + name + " = " + v + " is out of range [" + min + ", " + max + "]");
    }
  }

  @Override
  public String toString() {
    return "SegmentOptions{blockSize="
        + blockSize
        + ", maxSegmentSize="
        + maxSegmentSize
        + ", preallocateBytes="
        + preallocateBytes
        + ", pageSize="
        + pageSize
        + "}";
  }
}
