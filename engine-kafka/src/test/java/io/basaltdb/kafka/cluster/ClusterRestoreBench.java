package io.basaltdb.kafka.cluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.common.utils.Utils;

/**
 * End-to-end restore on an embedded KRaft broker, for {@code bin/kafka-bench e2e}: {@link
 * TotalsApp} (one store, 4 partitions) processes {@code keys} distinct keys, so its changelog holds
 * as many records; it stops, its state directory is wiped, and it starts again. Prints, per engine,
 * the seconds from that start to the end of the last partition's restoration (Streams' restore
 * listener) and to its {@code RUNNING} state: {@code engine=.. keys=.. restoreSeconds=..
 * runningSeconds=..}.
 *
 * <p>Arguments: keys, restore batch size (the restore consumer's {@code max.poll.records}), and
 * engines ({@code basalt}, {@code rocksdb}).
 */
public final class ClusterRestoreBench {
  private ClusterRestoreBench() {}

  public static void main(String[] args) throws Exception {
    int keys = Integer.parseInt(args[0]);
    int batch = Integer.parseInt(args[1]);
    Path tmp = Files.createTempDirectory("cluster-restore");
    try (KafkaClusterTestKit cluster =
        new KafkaClusterTestKit.Builder(
                new TestKitNodes.Builder()
                    .setCombined(true)
                    .setNumBrokerNodes(1)
                    .setNumControllerNodes(1)
                    .build())
            .setConfigProp("offsets.topic.replication.factor", "1")
            .setConfigProp("offsets.topic.num.partitions", "1")
            .setConfigProp("transaction.state.log.replication.factor", "1")
            .setConfigProp("transaction.state.log.min.isr", "1")
            .setConfigProp("group.initial.rebalance.delay.ms", "0")
            .build()) {
      cluster.format();
      cluster.startup();
      cluster.waitForReadyBrokers();
      for (int e = 2; e < args.length; e++) {
        String engine = args[e];
        String name = "restore-" + engine;
        try (Admin admin = cluster.admin()) {
          admin
              .createTopics(
                  List.of(
                      new NewTopic(TotalsApp.in(name), 4, (short) 1),
                      new NewTopic(TotalsApp.out(name), 1, (short) 1)))
              .all()
              .get(60, TimeUnit.SECONDS);
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        try (KafkaProducer<String, Long> producer =
            new KafkaProducer<>(pp, new StringSerializer(), new LongSerializer())) {
          for (int k = 0; k < keys; k++) {
            producer.send(new ProducerRecord<>(TotalsApp.in(name), String.format("k%015d", k), 1L));
          }
        }
        Path state = tmp.resolve(engine);
        Path log = tmp.resolve(engine + "-1.log");
        Process first = start(cluster, name, state, engine, batch, log);
        // Caught up once the changelog holds every key: the last output arrives with it.
        waitForLine(first, log, "STATE RUNNING", 600);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(20);
        while (outputs(cluster, name) < keys) {
          if (System.nanoTime() > deadline) throw new AssertionError("not caught up: " + log);
          Thread.sleep(500);
        }
        first.destroy();
        first.waitFor(120, TimeUnit.SECONDS);
        Utils.delete(state.toFile());
        Path log2 = tmp.resolve(engine + "-2.log");
        long t0 = System.nanoTime();
        Process second = start(cluster, name, state, engine, batch, log2);
        waitForLine(second, log2, "STATE RUNNING", 1200);
        double running = (System.nanoTime() - t0) / 1e9;
        while (count(log2, "RESTORED ") < 4) {
          if (!second.isAlive()) throw new AssertionError("died: " + Files.readString(log2));
          Thread.sleep(50);
        }
        double restored = (System.nanoTime() - t0) / 1e9;
        System.out.printf(
            "engine=%s keys=%d batch=%d restoreSeconds=%.1f runningSeconds=%.1f%n",
            engine, keys, batch, restored, running);
        System.out.flush();
        second.destroy();
        second.waitFor(120, TimeUnit.SECONDS);
      }
    } finally {
      Utils.delete(tmp.toFile());
    }
  }

  private static long outputs(KafkaClusterTestKit cluster, String name) throws Exception {
    try (Admin admin = cluster.admin()) {
      var tp = new org.apache.kafka.common.TopicPartition(TotalsApp.out(name), 0);
      return admin
          .listOffsets(java.util.Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest()))
          .partitionResult(tp)
          .get()
          .offset();
    }
  }

  private static int count(Path log, String what) throws Exception {
    int n = 0, at = 0;
    String s = Files.readString(log);
    while ((at = s.indexOf(what, at)) >= 0) {
      n++;
      at += what.length();
    }
    return n;
  }

  private static void waitForLine(Process p, Path log, String line, int seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!Files.readString(log).contains(line)) {
      if (!p.isAlive()) throw new AssertionError("died: " + Files.readString(log));
      if (System.nanoTime() > deadline) throw new AssertionError("timed out: " + log);
      Thread.sleep(50);
    }
  }

  private static Process start(
      KafkaClusterTestKit cluster, String name, Path state, String engine, int batch, Path log)
      throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xms1g");
    cmd.add("-Xmx1g");
    cmd.add("@" + Path.of("jvm.flags").toAbsolutePath());
    cmd.add("-Dtotals.quota=" + (256L << 20));
    cmd.add("-Dtotals.restore.batch=" + batch);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(TotalsApp.class.getName());
    cmd.add(cluster.bootstrapServers());
    cmd.add(state.toString());
    cmd.add("at_least_once");
    cmd.add(name);
    cmd.add(engine);
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
  }
}
