package io.basaltdb.kafka;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.WriteBatch;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.NavigableMap;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentSkipListMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.ChangelogRecordDeserializationHelper;
import org.apache.kafka.streams.processor.internals.RecordBatchingStateRestoreCallback;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.processor.internals.metrics.TaskMetrics;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.internals.HasNextCondition;
import org.apache.kafka.streams.state.internals.SegmentedBytesStore;
import org.apache.kafka.streams.state.internals.StoreQueryUtils;
import org.apache.kafka.streams.state.internals.WindowKeySchema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The time-segmented bytes store under Basalt's window and session stores, as Kafka's {@code
 * AbstractRocksDBSegmentedBytesStore} is under its RocksDB ones: records keyed by Streams' own key
 * schemas ({@code WindowKeySchema}, {@code SessionKeySchema}), each in the segment of its timestamp
 * ({@code timestamp / segmentInterval}), a segment a keyspace of the shared Basalt ({@code
 * <owner>/<segment id>}). Stream time is the largest timestamp seen; a segment older than stream
 * time minus the retention period is dropped whole, and a record that falls into one is dropped and
 * counted in the task's {@code dropped-records} sensor. Reads never see records older than the
 * retention period, whether or not their segment was dropped yet.
 *
 * <p>A restore batch is one atomic write across every segment it touches.
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
class BasaltSegmentedBytesStore extends BasaltStateStore {
  private static final Logger log = LoggerFactory.getLogger(BasaltSegmentedBytesStore.class);

  private final long retentionPeriod;
  private final long segmentInterval;
  private final SegmentedBytesStore.KeySchema keySchema;

  /** The live segments by id; read by interactive queries while the stream thread writes. */
  private final NavigableMap<Long, Keyspace> segments = new ConcurrentSkipListMap<>();

  private volatile long observedStreamTime = ConsumerRecord.NO_TIMESTAMP;
  private Sensor droppedRecords;

  BasaltSegmentedBytesStore(
      String name,
      String kind,
      long retentionPeriod,
      long segmentInterval,
      SegmentedBytesStore.KeySchema keySchema) {
    super(name, kind);
    if (retentionPeriod < 0)
      throw new IllegalArgumentException("retentionPeriod cannot be negative: " + retentionPeriod);
    if (segmentInterval < 1)
      throw new IllegalArgumentException("segmentInterval must be positive: " + segmentInterval);
    this.retentionPeriod = retentionPeriod;
    this.segmentInterval = segmentInterval;
    this.keySchema = keySchema;
  }

  @Override
  public void init(StateStoreContext context, StateStore root) {
    StreamsMetricsImpl metrics = (StreamsMetricsImpl) context.metrics();
    droppedRecords =
        TaskMetrics.droppedRecordsSensor(
            Thread.currentThread().getName(), context.taskId().toString(), metrics);
    super.init(context, root);
  }

  @Override
  void open(SharedBasalt shared, String owner) {
    segments.clear();
    for (String ks : shared.segmentsOf(owner)) {
      long id;
      try {
        id = Long.parseLong(ks.substring(owner.length() + 1));
      } catch (NumberFormatException e) {
        continue; // not a segment of this store
      }
      segments.put(id, shared.db().keyspace(ks));
    }
  }

  @Override
  void closeKeyspaces() {
    segments.clear();
  }

  @Override
  String metricsScope() {
    return this instanceof BasaltSessionStore ? "basalt-session" : "basalt-window";
  }

  /**
   * The keys of every live segment, estimated ({@link Keyspace#approximateItemCount}; exact with
   * {@code basalt.exactItemCounts=true}).
   */
  @Override
  long keyCount() {
    checkOpen();
    long n = 0;
    for (Keyspace k : segments.values()) {
      try {
        n += k.approximateItemCount();
      } catch (ClosedException dropped) {
        // expired and dropped since the values were listed
      }
    }
    return n;
  }

  long segmentId(long timestamp) {
    return timestamp / segmentInterval;
  }

  private String segmentName(long id) {
    return owner + "/" + id;
  }

  /**
   * The segment of {@code segmentId}, created if it is live at stream time {@code streamTime}
   * (dropping the segments that are not live any more); null if it has expired.
   */
  private Keyspace segmentIfLive(long segmentId, long streamTime) {
    long minLive = segmentId(streamTime - retentionPeriod);
    if (segmentId < minLive) return null;
    Keyspace s = segments.get(segmentId);
    if (s == null) {
      s = checkOpen().keyspace(segmentName(segmentId));
      segments.put(segmentId, s);
    }
    dropExpired(minLive);
    return s;
  }

  /** Drops every segment below {@code minLiveSegment}. */
  private void dropExpired(long minLiveSegment) {
    SharedBasalt s = checkOpen();
    while (!segments.isEmpty() && segments.firstKey() < minLiveSegment) {
      long id = segments.firstKey();
      segments.remove(id);
      log.debug("store {}: dropping expired segment {}", name(), id);
      try {
        s.drop(segmentName(id));
      } catch (BasaltException e) {
        throw failed("dropping an expired segment of", e);
      }
    }
  }

