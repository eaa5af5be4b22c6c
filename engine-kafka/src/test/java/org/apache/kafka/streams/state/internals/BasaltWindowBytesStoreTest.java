package org.apache.kafka.streams.state.internals;

import static java.time.Duration.ofMillis;

import io.basaltdb.kafka.BasaltStores;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Kafka's own window store suite ({@code AbstractWindowBytesStoreTest} from kafka-streams 4.3.1's
 * test jar) against Basalt's window store. It lives in Kafka's package because the suite's one
 * abstract method is package-private.
 */
class BasaltWindowBytesStoreTest extends AbstractWindowBytesStoreTest {
  @Override
  <K, V> WindowStore<K, V> buildWindowStore(
      long retentionPeriod,
      long windowSize,
      boolean retainDuplicates,
      Serde<K> keySerde,
      Serde<V> valueSerde) {
    return Stores.windowStoreBuilder(
            BasaltStores.persistentWindowStore(
                "basalt-window", ofMillis(retentionPeriod), ofMillis(windowSize), retainDuplicates),
            keySerde,
            valueSerde)
        .build();
  }
}
