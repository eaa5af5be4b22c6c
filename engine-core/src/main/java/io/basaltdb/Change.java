package io.basaltdb;

/**
 * One change a {@link ChangeFeed} returns: a key's version written with {@code seqno}, its value,
 * or null for a deletion. The arrays are the caller's own.
 */
public record Change(long seqno, byte[] key, byte[] value, boolean deletion) {
  @Override
  public String toString() {
    return "Change[seqno="
        + seqno
        + ", key="
        + key.length
        + " bytes, "
        + (deletion ? "deleted" : "value=" + value.length + " bytes")
        + "]";
  }
}
