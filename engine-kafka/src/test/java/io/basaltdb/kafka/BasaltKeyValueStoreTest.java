package io.basaltdb.kafka;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.AbstractKeyValueStoreTest;

/**
 * Kafka's own key-value store suite ({@code AbstractKeyValueStoreTest} from kafka-streams 4.3.1's
 * test jar), every case, run against Basalt's store behind Streams' metered and serializing layers,
 * as Kafka runs it against its RocksDB store.
 */
class BasaltKeyValueStoreTest extends AbstractKeyValueStoreTest {
  @Override
  @SuppressWarnings("unchecked")
  protected <K, V> KeyValueStore<K, V> createKeyValueStore(StateStoreContext context) {
    KeyValueStore<K, V> store =
        Stores.keyValueStoreBuilder(
                BasaltStores.persistentKeyValueStore("my-store"),
                (Serde<K>) context.keySerde(),
                (Serde<V>) context.valueSerde())
            .build();
    store.init(context, store);
    return store;
  }
}
