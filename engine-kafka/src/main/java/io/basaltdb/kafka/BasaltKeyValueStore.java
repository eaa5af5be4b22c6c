package io.basaltdb.kafka;

import io.basaltdb.BasaltException;
import io.basaltdb.BulkLoad;
import io.basaltdb.ClosedException;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.WriteBatch;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.errors.ProcessorStateException;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.internals.ChangelogRecordDeserializationHelper;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.internals.StoreQueryUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A persistent {@code KeyValueStore<Bytes, byte[]>} on one keyspace of the application instance's
 * shared Basalt, a drop-in for Kafka's RocksDB store: the same semantics (a null value deletes;
 * {@code range} and {@code reverseRange} with both bounds inclusive and null open; {@code
 * prefixScan}; iterators that never return null values and close with the store), the StateStore
 * contract of {@link BasaltStateStore}, and interactive queries ({@code KeyQuery}, {@code
 * RangeQuery}) through Streams' own {@code StoreQueryUtils}. {@code putAll} is one atomic write;
 * one over {@code basalt.walSkipBytes} (an eighth of the write cache by default) skips the
 * write-ahead log. A restore goes through a {@link BulkLoad} ({@link
 * BasaltStateStore#restoreLoad}), applied in full before any other use of the store.
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
public class BasaltKeyValueStore extends BasaltStateStore implements KeyValueStore<Bytes, byte[]> {
  private static final Logger log = LoggerFactory.getLogger(BasaltKeyValueStore.class);

  private volatile Keyspace keyspace;

  public BasaltKeyValueStore(String name) {
    super(name, "kv");
  }

  @Override
  void open(SharedBasalt shared, String owner) {
    keyspace = shared.keyspace(owner);
  }

  @Override
  void closeKeyspaces() {
    keyspace = null;
  }

  /** The store's keyspace, once a restore under way is applied ({@link #finishRestore}). */
  private Keyspace ks() {
    finishRestore();
    return keyspaceOrClosed();
  }

  private Keyspace keyspaceOrClosed() {
    Keyspace k = keyspace;
    if (k == null || !isOpen())
      throw new InvalidStateStoreException("Store " + name() + " is currently closed");
    return k;
  }

  @Override
  StateRestoreCallback restoreCallback() {
    return (RecordBatchingStateRestoreCallback) this::restoreBatch;
  }

  /**
   * One restore batch from the changelog, into the restore's bulk load ({@link #restoreLoad}), or
   * as one write if the store skips no WAL.
   */
  void restoreBatch(Collection<ConsumerRecord<byte[], byte[]>> records) {
    Keyspace k = keyspaceOrClosed();
    synchronized (position) {
      BulkLoad load;
      try {
        load = restoreLoad(checkOpen());
      } catch (ClosedException e) {
        throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
      } catch (BasaltException e) {
        throw failed("restoring", e);
      }
      WriteBatch batch = load == null ? new WriteBatch() : null;
      try {
        for (ConsumerRecord<byte[], byte[]> r : records) {
          ChangelogRecordDeserializationHelper.applyChecksAndUpdatePosition(
              r, consistencyEnabled, position);
          if (load == null) {
            if (r.value() == null) batch.delete(k, r.key());
            else batch.put(k, r.key(), r.value());
          } else if (r.value() == null) {
            load.delete(k, r.key());
          } else {
            load.put(k, r.key(), r.value());
          }
        }
      } catch (ClosedException e) {
        InvalidStateStoreException f =
            new InvalidStateStoreException("Store " + name() + " is currently closed", e);
        throw load == null ? f : restoreFailed(f);
      } catch (BasaltException e) {
        ProcessorStateException f = failed("restoring", e);
        throw load == null ? f : restoreFailed(f);
      }
      if (batch != null) write(batch, "restoring");
    }
  }

  private void write(WriteBatch batch, String what) {
    try {
      checkOpen().db().write(batch);
    } catch (ClosedException e) {
      throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
    } catch (BasaltException e) {
      throw failed(what, e);
    }
  }

  @Override
  public void put(Bytes key, byte[] value) {
    Objects.requireNonNull(key, "key cannot be null");
    Keyspace k = ks();
    synchronized (position) {
      try {
        if (value == null) k.delete(key.get());
        else k.put(key.get(), value);
      } catch (ClosedException e) {
        throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
      } catch (BasaltException e) {
        throw failed("writing to", e);
      }
      StoreQueryUtils.updatePosition(position, context);
    }
  }

  @Override
  public byte[] putIfAbsent(Bytes key, byte[] value) {
    Objects.requireNonNull(key, "key cannot be null");
    byte[] old = get(key);
    if (old == null && value != null) put(key, value);
    return old;
  }

  @Override
  public void putAll(List<KeyValue<Bytes, byte[]>> entries) {
    Keyspace k = ks();
    WriteBatch batch = new WriteBatch();
    for (KeyValue<Bytes, byte[]> e : entries) {
      Objects.requireNonNull(e.key, "key cannot be null");
      if (e.value == null) batch.delete(k, e.key.get());
      else batch.put(k, e.key.get(), e.value);
    }
    synchronized (position) {
      if (batch.size() > 0) write(batch, "writing a batch to");
      StoreQueryUtils.updatePosition(position, context);
    }
  }

  @Override
  public byte[] delete(Bytes key) {
    Objects.requireNonNull(key, "key cannot be null");
    byte[] old = get(key);
    put(key, null);
    return old;
  }

  @Override
  public byte[] get(Bytes key) {
    Objects.requireNonNull(key, "key cannot be null");
    Keyspace k = ks();
    try {
      return k.get(key.get());
    } catch (ClosedException e) {
      throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
    } catch (BasaltException e) {
      throw failed("reading from", e);
    }
  }

  @Override
  public KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to) {
    return range(from, to, false);
  }

  @Override
  public KeyValueIterator<Bytes, byte[]> reverseRange(Bytes from, Bytes to) {
    return range(from, to, true);
  }

  @Override
  public KeyValueIterator<Bytes, byte[]> all() {
    return iterator(null, null, null, false);
  }

  @Override
  public KeyValueIterator<Bytes, byte[]> reverseAll() {
    return iterator(null, null, null, true);
  }

  private KeyValueIterator<Bytes, byte[]> range(Bytes from, Bytes to, boolean reverse) {
    if (from != null && to != null && from.compareTo(to) > 0) {
      log.warn(INVALID_RANGE);
      return new EmptyIterator<>();
    }
    byte[] lo = from == null ? null : from.get();
    if (to == null) return iterator(lo, null, null, reverse);
    byte[] hi = to.get();
    byte[] after = successor(hi);
    return after != null ? iterator(lo, after, null, reverse) : iterator(lo, null, hi, reverse);
  }

  /**
   * The least key above {@code key}: it followed by a zero byte; null if that is over the key size
   * limit (the bound is then checked key by key).
   */
  static byte[] successor(byte[] key) {
    if (key.length >= Options.MAX_KEY_SIZE) return null;
    return java.util.Arrays.copyOf(key, key.length + 1);
  }

  /** Keys in {@code [lo, hi)}, and at most {@code last} if it is not null. */
  private KeyValueIterator<Bytes, byte[]> iterator(
      byte[] lo, byte[] hi, byte[] last, boolean reverse) {
    Keyspace k = ks();
    Cursor c;
    try {
      c = reverse ? k.reverseScan(lo, hi) : k.scan(lo, hi);
    } catch (ClosedException e) {
      throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
    } catch (BasaltException e) {
      throw failed("opening an iterator on", e);
    }
    return CursorIterator.of(c, name(), iterators, last, reverse);
  }

  @Override
  public <PS extends Serializer<P>, P> KeyValueIterator<Bytes, byte[]> prefixScan(
      P prefix, PS prefixKeySerializer) {
    Objects.requireNonNull(prefix, "prefix cannot be null");
    Objects.requireNonNull(prefixKeySerializer, "prefixKeySerializer cannot be null");
    byte[] p = prefixKeySerializer.serialize(null, prefix);
    return iterator(p, increment(p), null, false);
  }

  /**
   * The least key above every key that starts with {@code prefix}, or null if there is none (the
   * prefix is all 0xff bytes).
   */
  static byte[] increment(byte[] prefix) {
    byte[] out = prefix.clone();
    for (int i = out.length - 1; i >= 0; i--) {
      if (out[i] != (byte) 0xff) {
        out[i]++;
        return java.util.Arrays.copyOf(out, i + 1);
      }
    }
    return null;
  }

  @Override
  String metricsScope() {
    return "basalt";
  }

  @Override
  long keyCount() {
    // The metric (read on the metrics reporter's thread) leaves a restore under way alone.
    return count(keyspaceOrClosed());
  }

  @Override
  public long approximateNumEntries() {
    return count(ks());
  }

  private long count(Keyspace k) {
    try {
      return k.approximateItemCount(); // exact with basalt.exactItemCounts=true
    } catch (BasaltException e) {
      throw failed("counting the entries of", e);
    }
  }

  @Override
  public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
    return StoreQueryUtils.handleBasicQueries(
        query, positionBound, config, this, position, context);
  }

  /** An iterator over nothing. */
  static final class EmptyIterator<K, V> implements KeyValueIterator<K, V> {
    @Override
    public boolean hasNext() {
      return false;
    }

    @Override
    public KeyValue<K, V> next() {
      throw new java.util.NoSuchElementException();
    }

    @Override
    public K peekNextKey() {
      throw new java.util.NoSuchElementException();
    }

    @Override
    public void close() {}
  }
}
