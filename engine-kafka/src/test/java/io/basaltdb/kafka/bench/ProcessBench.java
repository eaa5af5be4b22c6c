package io.basaltdb.kafka.bench;

import io.basaltdb.kafka.BasaltDslStoreSuppliers;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Properties;
import java.util.SplittableRandom;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Stream processing through a store, for {@code bin/kafka-bench}: a topology run by {@code
 * TopologyTestDriver} (no broker: the store's cost is what differs), timing each record's
 * processing. Workloads: {@code wordcount} (sentences of 8 words from a vocabulary of {@code keys}
 * words, counted per word) and {@code aggregate} (a long per record to one of {@code keys} keys,
 * summed per key into a 100-byte aggregate: with enough keys the state is many times the memory
 * budget). The driver keeps every record the topology produces; they are read away every 16,384
 * records, between two records' timings (the reads count in the throughput, in no record's
 * latency). Prints one line: {@code engine=.. workload=.. cache=.. records=.. seconds=..
 * recordsPerSec=.. p50Micros=.. p99Micros=.. p999Micros=..}, after a warm-up of a tenth of the
 * records.
 *
 * <p>Arguments: engine ({@code basalt}, {@code basalt-exact} for Basalt with {@code
 * basalt.exactItemCounts=true}, {@code rocksdb}, {@code rocksdb-bounded}), workload, keys, records,
 * record cache bytes (0: off), state directory, Basalt's memory quota in MiB.
 */
public final class ProcessBench {
  private ProcessBench() {}

  /** Reads away what the topology produced (output, repartition and changelog topics). */
  private static void drain(TopologyTestDriver driver) {
    for (String topic : driver.producedTopicNames()) {
      var out =
          driver.createOutputTopic(
              topic,
              new org.apache.kafka.common.serialization.ByteArrayDeserializer(),
              new org.apache.kafka.common.serialization.ByteArrayDeserializer());
      while (!out.isEmpty()) out.readRecord();
    }
  }

  public static void main(String[] args) {
    String engine = args[0];
    String workload = args[1];
    int keys = Integer.parseInt(args[2]);
    int records = Integer.parseInt(args[3]);
    long cache = Long.parseLong(args[4]);
    Path dir = Path.of(args[5]);
    long quotaMiB = Long.parseLong(args[6]);

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "process-" + engine);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cache);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 30_000);
    if (engine.startsWith("basalt")) {
      p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BasaltDslStoreSuppliers.class);
      p.put("basalt.memoryQuota", String.valueOf(quotaMiB << 20));
      if (engine.equals("basalt-exact")) p.put("basalt.exactItemCounts", "true");
      for (String name : System.getProperties().stringPropertyNames()) {
        if (name.startsWith("basalt.")) p.put(name, System.getProperty(name));
      }
    } else if (engine.equals("rocksdb-bounded")) {
      p.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, BoundedMemoryRocksDBConfig.class);
    }

    StreamsBuilder b = new StreamsBuilder();
    if (workload.equals("wordcount")) {
      b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
          .flatMapValues(v -> Arrays.asList(v.split(" ")))
          .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
          .count(Materialized.with(Serdes.String(), Serdes.Long()))
          .toStream()
          .to("out", Produced.with(Serdes.String(), Serdes.Long()));
    } else {
      b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
          .groupByKey()
          .aggregate(
              () -> new byte[100],
              (k, v, agg) -> {
                byte[] next = agg.clone();
                long sum = java.nio.ByteBuffer.wrap(next).getLong(0) + v;
                java.nio.ByteBuffer.wrap(next).putLong(0, sum);
                return next;
              },
              Materialized.with(Serdes.String(), Serdes.ByteArray()))
          .toStream()
          .mapValues(v -> java.nio.ByteBuffer.wrap(v).getLong(0))
          .to("out", Produced.with(Serdes.String(), Serdes.Long()));
    }
    SplittableRandom r = new SplittableRandom(11);
    String[] vocabulary = new String[keys];
    for (int i = 0; i < keys; i++) vocabulary[i] = "w" + Long.toString(i * 2654435761L, 36);
    int warm = records / 10;
    long[] lat = new long[records];
    long t0 = 0;
    try (TopologyTestDriver driver = new TopologyTestDriver(b.build(p), p)) {
      TestInputTopic<String, String> words =
          driver.createInputTopic("in", new StringSerializer(), new StringSerializer());
      TestInputTopic<String, Long> longs =
          driver.createInputTopic("in", new StringSerializer(), new LongSerializer());
      for (int i = -warm; i < records; i++) {
        if (i == 0) t0 = System.nanoTime();
        long s = System.nanoTime();
        if (workload.equals("wordcount")) {
          StringBuilder sb = new StringBuilder();
          for (int w = 0; w < 8; w++) {
            if (w > 0) sb.append(' ');
            sb.append(vocabulary[r.nextInt(keys)]);
          }
          words.pipeInput("s", sb.toString());
        } else {
          longs.pipeInput(vocabulary[r.nextInt(keys)], 1L);
        }
        if (i >= 0) lat[i] = System.nanoTime() - s;
        if ((i & 0x3fff) == 0) drain(driver); // the driver keeps every record produced
      }
      double secs = (System.nanoTime() - t0) / 1e9;
      Arrays.sort(lat);
      System.out.printf(
          "engine=%s workload=%s cache=%d keys=%d records=%d seconds=%.1f recordsPerSec=%d"
              + " p50Micros=%.1f p99Micros=%.1f p999Micros=%.1f%n",
          engine,
          workload,
          cache,
          keys,
          records,
          secs,
          (long) (records / secs),
          lat[records / 2] / 1e3,
          lat[(int) (records * 0.99)] / 1e3,
          lat[(int) (records * 0.999)] / 1e3);
      System.out.flush();
    }
  }
}
