package io.basaltdb.internal.sstable;

import java.util.HexFormat;

/**
 * What a finished table holds, as returned by {@link TableWriter#finish()} and {@link
 * TableReader#info()}: the facts the manifest and compaction picking need without opening the table
 * again.
 *
 * <p>Thread-safety: immutable by convention; the key arrays are shared, do not modify them.
 *
 * @param fileSize bytes in the file
 * @param entryCount number of records
 * @param smallestKey first key, or null for an empty table
 * @param largestKey last key, or null for an empty table
 * @param minSeqno smallest seqno of any record; 0 for an empty table
 * @param maxSeqno largest seqno of any record; 0 for an empty table
 * @param tombstones records that are tombstones (0 in a table written before format version 6)
 */
public record TableInfo(
    long fileSize,
    long entryCount,
    byte[] smallestKey,
    byte[] largestKey,
    long minSeqno,
    long maxSeqno,
    long tombstones) {

  @Override
  public String toString() {
    return "TableInfo{fileSize="
        + fileSize
        + ", entryCount="
        + entryCount
        + ", smallestKey="
        + hex(smallestKey)
        + ", largestKey="
        + hex(largestKey)
        + ", seqno=["
        + minSeqno
        + ", "
        + maxSeqno
        + "], tombstones="
        + tombstones
        + "}";
  }

  private static String hex(byte[] k) {
    if (k == null) return "null";
    return k.length <= 32
        ? HexFormat.of().formatHex(k)
        : HexFormat.of().formatHex(k, 0, 32) + "...";
  }
}
