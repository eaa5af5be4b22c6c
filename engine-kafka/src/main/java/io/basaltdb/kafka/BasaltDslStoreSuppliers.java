package io.basaltdb.kafka;

import org.apache.kafka.streams.DslStoreFormat;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.DslSessionParams;
import org.apache.kafka.streams.state.DslStoreSuppliers;
import org.apache.kafka.streams.state.DslWindowParams;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * Moves every DSL store of an application to Basalt with one config line:
 *
 * <pre>{@code
 * props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BasaltDslStoreSuppliers.class);
 * }</pre>
 *
 * <p>Tables get timestamped key-value stores, windowed aggregations and joins timestamped window
 * stores (plain ones where the DSL asks for plain), session aggregations session stores, whatever
 * their emit strategy: Basalt's window and session stores answer the time-range reads that
 * emit-on-window-close needs. A DSL store in the {@code HEADERS} format gets the timestamped store,
 * which Streams' store builders adapt (docs/kafka-streams.md).
 *
 * <p>Thread-safety: stateless.
 */
public class BasaltDslStoreSuppliers implements DslStoreSuppliers {
  @Override
  public KeyValueBytesStoreSupplier keyValueStore(DslKeyValueParams params) {
    DslStoreFormat format = params.dslStoreFormat();
    return format == DslStoreFormat.PLAIN
        ? BasaltStores.persistentKeyValueStore(params.name())
        : BasaltStores.persistentTimestampedKeyValueStore(params.name());
  }

  @Override
  public WindowBytesStoreSupplier windowStore(DslWindowParams params) {
    DslStoreFormat format = params.dslStoreFormat();
    return format == DslStoreFormat.PLAIN
        ? BasaltStores.persistentWindowStore(
            params.name(), params.retentionPeriod(), params.windowSize(), params.retainDuplicates())
        : BasaltStores.persistentTimestampedWindowStore(
            params.name(),
            params.retentionPeriod(),
            params.windowSize(),
            params.retainDuplicates());
  }

  @Override
  public SessionBytesStoreSupplier sessionStore(DslSessionParams params) {
    return BasaltStores.persistentSessionStore(params.name(), params.retentionPeriod());
  }
}
