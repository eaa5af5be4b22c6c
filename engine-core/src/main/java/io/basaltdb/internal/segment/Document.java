package io.basaltdb.internal.segment;

import java.util.Arrays;

/**
 * One document version read from a log segment: its seqno, key, value and tombstone flag. Equality
 * compares the contents of key and value.
 *
 * <p>Thread-safety: immutable by convention; the arrays are the reader's fresh copies and nobody else
 * holds them.
 *
 * @param seqno the mutation's sequence number, unique in the store
 * @param key the key, up to 64 KiB
 * @param value the value, up to 20 MiB; may be empty (tombstones usually have an empty value)
 * @param tombstone true when the mutation was a delete
 */
public record Document(long seqno, byte[] key, byte[] value, boolean tombstone) {
  @Override
  public boolean equals(Object o) {
    return o instanceof Document d && d.seqno == seqno && d.tombstone == tombstone
        && Arrays.equals(d.key, key) && Arrays.equals(d.value, value);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(seqno) * 31 + Arrays.hashCode(key);
  }

  @Override
  public String toString() {
    return "Document[seqno=" + seqno + ", key=" + key.length + " bytes, value=" + value.length + " bytes"
        + (tombstone ? ", tombstone" : "") + "]";
  }
}
