package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.Format.*;

import io.basaltdb.CorruptionException;

/**
 * The fixed-size footer that ends every table (docs/format.md, "Footer"): where the filter, meta
 * and index blocks are, the entry count and seqno range, the format version, a CRC32C of all that,
 * and the magic number. Block sizes count the contents only, not the {@value
 * Format#TRAILER_SIZE}-byte trailer. A table without a filter has filter offset and size 0.
 *
 * <p>Thread-safety: immutable.
 */
record Footer(
    long filterOffset,
    int filterSize,
    long metaOffset,
    int metaSize,
    long indexOffset,
    int indexSize,
    long entryCount,
    long minSeqno,
    long maxSeqno,
    int version) {

  boolean hasFilter() {
    return filterSize != 0;
  }

  byte[] encode() {
    byte[] b = new byte[FOOTER_SIZE];
    putLongLE(b, FOOTER_FILTER_OFFSET_OFFSET, filterOffset);
    putIntLE(b, FOOTER_FILTER_SIZE_OFFSET, filterSize);
    putLongLE(b, FOOTER_META_OFFSET_OFFSET, metaOffset);
    putIntLE(b, FOOTER_META_SIZE_OFFSET, metaSize);
    putLongLE(b, FOOTER_INDEX_OFFSET_OFFSET, indexOffset);
    putIntLE(b, FOOTER_INDEX_SIZE_OFFSET, indexSize);
    putLongLE(b, FOOTER_ENTRY_COUNT_OFFSET, entryCount);
    putLongLE(b, FOOTER_MIN_SEQNO_OFFSET, minSeqno);
    putLongLE(b, FOOTER_MAX_SEQNO_OFFSET, maxSeqno);
    putIntLE(b, FOOTER_VERSION_OFFSET, version);
    putIntLE(b, FOOTER_CRC_OFFSET, crc(b, 0, FOOTER_CRC_OFFSET));
    putLongLE(b, FOOTER_MAGIC_OFFSET, MAGIC);
    return b;
  }

  /**
   * Decodes and checks the footer bytes {@code b} read at {@code offset}: magic, checksum, version
   * and the ranges of the fields on their own. Where the blocks lie is checked by the reader.
   */
  static Footer decode(byte[] b, long offset, String file) {
    if (getLongLE(b, FOOTER_MAGIC_OFFSET) != MAGIC) {
      throw new CorruptionException(
          file, offset + FOOTER_MAGIC_OFFSET, "bad magic number; not a Basalt SSTable");
    }
    if (getIntLE(b, FOOTER_CRC_OFFSET) != crc(b, 0, FOOTER_CRC_OFFSET)) {
      throw new CorruptionException(file, offset, "footer checksum mismatch");
    }
    int version = getIntLE(b, FOOTER_VERSION_OFFSET);
    if (version < OLDEST_READABLE_VERSION || version > FORMAT_VERSION) {
      throw new CorruptionException(
          file,
          offset + FOOTER_VERSION_OFFSET,
          "format version "
              + version
              + ", this build reads only versions "
              + OLDEST_READABLE_VERSION
              + " to "
              + FORMAT_VERSION);
    }
    Footer f =
        new Footer(
            getLongLE(b, FOOTER_FILTER_OFFSET_OFFSET),
            getIntLE(b, FOOTER_FILTER_SIZE_OFFSET),
            getLongLE(b, FOOTER_META_OFFSET_OFFSET),
            getIntLE(b, FOOTER_META_SIZE_OFFSET),
            getLongLE(b, FOOTER_INDEX_OFFSET_OFFSET),
            getIntLE(b, FOOTER_INDEX_SIZE_OFFSET),
            getLongLE(b, FOOTER_ENTRY_COUNT_OFFSET),
            getLongLE(b, FOOTER_MIN_SEQNO_OFFSET),
            getLongLE(b, FOOTER_MAX_SEQNO_OFFSET),
            version);
    boolean ok =
        f.filterOffset >= 0
            && f.filterSize >= 0
            && (f.filterSize != 0 || f.filterOffset == 0)
            && f.metaOffset >= 0
            && f.metaSize >= 0
            && f.indexOffset >= 0
            && f.indexSize >= 0
            && f.entryCount >= 0
            && f.minSeqno >= 0
            && f.maxSeqno >= f.minSeqno
            && (f.entryCount != 0 || (f.minSeqno == 0 && f.maxSeqno == 0));
    if (!ok) throw new CorruptionException(file, offset, "footer fields out of range: " + f);
    return f;
  }
}
