package io.basaltdb.kafka.cluster;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Streams application on Basalt against a real broker (an embedded KRaft node): it is killed with
 * SIGKILL (a child JVM) under at-least-once and under exactly-once and restarted, a second instance
 * joins and takes partitions over (restoring them from their changelogs), and a wiped state
 * directory is restored from the changelog; after each, the totals it computes are right.
 *
 * <p>{@code -Dbasalt.cluster.records} sets the records per round (default 6,000 in 40 keys); {@code
 * bin/kafka-cluster-test} runs a longer setting.
 */
class ClusterTest {
  private static final int KEYS = 40;
  private static final int PER_KEY = Integer.getInteger("basalt.cluster.records", 6_000) / KEYS;

  private static KafkaClusterTestKit cluster;

  @TempDir static Path tmp;

  private final List<Process> children = new ArrayList<>();

  @BeforeAll
  static void startBroker() throws Exception {
    cluster =
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
            .setConfigProp("transaction.state.log.num.partitions", "1")
            .setConfigProp("group.initial.rebalance.delay.ms", "0")
            .setConfigProp("group.min.session.timeout.ms", "1000")
            .build();
    cluster.nonFatalFaultHandler().setIgnore(true);
    cluster.format();
    cluster.startup();
    cluster.waitForReadyBrokers();
  }

  @AfterAll
  static void stopBroker() throws Exception {
    if (cluster != null) cluster.close();
  }

  @org.junit.jupiter.api.AfterEach
  void killChildren() {
    for (Process p : children) p.destroyForcibly();
  }

  private void createTopics(String name, int partitions) throws Exception {
    try (Admin admin = cluster.admin()) {
      admin
          .createTopics(
              List.of(
                  new NewTopic(TotalsApp.in(name), partitions, (short) 1),
                  new NewTopic(TotalsApp.out(name), 1, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
  }

  /** Writes one round: values 1..perKey to every key, adding to the expected count, sum, max. */
  private static void produceRound(
      String name, int round, int perKey, Map<String, long[]> expected) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, Long> producer =
        new KafkaProducer<>(p, new StringSerializer(), new LongSerializer())) {
      for (int v = 1; v <= perKey; v++) {
        for (int k = 0; k < KEYS; k++) {
          long value = (long) round * 1_000_000 + v;
          producer.send(new ProducerRecord<>(TotalsApp.in(name), "key-" + k, value));
          long[] e = expected.computeIfAbsent("key-" + k, x -> new long[3]);
          e[0]++;
          e[1] += value;
          e[2] = Math.max(e[2], value);
        }
      }
      producer.flush();
    }
  }

  /** The log of each child started, by process. */
  private final Map<Process, Path> logs = new HashMap<>();

  /** Starts the application in a child JVM; returns once it printed RUNNING. */
  private Process start(String name, Path stateDir, String guarantee) throws Exception {
    Path log = Files.createTempFile(tmp, name + "-", ".log");
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    cmd.add("@" + Path.of("..", "jvm.flags").toAbsolutePath().normalize());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(TotalsApp.class.getName());
    cmd.add(cluster.bootstrapServers());
    cmd.add(stateDir.toString());
    cmd.add(guarantee);
    cmd.add(name);
    Process p =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    children.add(p);
    logs.put(p, log);
    waitFor(
        () -> Files.readString(log).contains("STATE RUNNING"), p, log, "the application to run");
    return p;
  }

  private interface Check {
    boolean ok() throws Exception;
  }

  private static void waitFor(Check check, Process p, Path log, String what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!check.ok()) {
      if (p != null && !p.isAlive())
        throw new AssertionError("the application died waiting for " + what + ":\n" + tail(log));
      if (System.nanoTime() > deadline)
        throw new AssertionError("timed out waiting for " + what + ":\n" + tail(log));
      Thread.sleep(100);
    }
  }

  private static String tail(Path log) throws IOException {
    if (log == null) return "";
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
  }

  /** The output topic's latest value per key, read committed, and the number of records read. */
  private static final class Output implements AutoCloseable {
    final KafkaConsumer<String, String> consumer;
    final Map<String, String> latest = new HashMap<>();
    long records;

    Output(String name) {
      Properties p = new Properties();
      p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
      p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
      p.put(ConsumerConfig.GROUP_ID_CONFIG, name + "-verifier-" + System.nanoTime());
      consumer = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
      consumer.subscribe(List.of(TotalsApp.out(name)));
    }

    void poll() {
      for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
        latest.put(r.key(), r.value());
        records++;
      }
    }

    @Override
    public void close() {
      consumer.close();
    }
  }

  private static Predicate<Map<String, String>> exact(Map<String, long[]> expected) {
    return latest ->
        expected.entrySet().stream()
            .allMatch(
                e -> {
                  long[] x = e.getValue();
                  return (x[0] + "," + x[1] + "," + x[2]).equals(latest.get(e.getKey()));
                });
  }

