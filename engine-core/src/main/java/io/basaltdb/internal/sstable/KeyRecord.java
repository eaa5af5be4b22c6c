package io.basaltdb.internal.sstable;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * One key index record: a key and what the index knows about its newest document (seed 000, section
 * 3: seqno, document size, tombstone flag, and a hint to the document's place in the log). A reader
 * fills a caller-supplied instance so a lookup allocates no result object; the caller reuses it
 * across calls.
 *
 * <p>Thread-safety: a plain mutable holder; confine each instance to one thread.
 */
public final class KeyRecord {
  /** Longest key an SSTable accepts, in bytes (64 KiB). */
  public static final int MAX_KEY_SIZE = 64 * 1024;

  /**
   * The key. After {@link TableReader#get} this is the array that was looked up (not a copy); after
   * {@link TableIterator#record} a fresh copy owned by the caller.
   */
  public byte[] key;

  /** Sequence number of the key's newest write; never negative. */
  public long seqno;

  /** Size in bytes of the document in the log; never negative. */
  public int docSize;

  /** True when the newest write of the key was a delete. */
  public boolean tombstone;

  /** Opaque 64-bit locator of the document in the log; the SSTable stores it verbatim. */
  public long hint;

  /**
   * The key's next older version in the tree (the one this record superseded when it was flushed,
   * or the newest of those a compaction dropped under it) is already in the delete list, or there
   * is none: a compaction that drops it must not report it again. Table format 3.
   */
  public boolean olderReported;

  /**
   * When the key's document expires, in ms since the epoch (it is then a deletion nobody wrote); 0
   * for never. Table format 5.
   */
  public long expiry;

  /** Sets every field but {@link #olderReported}, which it clears; returns this. */
  public KeyRecord set(byte[] key, long seqno, int docSize, boolean tombstone, long hint) {
    return set(key, seqno, docSize, tombstone, hint, false);
  }

  /** Sets every field but {@link #expiry}, which it clears; returns this. */
  public KeyRecord set(
      byte[] key, long seqno, int docSize, boolean tombstone, long hint, boolean olderReported) {
    return set(key, seqno, docSize, tombstone, hint, olderReported, 0);
  }

  /** Sets every field; returns this. */
  public KeyRecord set(
      byte[] key,
      long seqno,
      int docSize,
      boolean tombstone,
      long hint,
      boolean olderReported,
      long expiry) {
    this.expiry = expiry;
    this.key = key;
    this.seqno = seqno;
    this.docSize = docSize;
    this.tombstone = tombstone;
    this.hint = hint;
    this.olderReported = olderReported;
    return this;
  }

  /**
   * The order of keys in every SSTable: bytes compared as unsigned, lexicographically; a key that
   * is a proper prefix of another sorts first. The empty key sorts before every other key.
   */
  /**
   * Whether this record's document has expired at {@code now} (ms since the epoch): at its expiry,
   * not after.
   */
  public boolean expiredAt(long now) {
    return expiry != 0 && expiry <= now;
  }

  public static int compareKeys(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b);
  }

  @Override
  public String toString() {
    String k =
        key == null
            ? "null"
            : key.length <= 32
                ? HexFormat.of().formatHex(key)
                : HexFormat.of().formatHex(key, 0, 32) + "...(" + key.length + " bytes)";
    return "KeyRecord{key="
        + k
        + ", seqno="
        + seqno
        + ", docSize="
        + docSize
        + ", tombstone="
        + tombstone
        + ", hint="
        + hint
        + (expiry != 0 ? ", expiry=" + expiry : "")
        + "}";
  }
}
