package io.basaltdb.kafka;

import io.basaltdb.BasaltException;
import io.basaltdb.Cursor;
import java.util.Arrays;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.errors.ProcessorStateException;
import org.apache.kafka.streams.state.KeyValueIterator;

/**
 * A store iterator over a Basalt {@link Cursor}, with the one-record look-ahead {@code peekNextKey}
 * needs. Forward cursors stop after an inclusive upper bound, reverse ones before an inclusive
 * lower bound, where the cursor's own half-open bound could not express it (a bound of the largest
 * key size). Registered in its store's set of open iterators until closed; a closed iterator throws
 * {@link InvalidStateStoreException}.
 *
 * <p>Thread-safety: one thread at a time.
 */
final class CursorIterator<K> implements KeyValueIterator<K, byte[]> {
  private final Cursor cursor;
  private final String store;
  private final Set<AutoCloseable> registry;
  private final byte[] limit;
  private final boolean reverse;
  private final Function<byte[], K> keys;
  private KeyValue<K, byte[]> next;
  private boolean done;
  private boolean closed;
  private final AutoCloseable handle = this::close;

  /**
   * @param limit the last key to return (inclusive), or null: the cursor's bounds suffice
   */
  CursorIterator(
      Cursor cursor,
      String store,
      Set<AutoCloseable> registry,
      byte[] limit,
      boolean reverse,
      Function<byte[], K> keys) {
    this.cursor = cursor;
    this.store = store;
    this.registry = registry;
    this.limit = limit;
    this.reverse = reverse;
    this.keys = keys;
    registry.add(handle);
  }

  static CursorIterator<Bytes> of(
      Cursor cursor, String store, Set<AutoCloseable> registry, byte[] limit, boolean reverse) {
    return new CursorIterator<>(cursor, store, registry, limit, reverse, Bytes::wrap);
  }

  private boolean fill() {
    if (closed) throw new InvalidStateStoreException("Store " + store + " iterator is closed");
    if (next != null) return true;
    if (done) return false;
    try {
      if (!cursor.next()) {
        done = true;
        return false;
      }
      byte[] k = cursor.key();
      if (limit != null) {
        int c = Arrays.compareUnsigned(k, limit);
        if (reverse ? c < 0 : c > 0) {
          done = true;
          return false;
        }
      }
      next = KeyValue.pair(keys.apply(k), cursor.value());
      return true;
    } catch (io.basaltdb.ClosedException e) {
      throw new InvalidStateStoreException("Store " + store + " is closed", e);
    } catch (BasaltException e) {
      throw new ProcessorStateException("Error while iterating store " + store, e);
    }
  }

  @Override
  public boolean hasNext() {
    return fill();
  }

  @Override
  public KeyValue<K, byte[]> next() {
    if (!fill()) throw new NoSuchElementException();
    KeyValue<K, byte[]> kv = next;
    next = null;
    return kv;
  }

  @Override
  public K peekNextKey() {
    if (!fill()) throw new NoSuchElementException();
    return next.key;
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    next = null;
    registry.remove(handle);
    cursor.close();
  }
}
