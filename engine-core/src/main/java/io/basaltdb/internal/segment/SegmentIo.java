package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.ENTRY_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FH_CRC_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FH_MAGIC_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FH_PAGE_SIZE_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FH_SEGMENT_ID_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FH_START_SEQNO_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FH_VERSION_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FORMAT_VERSION;
import static io.basaltdb.internal.segment.SegmentFormat.MAGIC;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_HEADER_SIZE;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Reading records of a segment file: the file header, a data block or an index page at an offset,
 * each checked before it is returned. Every read is bounded by a {@code limit} the record must end
 * before (the state's tail, or the offset of the page that points to the record), so garbage
 * lengths never make a read run past what the caller trusts.
 *
 * <p>Thread-safety: stateless; safe for concurrent use (positional reads only).
 */
final class SegmentIo {
  private SegmentIo() {}

  /** The file header of a new segment. */
  static ByteBuffer fileHeader(long segmentId, long startSeqno, int pageSize) {
    byte[] b = new byte[FILE_HEADER_SIZE];
    SegmentFormat.putInt(b, FH_MAGIC_OFFSET, MAGIC);
    SegmentFormat.putInt(b, FH_VERSION_OFFSET, FORMAT_VERSION);
    SegmentFormat.putInt(b, FH_PAGE_SIZE_OFFSET, pageSize);
    SegmentFormat.putLong(b, FH_SEGMENT_ID_OFFSET, segmentId);
    SegmentFormat.putLong(b, FH_START_SEQNO_OFFSET, startSeqno);
    SegmentFormat.putInt(b, FH_CRC_OFFSET, SegmentFormat.crc(b, 0, FH_CRC_OFFSET));
    return ByteBuffer.wrap(b);
  }

  /** Checks that the file's header is that of the segment {@code state} describes. */
  static void checkFileHeader(StorageFile file, SegmentState state) {
    byte[] b = new byte[FILE_HEADER_SIZE];
    if (read(file, 0, b, 0, FILE_HEADER_SIZE) != FILE_HEADER_SIZE
        || SegmentFormat.getInt(b, FH_CRC_OFFSET) != SegmentFormat.crc(b, 0, FH_CRC_OFFSET)
        || SegmentFormat.getInt(b, FH_MAGIC_OFFSET) != MAGIC) {
      throw new CorruptionException(file.name(), 0, "not a segment file header");
    }
    if (SegmentFormat.getInt(b, FH_VERSION_OFFSET) != FORMAT_VERSION
        || SegmentFormat.getInt(b, FH_PAGE_SIZE_OFFSET) != state.pageSize()
        || SegmentFormat.getLong(b, FH_SEGMENT_ID_OFFSET) != state.segmentId()
        || SegmentFormat.getLong(b, FH_START_SEQNO_OFFSET) != state.startSeqno()) {
      throw new CorruptionException(
          file.name(),
          0,
          "segment file header does not match the state "
              + state
              + " (another segment's file, or an unknown format version)");
    }
  }

  /** Reads up to {@code n} bytes at {@code pos}; fewer only where the file ends. */
  static int read(StorageFile file, long pos, byte[] dst, int off, int n) {
    ByteBuffer buf = ByteBuffer.wrap(dst, off, n);
    int total = 0;
    while (buf.hasRemaining()) {
      int got = file.read(pos + total, buf);
      if (got <= 0) {
        break;
      }
      total += got;
    }
    return total;
  }

  /**
   * The index page at {@code pos}, which must be a page of {@code level} (any if negative) ending
   * at or before {@code limit}.
   */
  static IndexPage readPage(
      StorageFile file, long pos, long limit, long segmentId, int level, int pageSize) {
    int want = (int) Math.min(pageSize, limit - pos);
    if (pos < FILE_HEADER_SIZE || want <= 0) {
      throw new CorruptionException(
          file.name(), pos, "index page offset out of range (limit " + limit + ")");
    }
    byte[] b = new byte[want];
    int got = read(file, pos, b, 0, want);
    return IndexPage.decode(b, 0, got, file.name(), pos, segmentId, level, pageSize);
  }

  /** As {@link #readPage}, in the flat form the block cache keeps ({@link IndexPage#flat}). */
  static byte[] readFlatPage(
      StorageFile file, long pos, long limit, long segmentId, int level, int pageSize) {
    IndexPage p = readPage(file, pos, limit, segmentId, level, pageSize);
    return p.flat(PAGE_HEADER_SIZE + ENTRY_SIZE * p.count());
  }

  /**
   * The data block at {@code pos}, which must end at or before {@code limit}. One read of {@code
   * BLOCK_HEADER_SIZE + guess} bytes fetches a typical block whole; a bigger one takes a second
   * read.
   */
  static Block readBlock(StorageFile file, long pos, long limit, long segmentId, int guess) {
    long room = limit - pos;
    if (pos < FILE_HEADER_SIZE || room < BLOCK_HEADER_SIZE) {
      throw new CorruptionException(
          file.name(), pos, "data block offset out of range (limit " + limit + ")");
    }
    byte[] b = new byte[(int) Math.min(room, BLOCK_HEADER_SIZE + (long) guess)];
    int got = read(file, pos, b, 0, b.length);
    if (got < BLOCK_HEADER_SIZE) {
      throw new CorruptionException(file.name(), pos, "file ends inside a data block header");
    }
    int length = Block.recordLength(b, 0);
    if (length < 0 || length > room) {
      throw new CorruptionException(
          file.name(), pos, "not a data block, or one overrunning its limit " + limit);
    }
    if (length > got) {
      int had = got;
      b = Arrays.copyOf(b, length);
      if (read(file, pos + had, b, had, length - had) != length - had) {
        throw new CorruptionException(file.name(), pos, "file ends inside a data block");
      }
    }
    return new Block(b, 0, length, file.name(), pos, segmentId);
  }
}
