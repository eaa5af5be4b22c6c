package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_COUNT_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FIRST_SEQNO_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FLAGS_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FLAG_KEYED;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FLAG_LZ4;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FLAG_RUN_END;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_FLAG_ZSTD;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_LAST_SEQNO_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_RAW_LENGTH_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_SEGMENT_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_STORED_LENGTH_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.CRC_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.CRC_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.DOC_FLAG_TOMBSTONE;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_BLOCK;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_OFFSET;

import com.github.luben.zstd.Zstd;
import java.nio.ByteBuffer;
import java.util.Arrays;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;

/**
 * The writer's open data block: packs encoded documents into an uncompressed buffer and seals them
 * into one checksummed block record, LZ4- or zstd-compressed, (docs/format.md, "Data block"). A
 * document is {@code varint seqnoDelta, flags, [varint expiry], varint keyLength, varint
 * valueLength, key, value}; the first document's delta is 0 (its seqno is the header's first
 * seqno), every later one's is the distance to its predecessor, at least 1. In a key-ordered run
 * ({@link #startRun}) documents come in key order and each delta is the distance from the run's
 * base seqno.
 *
 * <p>Thread-safety: none; owned by one {@link SegmentWriter}.
 */
final class BlockBuilder {
  private static final LZ4Compressor LZ4 = LZ4Factory.fastestInstance().fastCompressor();

  private final int blockSize;

  /** 0: LZ4; else the zstd level. */
  private final int zstdLevel;

  private byte[] raw;
  private int length;
  private int count;
  private long firstSeqno;
  private long lastSeqno;
  private long offset;

  /**
   * A key-ordered run is being built ({@link #startRun}): documents come in key order, each seqno
   * stored as its distance from {@link #runBase}; the sealed header carries the run's base seqno
   * and its first block's offset, {@link #runStart} (-1 until the run's first document).
   */
  private boolean keyed;

  private long runBase;
  private long runStart;

  /**
   * Blocks still to be stored without trying to compress them, and the blocks in a row that were
   * stored raw because compressing them saved less than an eighth: after the n-th such block the
   * next {@code min(2^n, 64)} are not tried (values that do not compress, random or already
   * compressed, cost one compression in up to 65 blocks instead of one per block); a block that
   * compresses ends it.
   */
  private int skipCompression;

  private int incompressible;

  /** Tries to compress the next block again ({@link #skipCompression}), as a new builder would. */
  void forgetCompressionHistory() {
    skipCompression = 0;
    incompressible = 0;
  }

  /** The sealed record; reused between blocks, regrown for big ones. */
  private byte[] record = new byte[0];

  BlockBuilder(int blockSize, int zstdLevel) {
    this.blockSize = blockSize;
    this.zstdLevel = zstdLevel;
    this.raw = new byte[blockSize];
  }

  boolean isEmpty() {
    return count == 0;
  }

  /** Uncompressed bytes of the documents added so far. */
  int length() {
    return length;
  }

  /** File offset the block will be written at; valid while not empty. */
  long offset() {
    return offset;
  }

  long firstSeqno() {
    return firstSeqno;
  }

  /**
   * Encoded size of a document whose seqno is {@code delta} past its predecessor's (0 if first).
   */
  static int encodedSize(long delta, int keyLength, int valueLength, long expiry) {
    return SegmentFormat.varLongSize(delta)
        + 1
        + (expiry != 0 ? SegmentFormat.varLongSize(expiry) : 0)
        + SegmentFormat.varLongSize(keyLength)
        + SegmentFormat.varLongSize(valueLength)
        + keyLength
        + valueLength;
  }

  /** Encoded size of the document if it were added to this block now. */
  int sizeIfAdded(long seqno, int keyLength, int valueLength, long expiry) {
    return encodedSize(delta(seqno), keyLength, valueLength, expiry);
  }

  private long delta(long seqno) {
    if (keyed) return seqno - runBase;
    return count == 0 ? 0 : seqno - lastSeqno;
  }

  /**
   * Starts a key-ordered run whose seqnos are all at or above {@code base}; the builder must be
   * empty. Blocks sealed until {@link #endRun} are the run's.
   */
  void startRun(long base) {
    if (count != 0) throw new IllegalStateException("a run starts in an empty block");
    keyed = true;
    runBase = base;
    runStart = -1;
  }

  /** Ends the run {@link #startRun} began; the builder must be empty (its last block sealed). */
  void endRun() {
    if (count != 0) throw new IllegalStateException("a run ends with its last block sealed");
    keyed = false;
  }

