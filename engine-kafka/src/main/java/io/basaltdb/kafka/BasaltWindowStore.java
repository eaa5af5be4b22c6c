package io.basaltdb.kafka;

import java.util.NoSuchElementException;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;
import org.apache.kafka.streams.state.internals.StoreQueryUtils;
import org.apache.kafka.streams.state.internals.WindowKeySchema;

/**
 * A persistent {@code WindowStore<Bytes, byte[]>} on Basalt, a drop-in for Kafka's RocksDB window
 * store: records keyed {@code [key][window start][sequence number]} ({@code WindowKeySchema}), in
 * time segments that are keyspaces of the shared Basalt ({@link BasaltSegmentedBytesStore}). With
 * {@code retainDuplicates} every put gets a new sequence number, so equal keys and windows are all
 * kept (stream-stream joins), and a null value is ignored rather than deleting. Backward fetches
 * walk the segments and keys in descending order.
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
public class BasaltWindowStore extends BasaltSegmentedBytesStore
    implements WindowStore<Bytes, byte[]> {
  private static final WindowKeySchema SCHEMA = new WindowKeySchema();

  private final long windowSize;
  private final boolean retainDuplicates;
  private int seqnum;

  public BasaltWindowStore(
      String name,
      long retentionPeriod,
      long segmentInterval,
      long windowSize,
      boolean retainDuplicates) {
    super(name, "w", retentionPeriod, segmentInterval, SCHEMA);
    this.windowSize = windowSize;
    this.retainDuplicates = retainDuplicates;
  }

  @Override
  public void put(Bytes key, byte[] value, long windowStartTimestamp) {
    // With duplicates retained, a delete could not name the duplicate it meant: it is a no-op.
    if (value == null && retainDuplicates) return;
    if (retainDuplicates) seqnum = (seqnum + 1) & 0x7FFFFFFF;
    put(WindowKeySchema.toStoreKeyBinary(key, windowStartTimestamp, seqnum), value);
  }

  @Override
  public byte[] fetch(Bytes key, long time) {
    return get(WindowKeySchema.toStoreKeyBinary(key, time, seqnum));
  }

  @Override
  public WindowStoreIterator<byte[]> fetch(Bytes key, long timeFrom, long timeTo) {
    return values(fetch(key, timeFrom, timeTo, true));
  }

  @Override
  public WindowStoreIterator<byte[]> backwardFetch(Bytes key, long timeFrom, long timeTo) {
    return values(fetch(key, timeFrom, timeTo, false));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(
      Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo) {
    return windowed(fetch(keyFrom, keyTo, timeFrom, timeTo, true));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(
      Bytes keyFrom, Bytes keyTo, long timeFrom, long timeTo) {
    return windowed(fetch(keyFrom, keyTo, timeFrom, timeTo, false));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> all() {
    return windowed(all(true));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardAll() {
    return windowed(all(false));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> fetchAll(long timeFrom, long timeTo) {
    return windowed(fetchAll(timeFrom, timeTo, true));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetchAll(long timeFrom, long timeTo) {
    return windowed(fetchAll(timeFrom, timeTo, false));
  }

  @Override
  public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
    return StoreQueryUtils.handleBasicQueries(
        query, positionBound, config, this, getPosition(), context);
  }

  private KeyValueIterator<Windowed<Bytes>, byte[]> windowed(KeyValueIterator<Bytes, byte[]> it) {
    return new KeyValueIterator<>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public KeyValue<Windowed<Bytes>, byte[]> next() {
        KeyValue<Bytes, byte[]> kv = it.next();
        return KeyValue.pair(WindowKeySchema.fromStoreBytesKey(kv.key.get(), windowSize), kv.value);
      }

      @Override
      public Windowed<Bytes> peekNextKey() {
        return WindowKeySchema.fromStoreBytesKey(it.peekNextKey().get(), windowSize);
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }

  private static WindowStoreIterator<byte[]> values(KeyValueIterator<Bytes, byte[]> it) {
    return new WindowStoreIterator<>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public KeyValue<Long, byte[]> next() {
        if (!it.hasNext()) throw new NoSuchElementException();
        KeyValue<Bytes, byte[]> kv = it.next();
        return KeyValue.pair(timestamp(kv.key.get()), kv.value);
      }

      @Override
      public Long peekNextKey() {
        return timestamp(it.peekNextKey().get());
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }

  /** The window start of a stored key: the 8 bytes before its 4-byte sequence number. */
  static long timestamp(byte[] storeKey) {
    return java.nio.ByteBuffer.wrap(storeKey).getLong(storeKey.length - 12);
  }
}
