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
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_RESERVED_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_SEGMENT_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_STORED_LENGTH_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.CRC_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.CRC_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.DOC_FLAG_TOMBSTONE;
import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_BLOCK_RAW_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_KEY_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_VALUE_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.MIN_DOC_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_BLOCK;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_OFFSET;

import io.basaltdb.CorruptionException;
import java.util.Arrays;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * A data block read back from a segment file, checked and decoded (docs/format.md, "Data block").
 * The constructor verifies the checksum, decompresses, and walks every document, so a Block that
 * exists is well-formed: its documents' seqnos run strictly from the header's first to its last
 * seqno (a block of a key-ordered run: its documents are in key order, each seqno the run's base
 * plus its delta) and their encodings fill the payload exactly. Anything else is a {@link
 * CorruptionException}.
 *
 * <p>Thread-safety: immutable after construction.
 */
final class Block {
  /** The safe decompressor never reads or writes outside the arrays given, whatever the input. */
  private static final LZ4SafeDecompressor LZ4 = LZ4Factory.fastestInstance().safeDecompressor();

  final long offset;

  /** The smallest and largest seqno of its documents. */
  final long firstSeqno;

  final long lastSeqno;

  /**
   * A block of a key-ordered run (docs/format.md, "Key-ordered runs"): documents in key order,
   * seqnos in no order; {@link #runStart} is the offset of the run's first block. Else -1.
   */
  final long runStart;

  /** The last block of its key-ordered run. */
  final boolean runEnd;

  private final byte[] data;
  private final int base;
  private final long[] seqnos;
  private final int[] starts;
  private final String file;

  /** Read position of the constructor's {@link #walk}; not used once the block is built. */
  private int cursor;

  /**
   * Length of the block record whose header is {@code b[off, off + BLOCK_HEADER_SIZE)}, or -1 if
   * those bytes do not start a block. Only the header is checked here.
   */
  static int recordLength(byte[] b, int off) {
    if (b[off + TYPE_OFFSET] != TYPE_BLOCK) {
      return -1;
    }
    int stored = SegmentFormat.getInt(b, off + BLOCK_STORED_LENGTH_OFFSET);
    return stored <= 0 || stored > MAX_BLOCK_RAW_SIZE ? -1 : BLOCK_HEADER_SIZE + stored;
  }

