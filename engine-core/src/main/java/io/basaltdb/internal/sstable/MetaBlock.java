package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import java.util.Arrays;

/**
 * The meta block: the table's smallest and largest keys, which the index does not hold exactly (its
 * separators may be shortened). Contents: {@code varint len | smallest key | varint len | largest
 * key}, then, in a version-5 table, its {@link ExpiryHistogram}; nothing after. An empty table
 * stores two empty keys (the footer's entry count of 0 says they are absent, since the empty key is
 * a valid key).
 *
 * <p>Thread-safety: stateless.
 */
final class MetaBlock {
  private MetaBlock() {}

  /** {@code expiry}: the histogram of a version-5 table, or null. */
  static void encode(Output out, byte[] smallest, byte[] largest, ExpiryHistogram expiry) {
    byte[] s = smallest == null ? new byte[0] : smallest;
    byte[] l = largest == null ? new byte[0] : largest;
    out.putVarint(s.length);
    out.putBytes(s, 0, s.length);
    out.putVarint(l.length);
    out.putBytes(l, 0, l.length);
    if (expiry != null) expiry.encode(out);
  }

  /**
   * A decoded meta block: the keys and the expiry histogram ({@link ExpiryHistogram#NONE} before
   * version 5).
   */
  record Meta(byte[] smallest, byte[] largest, ExpiryHistogram expiry) {}

  /**
   * Returns the keys (and a version-5 table's histogram) decoded from verified contents {@code b[0,
   * end)} read at {@code fileOffset}; bytes after {@code end} (the trailer) are ignored.
   */
  static Meta decode(byte[] b, int end, long fileOffset, String file, int version) {
    int[] pos = {0};
    byte[] smallest = readKey(b, end, pos, fileOffset, file);
    byte[] largest = readKey(b, end, pos, fileOffset, file);
    ExpiryHistogram expiry =
        version >= Format.FORMAT_VERSION
            ? ExpiryHistogram.decode(b, end, pos, fileOffset, file)
            : ExpiryHistogram.NONE;
    if (pos[0] != end) {
      throw new CorruptionException(
          file, fileOffset + pos[0], (end - pos[0]) + " stray bytes in the meta block");
    }
    return new Meta(smallest, largest, expiry);
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
