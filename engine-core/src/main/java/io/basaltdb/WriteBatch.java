package io.basaltdb;

import io.basaltdb.internal.engine.writecache.Batch;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Puts and deletes, possibly across keyspaces of one store, applied atomically by {@link
 * Basalt#write}: after a crash either all of them are present or none; a snapshot sees all or none.
 * Keys and values are copied into the batch when added (from arrays, or from the bytes between a
 * buffer's position and its limit), so the caller may reuse its arrays and buffers at once. Keys
 * are checked when added, values against the store's {@link Options#maxValueSize} when written; a
 * refused batch changes nothing.
 *
 * <p>A batch keeps its memory across {@link #clear()} (up to 1 MiB of keys and values and 1024
 * operations): one batch cleared and refilled per write is written without allocating on the heap
 * once it has grown to its size.
 *
 * <p>Thread-safety: not thread-safe; build it on one thread. A batch may be written more than once,
 * but not by two writes at the same time, nor changed while it is written (both throw {@link
 * InvalidArgumentException}).
 */
public final class WriteBatch {
  private static final Keyspace[] NO_KEYSPACES = new Keyspace[0];

  /** The operations in the engine's form: their keyspace ids, types, and the bytes copied in. */
  final Batch batch;

  /** Each operation's keyspace handle (its store is checked when the batch is written). */
  Keyspace[] keyspaces = NO_KEYSPACES;

  private long bytes;

  public WriteBatch() {
    batch = new Batch(0);
  }

  /** A batch with room for {@code operations} and {@code bytes} of keys and values. */
  WriteBatch(int operations, long bytes) {
    batch = new Batch(operations, (int) bytes);
    keyspaces = new Keyspace[operations];
  }

  /**
   * The newest write of each keyspace and key of this batch, one operation each, in key order
   * (keyspace, then key): what the batch leaves in the store, in the order a flush writes it
   * ({@link BulkLoad}'s chunks).
   */
  WriteBatch newestInKeyOrder() {
    int[] ops = io.basaltdb.internal.engine.write.BatchOrder.newestInKeyOrder(batch);
    WriteBatch w = new WriteBatch(ops.length, bytes);
    for (int i : ops) {
      w.keyspaces[w.batch.count()] = keyspaces[i];
      w.batch.addFrom(batch, i);
      w.bytes += batch.keyLength(i) + Math.max(batch.valueLength(i), 0);
    }
    return w;
  }

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
    if (value == null)
      throw new InvalidArgumentException("value must not be null (use an empty array, or delete)");
    Keys.checkExpiry(expiresAtMillis);
    added(keyspace);
    batch.add(keyspace.id, Batch.PUT, key, value, expiresAtMillis);
    bytes += key.length + value.length;
    return this;
  }

  /**
   * A put of the bytes between each buffer's position and limit (heap or direct buffers; their
   * positions and limits do not change), copied now: the caller may reuse the buffers at once.
   */
  public WriteBatch put(Keyspace keyspace, ByteBuffer key, ByteBuffer value) {
    return put(keyspace, key, value, 0);
  }

  /**
   * As {@link #put(Keyspace, ByteBuffer, ByteBuffer)}, expiring as {@link #put(Keyspace, byte[],
   * byte[], long)}.
   */
  public WriteBatch put(Keyspace keyspace, ByteBuffer key, ByteBuffer value, long expiresAtMillis) {
    checkKeyspace(keyspace);
    Keys.checkKey(key);
    if (value == null)
      throw new InvalidArgumentException("value must not be null (use an empty buffer, or delete)");
    Keys.checkExpiry(expiresAtMillis);
    added(keyspace);
    long n = key.remaining() + value.remaining();
    batch.add(keyspace.id, Batch.PUT, key, value, expiresAtMillis);
    bytes += n;
    return this;
  }

  public WriteBatch delete(Keyspace keyspace, byte[] key) {
    checkKeyspace(keyspace);
    Keys.checkKey(key);
    added(keyspace);
    batch.add(keyspace.id, Batch.DELETE, key, null);
    bytes += key.length;
    return this;
  }

  /** A delete of the key between {@code key}'s position and limit. */
  public WriteBatch delete(Keyspace keyspace, ByteBuffer key) {
    checkKeyspace(keyspace);
    Keys.checkKey(key);
    added(keyspace);
    long n = key.remaining();
    batch.add(keyspace.id, Batch.DELETE, key, null, 0);
    bytes += n;
    return this;
  }

  /** Number of operations. */
  public int size() {
    return batch.count();
  }

  /** Bytes of keys and values held. */
  public long bytes() {
    return bytes;
  }

  /** Removes every operation, keeping the batch's memory for the next ones. */
  public WriteBatch clear() {
    checkNotWriting();
    if (batch.isAbandoned())
      throw new InvalidArgumentException(
          "a write of this batch failed with an Error that"
              + " may have left it in use; make a new batch");
    Arrays.fill(keyspaces, 0, size(), null); // a cleared batch keeps no store reachable
    if (keyspaces.length > Batch.RETAINED_OPERATIONS) keyspaces = NO_KEYSPACES;
    batch.clear();
    bytes = 0;
    return this;
  }

  /**
   * Refuses a change while the batch is being written (its bytes are the write's until it returns).
   */
  private void checkNotWriting() {
    if (batch.isWriting()) {
      throw new InvalidArgumentException(
          "the batch is being written by another thread; change it once the write returns");
    }
  }

  /**
   * Records the keyspace of the operation about to be added (before the batch holds it, so a
   * failure adds nothing).
   */
  private void added(Keyspace keyspace) {
    int i = batch.count();
    if (i == keyspaces.length) keyspaces = Arrays.copyOf(keyspaces, Math.max(4, i * 2));
    keyspaces[i] = keyspace;
  }

  private void checkKeyspace(Keyspace keyspace) {
    if (keyspace == null) throw new InvalidArgumentException("keyspace must not be null");
    checkNotWriting();
  }
}
