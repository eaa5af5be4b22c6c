package io.basaltdb.kafka;

import io.basaltdb.BasaltException;
import io.basaltdb.Stats;
import java.math.BigInteger;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Sensor.RecordingLevel;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;

/**
 * A Basalt store's metrics in Streams' {@code stream-state-metrics} group, tagged {@code
 * <scope>-state-id} with the store's name, under the names Kafka's {@code RocksDBMetricsRecorder}
 * gives RocksDB's where one means the same, so dashboards carry over:
 *
 * <ul>
 *   <li>{@code estimate-num-keys}: the store's keys (its keyspaces' exact counts);
 *   <li>{@code block-cache-usage}, {@code block-cache-capacity}, {@code block-cache-data-hit-ratio}
 *       (permille, as a gauge): the shared Basalt's block cache, as RocksDB reports a shared cache;
 *   <li>{@code write-stall-duration-total} (ns), {@code bytes-written-total}, {@code
 *       compaction-pending} (0 or 1), {@code estimate-pending-compaction-bytes}, {@code
 *       cur-size-all-mem-tables} (the write cache): the shared Basalt's, instance-wide;
 *   <li>Basalt's own: {@code basalt-gc-pending-bytes} (garbage collection's backlog), {@code
 *       basalt-segment-bytes} (the log segments on disk) and {@code basalt-memory-in-use} (bytes of
 *       the memory quota in use).
 * </ul>
 *
 * All are INFO-level gauges read when a reporter asks, from stats cached for a second (a stats
 * snapshot builds a map). Removed when the store closes.
 *
 * <p>Thread-safety: gauges may be read from any thread.
 */
final class StoreMetrics {
  private final StreamsMetricsImpl metrics;
  private final String taskId;
  private final String store;
  private final SharedBasalt shared;

  private StoreMetrics(
      StreamsMetricsImpl metrics, String taskId, String store, SharedBasalt shared) {
    this.metrics = metrics;
    this.taskId = taskId;
    this.store = store;
    this.shared = shared;
  }

  /**
   * Registers the gauges of store {@code store} in {@code context}'s metrics, if they are Streams'
   * own (a context that is not gives none); {@code keys} counts the store's keys.
   */
  static StoreMetrics register(
      StateStoreContext context,
      String scope,
      String store,
      SharedBasalt shared,
      LongSupplier keys) {
    if (!(context.metrics() instanceof StreamsMetricsImpl impl)) return null;
    StoreMetrics m = new StoreMetrics(impl, context.taskId().toString(), store, shared);
    m.add(scope, "estimate-num-keys", "Estimated number of keys in the store", keys);
    m.stat(
        scope, "block-cache-usage", "Bytes in Basalt's block cache", s -> s.get("blockCacheBytes"));
    m.stat(
        scope,
        "block-cache-capacity",
        "Capacity of Basalt's block cache",
        s -> s.get("blockCacheCapacity"));
    m.stat(
        scope,
        "block-cache-data-hit-ratio",
        "Block cache hits per thousand lookups",
        s -> {
          long hits = s.get("blockCacheHits"), misses = s.get("blockCacheMisses");
          return hits + misses == 0 ? 0 : hits * 1000 / (hits + misses);
        });
    m.stat(
        scope,
        "write-stall-duration-total",
        "Nanoseconds writers waited for flushes, compaction or garbage collection",
        s -> s.get("stallNanos") + s.get("l0StallNanos") + s.get("gcStallNanos"));
    m.stat(scope, "bytes-written-total", "Bytes written by users", Stats::userBytesWritten);
    m.stat(
        scope,
        "compaction-pending",
        "1 if key index compaction has work pending",
        s -> s.get("pendingCompactionBytes") > 0 ? 1 : 0);
    m.stat(
        scope,
        "estimate-pending-compaction-bytes",
        "Key index bytes compaction still has to rewrite",
        s -> s.get("pendingCompactionBytes"));
    m.stat(
        scope,
        "cur-size-all-mem-tables",
        "Bytes in Basalt's write caches",
        s -> s.get("writeCacheBytes"));
    m.stat(
        scope,
        "basalt-segment-bytes",
        "Bytes of Basalt's log segments",
        s -> s.get("segmentBytes"));
    m.stat(
        scope,
        "basalt-gc-pending-bytes",
        "Segment bytes garbage collection has still to reclaim",
        s -> s.get("pendingGarbageBytes"));
    m.stat(scope, "basalt-memory-in-use", "Bytes of the memory quota in use", Stats::memoryInUse);
    return m;
  }

  private void stat(String scope, String name, String description, ToLongFunction<Stats> f) {
    add(
        scope,
        name,
        description,
        () -> {
          Stats s = shared.cachedStats();
          return s == null ? 0 : f.applyAsLong(s);
        });
  }

  private void add(String scope, String name, String description, LongSupplier value) {
    Gauge<BigInteger> g =
        (config, now) -> {
          try {
            return BigInteger.valueOf(value.getAsLong());
          } catch (BasaltException
              | IllegalStateException
              | org.apache.kafka.streams.errors.InvalidStateStoreException e) {
            return BigInteger.ZERO; // the store or its Basalt closed under the reporter
          }
        };
    metrics.addStoreLevelMutableMetric(
        taskId, scope, store, name, description, RecordingLevel.INFO, g);
  }

  /** Removes the store's metrics. */
  void remove() {
    metrics.removeAllStoreLevelSensorsAndMetrics(taskId, store);
  }
}
