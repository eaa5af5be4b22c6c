package io.basaltdb.internal.segment;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * Byte layout of a log segment file (docs/format.md, "Log segment"): the file header, the record
 * header shared by data blocks and seqno-index pages, limits, and the little-endian, varint and
 * checksum helpers the codecs share. Every integer is little-endian.
 *
 * <pre>
 *  file    = file header (32 bytes) , { block | index page }        up to the checkpointed tail
 *  record  = crc32c (4) , type (1) , ...                            crc covers every later byte
 * </pre>
 *
 * <p>Thread-safety: constants and pure functions only.
 */
final class SegmentFormat {
  private SegmentFormat() {}

  /** Bumped on any incompatible change to a layout in this package. */
  static final int FORMAT_VERSION = 1;

  // File header, at offset 0 of every segment file.
  static final int MAGIC = 0x47455342; // "BSEG" read as a little-endian int
  static final int FH_MAGIC_OFFSET = 0;
  static final int FH_VERSION_OFFSET = 4;
  static final int FH_PAGE_SIZE_OFFSET = 8;
  static final int FH_SEGMENT_ID_OFFSET = 12;
  static final int FH_START_SEQNO_OFFSET = 20;
  static final int FH_CRC_OFFSET = 28;
  static final int FILE_HEADER_SIZE = 32;

  // Every record (block or page) starts with these two fields.
  static final int CRC_OFFSET = 0;
  static final int CRC_SIZE = 4;
  static final int TYPE_OFFSET = 4;
  static final byte TYPE_BLOCK = 1;
  static final byte TYPE_PAGE = 2;

  // Data block header; the (possibly compressed) payload follows.
  static final int BLOCK_FLAGS_OFFSET = 5;

  /** Two bytes, zero. */
  static final int BLOCK_RESERVED_OFFSET = 6;

  static final int BLOCK_STORED_LENGTH_OFFSET = 8;
  static final int BLOCK_RAW_LENGTH_OFFSET = 12;
  static final int BLOCK_FIRST_SEQNO_OFFSET = 16;
  static final int BLOCK_LAST_SEQNO_OFFSET = 24;
  static final int BLOCK_COUNT_OFFSET = 32;
  static final int BLOCK_SEGMENT_OFFSET = 36;
  static final int BLOCK_HEADER_SIZE = 40;
  static final int BLOCK_FLAG_LZ4 = 1;

  /**
   * Block flag: the payload is a zstd frame (cold segments; never with {@link #BLOCK_FLAG_LZ4}).
   */
  static final int BLOCK_FLAG_ZSTD = 2;

  /**
   * Block flag: a block of a key-ordered run (docs/format.md, "Key-ordered runs"). Its documents
   * are in key order, each seqno stored as its distance from the run's base seqno (the header's
   * first seqno field); the header's last seqno field holds the file offset of the run's first
   * block instead.
   */
  static final int BLOCK_FLAG_KEYED = 4;

  /** Block flag, with {@link #BLOCK_FLAG_KEYED} only: the last block of its run. */
  static final int BLOCK_FLAG_RUN_END = 8;

  // Seqno-index page header; ENTRY_SIZE-byte entries follow.
  static final int PAGE_LEVEL_OFFSET = 5;
  static final int PAGE_FLAGS_OFFSET = 6;

  /** One byte, zero. */
  static final int PAGE_RESERVED_OFFSET = 7;

  static final int PAGE_SEGMENT_OFFSET = 8;
  static final int PAGE_COUNT_OFFSET = 12;
  static final int PAGE_HEADER_SIZE = 16;
  static final int ENTRY_SEQNO_OFFSET = 0;
  static final int ENTRY_CHILD_OFFSET = 8;
  static final int ENTRY_SIZE = 12;

  /**
   * Written by a checkpoint: a version of a level's tail page that a later checkpoint supersedes.
   */
  static final int PAGE_FLAG_PARTIAL = 1;

  /** The last entry points to the partial page the same checkpoint wrote one level below. */
  static final int PAGE_FLAG_CHILD_LAST = 2;

  // Document inside a block's uncompressed payload: varint seqno delta, flags, varint key length,
  // varint value length, key, value.
  static final int DOC_FLAG_TOMBSTONE = 1;

  /**
   * The document expires: a varint of its expiry (ms since the epoch, above 0) follows the flags.
   */
  static final int DOC_FLAG_EXPIRES = 2;

  /** Smallest encoded document: one byte for each of delta, flags, key length, value length. */
  static final int MIN_DOC_SIZE = 4;

  // Limits.
  static final int MAX_KEY_SIZE = 64 << 10;
  static final int MAX_VALUE_SIZE = 20 << 20;

  /** No uncompressed block may be larger: one largest document, or blockSize's upper bound. */
  static final int MAX_BLOCK_RAW_SIZE = 32 << 20;

  /** Index entries hold 32-bit offsets; a writer refuses appends once its tail reaches this. */
  static final long HARD_SIZE_LIMIT = 3L << 30;

  static final int MAX_LEVELS = 32;
  static final int MAX_SEGMENT_ID = Integer.MAX_VALUE;

  /** The location hint of a block: segment id in the high 32 bits, block offset in the low 32. */
  static long hint(long segmentId, long blockOffset) {
    return segmentId << 32 | blockOffset;
  }

  // Little-endian access to byte arrays; callers check bounds first.
  private static final VarHandle INT =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  static int getInt(byte[] b, int off) {
    return (int) INT.get(b, off);
  }

  static void putInt(byte[] b, int off, int v) {
    INT.set(b, off, v);
  }

  static long getLong(byte[] b, int off) {
    return (long) LONG.get(b, off);
  }

  static void putLong(byte[] b, int off, long v) {
    LONG.set(b, off, v);
  }

  /** CRC32C of {@code b[from, to)}. */
  static int crc(byte[] b, int from, int to) {
    CRC32C c = new CRC32C();
    c.update(b, from, to - from);
    return (int) c.getValue();
  }

  /** Bytes of the unsigned LEB128 encoding of {@code v}. */
  static int varLongSize(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  /** Writes {@code v} as unsigned LEB128 at {@code pos}; returns the position after it. */
  static int putVarLong(byte[] b, int pos, long v) {
    while ((v & ~0x7FL) != 0) {
      b[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    b[pos++] = (byte) v;
    return pos;
  }
}
