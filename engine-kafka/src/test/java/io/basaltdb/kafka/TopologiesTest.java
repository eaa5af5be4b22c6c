package io.basaltdb.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole topologies through {@code TopologyTestDriver}, once on Kafka's default RocksDB stores and
 * once with every DSL store moved to Basalt by {@code dsl.store.suppliers.class}: the same input
 * must give the same output. Word count (a table), a windowed count, a session count, a foreign-key
 * join (its subscription store is range-scanned by prefix), and a suppress until the window closes.
 */
class TopologiesTest {
  @TempDir Path tmp;

  private static final String IN = "in";
  private static final String OUT = "out";

  /** Runs {@code build}'s topology on {@code input}, returning the output topic's records. */
  private List<KeyValue<String, String>> run(
      boolean basalt, Consumer<StreamsBuilder> build, List<Object[]> input) {
    StreamsBuilder builder = new StreamsBuilder();
    build.accept(builder);
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "topologies-" + (basalt ? "basalt" : "rocksdb"));
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    Path stateDir = tmp.resolve(basalt ? "basalt" : "rocksdb");
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    if (basalt) {
      p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BasaltDslStoreSuppliers.class);
      p.put("basalt.memoryQuota", String.valueOf(16L << 20));
    }
    List<KeyValue<String, String>> out;
    try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(p), p)) {
      TestInputTopic<String, String> in =
          driver.createInputTopic(IN, new StringSerializer(), new StringSerializer());
      TestInputTopic<String, String> right =
          driver.createInputTopic("right", new StringSerializer(), new StringSerializer());
      for (Object[] r : input) {
        TestInputTopic<String, String> topic = r.length > 3 ? right : in;
        topic.pipeInput((String) r[0], (String) r[1], Instant.ofEpochMilli((Long) r[2]));
      }
      TestOutputTopic<String, String> o =
          driver.createOutputTopic(OUT, new StringDeserializer(), new StringDeserializer());
      out = o.readKeyValuesToList();
      if (basalt) {
        try (Stream<Path> files = Files.walk(stateDir)) {
          assertTrue(
              files.anyMatch(f -> f.getFileName().toString().equals("basalt")),
              "the stores ran on Basalt");
        }
        try (Stream<Path> files = Files.walk(stateDir)) {
          assertFalse(
              files.anyMatch(f -> f.getFileName().toString().equals("rocksdb")),
              "no store ran on RocksDB");
        }
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return out;
  }

  private void sameOnBoth(Consumer<StreamsBuilder> build, List<Object[]> input) {
    List<KeyValue<String, String>> rocks = run(false, build, input);
    List<KeyValue<String, String>> basalt = run(true, build, input);
    assertFalse(rocks.isEmpty(), "the topology produced output");
    assertEquals(rocks, basalt);
    assertEquals(0, SharedBasalt.openInstances(), "the driver closed every store");
  }

  private static List<Object[]> sentences(int n, long step) {
    Random r = new Random(42);
    String[] words = "the quick brown fox jumps over the lazy dog again and again".split(" ");
    List<Object[]> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      StringBuilder s = new StringBuilder();
      for (int w = 0; w < 4; w++) s.append(words[r.nextInt(words.length)]).append(' ');
      out.add(new Object[] {"s" + i, s.toString().trim(), i * step});
    }
    return out;
  }

  @Test
  void wordCount() {
    sameOnBoth(
        b ->
            b.<String, String>stream(IN)
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, w) -> w)
                .count()
                .toStream()
                .mapValues(String::valueOf)
                .to(OUT),
        sentences(300, 10));
  }

  @Test
  void windowedCount_andSuppressUntilTheWindowCloses() {
    Consumer<StreamsBuilder> windowed =
        b ->
            b.<String, String>stream(IN)
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, w) -> w)
                .windowedBy(
                    TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(1)))
                .count(Materialized.with(Serdes.String(), Serdes.Long()))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream()
                .map(
                    (Windowed<String> w, Long c) ->
                        KeyValue.pair(w.key() + "@" + w.window().start(), String.valueOf(c)))
                .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
    // Records a second apart over 10 minutes: windows expire, and their segments with them.
    sameOnBoth(windowed, sentences(600, 1_000));
  }

  @Test
  void sessionCount() {
    List<Object[]> input = new ArrayList<>();
    Random r = new Random(7);
    long t = 0;
    for (int i = 0; i < 400; i++) {
      t += r.nextInt(3) == 0 ? 20_000 : 500; // gaps longer than the inactivity gap end sessions
      input.add(new Object[] {"u" + r.nextInt(5), "click", t});
    }
    sameOnBoth(
        b ->
            b.<String, String>stream(IN)
                .groupByKey()
                .windowedBy(
                    SessionWindows.ofInactivityGapAndGrace(
                        Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .count()
                .toStream()
                .filter((w, c) -> c != null)
                .map(
                    (Windowed<String> w, Long c) ->
                        KeyValue.pair(
                            w.key() + "@" + w.window().start() + "-" + w.window().end(),
                            String.valueOf(c)))
                .to(OUT, Produced.with(Serdes.String(), Serdes.String())),
        input);
  }

  @Test
  void foreignKeyJoin() {
    List<Object[]> input = new ArrayList<>();
    Random r = new Random(3);
    for (int i = 0; i < 20; i++)
      input.add(new Object[] {"c" + i, "customer-" + i, (long) i, "right"});
    for (int i = 0; i < 300; i++) {
      // orders: key o<n>, value "<customer id>:<amount>", some updated, some deleted
      String order = "o" + r.nextInt(120);
      String value = r.nextInt(10) == 0 ? null : "c" + r.nextInt(20) + ":" + r.nextInt(100);
      input.add(new Object[] {order, value, 100L + i});
      if (i % 50 == 0)
        input.add(new Object[] {"c" + r.nextInt(20), "renamed-" + i, 100L + i, "right"});
    }
    sameOnBoth(
        b -> {
          KTable<String, String> customers =
              b.table("right", Consumed.with(Serdes.String(), Serdes.String()));
          KTable<String, String> orders =
              b.table(IN, Consumed.with(Serdes.String(), Serdes.String()));
          orders
              .join(customers, v -> v.substring(0, v.indexOf(':')), (o, c) -> c + " bought " + o)
              .toStream()
              .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
        },
        input);
  }

  @Test
  void materializedAs_movesOneStore() throws Exception {
    java.util.function.Function<
            org.apache.kafka.streams.state.KeyValueBytesStoreSupplier, Consumer<StreamsBuilder>>
        build =
            supplier ->
                b ->
                    b.<String, String>stream(IN)
                        .groupBy(
                            (k, v) -> v.split(" ")[0],
                            Grouped.with(Serdes.String(), Serdes.String()))
                        .aggregate(
                            () -> "",
                            (k, v, agg) -> agg.length() > 40 ? v : agg + "|" + v.length(),
                            Materialized.<String, String>as(supplier)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.String()))
                        .toStream()
                        .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
    List<Object[]> input = sentences(200, 5);
    List<KeyValue<String, String>> rocks =
        run(
            false,
            build.apply(
                org.apache.kafka.streams.state.Stores.persistentTimestampedKeyValueStore("agg")),
            input);
    Path rocksDir = tmp.resolve("rocksdb");
    org.apache.kafka.common.utils.Utils.delete(rocksDir.toFile());
    List<KeyValue<String, String>> basalt =
        run(false, build.apply(BasaltStores.persistentTimestampedKeyValueStore("agg")), input);
    assertFalse(rocks.isEmpty());
    assertEquals(rocks, basalt);
    try (Stream<Path> files = Files.walk(rocksDir)) {
      assertTrue(files.anyMatch(f -> f.getFileName().toString().equals("basalt")));
    }
  }
}
