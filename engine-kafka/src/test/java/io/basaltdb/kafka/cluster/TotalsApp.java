package io.basaltdb.kafka.cluster;

import io.basaltdb.kafka.BasaltDslStoreSuppliers;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * The Streams application of {@link ClusterTest}, run in a child JVM so the test can kill it with
 * SIGKILL: per key, the count, sum and maximum of the longs it reads from its input topic, in a
 * table on Basalt (the DSL config moves it), written to its output topic as {@code count,sum,max}.
 *
 * <p>Arguments: bootstrap servers, state directory, processing guarantee, and a name that prefixes
 * the application id and both topics (and optionally {@code rocksdb}, to keep Kafka's default
 * store). Prints Streams' state changes ({@code STATE RUNNING}) and each restoration's start
 * ({@code RESTORE <partition> <from offset> <to offset>}), and closes cleanly on SIGTERM.
 */
public final class TotalsApp {
  static String in(String name) {
    return name + "-in";
  }

  static String out(String name) {
    return name + "-out";
  }

  private TotalsApp() {}

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    String name = args[3];
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, name);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(StreamsConfig.STATE_DIR_CONFIG, args[1]);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[2]);
    // A fifth argument "rocksdb" keeps Kafka's default store (the peer of ClusterRestoreBench).
    if (args.length < 5 || !args[4].equals("rocksdb")) {
      p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BasaltDslStoreSuppliers.class);
    }
    p.put("basalt.memoryQuota", String.valueOf(Long.getLong("totals.quota", 32L << 20)));
    p.put(
        StreamsConfig.restoreConsumerPrefix("max.poll.records"),
        Integer.getInteger("totals.restore.batch", 1000));
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 0);
    p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
    p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 500);
    p.put(StreamsConfig.consumerPrefix("max.poll.records"), 200);
    p.put(StreamsConfig.STATE_CLEANUP_DELAY_MS_CONFIG, 1000);

    StreamsBuilder b = new StreamsBuilder();
    b.stream(in(name), Consumed.with(Serdes.String(), Serdes.Long()))
        .groupByKey()
        .aggregate(
            () -> "0,0,0",
            (k, v, agg) -> {
              String[] t = agg.split(",");
              long count = Long.parseLong(t[0]) + 1;
              long sum = Long.parseLong(t[1]) + v;
              long max = Math.max(Long.parseLong(t[2]), v);
              return count + "," + sum + "," + max;
            },
            Materialized.with(Serdes.String(), Serdes.String()))
        .toStream()
        .to(out(name), Produced.with(Serdes.String(), Serdes.String()));

    KafkaStreams streams = new KafkaStreams(b.build(p), p);
    CountDownLatch done = new CountDownLatch(1);
    streams.setStateListener(
        (now, before) -> {
          System.out.println("STATE " + now);
          System.out.flush();
          if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING)
            done.countDown();
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close();
                  done.countDown();
                }));
    streams.setGlobalStateRestoreListener(
        new StateRestoreListener() {
          @Override
          public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            System.out.println("RESTORE " + tp + " " + start + " " + end);
            System.out.flush();
          }

          @Override
          public void onBatchRestored(TopicPartition tp, String store, long end, long n) {}

          @Override
          public void onRestoreEnd(TopicPartition tp, String store, long total) {
            System.out.println("RESTORED " + tp + " " + total);
            System.out.flush();
          }
        });
    streams.start();
    done.await();
  }
}
