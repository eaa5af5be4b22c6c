package io.basaltdb;

import io.basaltdb.internal.engine.read.EngineCursor;

/**
 * Walks the keys of a range in ascending unsigned-byte order with their values.
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

  /** Moves to the next key; false once past the end. The first call moves to the first key. */
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
