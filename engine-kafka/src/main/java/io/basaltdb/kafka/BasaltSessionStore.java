package io.basaltdb.kafka;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.internals.SessionKeySchema;
import org.apache.kafka.streams.state.internals.StoreQueryUtils;

/**
 * A persistent {@code SessionStore<Bytes, byte[]>} on Basalt, a drop-in for Kafka's RocksDB session
 * store: records keyed {@code [key][session end][session start]} ({@code SessionKeySchema}), in
 * segments by session end that are keyspaces of the shared Basalt ({@link
 * BasaltSegmentedBytesStore}). Unlike Kafka's default session store it also answers {@link
 * #findSessions(long, long)}, the sessions that ended in a time range, which session aggregations
 * that emit on window close ask for: each segment of the range is read once, and its sessions that
 * ended in the range are returned in session-end order.
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
public class BasaltSessionStore extends BasaltSegmentedBytesStore
    implements SessionStore<Bytes, byte[]> {
  private static final SessionKeySchema SCHEMA = new SessionKeySchema();

  public BasaltSessionStore(String name, long retentionPeriod, long segmentInterval) {
    super(name, "s", retentionPeriod, segmentInterval, SCHEMA);
  }

  @Override
  public void put(Windowed<Bytes> sessionKey, byte[] aggregate) {
    put(SessionKeySchema.toBinary(sessionKey), aggregate);
  }

  @Override
  public void remove(Windowed<Bytes> sessionKey) {
    remove(SessionKeySchema.toBinary(sessionKey));
  }

  @Override
  public byte[] fetchSession(Bytes key, long sessionStartTime, long sessionEndTime) {
    return get(SessionKeySchema.toBinary(key, sessionStartTime, sessionEndTime));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(
      Bytes key, long earliestSessionEndTime, long latestSessionStartTime) {
    return sessions(fetch(key, earliestSessionEndTime, latestSessionStartTime, true));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(
      Bytes key, long earliestSessionEndTime, long latestSessionStartTime) {
    return sessions(fetch(key, earliestSessionEndTime, latestSessionStartTime, false));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(
      Bytes keyFrom, Bytes keyTo, long earliestSessionEndTime, long latestSessionStartTime) {
    return sessions(fetch(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, true));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFindSessions(
      Bytes keyFrom, Bytes keyTo, long earliestSessionEndTime, long latestSessionStartTime) {
    return sessions(fetch(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime, false));
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes key) {
    return findSessions(key, 0, Long.MAX_VALUE);
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes key) {
    return backwardFindSessions(key, 0, Long.MAX_VALUE);
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> fetch(Bytes keyFrom, Bytes keyTo) {
    return findSessions(keyFrom, keyTo, 0, Long.MAX_VALUE);
  }

  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> backwardFetch(Bytes keyFrom, Bytes keyTo) {
    return backwardFindSessions(keyFrom, keyTo, 0, Long.MAX_VALUE);
  }

  /** The sessions that ended in {@code [earliestSessionEndTime, latestSessionEndTime]}. */
  @Override
  public KeyValueIterator<Windowed<Bytes>, byte[]> findSessions(
      long earliestSessionEndTime, long latestSessionEndTime) {
    long from = actualFrom(earliestSessionEndTime);
    Iterator<io.basaltdb.Keyspace> space = segments(from, latestSessionEndTime, true).iterator();
    return new KeyValueIterator<>() {
      private Iterator<KeyValue<Bytes, byte[]>> batch = java.util.Collections.emptyIterator();
      private KeyValue<Bytes, byte[]> next;

      private boolean fill() {
        checkOpen();
        while (next == null) {
          if (batch.hasNext()) {
            next = batch.next();
            return true;
          }
          if (!space.hasNext()) return false;
          batch = endedIn(space.next(), from, latestSessionEndTime).iterator();
        }
        return true;
      }

      @Override
      public boolean hasNext() {
        return fill();
      }

      @Override
      public KeyValue<Windowed<Bytes>, byte[]> next() {
        if (!fill()) throw new NoSuchElementException();
        KeyValue<Bytes, byte[]> kv = next;
        next = null;
        return KeyValue.pair(SessionKeySchema.from(kv.key), kv.value);
      }

      @Override
      public Windowed<Bytes> peekNextKey() {
        if (!fill()) throw new NoSuchElementException();
        return SessionKeySchema.from(next.key);
      }

      @Override
      public void close() {
        batch = java.util.Collections.emptyIterator();
        next = null;
      }
    };
  }

  /** The sessions of one segment that ended in {@code [from, to]}, by end time, then key. */
  private List<KeyValue<Bytes, byte[]>> endedIn(io.basaltdb.Keyspace segment, long from, long to) {
    List<KeyValue<Bytes, byte[]>> out = new ArrayList<>();
    try (KeyValueIterator<Bytes, byte[]> it =
        iterator(List.of(segment), i -> i.hasNext(), null, null, true)) {
      while (it.hasNext()) {
        KeyValue<Bytes, byte[]> kv = it.next();
        long end = endTime(kv.key.get());
        if (end >= from && end <= to) out.add(kv);
      }
    }
    out.sort(
        Comparator.comparingLong((KeyValue<Bytes, byte[]> kv) -> endTime(kv.key.get()))
            .thenComparing(kv -> kv.key));
    return out;
  }

  /** The session end time of a stored key: the 8 bytes before the start time at its end. */
  static long endTime(byte[] binaryKey) {
    return ByteBuffer.wrap(binaryKey).getLong(binaryKey.length - 16);
  }

  @Override
  public <R> QueryResult<R> query(Query<R> query, PositionBound positionBound, QueryConfig config) {
    return StoreQueryUtils.handleBasicQueries(
        query, positionBound, config, this, getPosition(), context);
  }

  private static KeyValueIterator<Windowed<Bytes>, byte[]> sessions(
      KeyValueIterator<Bytes, byte[]> it) {
    return new KeyValueIterator<>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public KeyValue<Windowed<Bytes>, byte[]> next() {
        KeyValue<Bytes, byte[]> kv = it.next();
        return KeyValue.pair(SessionKeySchema.from(kv.key), kv.value);
      }

      @Override
      public Windowed<Bytes> peekNextKey() {
        return SessionKeySchema.from(it.peekNextKey());
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }
}
