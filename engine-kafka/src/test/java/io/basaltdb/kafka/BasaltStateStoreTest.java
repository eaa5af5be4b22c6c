package io.basaltdb.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.test.InternalMockProcessorContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The StateStore contract of Kafka Streams 4.3 on Basalt's stores, beyond what Kafka's own suites
 * check: changelog offsets stored with the data and cleared as KIP-1035 says, one Basalt shared by
 * the stores of an application instance, a wiped task directory starting its store afresh, an
 * unclean shutdown under exactly-once reported as a corrupted task, and the store's own bounds.
 */
class BasaltStateStoreTest {
  @TempDir Path tmp;

  private final List<BasaltStateStore> open = new ArrayList<>();

  private static final TopicPartition CHANGELOG = new TopicPartition("app-store-changelog", 0);

  @AfterEach
  void closeAll() {
    for (BasaltStateStore s : open) s.close();
    assertEquals(0, SharedBasalt.openInstances(), "every store gave its Basalt back");
  }

  private InternalMockProcessorContext<?, ?> context(int partition, Map<String, Object> extra) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "app");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    p.put(StreamsConfig.STATE_DIR_CONFIG, tmp.toString());
    p.putAll(extra);
    File taskDir = tmp.resolve("app").resolve("0_" + partition).toFile();
    taskDir.mkdirs();
    return new InternalMockProcessorContext<>(
        taskDir,
        Serdes.Bytes(),
        Serdes.ByteArray(),
        new StreamsMetricsImpl(new Metrics(), "test", new MockTime()),
        new StreamsConfig(p),
        () -> null,
        null,
        new MockTime(),
        new TaskId(0, partition));
  }

  private BasaltKeyValueStore kv(String name, InternalMockProcessorContext<?, ?> ctx) {
    BasaltKeyValueStore s = new BasaltKeyValueStore(name);
    s.init(ctx, s);
    open.add(s);
    return s;
  }

  private static Bytes b(String s) {
    return Bytes.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] v(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void committedOffsets_areStoredWithTheData_andClearedAsKip1035Says() {
    BasaltKeyValueStore s = kv("store", context(0, Map.of()));
    assertNull(s.committedOffset(CHANGELOG), "a new store has no offset");
    s.put(b("k"), v("v1"));
    s.commit(Map.of(CHANGELOG, 41L));
    assertEquals(41L, s.committedOffset(CHANGELOG));
    TopicPartition other = new TopicPartition("other", 3);
    s.commit(Map.of(other, -4L)); // OFFSET_UNKNOWN is stored as it is
    assertEquals(-4L, s.committedOffset(other));
    assertEquals(41L, s.committedOffset(CHANGELOG), "a commit of one partition leaves the rest");

    Map<TopicPartition, Long> clearOne = new HashMap<>();
    clearOne.put(other, null);
    s.commit(clearOne);
    assertNull(s.committedOffset(other), "a null offset clears that partition's");
    assertEquals(41L, s.committedOffset(CHANGELOG));

    s.close();
    open.remove(s);
    BasaltKeyValueStore again = kv("store", context(0, Map.of()));
    assertEquals(41L, again.committedOffset(CHANGELOG), "offsets survive a reopen");
    assertArrayEquals(v("v1"), again.get(b("k")));
    again.commit(Map.of());
    assertNull(again.committedOffset(CHANGELOG), "an empty map clears every offset");
    assertArrayEquals(v("v1"), again.get(b("k")), "clearing offsets keeps the data");
  }

  @Test
  void storesOfOneApplicationInstance_shareOneBasalt_eachInItsOwnKeyspace() {
    BasaltKeyValueStore a = kv("store", context(0, Map.of()));
    BasaltKeyValueStore b = kv("store", context(1, Map.of()));
    BasaltKeyValueStore c = kv("other", context(1, Map.of()));
    assertEquals(1, SharedBasalt.openInstances());
    assertTrue(Files.isDirectory(tmp.resolve("app").resolve("basalt")), "beside the task dirs");
    a.put(b("k"), v("a"));
    b.put(b("k"), v("b"));
    c.put(b("k"), v("c"));
    assertArrayEquals(v("a"), a.get(b("k")));
    assertArrayEquals(v("b"), b.get(b("k")));
    assertArrayEquals(v("c"), c.get(b("k")));
    a.commit(Map.of(CHANGELOG, 7L));
    assertNull(b.committedOffset(CHANGELOG), "offsets are per store partition");
    assertEquals(1, a.approximateNumEntries());
    a.close();
    assertEquals(1, SharedBasalt.openInstances(), "still used by the other stores");
    b.close();
    c.close();
    assertEquals(0, SharedBasalt.openInstances(), "the last store closed it");
  }

  @Test
  void aWipedTaskDirectory_startsTheStoreAfresh() throws Exception {
    BasaltKeyValueStore s = kv("store", context(0, Map.of()));
    s.put(b("k"), v("v"));
    s.commit(Map.of(CHANGELOG, 10L));
    s.close();
    open.remove(s);
    Utils.delete(tmp.resolve("app").resolve("0_0").toFile()); // as Streams deletes a task dir

    BasaltKeyValueStore again = kv("store", context(0, Map.of()));
    assertNull(again.get(b("k")), "the old data was dropped with the task directory");
    assertNull(again.committedOffset(CHANGELOG), "and its offsets");
    assertEquals(0, again.approximateNumEntries());
  }

  @Test
  void aWipedTaskDirectory_isDroppedWhenTheSharedBasaltOpens() throws Exception {
    BasaltKeyValueStore s = kv("store", context(0, Map.of()));
    s.put(b("k"), v("v"));
    s.close();
    open.remove(s);
    Utils.delete(tmp.resolve("app").resolve("0_0").toFile());
    BasaltKeyValueStore other = kv("other", context(1, Map.of())); // opens the shared Basalt
    List<String> names = other.shared.db().keyspaceNames();
    assertTrue(
        names.stream().noneMatch(n -> n.contains("/0_0/")),
        "the wiped store's keyspace was swept at open: " + names);
  }

  @Test
  void aMigratedTasksKeyspace_isDroppedWhileTheInstanceRuns_butAnOpenStoreNever() throws Exception {
    Map<String, Object> fast = Map.of(BasaltConfig.SWEEP_INTERVAL, "50");
    BasaltKeyValueStore moved = kv("store", context(0, fast));
    BasaltKeyValueStore stays = kv("store", context(1, fast));
    moved.put(b("k"), v("v"));
    stays.put(b("k"), v("v"));
    moved.close(); // the task migrated away; Streams deletes its directory after the cleanup delay
    open.remove(moved);
    Utils.delete(tmp.resolve("app").resolve("0_0").toFile());
    // An open store whose marker vanished (Streams never deletes an open task's directory) is
    // left alone.
    Files.delete(tmp.resolve("app").resolve("0_1").resolve("store").resolve(StoreState.MARKER));
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (stays.shared.db().keyspaceNames().stream().anyMatch(n -> n.contains("/0_0/"))) {
      assertTrue(System.nanoTime() < deadline, "the sweep dropped the migrated task's keyspace");
      Thread.sleep(20);
    }
    Thread.sleep(200); // a few more sweeps
    assertArrayEquals(v("v"), stays.get(b("k")), "the open store kept its data");
    stays.put(b("k2"), v("v2"));
  }

  @Test
  void interactiveQueries_keyAndRangeQueries_withThePosition() {
    InternalMockProcessorContext<?, ?> ctx = context(0, Map.of());
    BasaltKeyValueStore s = kv("store", ctx);
    ctx.setRecordContext(
        new org.apache.kafka.streams.processor.internals.ProcessorRecordContext(
            0, 7, 0, "input", new org.apache.kafka.common.header.internals.RecordHeaders()));
    s.put(b("a"), v("1"));
    s.put(b("b"), v("2"));
    var key =
        s.query(
            org.apache.kafka.streams.query.KeyQuery.<Bytes, byte[]>withKey(b("a")),
            org.apache.kafka.streams.query.PositionBound.unbounded(),
            new org.apache.kafka.streams.query.QueryConfig(false));
    assertTrue(key.isSuccess(), String.valueOf(key));
    assertArrayEquals(v("1"), key.getResult());
    var range =
        s.query(
            org.apache.kafka.streams.query.RangeQuery.<Bytes, byte[]>withRange(b("a"), b("b"))
                .withDescendingKeys(),
            org.apache.kafka.streams.query.PositionBound.unbounded(),
            new org.apache.kafka.streams.query.QueryConfig(false));
    assertTrue(range.isSuccess(), String.valueOf(range));
    try (KeyValueIterator<Bytes, byte[]> it = range.getResult()) {
      assertEquals(b("b"), it.next().key);
      assertEquals(b("a"), it.next().key);
      assertFalse(it.hasNext());
    }
    assertEquals(
        7L,
        s.getPosition().getPartitionPositions("input").get(0),
        "the position follows the records written");
    s.commit(Map.of(CHANGELOG, 1L));
    s.close();
    open.remove(s);
    BasaltKeyValueStore again = kv("store", context(0, Map.of()));
    assertEquals(
        7L,
        again.getPosition().getPartitionPositions("input").get(0),
        "the position was committed with the offsets");
  }

  @Test
  void underExactlyOnce_aStoreLeftOpen_isReportedCorrupted_andAtLeastOnceResumes() {
    Map<String, Object> eos =
        Map.of(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    BasaltKeyValueStore s = kv("store", context(0, eos));
    s.put(b("k"), v("uncommitted"));
    s.commit(Map.of(CHANGELOG, 5L));
    // The process dies: the shared Basalt goes away without the store's close.
    open.remove(s);
    SharedBasalt shared = s.shared;
    shared.release();

    BasaltKeyValueStore again = new BasaltKeyValueStore("store");
    TaskCorruptedException e =
        assertThrows(TaskCorruptedException.class, () -> again.init(context(0, eos), again));
    assertEquals(java.util.Set.of(new TaskId(0, 0)), e.corruptedTasks());
    assertFalse(again.isOpen());
    assertEquals(0, SharedBasalt.openInstances(), "a failed init gives the Basalt back");

    // At least once, the same store resumes from the offsets it holds.
    BasaltKeyValueStore alos = kv("store", context(0, Map.of()));
    assertEquals(5L, alos.committedOffset(CHANGELOG));
    assertArrayEquals(v("uncommitted"), alos.get(b("k")));
    alos.close();
    open.remove(alos);
    // Closed cleanly, it opens under exactly-once too.
    BasaltKeyValueStore clean = kv("store", context(0, eos));
    assertEquals(5L, clean.committedOffset(CHANGELOG));
  }

  @Test
  void close_isIdempotent_closesOpenIterators_andTheStoreRefusesUseAfterIt() {
    BasaltKeyValueStore s = kv("store", context(0, Map.of()));
    s.put(b("a"), v("1"));
    s.put(b("b"), v("2"));
    KeyValueIterator<Bytes, byte[]> it = s.all();
    assertTrue(it.hasNext());
    assertEquals(1, s.openIterators().size());
    s.close();
    s.close();
    assertFalse(s.isOpen());
    assertThrows(InvalidStateStoreException.class, it::hasNext);
    assertThrows(InvalidStateStoreException.class, () -> s.get(b("a")));
    assertThrows(InvalidStateStoreException.class, () -> s.put(b("a"), v("x")));
    assertThrows(InvalidStateStoreException.class, () -> s.committedOffset(CHANGELOG));
    s.commit(Map.of(CHANGELOG, 1L)); // Streams may commit a closed store: nothing happens
  }

  @Test
  void rangesAreInclusive_bothWays_andSeeTheirOwnSnapshot() {
    BasaltKeyValueStore s = kv("store", context(0, Map.of()));
    for (String k : new String[] {"a", "b", "c", "d"}) s.put(b(k), v(k));
    try (KeyValueIterator<Bytes, byte[]> it = s.range(b("b"), b("c"))) {
      s.put(b("bb"), v("bb")); // written after the iterator opened: not seen
      assertEquals(List.of("b", "c"), keys(it));
    }
    try (KeyValueIterator<Bytes, byte[]> it = s.reverseRange(b("b"), b("d"))) {
      assertEquals(b("d"), it.peekNextKey());
      assertEquals(List.of("d", "c", "bb", "b"), keys(it));
    }
    try (KeyValueIterator<Bytes, byte[]> it = s.reverseAll()) {
      assertEquals(List.of("d", "c", "bb", "b", "a"), keys(it));
    }
    try (KeyValueIterator<Bytes, byte[]> it =
        s.prefixScan("b", new org.apache.kafka.common.serialization.StringSerializer())) {
      assertEquals(List.of("b", "bb"), keys(it));
    }
  }

  private static List<String> keys(KeyValueIterator<Bytes, byte[]> it) {
    List<String> out = new ArrayList<>();
    while (it.hasNext()) {
      KeyValue<Bytes, byte[]> kv = it.next();
      out.add(new String(kv.key.get(), StandardCharsets.UTF_8));
      assertArrayEquals(kv.key.get(), kv.value);
    }
    return out;
  }

  /**
   * Restore batches go into a bulk load: held until the next other use of the store, which applies
   * them first; a full chunk (a third of {@code basalt.restoreBufferBytes}) is written past the
   * WAL.
   */
  @Test
  void restoreBatches_gatherInABulkLoad_appliedBeforeAnyOtherUse() {
    InternalMockProcessorContext<?, ?> ctx =
        context(
            0,
            Map.of(
                "basalt.restoreBufferBytes",
                String.valueOf(3 * 65536),
                "basalt.walSkipBytes",
                "65536",
                "basalt.exactItemCounts",
                "true"));
    BasaltKeyValueStore s = kv("store", ctx);
    List<ConsumerRecord<byte[], byte[]>> small = new ArrayList<>();
    for (int i = 0; i < 10; i++) small.add(new ConsumerRecord<>("c", 0, i, v("k" + i), v("v" + i)));
    small.add(new ConsumerRecord<>("c", 0, 10, v("k3"), null)); // a tombstone deletes
    s.restoreBatch(small);
    assertEquals(0, s.keyCount(), "the metric leaves the restore alone");
    assertNull(s.get(b("k3")));
    assertArrayEquals(v("v4"), s.get(b("k4")));
    long skipped = s.shared.db().stats().get("walSkippedBatches");
    List<ConsumerRecord<byte[], byte[]>> large = new ArrayList<>();
    byte[] value = new byte[1024];
    for (int i = 0; i < 100; i++)
      large.add(new ConsumerRecord<>("c", 0, 11 + i, v("L" + i), value));
    s.restoreBatch(large);
    assertEquals(9 + 100, s.approximateNumEntries(), "exact counts asked for, restore applied");
    assertEquals(
        skipped + 1, s.shared.db().stats().get("walSkippedBatches"), "one 64 KiB chunk of 100 KiB");
    // A commit applies a restore first, so its offsets cover only what the store holds.
    s.restoreBatch(List.of(new ConsumerRecord<>("c", 0, 111, v("last"), v("x"))));
    TopicPartition tp = new TopicPartition("c", 0);
    s.commit(Map.of(tp, 111L));
    assertEquals(111L, s.committedOffset(tp));
    s.close();
    BasaltKeyValueStore again = kv("store", ctx);
    assertArrayEquals(v("x"), again.get(b("last")));
    assertArrayEquals(value, again.get(b("L99")));
    again.close();
  }

  /**
   * Without a restore buffer, or with less of it left than a WAL-skip batch's size, each restore
   * batch is one write through the log: applied before the batch returns.
   */
  @Test
  void restoreBatches_withoutRoomForABulkLoad_areWrittenAtOnce() {
    for (Map<String, Object> configs :
        List.<Map<String, Object>>of(
            Map.of("basalt.restoreBufferBytes", "0", "basalt.exactItemCounts", "true"),
            Map.of(
                "basalt.restoreBufferBytes",
                String.valueOf(3 * 65536),
                "basalt.walSkipBytes",
                "131072",
                "basalt.exactItemCounts",
                "true"))) {
      InternalMockProcessorContext<?, ?> ctx = context(0, configs);
      BasaltKeyValueStore s = kv("store", ctx);
      List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
      for (int i = 0; i < 10; i++)
        batch.add(new ConsumerRecord<>("c", 0, i, v("k" + i), v("v" + i)));
      s.restoreBatch(batch);
      assertEquals(10, s.keyCount(), "applied by the batch itself: " + configs);
      s.close();
    }
  }

  @Test
  void metrics_areRegisteredUnderRocksDbsNames_readTheEngine_andGoWithTheStore() {
    InternalMockProcessorContext<?, ?> ctx = context(0, Map.of());
    BasaltKeyValueStore s = kv("store", ctx);
    for (int i = 0; i < 25; i++) s.put(b("k" + i), v("v"));
    StreamsMetricsImpl metrics = (StreamsMetricsImpl) ctx.metrics();
    Map<String, Object> values = new HashMap<>();
    for (var e : metrics.metrics().entrySet()) {
      var name = e.getKey();
      if (name.group().equals("stream-state-metrics")
          && "store".equals(name.tags().get("basalt-state-id"))) {
        values.put(name.name(), e.getValue().metricValue());
      }
    }
    assertEquals(java.math.BigInteger.valueOf(25), values.get("estimate-num-keys"));
    for (String n :
        List.of(
            "block-cache-usage",
            "block-cache-capacity",
            "block-cache-data-hit-ratio",
            "write-stall-duration-total",
            "bytes-written-total",
            "compaction-pending",
            "estimate-pending-compaction-bytes",
            "cur-size-all-mem-tables",
            "basalt-gc-pending-bytes",
            "basalt-segment-bytes",
            "basalt-memory-in-use")) {
      assertTrue(values.containsKey(n), n + " in " + values.keySet());
    }
    assertTrue(
        ((java.math.BigInteger) values.get("bytes-written-total")).longValue() > 0,
        "the engine's counters, not zeros: " + values);
    assertTrue(((java.math.BigInteger) values.get("block-cache-capacity")).longValue() > 0);
    s.close();
    assertTrue(
        metrics.metrics().keySet().stream()
            .noneMatch(n -> "store".equals(n.tags().get("basalt-state-id"))),
        "removed with the store");
  }

  @Test
  void basaltConfigs_comeFromTheStreamsConfigs_andABadOneIsNamed() {
    BasaltKeyValueStore s = kv("store", context(0, Map.of("basalt.memoryQuota", "33554432")));
    assertEquals(32L << 20, s.shared.db().options().memoryQuota());
    s.close();
    open.remove(s);
    BasaltKeyValueStore bad = new BasaltKeyValueStore("store");
    Exception e =
        assertThrows(
            io.basaltdb.InvalidArgumentException.class,
            () -> bad.init(context(0, Map.of("basalt.noSuchOption", "1")), bad));
    assertTrue(e.getMessage().contains("basalt.noSuchOption"), e.getMessage());
  }
}