  /** The earliest timestamp a read may return at the current stream time. */
  long actualFrom(long from) {
    return Math.max(from, observedStreamTime - retentionPeriod + 1);
  }

  // ---- writes

  void put(Bytes key, byte[] value) {
    long timestamp = keySchema.segmentTimestamp(key);
    observedStreamTime = Math.max(observedStreamTime, timestamp);
    Keyspace segment = segmentIfLive(segmentId(timestamp), observedStreamTime);
    if (segment == null) {
      droppedRecords.record();
      return;
    }
    synchronized (position) {
      StoreQueryUtils.updatePosition(position, context);
      try {
        if (value == null) segment.delete(key.get());
        else segment.put(key.get(), value);
      } catch (ClosedException e) {
        throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
      } catch (BasaltException e) {
        throw failed("writing to", e);
      }
    }
  }

  void remove(Bytes key) {
    long timestamp = keySchema.segmentTimestamp(key);
    observedStreamTime = Math.max(observedStreamTime, timestamp);
    Keyspace segment = segments.get(segmentId(timestamp));
    if (segment == null) return;
    try {
      segment.delete(key.get());
    } catch (BasaltException e) {
      throw failed("deleting from", e);
    }
  }

  byte[] get(Bytes key) {
    checkOpen();
    long timestamp = keySchema.segmentTimestamp(key);
    if (timestamp < observedStreamTime - retentionPeriod + 1) return null;
    Keyspace segment = segments.get(segmentId(timestamp));
    if (segment == null) return null;
    try {
      return segment.get(key.get());
    } catch (ClosedException e) {
      throw new InvalidStateStoreException("Store " + name() + " is currently closed", e);
    } catch (BasaltException e) {
      throw failed("reading from", e);
    }
  }

  @Override
  StateRestoreCallback restoreCallback() {
    return (RecordBatchingStateRestoreCallback) this::restoreBatch;
  }

  /** One restore batch: stream time advanced to its newest record first, then one write. */
  void restoreBatch(Collection<ConsumerRecord<byte[], byte[]>> records) {
    for (ConsumerRecord<byte[], byte[]> r : records) {
      observedStreamTime =
          Math.max(observedStreamTime, keySchema.segmentTimestamp(Bytes.wrap(r.key())));
    }
    WriteBatch batch = new WriteBatch();
    synchronized (position) {
      for (ConsumerRecord<byte[], byte[]> r : records) {
        long timestamp = keySchema.segmentTimestamp(Bytes.wrap(r.key()));
        Keyspace segment = segmentIfLive(segmentId(timestamp), observedStreamTime);
        if (segment == null) continue;
        ChangelogRecordDeserializationHelper.applyChecksAndUpdatePosition(
            r, consistencyEnabled, position);
        if (r.value() == null) batch.delete(segment, r.key());
        else batch.put(segment, r.key(), r.value());
      }
      if (batch.size() == 0) return;
      try {
        checkOpen().db().write(batch);
      } catch (BasaltException e) {
        throw failed("restoring", e);
      }
    }
  }

  // ---- reads

  /** The live segments whose ids cover {@code [timeFrom, timeTo]}, in the iteration's order. */
  List<Keyspace> segments(long timeFrom, long timeTo, boolean forward) {
    checkOpen();
    if (timeFrom > timeTo || timeTo < 0) return List.of();
    NavigableMap<Long, Keyspace> range =
        segments.subMap(segmentId(Math.max(0, timeFrom)), true, segmentId(timeTo), true);
    return new ArrayList<>(forward ? range.values() : range.descendingMap().values());
  }

  /**
   * The segments a search of {@code [from, to]} reads: a window store's by window start; a session
   * store's from {@code from} on, since its segments are by session end and a session ending after
   * {@code to} may have started before it.
   */
  private List<Keyspace> searchSpace(long from, long to, boolean forward) {
    return keySchema instanceof WindowKeySchema
        ? segments(from, to, forward)
        : segments(from, Long.MAX_VALUE, forward);
  }

  /** The records of {@code key} between {@code from} and {@code to}, as the key schema reads. */
  KeyValueIterator<Bytes, byte[]> fetch(Bytes key, long from, long to, boolean forward) {
    checkOpen();
    long actualFrom = actualFrom(from);
    if (keySchema instanceof WindowKeySchema && to < actualFrom)
      return new BasaltKeyValueStore.EmptyIterator<>();
    return iterator(
        searchSpace(actualFrom, to, forward),
        keySchema.hasNextCondition(key, key, actualFrom, to, forward),
        keySchema.lowerRangeFixedSize(key, actualFrom),
        keySchema.upperRangeFixedSize(key, to),
        forward);
  }