  /**
   * Decodes the block record {@code b[off, off + length)} read from {@code file} at {@code
   * fileOffset}; {@code length} must be {@link #recordLength} of its header.
   */
  Block(byte[] b, int off, int length, String file, long fileOffset, long segmentId) {
    this.file = file;
    this.offset = fileOffset;
    if (length < BLOCK_HEADER_SIZE || recordLength(b, off) != length) {
      throw corrupt("not a data block");
    }
    if (SegmentFormat.getInt(b, off + CRC_OFFSET)
        != SegmentFormat.crc(b, off + CRC_SIZE, off + length)) {
      throw corrupt("data block checksum mismatch");
    }
    int flags = b[off + BLOCK_FLAGS_OFFSET];
    int stored = length - BLOCK_HEADER_SIZE;
    int rawLength = SegmentFormat.getInt(b, off + BLOCK_RAW_LENGTH_OFFSET);
    int count = SegmentFormat.getInt(b, off + BLOCK_COUNT_OFFSET);
    long first = SegmentFormat.getLong(b, off + BLOCK_FIRST_SEQNO_OFFSET);
    long last = SegmentFormat.getLong(b, off + BLOCK_LAST_SEQNO_OFFSET);
    boolean keyed = (flags & BLOCK_FLAG_KEYED) != 0;
    if (keyed) { // the run's base seqno and first block: the documents give the block's range
      runStart = last;
      last = Long.MAX_VALUE;
    } else {
      runStart = -1;
    }
    runEnd = (flags & BLOCK_FLAG_RUN_END) != 0;
    if ((flags & ~(BLOCK_FLAG_LZ4 | BLOCK_FLAG_ZSTD | BLOCK_FLAG_KEYED | BLOCK_FLAG_RUN_END)) != 0
        || (runEnd && !keyed)
        || (flags & (BLOCK_FLAG_LZ4 | BLOCK_FLAG_ZSTD)) == (BLOCK_FLAG_LZ4 | BLOCK_FLAG_ZSTD)
        || (keyed && (runStart < FILE_HEADER_SIZE || runStart > fileOffset))
        || b[off + BLOCK_RESERVED_OFFSET] != 0
        || b[off + BLOCK_RESERVED_OFFSET + 1] != 0
        || SegmentFormat.getInt(b, off + BLOCK_SEGMENT_OFFSET) != (int) segmentId) {
      throw corrupt("data block header has unknown flags or another segment's id");
    }
    boolean lz4 = (flags & BLOCK_FLAG_LZ4) != 0;
    boolean zstd = (flags & BLOCK_FLAG_ZSTD) != 0;
    if (rawLength < MIN_DOC_SIZE
        || rawLength > MAX_BLOCK_RAW_SIZE
        || (lz4 || zstd ? stored >= rawLength : stored != rawLength)
        || count < 1
        || count > rawLength / MIN_DOC_SIZE
        || first < 0
        || last < first) {
      throw corrupt("data block header fields out of range");
    }
    if (lz4) {
      data = new byte[rawLength];
      base = 0;
      int n;
      try {
        n = LZ4.decompress(b, off + BLOCK_HEADER_SIZE, stored, data, 0, rawLength);
      } catch (RuntimeException e) { // LZ4Exception on malformed input
        throw corrupt("data block does not decompress: " + e.getMessage());
      }
      if (n != rawLength) {
        throw corrupt("data block decompresses to " + n + " bytes, header says " + rawLength);
      }
    } else if (zstd) {
      data = new byte[rawLength];
      base = 0;
      int n;
      com.github.luben.zstd.ZstdDecompressCtx ctx = ZstdContexts.takeDecompress();
      try {
        n = ctx.decompressByteArray(data, 0, rawLength, b, off + BLOCK_HEADER_SIZE, stored);
      } catch (RuntimeException e) { // ZstdException on a malformed frame
        throw corrupt("data block does not decompress (zstd): " + e.getMessage());
      } finally {
        ZstdContexts.give(ctx);
      }
      if (n != rawLength)
        throw corrupt("data block decompresses to " + n + " bytes, header says " + rawLength);
    } else {
      data = b;
      base = off + BLOCK_HEADER_SIZE;
    }
    seqnos = new long[count];
    starts = new int[count];
    walk(rawLength, first, last, keyed);
    if (keyed) {
      long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
      for (long q : seqnos) {
        min = Math.min(min, q);
        max = Math.max(max, q);
      }
      firstSeqno = min;
      lastSeqno = max;
    } else {
      firstSeqno = first;
      lastSeqno = last;
    }
  }

  boolean keyed() {
    return runStart >= 0;
  }

  /**
   * Encoded bytes of document {@code i}: the size its writer reported ({@code lastDocumentSize}).
   */
  int documentSize(int i) {
    return (i + 1 < starts.length ? starts[i + 1] : cursor) - starts[i];
  }

  /**
   * Checks every document's encoding and records where each starts. In seqno order ({@code keyed}
   * false) the seqnos run strictly from {@code first} to {@code last}; in a key-ordered run each is
   * {@code first} (the run's base) plus its delta.
   */
  private void walk(int rawLength, long first, long last, boolean keyed) {
    int end = base + rawLength;
    cursor = base;
    long seqno = first;
    for (int i = 0; i < seqnos.length; i++) {
      starts[i] = cursor;
      long delta = readVarLong(end, 10);
      if (keyed) {
        if (delta < 0 || delta >= Long.MAX_VALUE - first) {
          throw corrupt("document " + i + " has seqno delta " + delta);
        }
        seqno = first + delta;
      } else {
        if (i == 0 ? delta != 0 : delta < 1 || delta > last - seqno) {
          throw corrupt("document " + i + " has seqno delta " + delta);
        }
        seqno += delta;
      }
      seqnos[i] = seqno;
      if (cursor >= end) throw corrupt("document " + i + " overruns the block");
      int flags = data[cursor++];
      if ((flags & ~(DOC_FLAG_TOMBSTONE | SegmentFormat.DOC_FLAG_EXPIRES)) != 0) {
        throw corrupt("document " + i + " has unknown flags");
      }
      if ((flags & SegmentFormat.DOC_FLAG_EXPIRES) != 0 && readVarLong(end, 9) <= 0) {
        throw corrupt("document " + i + " has a bad expiry");
      }
      long keyLength = readVarLong(end, 3);
      long valueLength = readVarLong(end, 4);
      if (keyLength > MAX_KEY_SIZE
          || valueLength > MAX_VALUE_SIZE
          || keyLength + valueLength > end - cursor) {
        throw corrupt("document " + i + " lengths overrun the block");
      }
      cursor += (int) (keyLength + valueLength);
    }
    if (cursor != end || (!keyed && seqno != last)) {
      throw corrupt("documents do not fill the block or end before its last seqno");
    }
  }

