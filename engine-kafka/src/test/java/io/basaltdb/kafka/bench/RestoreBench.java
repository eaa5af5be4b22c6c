package io.basaltdb.kafka.bench;

import io.basaltdb.kafka.BasaltStores;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.test.InternalMockProcessorContext;

/**
 * Restores a key-value store from a changelog as Streams does, through the restore callback the
 * store registers, for {@code bin/kafka-bench}: {@code records} records of a 16-byte random key and
 * a 100-byte value in batches of {@code batch} (the restore consumer's {@code max.poll.records}),
 * then a read of the last record (timed with the restore: a store may apply what it gathered then),
 * then {@code seconds} of single puts (overwrites of restored keys and new keys, half each), timing
 * every put. Prints one line: {@code engine=.. batch=.. records=.. restoreSeconds=..
 * restoreRecordsPerSec=.. puts=.. putP50Micros=.. putP99Micros=.. putP999Micros=..}.
 *
 * <p>Arguments: engine ({@code basalt}, {@code basalt-exact} for Basalt with {@code
 * basalt.exactItemCounts=true}, {@code rocksdb} for Kafka's default RocksDB store, {@code
 * rocksdb-bounded} for it with {@link BoundedMemoryRocksDBConfig}), records, batch size, seconds of
 * puts after, state directory, Basalt's memory quota in MiB. System properties {@code basalt.*} are
 * passed to the store as Streams configs.
 */
public final class RestoreBench {
  private RestoreBench() {}

  public static void main(String[] args) throws Exception {
    String engine = args[0];
    long records = Long.parseLong(args[1]);
    int batch = Integer.parseInt(args[2]);
    int seconds = Integer.parseInt(args[3]);
    Path dir = Path.of(args[4]);
    long quotaMiB = Long.parseLong(args[5]);

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "restore");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
    p.put("basalt.memoryQuota", String.valueOf(quotaMiB << 20));
    for (String name : System.getProperties().stringPropertyNames()) {
      if (name.startsWith("basalt.")) p.put(name, System.getProperty(name)); // Basalt's settings
    }
    if (engine.equals("basalt-exact")) p.put("basalt.exactItemCounts", "true");
    if (engine.equals("rocksdb-bounded")) {
      p.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, BoundedMemoryRocksDBConfig.class);
    }
    File taskDir = dir.resolve("restore").resolve("0_0").toFile();
    taskDir.mkdirs();
    InternalMockProcessorContext<?, ?> ctx =
        new InternalMockProcessorContext<>(
            taskDir,
            Serdes.Bytes(),
            Serdes.ByteArray(),
            new StreamsMetricsImpl(new Metrics(), "restore", new MockTime()),
            new StreamsConfig(p),
            () -> null,
            null,
            new MockTime(),
            new TaskId(0, 0));
    KeyValueStore<Bytes, byte[]> store =
        engine.startsWith("basalt")
            ? BasaltStores.persistentKeyValueStore("store").get()
            : Stores.persistentKeyValueStore("store").get();
    store.init(ctx, store);

    SplittableRandom r = new SplittableRandom(7);
    byte[] value = new byte[100];
    long t0 = System.nanoTime();
    long offset = 0;
    List<ConsumerRecord<byte[], byte[]>> batchRecords = new ArrayList<>(batch);
    while (offset < records) {
      batchRecords.clear();
      for (int i = 0; i < batch && offset < records; i++, offset++) {
        for (int j = 0; j < value.length; j += 8) {
          long v = r.nextLong();
          for (int b = 0; b < 8 && j + b < value.length; b++) value[j + b] = (byte) (v >>> (8 * b));
        }
        batchRecords.add(
            new ConsumerRecord<>("restore-store-changelog", 0, offset, key(offset), value.clone()));
      }
      ctx.restoreWithHeaders(store.name(), batchRecords);
    }
    // The first read after the restore is part of it: a store may apply what it gathered then.
    if (store.get(Bytes.wrap(key(records - 1))) == null)
      throw new IllegalStateException("the last restored record is missing");
    long restoreNanos = System.nanoTime() - t0;

    // Latencies in tenths of a microsecond up to 100 ms, the rest in the last bucket.
    int[] hist = new int[1_000_001];
    long n = 0;
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    long next = records;
    while (System.nanoTime() < end) {
      r.nextBytes(value);
      Bytes k = r.nextBoolean() ? Bytes.wrap(key(r.nextLong(records))) : Bytes.wrap(key(next++));
      long s = System.nanoTime();
      store.put(k, value.clone());
      hist[(int) Math.min(hist.length - 1, (System.nanoTime() - s) / 100)]++;
      n++;
    }
    System.out.printf(
        "engine=%s batch=%d records=%d restoreSeconds=%.1f restoreRecordsPerSec=%d puts=%d"
            + " putP50Micros=%.1f putP99Micros=%.1f putP999Micros=%.1f%n",
        engine,
        batch,
        records,
        restoreNanos / 1e9,
        (long) (records / (restoreNanos / 1e9)),
        n,
        pct(hist, n, 0.50),
        pct(hist, n, 0.99),
        pct(hist, n, 0.999));
    System.out.flush();
    store.close();
  }

  /** The {@code q} quantile of {@code n} latencies counted in tenth-microsecond buckets, in µs. */
  private static double pct(int[] hist, long n, double q) {
    long rank = (long) Math.floor(q * n), seen = 0;
    for (int i = 0; i < hist.length; i++) {
      seen += hist[i];
      if (seen > rank) return i / 10.0;
    }
    return 0;
  }

  /** A 16-byte key: a scrambled copy of the offset then the offset, so keys arrive unsorted. */
  static byte[] key(long i) {
    return ByteBuffer.allocate(16).putLong(i * 0x9E3779B97F4A7C15L).putLong(i).array();
  }
}