  /** The records of the keys in {@code [keyFrom, keyTo]} (null: open) between the times. */
  KeyValueIterator<Bytes, byte[]> fetch(
      Bytes keyFrom, Bytes keyTo, long from, long to, boolean forward) {
    if (keyFrom != null && keyTo != null && keyFrom.compareTo(keyTo) > 0) {
      log.warn(INVALID_RANGE);
      return new BasaltKeyValueStore.EmptyIterator<>();
    }
    checkOpen();
    long actualFrom = actualFrom(from);
    if (keySchema instanceof WindowKeySchema && to < actualFrom)
      return new BasaltKeyValueStore.EmptyIterator<>();
    return iterator(
        searchSpace(actualFrom, to, forward),
        keySchema.hasNextCondition(keyFrom, keyTo, actualFrom, to, forward),
        keyFrom == null ? null : keySchema.lowerRange(keyFrom, actualFrom),
        keyTo == null ? null : keySchema.upperRange(keyTo, to),
        forward);
  }

  /** Every record within the retention period. */
  KeyValueIterator<Bytes, byte[]> all(boolean forward) {
    long actualFrom = actualFrom(0);
    return iterator(
        searchSpace(actualFrom, Long.MAX_VALUE, forward),
        keySchema.hasNextCondition(null, null, actualFrom, Long.MAX_VALUE, forward),
        null,
        null,
        forward);
  }

  /** Every record whose segment timestamp is in {@code [from, to]}. */
  KeyValueIterator<Bytes, byte[]> fetchAll(long from, long to, boolean forward) {
    checkOpen();
    long actualFrom = actualFrom(from);
    if (keySchema instanceof WindowKeySchema && to < actualFrom)
      return new BasaltKeyValueStore.EmptyIterator<>();
    return iterator(
        segments(actualFrom, to, forward),
        keySchema.hasNextCondition(null, null, actualFrom, to, forward),
        null,
        null,
        forward);
  }

  /**
   * Records in {@code [binaryFrom, binaryTo]} (null: open) of {@code searchSpace}'s segments, in
   * order, that {@code condition} accepts.
   */
  KeyValueIterator<Bytes, byte[]> iterator(
      List<Keyspace> searchSpace,
      HasNextCondition condition,
      Bytes binaryFrom,
      Bytes binaryTo,
      boolean forward) {
    checkOpen();
    return new SegmentsIterator(searchSpace.iterator(), condition, binaryFrom, binaryTo, forward);
  }

  /** The keys of one segment in {@code [from, to]}, null bounds open. */
  private KeyValueIterator<Bytes, byte[]> segmentRange(
      Keyspace segment, Bytes from, Bytes to, boolean forward) {
    byte[] lo = from == null ? null : from.get();
    byte[] hi = null, last = null;
    if (to != null) {
      hi = BasaltKeyValueStore.successor(to.get());
      if (hi == null) last = to.get();
    }
    Cursor c;
    try {
      c = forward ? segment.scan(lo, hi) : segment.reverseScan(lo, hi);
    } catch (ClosedException e) {
      // the segment was dropped (expired) since the iterator's search began
      return new BasaltKeyValueStore.EmptyIterator<>();
    } catch (BasaltException e) {
      throw failed("opening an iterator on", e);
    }
    return CursorIterator.of(c, name(), iterators, last, !forward);
  }

  /**
   * Iterates segment after segment, as Kafka's {@code SegmentIterator}: the condition skips the
   * records outside the time range and returns whether one is left in the current segment.
   */
  private final class SegmentsIterator implements KeyValueIterator<Bytes, byte[]> {
    private final Iterator<Keyspace> searchSpace;
    private final HasNextCondition condition;
    private final Bytes from;
    private final Bytes to;
    private final boolean forward;
    private KeyValueIterator<Bytes, byte[]> current;
    private boolean closed;
    private final AutoCloseable handle = this::close;

    SegmentsIterator(
        Iterator<Keyspace> searchSpace,
        HasNextCondition condition,
        Bytes from,
        Bytes to,
        boolean forward) {
      this.searchSpace = searchSpace;
      this.condition = condition;
      this.from = from;
      this.to = to;
      this.forward = forward;
      iterators.add(handle);
    }

    /** False once closed, by its user or with the store (as Kafka's segmented stores answer). */
    @Override
    public boolean hasNext() {
      if (closed) return false;
      while (true) {
        if (current != null && condition.hasNext(current)) return true;
        if (current != null) {
          current.close();
          current = null;
        }
        if (!searchSpace.hasNext()) return false;
        current = segmentRange(searchSpace.next(), from, to, forward);
      }
    }

    @Override
    public KeyValue<Bytes, byte[]> next() {
      if (!hasNext()) throw new NoSuchElementException();
      return current.next();
    }

    @Override
    public Bytes peekNextKey() {
      if (!hasNext()) throw new NoSuchElementException();
      return current.peekNextKey();
    }

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      iterators.remove(handle);
      if (current != null) current.close();
      current = null;
    }
  }
}
