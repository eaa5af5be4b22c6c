package io.basaltdb.kafka;

import java.time.Duration;
import java.util.Objects;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * Store suppliers for Basalt state stores, as Kafka's {@code Stores} has for RocksDB: pass one to
 * {@code Materialized.as(..)} or {@code Stores.keyValueStoreBuilder(..)}, or move every DSL store
 * of an application at once with {@link BasaltDslStoreSuppliers}.
 *
 * <pre>{@code
 * builder.table("prices", Materialized.as(BasaltStores.persistentTimestampedKeyValueStore("prices")));
 * }</pre>
 *
 * <p>All the stores of an application instance share one Basalt (configs {@code basalt.*}, see
 * {@link BasaltConfig}).
 */
public final class BasaltStores {
  private BasaltStores() {}

  /** A persistent key-value store. */
  public static KeyValueBytesStoreSupplier persistentKeyValueStore(String name) {
    Objects.requireNonNull(name, "name cannot be null");
    return new BasaltKeyValueBytesStoreSupplier(name, false);
  }

  /** A persistent key-value store whose values carry their timestamps (DSL tables). */
  public static KeyValueBytesStoreSupplier persistentTimestampedKeyValueStore(String name) {
    Objects.requireNonNull(name, "name cannot be null");
    return new BasaltKeyValueBytesStoreSupplier(name, true);
  }

  /**
   * A persistent window store, segmented as Kafka's: half the retention period per segment, at
   * least a minute.
   *
   * @throws IllegalArgumentException if a duration is negative or the window is longer than the
   *     retention period
   */
  public static WindowBytesStoreSupplier persistentWindowStore(
      String name, Duration retentionPeriod, Duration windowSize, boolean retainDuplicates) {
    return windowStore(name, retentionPeriod, windowSize, retainDuplicates, false);
  }

  /** As {@link #persistentWindowStore}, its values carrying their timestamps (DSL windows). */
  public static WindowBytesStoreSupplier persistentTimestampedWindowStore(
      String name, Duration retentionPeriod, Duration windowSize, boolean retainDuplicates) {
    return windowStore(name, retentionPeriod, windowSize, retainDuplicates, true);
  }

  private static WindowBytesStoreSupplier windowStore(
      String name,
      Duration retentionPeriod,
      Duration windowSize,
      boolean retainDuplicates,
      boolean timestamped) {
    Objects.requireNonNull(name, "name cannot be null");
    long retention = millis(retentionPeriod, "retentionPeriod");
    long size = millis(windowSize, "windowSize");
    if (size > retention) {
      throw new IllegalArgumentException(
          "The retention period of the window store "
              + name
              + " must be no smaller than its window size. Got size=["
              + windowSize
              + "], retention=["
              + retentionPeriod
              + "]");
    }
    return new BasaltWindowBytesStoreSupplier(
        name, retention, Math.max(retention / 2, 60_000L), size, retainDuplicates, timestamped);
  }

  /**
   * A persistent session store.
   *
   * @throws IllegalArgumentException if the retention period is negative
   */
  public static SessionBytesStoreSupplier persistentSessionStore(
      String name, Duration retentionPeriod) {
    Objects.requireNonNull(name, "name cannot be null");
    return new BasaltSessionBytesStoreSupplier(name, millis(retentionPeriod, "retentionPeriod"));
  }

  private static long millis(Duration d, String what) {
    Objects.requireNonNull(d, what + " cannot be null");
    long ms;
    try {
      ms = d.toMillis();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(what + " is too long: " + d, e);
    }
    if (ms < 0) throw new IllegalArgumentException(what + " cannot be negative");
    return ms;
  }
}