  /** At least once: every record counted at least once, and the maximum right. */
  private static Predicate<Map<String, String>> atLeast(Map<String, long[]> expected) {
    return latest ->
        expected.entrySet().stream()
            .allMatch(
                e -> {
                  String v = latest.get(e.getKey());
                  if (v == null) return false;
                  String[] t = v.split(",");
                  long[] x = e.getValue();
                  return Long.parseLong(t[0]) >= x[0]
                      && Long.parseLong(t[1]) >= x[1]
                      && Long.parseLong(t[2]) == x[2];
                });
  }

  private static void await(Output out, Predicate<Map<String, String>> done, Process p, String what)
      throws Exception {
    waitFor(
        () -> {
          out.poll();
          return done.test(out.latest);
        },
        p,
        null,
        what + "; latest: " + out.latest);
  }

  private static void stop(Process p) throws Exception {
    p.destroy(); // SIGTERM: the shutdown hook closes Streams
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the application stopped");
  }

  private static void kill(Process p) throws Exception {
    p.destroyForcibly(); // SIGKILL
    p.waitFor(30, TimeUnit.SECONDS);
  }

  private static boolean usesBasalt(Path stateDir) throws IOException {
    try (var files = Files.walk(stateDir)) {
      return files.anyMatch(f -> f.getFileName().toString().equals("basalt.id"));
    }
  }

  @Test
  void exactlyOnce_killedRestartedJoinedAndWiped_totalsExact() throws Exception {
    String name = "eos";
    createTopics(name, 4);
    String eos = StreamsConfig.EXACTLY_ONCE_V2;
    Path a = tmp.resolve("eos-a"), b = tmp.resolve("eos-b");
    Map<String, long[]> expected = new HashMap<>();
    produceRound(name, 1, PER_KEY, expected);
    try (Output out = new Output(name)) {
      Process first = start(name, a, eos);
      waitFor(
          () -> {
            out.poll();
            return out.records >= KEYS * PER_KEY / 4;
          },
          first,
          null,
          "a quarter of the output");
      kill(first); // mid-stream: its stores are left open, uncommitted writes in them
      assertTrue(usesBasalt(a));

      Process restarted = start(name, a, eos);
      await(out, exact(expected), restarted, "exact totals after SIGKILL");
      String log = Files.readString(logs.get(restarted));
      assertTrue(
          log.contains("was not closed cleanly (Basalt found it open)"),
          "the stores left open were reported corrupted:\n" + log);
      assertTrue(
          java.util.regex.Pattern.compile("RESTORE \\S+ 0 [1-9]").matcher(log).find(),
          "and restored from the changelog's start:\n" + log);

      Process second =
          start(name, b, eos); // joins: partitions move to it, restored from changelogs
      produceRound(name, 2, PER_KEY, expected);
      await(out, exact(expected), second, "exact totals with two instances");
      assertTrue(usesBasalt(b), "the second instance restored tasks into Basalt");

      stop(second);
      stop(restarted);
      Utils.delete(a.toFile()); // wiped: every store restored from its changelog
      Process wiped = start(name, a, eos);
      produceRound(name, 3, PER_KEY, expected);
      await(out, exact(expected), wiped, "exact totals after wiping the state directory");
      stop(wiped);
    }
  }

  /**
   * At least once, Streams writes a store's offsets once its changelog moved 10,000 records: one
   * input partition and 16,000 records, killed after 12,000, so the store holds offsets when it
   * dies.
   */
  @Test
  void atLeastOnce_killedAndRestarted_restoresFromTheOffsetsTheStoreHolds() throws Exception {
    String name = "alos";
    createTopics(name, 1);
    Path a = tmp.resolve("alos-a");
    Map<String, long[]> expected = new HashMap<>();
    int perKey = 16_000 / KEYS;
    produceRound(name, 1, perKey, expected);
    try (Output out = new Output(name)) {
      Process first = start(name, a, StreamsConfig.AT_LEAST_ONCE);
      waitFor(
          () -> {
            out.poll();
            return out.records >= 12_000;
          },
          first,
          logs.get(first),
          "12,000 records of output");
      kill(first);
      Process restarted = start(name, a, StreamsConfig.AT_LEAST_ONCE);
      produceRound(name, 2, PER_KEY, expected);
      await(out, atLeast(expected), restarted, "totals after SIGKILL");
      String log = Files.readString(logs.get(restarted));
      java.util.regex.Matcher m =
          java.util.regex.Pattern.compile("RESTORE \\S+ (\\d+) (\\d+)").matcher(log);
      assertTrue(m.find(), "the restarted instance restored its store:\n" + log);
      long from = Long.parseLong(m.group(1));
      assertTrue(
          from >= 10_000,
          "restoration started from the offset the store committed, not the changelog's start: "
              + m.group());
      stop(restarted);
    }
  }
}
