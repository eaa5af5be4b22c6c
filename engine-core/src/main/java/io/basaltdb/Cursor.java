package io.basaltdb;

import io.basaltdb.internal.engine.read.EngineCursor;

/**
 * Walks the keys of a range with their values: in ascending unsigned-byte order from {@link
 * Keyspace#scan} and {@link Snapshot#scan}, or in descending order from {@link
 * Keyspace#reverseScan} and {@link Snapshot#reverseScan}. Either way the range is {@code [from,
 * to)}.
 *
 * <pre>{@code
 * try (Cursor c = keyspace.scan(from, to)) {
 *   while (c.next()) { use(c.key(), c.value()); }
 * }
 * }</pre>
 *
 * <p>Thread-safety: one thread at a time. Use after close throws {@link ClosedException}.
 */
public final class Cursor implements AutoCloseable {
  private final EngineCursor cursor;

  public Cursor(EngineCursor cursor) {
    this.cursor = cursor;
  }

  /**
   * Moves to the next key in the cursor's order (the next smaller one for a reverse scan); false
   * once past the end. The first call moves to the first key.
   */
  public boolean next() {
    return cursor.next();
  }

  /** The current key (a fresh copy). */
  public byte[] key() {
    return cursor.key();
  }

  /** The current value (a fresh copy). */
  public byte[] value() {
    return cursor.value();
  }

  @Override
  public void close() {
    cursor.close();
  }
}
