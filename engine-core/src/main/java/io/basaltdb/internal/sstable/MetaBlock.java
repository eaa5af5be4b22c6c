package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import java.util.Arrays;

/**
 * The meta block: the table's smallest and largest keys, which the index does not hold exactly (its
 * separators may be shortened). Contents: {@code varint len | smallest key | varint len | largest
 * key}, then, in a version-5 table, its {@link ExpiryHistogram}; in a version-6 table {@code varint
 * tombstones | byte 0 or 1 | the histogram if 1}; nothing after. An empty table stores two empty
 * keys (the footer's entry count of 0 says they are absent, since the empty key is a valid key).
 *
 * <p>Thread-safety: stateless.
 */
final class MetaBlock {
  private MetaBlock() {}

  /**
   * {@code expiry}: the table's histogram, or null; {@code version}: the table's ({@link
   * #versionOf}), which says whether the tombstone count is written.
   */
  static void encode(
      Output out,
      byte[] smallest,
      byte[] largest,
      ExpiryHistogram expiry,
      long tombstones,
      int version) {
    byte[] s = smallest == null ? new byte[0] : smallest;
    byte[] l = largest == null ? new byte[0] : largest;
    out.putVarint(s.length);
    out.putBytes(s, 0, s.length);
    out.putVarint(l.length);
    out.putBytes(l, 0, l.length);
    if (version >= Format.VERSION_WITH_TOMBSTONES) {
      out.putVarint(tombstones);
      out.putByte(expiry == null ? 0 : 1);
    }
    if (expiry != null) expiry.encode(out);
  }

  /**
   * The version a table is written in: the oldest that holds what it has, so a table without
   * tombstones or expiries stays readable by version-4 builds.
   */
  static int versionOf(long tombstones, boolean expiring) {
    if (tombstones > 0) return Format.VERSION_WITH_TOMBSTONES;
    return expiring ? Format.VERSION_WITH_EXPIRY : Format.VERSION_WITHOUT_EXPIRY;
  }

  /**
   * A decoded meta block: the keys, the expiry histogram ({@link ExpiryHistogram#NONE} before
   * version 5) and the tombstone counts (0 before version 6, whose writers did not count them).
   */
  record Meta(byte[] smallest, byte[] largest, ExpiryHistogram expiry, long tombstones) {}

  /**
   * Returns the keys (and a version-5 table's histogram) decoded from verified contents {@code b[0,
   * end)} read at {@code fileOffset}; bytes after {@code end} (the trailer) are ignored.
   */
  static Meta decode(byte[] b, int end, long fileOffset, String file, int version) {
    int[] pos = {0};
    byte[] smallest = readKey(b, end, pos, fileOffset, file);
    byte[] largest = readKey(b, end, pos, fileOffset, file);
    long tombstones = 0;
    boolean histogram = version == Format.VERSION_WITH_EXPIRY;
    if (version >= Format.VERSION_WITH_TOMBSTONES) {
      tombstones = readVarint(b, end, pos, fileOffset, file, "tombstone count in meta block");
      if (pos[0] >= end || (b[pos[0]] & 0xFF) > 1)
        throw new CorruptionException(
            file, fileOffset + pos[0], "bad histogram marker in the meta block");
      histogram = b[pos[0]++] == 1;
    }
    ExpiryHistogram expiry =
        histogram ? ExpiryHistogram.decode(b, end, pos, fileOffset, file) : ExpiryHistogram.NONE;
    if (pos[0] != end) {
      throw new CorruptionException(
          file, fileOffset + pos[0], (end - pos[0]) + " stray bytes in the meta block");
    }
    return new Meta(smallest, largest, expiry, tombstones);
  }

  /**
   * The varint at {@code b[pos[0]]}, before {@code end}, advancing {@code pos[0]}; a {@link
   * CorruptionException} saying "bad {@code what}" if it runs past {@code end} or past 63 bits.
   * Shared by the meta block and the trie header.
   */
  static long readVarint(byte[] b, int end, int[] pos, long fileOffset, String file, String what) {
    int p = pos[0];
    long v = 0;
    for (int shift = 0; ; shift += 7) {
      if (p >= end || shift > 56)
        throw new CorruptionException(file, fileOffset + p, "bad " + what);
      byte x = b[p++];
      v |= (long) (x & 0x7F) << shift;
      if (x >= 0) break;
    }
    pos[0] = p;
    return v;
  }

  private static byte[] readKey(byte[] b, int end, int[] pos, long fileOffset, String file) {
    int p = pos[0];
    long len = 0;
    for (int shift = 0; ; shift += 7) {
      if (p >= end || shift > 28)
        throw new CorruptionException(file, fileOffset + p, "bad key length in meta block");
      byte x = b[p++];
      len |= (long) (x & 0x7F) << shift;
      if (x >= 0) break;
    }
    if (len > KeyRecord.MAX_KEY_SIZE || len > end - p) {
      throw new CorruptionException(
          file, fileOffset + p, "meta block key of " + len + " bytes overruns the block");
    }
    pos[0] = p + (int) len;
    return Arrays.copyOfRange(b, p, p + (int) len);
  }
}
