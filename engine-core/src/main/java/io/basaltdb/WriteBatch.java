package io.basaltdb;

import java.util.ArrayList;
import java.util.List;

/**
 * Puts and deletes, possibly across keyspaces of one store, applied atomically by {@link Basalt#write}:
 * after a crash either all of them are present or none; a snapshot sees all or none. Keys and values are
 * copied when added, so the caller may reuse its arrays. Keys are checked when added, values against
 * the store's {@link Options#maxValueSize} when written; a refused batch changes nothing.
 *
 * <p>Thread-safety: not thread-safe; build it on one thread. A batch may be written more than once.
 */
public final class WriteBatch {
  static final byte PUT = 1;
  static final byte DELETE = 2;

  final List<Op> ops = new ArrayList<>();
  private long bytes;

  /** One operation; fields are immutable once added. */
  record Op(Keyspace keyspace, byte type, byte[] key, byte[] value, long expiry) {}

  public WriteBatch put(Keyspace keyspace, byte[] key, byte[] value) {
    return put(keyspace, key, value, 0);
  }

  /**
   * A put whose value expires at {@code expiresAtMillis} (ms since the epoch, by the store's {@link
   * Options#clock}; 0: never), as {@link Keyspace#put(byte[], byte[], long)}.
   */
  public WriteBatch put(Keyspace keyspace, byte[] key, byte[] value, long expiresAtMillis) {
    checkKeyspace(keyspace);
    Keys.checkKey(key);
    if (value == null) throw new InvalidArgumentException("value must not be null (use an empty array, or delete)");
    Keys.checkExpiry(expiresAtMillis);
    ops.add(new Op(keyspace, PUT, key.clone(), value.clone(), expiresAtMillis));
    bytes += key.length + value.length;
    return this;
  }

  public WriteBatch delete(Keyspace keyspace, byte[] key) {
    checkKeyspace(keyspace);
    Keys.checkKey(key);
    ops.add(new Op(keyspace, DELETE, key.clone(), null, 0));
    bytes += key.length;
    return this;
  }

  /** Number of operations. */
  public int size() {
    return ops.size();
  }

  /** Bytes of keys and values held. */
  public long bytes() {
    return bytes;
  }

  public WriteBatch clear() {
    ops.clear();
    bytes = 0;
    return this;
  }

  private static void checkKeyspace(Keyspace keyspace) {
    if (keyspace == null) throw new InvalidArgumentException("keyspace must not be null");
  }
}