  /** Reads an unsigned LEB128 of at most {@code maxBytes} bytes ending before {@code end}. */
  private long readVarLong(int end, int maxBytes) {
    long v = 0;
    for (int i = 0; i < maxBytes; i++) {
      if (cursor >= end) {
        throw corrupt("varint overruns the block");
      }
      int x = data[cursor++];
      v |= (long) (x & 0x7F) << (7 * i);
      if (x >= 0) {
        if (i == 9 && x > 1) {
          break;
        }
        return v;
      }
    }
    throw corrupt("varint too long");
  }

  private CorruptionException corrupt(String what) {
    return new CorruptionException(file, offset, what);
  }

  int count() {
    return seqnos.length;
  }

  long seqno(int i) {
    return seqnos[i];
  }

  /**
   * Index of the first document with a seqno at or above {@code seqno}; count() if none. Blocks in
   * seqno order only.
   */
  int ceiling(long seqno) {
    int i = Arrays.binarySearch(seqnos, seqno);
    return i >= 0 ? i : -i - 1;
  }

  /** The document with this seqno, or null. */
  Document find(long seqno) {
    int i = indexOf(seqno);
    return i < 0 ? null : document(i);
  }

  /** The index of the document with this seqno, or -1. */
  int indexOf(long seqno) {
    if (runStart < 0) {
      int i = Arrays.binarySearch(seqnos, seqno);
      return i < 0 ? -1 : i;
    }
    if (seqno < firstSeqno || seqno > lastSeqno) return -1;
    for (int i = 0; i < seqnos.length; i++) { // key order: a few dozen documents at most
      if (seqnos[i] == seqno) return i;
    }
    return -1;
  }

  /** A fresh copy of document {@code i}; its encoding was checked by the constructor. */
  Document document(int i) {
    return document(i, true);
  }

  private static final byte[] NO_VALUE = new byte[0];

  /**
   * Document {@code i}, with a fresh copy of its value or (for a reader of keys and metadata only)
   * an empty one.
   */
  Document document(int i, boolean withValue) {
    int p = starts[i];
    while (data[p++] < 0) { // seqno delta
    }
    int flags = data[p++];
    boolean tombstone = (flags & DOC_FLAG_TOMBSTONE) != 0;
    long expiry = 0;
    if ((flags & SegmentFormat.DOC_FLAG_EXPIRES) != 0) {
      for (int shift = 0; ; shift += 7) {
        byte x = data[p++];
        expiry |= (long) (x & 0x7F) << shift;
        if (x >= 0) break;
      }
    }
    int keyLength = 0;
    for (int shift = 0; ; shift += 7) {
      byte x = data[p++];
      keyLength |= (x & 0x7F) << shift;
      if (x >= 0) {
        break;
      }
    }
    int valueLength = 0;
    for (int shift = 0; ; shift += 7) {
      byte x = data[p++];
      valueLength |= (x & 0x7F) << shift;
      if (x >= 0) {
        break;
      }
    }
    byte[] key = Arrays.copyOfRange(data, p, p + keyLength);
    byte[] value =
        withValue ? Arrays.copyOfRange(data, p + keyLength, p + keyLength + valueLength) : NO_VALUE;
    return new Document(seqnos[i], key, value, tombstone, expiry);
  }
}
