package io.basaltdb.kafka.bench;

import io.basaltdb.kafka.BasaltStores;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.test.InternalMockProcessorContext;

/**
 * The resident memory of N state stores in one JVM, for the memory test and {@code
 * bin/kafka-bench}: opens {@code stores} stores of the given engine (every fourth a window store),
 * each in a task directory of one application, writes {@code records} records of a 16-byte key and
 * a 100-byte value to each, reads a tenth of them back, and prints one line: {@code stores=..
 * engine=.. rssAnonKiB=.. rssFileKiB=.. heapCommittedKiB=.. heapUsedKiB=..} (from /proc/self/status
 * and the memory MX bean, after a GC); with {@code -Dfootprint.nmt=true} and {@code
 * -XX:NativeMemoryTracking=summary}, then the JVM's native memory summary.
 *
 * <p>Arguments: engine ({@code basalt}, {@code rocksdb} for Kafka's default RocksDB store, {@code
 * rocksdb-bounded} for it with {@link BoundedMemoryRocksDBConfig}), stores, records per store,
 * state directory, and for Basalt its memory quota in MiB.
 */
public final class StoreFootprint {
  private StoreFootprint() {}

  public static void main(String[] args) throws Exception {
    String engine = args[0];
    int stores = Integer.parseInt(args[1]);
    int records = Integer.parseInt(args[2]);
    Path dir = Path.of(args[3]);
    long quotaMiB = args.length > 4 ? Long.parseLong(args[4]) : 64;
    boolean basalt = engine.startsWith("basalt");
    List<StateStore> open = new ArrayList<>();
    Random r = new Random(1);
    byte[] value = new byte[100];
    for (int s = 0; s < stores; s++) {
      Properties p = new Properties();
      p.put(StreamsConfig.APPLICATION_ID_CONFIG, "footprint");
      p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
      p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
      p.put("basalt.memoryQuota", String.valueOf(quotaMiB << 20));
      if (engine.equals("rocksdb-bounded")) {
        p.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, BoundedMemoryRocksDBConfig.class);
      }
      File taskDir = dir.resolve("footprint").resolve("0_" + s).toFile();
      taskDir.mkdirs();
      InternalMockProcessorContext<?, ?> ctx =
          new InternalMockProcessorContext<>(
              taskDir,
              Serdes.Bytes(),
              Serdes.ByteArray(),
              new StreamsMetricsImpl(new Metrics(), "footprint", new MockTime()),
              new StreamsConfig(p),
              () -> null,
              null,
              new MockTime(),
              new TaskId(0, s));
      boolean window = s % 4 == 3;
      if (window) {
        Duration retention = Duration.ofHours(1), size = Duration.ofMinutes(1);
        WindowStore<Bytes, byte[]> w =
            basalt
                ? BasaltStores.persistentWindowStore("w", retention, size, false).get()
                : Stores.persistentWindowStore("w", retention, size, false).get();
        w.init(ctx, w);
        open.add(w);
        for (int i = 0; i < records; i++) {
          r.nextBytes(value);
          w.put(key(i), value.clone(), (long) i * 100); // a bit over 3 segments of an hour
        }
      } else {
        KeyValueStore<Bytes, byte[]> kv =
            basalt
                ? BasaltStores.persistentKeyValueStore("kv").get()
                : Stores.persistentKeyValueStore("kv").get();
        kv.init(ctx, kv);
        open.add(kv);
        for (int i = 0; i < records; i++) {
          r.nextBytes(value);
          kv.put(key(i), value.clone());
        }
        for (int i = 0; i < records; i += 10) kv.get(key(i));
      }
    }
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(200);
    }
    long anon = status("RssAnon:"), file = status("RssFile:");
    var heap = java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    System.out.println(
        "stores="
            + stores
            + " engine="
            + engine
            + " records="
            + records
            + " rssAnonKiB="
            + anon
            + " rssFileKiB="
            + file
            + " heapCommittedKiB="
            + heap.getCommitted() / 1024
            + " heapUsedKiB="
            + heap.getUsed() / 1024);
    if (Boolean.getBoolean("footprint.nmt")) { // with -XX:NativeMemoryTracking=summary
      Object nmt =
          java.lang.management.ManagementFactory.getPlatformMBeanServer()
              .invoke(
                  new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
                  "vmNativeMemory",
                  new Object[] {new String[] {"summary"}},
                  new String[] {String[].class.getName()});
      System.out.println(nmt);
    }
    System.out.flush();
    for (StateStore s : open) s.close();
  }

  private static Bytes key(int i) {
    return Bytes.wrap(ByteBuffer.allocate(16).putLong(i * 0x9E3779B97F4A7C15L).putLong(i).array());
  }

  private static long status(String field) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith(field)) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return -1;
  }
}
