package io.basaltdb.kafka;

import java.util.Objects;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Supplies Basalt key-value stores ({@link BasaltStores#persistentKeyValueStore}, {@link
 * BasaltStores#persistentTimestampedKeyValueStore}).
 *
 * <p>Thread-safety: immutable.
 */
public final class BasaltKeyValueBytesStoreSupplier implements KeyValueBytesStoreSupplier {
  private final String name;
  private final boolean timestamped;

  BasaltKeyValueBytesStoreSupplier(String name, boolean timestamped) {
    this.name = Objects.requireNonNull(name, "name cannot be null");
    this.timestamped = timestamped;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public KeyValueStore<Bytes, byte[]> get() {
    return timestamped ? new BasaltTimestampedKeyValueStore(name) : new BasaltKeyValueStore(name);
  }

  /**
   * {@code basalt}: the metrics scope, so the store's metrics are tagged {@code basalt-state-id}.
   */
  @Override
  public String metricsScope() {
    return "basalt";
  }
}
