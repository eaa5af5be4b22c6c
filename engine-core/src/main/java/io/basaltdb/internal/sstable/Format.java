package io.basaltdb.internal.sstable;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The SSTable's on-disk constants, mirroring docs/format.md ("SSTable"), and the little-endian
 * accessors every fixed-width field goes through. Changing any of these is a format change: bump
 * {@link #FORMAT_VERSION}.
 *
 * <p>Thread-safety: stateless.
 */
final class Format {
  private Format() {}

  /**
   * Version written into every footer. 2: a record's hint may be a varint ({@link
   * #FLAG_VARINT_HINT}). 3: a record may carry {@link #FLAG_OLDER_REPORTED}. 4: {@link
   * #FLAG_SEQNO_IN_KEY} and {@link #FLAG_NO_HINT}. 5: {@link #FLAG_EXPIRES} and the meta block's
   * expiry histogram, written only by a table that holds a record with an expiry (every other table
   * is still written as 4, which earlier builds read). 6: the meta block's tombstone count (what an
   * approximate key count subtracts), written only by a table that holds a tombstone (every other
   * table is still written as 4 or 5). This build reads versions {@link #OLDEST_READABLE_VERSION}
   * to 6 and refuses any other.
   */
  static final int FORMAT_VERSION = 7;

  /** The version of a table with an expiring record and no tombstone. */
  static final int VERSION_WITH_EXPIRY = 5;

  /** The first version whose meta block holds a tombstone count: every table with a tombstone. */
  static final int VERSION_WITH_TOMBSTONES = 6;

  /**
   * An HB+-trie table (docs/format.md, "HB+-trie tables"): record blocks, navigation pages, filter,
   * meta block (laid out as version {@link #VERSION_WITH_TOMBSTONES}'s), trie header, footer.
   */
  static final int VERSION_HB_TRIE = 7;

  /** The version of a table without an expiring record. */
  static final int VERSION_WITHOUT_EXPIRY = 4;

  /**
   * The oldest table format this build reads (version 1: every hint is {@link #HINT_SIZE} bytes).
   */
  static final int OLDEST_READABLE_VERSION = 1;

  /** Last 8 bytes of every table file (little-endian). */
  static final long MAGIC = 0xB5A1_7DB5_5EAB_1E01L;

  // Block trailer, after every block's contents: compression type, then CRC32C of contents + type.
  static final int TRAILER_TYPE_OFFSET = 0;
  static final int TRAILER_CRC_OFFSET = 1;
  static final int TRAILER_SIZE = 5;
  static final byte COMPRESSION_NONE = 0;

  // Block contents end with the restart array: RESTART_SIZE bytes per restart, then the count.
  static final int RESTART_SIZE = 4;
  static final int RESTART_COUNT_SIZE = 4;

  // Data block entry value: varint seqno, varint docSize, FLAGS_SIZE flag byte, then the hint: with
  // FLAG_VARINT_HINT, a varint of hint + 1 (so "no hint", -1, takes one byte); without, HINT_SIZE
  // bytes.
  static final int FLAGS_SIZE = 1;
  static final int FLAG_TOMBSTONE = 0x01;
  static final int FLAG_VARINT_HINT = 0x02;

  /**
   * The version of the key this record superseded (the next older one in the tree) is already in
   * the delete list: a compaction that drops it must not report it again (see {@code
   * KeyRecord#olderReported}).
   */
  static final int FLAG_OLDER_REPORTED = 0x04;

  /**
   * The record's seqno is its key, 8 bytes big-endian (a delete list record), and its seqno field
   * is 0: one byte instead of up to nine.
   */
  static final int FLAG_SEQNO_IN_KEY = 0x08;

  /** The record has no hint (-1) and no hint field. */
  static final int FLAG_NO_HINT = 0x10;

  /**
   * Version 5: the record's document expires; a varint of its expiry (ms since the epoch, above 0)
   * follows the hint.
   */
  static final int FLAG_EXPIRES = 0x20;

  /** Every flag bit this build knows. */
  static final int KNOWN_FLAGS =
      FLAG_TOMBSTONE
          | FLAG_VARINT_HINT
          | FLAG_OLDER_REPORTED
          | FLAG_SEQNO_IN_KEY
          | FLAG_NO_HINT
          | FLAG_EXPIRES;

  static final int HINT_SIZE = 8;

  // Footer, the last FOOTER_SIZE bytes of the file.
  static final int FOOTER_FILTER_OFFSET_OFFSET = 0;
  static final int FOOTER_FILTER_SIZE_OFFSET = 8;
  static final int FOOTER_META_OFFSET_OFFSET = 12;
  static final int FOOTER_META_SIZE_OFFSET = 20;
  static final int FOOTER_INDEX_OFFSET_OFFSET = 24;
  static final int FOOTER_INDEX_SIZE_OFFSET = 32;
  static final int FOOTER_ENTRY_COUNT_OFFSET = 36;
  static final int FOOTER_MIN_SEQNO_OFFSET = 44;
  static final int FOOTER_MAX_SEQNO_OFFSET = 52;
  static final int FOOTER_VERSION_OFFSET = 60;
  static final int FOOTER_CRC_OFFSET = 64;
  static final int FOOTER_MAGIC_OFFSET = 68;
  static final int FOOTER_SIZE = 76;

  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  static int getIntLE(byte[] b, int off) {
    return (int) INT_LE.get(b, off);
  }

  static long getLongLE(byte[] b, int off) {
    return (long) LONG_LE.get(b, off);
  }

  static void putIntLE(byte[] b, int off, int v) {
    INT_LE.set(b, off, v);
  }

  static void putLongLE(byte[] b, int off, long v) {
    LONG_LE.set(b, off, v);
  }

  /** CRC32C of {@code b[off, off + len)}. */
  static int crc(byte[] b, int off, int len) {
    CRC32C c = new CRC32C();
    c.update(b, off, len);
    return (int) c.getValue();
  }
}
