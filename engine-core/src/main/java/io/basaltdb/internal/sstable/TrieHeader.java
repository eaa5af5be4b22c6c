package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import java.util.Arrays;

/**
 * The header of an HB+-trie table, in the place a block table's index block has (docs/format.md,
 * "HB+-trie tables"):
 *
 * <pre>
 *   u8 chunk size | varint record blocks n | varint block size (n times) | varint records end
 *   | varint root length | root reference
 * </pre>
 *
 * Record blocks tile the file from offset 0, each followed by its trailer, up to {@code records
 * end}; the navigation pages follow up to the filter or meta block.
 *
 * <p>Thread-safety: immutable.
 */
record TrieHeader(int chunk, long[] offsets, int[] sizes, long recordsEnd, byte[] root) {

  /**
   * Decodes verified header contents {@code b[0, len)} read at {@code at}; {@code navEnd} is where
   * the navigation pages must end (the filter or meta block).
   */
  static TrieHeader decode(byte[] b, int len, long at, long navEnd, String file) {
    int[] p = {0};
    if (len < 1) throw new CorruptionException(file, at, "empty trie header");
    int chunk = b[p[0]++] & 0xFF;
    if (!TrieBuilder.validChunk(chunk))
      throw new CorruptionException(
          file, at, "trie chunk size " + chunk + " is not 1, 2, 4, 8 or 16");
    long n = varint(b, len, p, at, file);
    if (n > len) throw new CorruptionException(file, at, n + " record blocks in a short header");
    long[] offsets = new long[(int) n];
    int[] sizes = new int[(int) n];
    long offset = 0;
    for (int i = 0; i < n; i++) {
      long size = varint(b, len, p, at, file);
      if (size > TableReader.MAX_BLOCK_READ || offset + size + Format.TRAILER_SIZE > navEnd)
        throw new CorruptionException(file, at, "record block " + i + " of " + size + " bytes");
      offsets[i] = offset;
      sizes[i] = (int) size;
      offset += size + Format.TRAILER_SIZE;
    }
    long recordsEnd = varint(b, len, p, at, file);
    if (recordsEnd != offset)
      throw new CorruptionException(
          file, at, "record blocks end at " + offset + ", the header says " + recordsEnd);
    long rootLen = varint(b, len, p, at, file);
    if (rootLen != len - p[0])
      throw new CorruptionException(file, at, "root reference of " + rootLen + " bytes");
    byte[] root = Arrays.copyOfRange(b, p[0], len);
    return new TrieHeader(chunk, offsets, sizes, recordsEnd, root);
  }

  private static long varint(byte[] b, int len, int[] p, long at, String file) {
    return MetaBlock.readVarint(b, len, p, at, file, "varint in the trie header");
  }
}
