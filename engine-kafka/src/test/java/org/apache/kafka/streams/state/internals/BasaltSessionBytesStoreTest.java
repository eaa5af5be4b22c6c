package org.apache.kafka.streams.state.internals;

import static java.time.Duration.ofMillis;
import static org.apache.kafka.common.utils.Utils.toList;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.basaltdb.kafka.BasaltStores;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.test.MockRecordCollector;
import org.junit.jupiter.api.Test;

/**
 * Kafka's own session store suite ({@code AbstractSessionBytesStoreTest} from kafka-streams 4.3.1's
 * test jar) against Basalt's session store, in Kafka's package because the suite's hooks are
 * package-private. The suite branches on the store type in three places; Basalt's store expects
 * what Kafka's time-ordered RocksDB session store does there (it answers {@code
 * findSessions(earliestEnd, latestEnd)}, which Kafka's default session store refuses, and expires
 * by segment as RocksDB does).
 *
 * <p>One case is Basalt's own version: {@link #shouldRestore}. Kafka's restores into a store it has
 * closed, which its RocksDB session store allows by quietly reopening segments; Basalt's stores
 * refuse any use once closed, so the version here restores into the store reopened after its task
 * directory was wiped, as Streams restores one.
 */
class BasaltSessionBytesStoreTest extends AbstractSessionBytesStoreTest {
  @Override
  StoreType storeType() {
    return StoreType.RocksDBTimeOrderedSessionStoreWithIndex;
  }

  @Override
  <K, V> SessionStore<K, V> buildSessionStore(
      long retentionPeriod, Serde<K> keySerde, Serde<V> valueSerde) {
    return Stores.sessionStoreBuilder(
            BasaltStores.persistentSessionStore("basalt-session", ofMillis(retentionPeriod)),
            keySerde,
            valueSerde)
        .build();
  }

  @Test
  @Override
  public void shouldRestore() {
    List<KeyValue<Windowed<String>, Long>> expected =
        Arrays.asList(
            KeyValue.pair(new Windowed<>("a", new SessionWindow(0, 0)), 1L),
            KeyValue.pair(new Windowed<>("a", new SessionWindow(10, 10)), 2L),
            KeyValue.pair(new Windowed<>("a", new SessionWindow(100, 100)), 3L),
            KeyValue.pair(new Windowed<>("a", new SessionWindow(1000, 1000)), 4L));
    for (KeyValue<Windowed<String>, Long> kv : expected) sessionStore.put(kv.key, kv.value);
    try (KeyValueIterator<Windowed<String>, Long> values = sessionStore.fetch("a")) {
      assertEquals(expected, toList(values));
    }
    sessionStore.close();
    assertThrows(InvalidStateStoreException.class, () -> sessionStore.fetch("a"));

    List<KeyValue<byte[], byte[]>> changeLog = new ArrayList<>();
    for (ProducerRecord<Object, Object> r :
        ((MockRecordCollector) context.recordCollector()).collected()) {
      changeLog.add(new KeyValue<>(((Bytes) r.key()).get(), (byte[]) r.value()));
    }
    // Streams wipes the store's directory, reopens it and restores it from the changelog.
    try {
      Files.delete(context.stateDir().toPath().resolve(sessionStore.name()).resolve("basalt.id"));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    sessionStore = buildSessionStore(RETENTION_PERIOD, Serdes.String(), Serdes.Long());
    sessionStore.init(context, sessionStore);
    try (KeyValueIterator<Windowed<String>, Long> values = sessionStore.fetch("a")) {
      assertEquals(List.of(), toList(values), "the wiped store starts empty");
    }
    context.restore(sessionStore.name(), changeLog);
    try (KeyValueIterator<Windowed<String>, Long> values = sessionStore.fetch("a")) {
      assertEquals(expected, toList(values));
    }
  }
}