  /**
   * Adds a document whose value is {@code value[valueOffset, valueOffset + valueLength)}; the first
   * one of a block fixes the block's file offset. Seqnos must increase (the writer checks). Returns
   * the document's encoded size.
   */
  int add(
      long blockOffset,
      long seqno,
      byte[] key,
      byte[] value,
      int valueOffset,
      int valueLength,
      boolean tombstone,
      long expiry) {
    int size = sizeIfAdded(seqno, key.length, valueLength, expiry);
    long delta = delta(seqno);
    if (count == 0) {
      offset = blockOffset;
      firstSeqno = seqno;
      lastSeqno = seqno;
      if (keyed && runStart < 0) runStart = blockOffset;
    }
    if (length + size > raw.length) {
      raw = Arrays.copyOf(raw, Math.max(length + size, raw.length * 2));
    }
    int p = SegmentFormat.putVarLong(raw, length, delta);
    raw[p++] =
        (byte)
            ((tombstone ? DOC_FLAG_TOMBSTONE : 0)
                | (expiry != 0 ? SegmentFormat.DOC_FLAG_EXPIRES : 0));
    if (expiry != 0) p = SegmentFormat.putVarLong(raw, p, expiry);
    p = SegmentFormat.putVarLong(raw, p, key.length);
    p = SegmentFormat.putVarLong(raw, p, valueLength);
    System.arraycopy(key, 0, raw, p, key.length);
    System.arraycopy(value, valueOffset, raw, p + key.length, valueLength);
    length += size;
    lastSeqno = seqno;
    count++;
    return size;
  }

  /**
   * Builds the block record (compressed if that makes it smaller) and empties the builder. The
   * returned buffer is valid until the next call.
   */
  ByteBuffer seal(long segmentId) {
    return seal(segmentId, false);
  }

  /** As {@link #seal(long)}; in a run, {@code runEnd} marks its last block. */
  ByteBuffer seal(long segmentId, boolean runEnd) {
    int bound =
        BLOCK_HEADER_SIZE
            + Math.max(
                length,
                zstdLevel > 0 ? (int) Zstd.compressBound(length) : LZ4.maxCompressedLength(length));
    if (record.length < bound) {
      record = new byte[bound];
    }
    int stored;
    int flags;
    if (skipCompression > 0) {
      skipCompression--;
      stored = length; // stored raw below
      flags = 0;
    } else if (zstdLevel > 0) {
      com.github.luben.zstd.ZstdCompressCtx ctx = ZstdContexts.takeCompress(zstdLevel);
      try {
        stored =
            ctx.compressByteArray(
                record, BLOCK_HEADER_SIZE, bound - BLOCK_HEADER_SIZE, raw, 0, length);
      } finally {
        ZstdContexts.give(ctx);
      }
      flags = BLOCK_FLAG_ZSTD;
    } else {
      stored = LZ4.compress(raw, 0, length, record, BLOCK_HEADER_SIZE, bound - BLOCK_HEADER_SIZE);
      flags = BLOCK_FLAG_LZ4;
    }
    if (flags == 0 || stored > length - length / 8) {
      // Kept raw unless compression saves an eighth (RocksDB's rule): reading a raw block skips the
      // decompression, and a block that barely compresses is not worth it.
      if (flags != 0) {
        incompressible = Math.min(incompressible + 1, 6);
        skipCompression = 1 << incompressible;
      }
      System.arraycopy(raw, 0, record, BLOCK_HEADER_SIZE, length);
      stored = length;
      flags = 0;
    } else {
      incompressible = 0;
    }
    Arrays.fill(record, 0, BLOCK_HEADER_SIZE, (byte) 0);
    record[TYPE_OFFSET] = TYPE_BLOCK;
    record[BLOCK_FLAGS_OFFSET] =
        (byte) (flags | (keyed ? BLOCK_FLAG_KEYED | (runEnd ? BLOCK_FLAG_RUN_END : 0) : 0));
    SegmentFormat.putInt(record, BLOCK_STORED_LENGTH_OFFSET, stored);
    SegmentFormat.putInt(record, BLOCK_RAW_LENGTH_OFFSET, length);
    SegmentFormat.putLong(record, BLOCK_FIRST_SEQNO_OFFSET, keyed ? runBase : firstSeqno);
    SegmentFormat.putLong(record, BLOCK_LAST_SEQNO_OFFSET, keyed ? runStart : lastSeqno);
    SegmentFormat.putInt(record, BLOCK_COUNT_OFFSET, count);
    SegmentFormat.putInt(record, BLOCK_SEGMENT_OFFSET, (int) segmentId);
    int end = BLOCK_HEADER_SIZE + stored;
    SegmentFormat.putInt(record, CRC_OFFSET, SegmentFormat.crc(record, CRC_SIZE, end));
    ByteBuffer sealed = ByteBuffer.wrap(record, 0, end);
    length = 0;
    count = 0;
    if (raw.length > 4 * blockSize) {
      raw = new byte[blockSize]; // do not keep a big document's buffers past its block
      record = new byte[0];
    }
    return sealed;
  }
}
