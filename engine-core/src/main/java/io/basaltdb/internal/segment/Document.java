package io.basaltdb.internal.segment;

import java.util.Arrays;

/**
 * One document version read from a log segment: its seqno, key, value and tombstone flag. Equality
 * compares the contents of key and value.
 *
 * <p>Thread-safety: immutable by convention; the arrays are the reader's fresh copies and nobody
 * else holds them.
 *
 * @param seqno the mutation's sequence number, unique in the store
 * @param key the key, up to 64 KiB
 * @param value the value, up to 20 MiB; may be empty (tombstones usually have an empty value)
 * @param tombstone true when the mutation was a delete
 * @param expiry when the document expires, in ms since the epoch; 0 for never
 */
public record Document(long seqno, byte[] key, byte[] value, boolean tombstone, long expiry) {
  /** A document that does not expire. */
  public Document(long seqno, byte[] key, byte[] value, boolean tombstone) {
    this(seqno, key, value, tombstone, 0);
  }

  /**
   * Whether the document is a deletion at {@code now} (ms since the epoch): a tombstone, or expired
   * at or before it.
   */
  public boolean deletedAt(long now) {
    return tombstone || (expiry != 0 && expiry <= now);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Document d
        && d.seqno == seqno
        && d.tombstone == tombstone
        && d.expiry == expiry
        && Arrays.equals(d.key, key)
        && Arrays.equals(d.value, value);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(seqno) * 31 + Arrays.hashCode(key);
  }

  @Override
  public String toString() {
    return "Document[seqno="
        + seqno
        + ", key="
        + key.length
        + " bytes, value="
        + value.length
        + " bytes"
        + (tombstone ? ", tombstone" : "")
        + (expiry != 0 ? ", expiry=" + expiry : "")
        + "]";
  }
}
