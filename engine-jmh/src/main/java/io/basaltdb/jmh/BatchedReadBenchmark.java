package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Batched reads against point reads of the same random existing keys, from a store many times its
 * memory budget (issue 16's "async against sync"): {@code getAll} of {@value #BATCH} keys at once,
 * through the store's read transport ({@code transport=uring}: engine-io's io_uring one; {@code
 * pool}: the built-in threads, with {@code -Dbasalt.io.uring=false}), against {@value #BATCH}
 * {@code get}s one after another, and against {@code getOne}: a point get through the transport
 * ({@code getAll} of one key). Scores are keys per second. {@code directReads} makes every read a
 * disk read (O_DIRECT). The store ({@code entries} 16-byte keys with random {@code valueSize}-byte
 * values) is loaded once under {@code dir} and kept for later runs; each trial opens it with a
 * {@code memoryMiB} quota and {@code readQueueDepth} (default 32). Run with {@code -t 1}, {@code -t
 * 2}, ... for the thread counts.
 *
 * <p>Run: {@code java @jvm.flags -jar engine-jmh/target/benchmarks.jar BatchedReadBenchmark -t 4}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseParallelGC"})
public class BatchedReadBenchmark {
  static final int BATCH = 32;

  @Param("2000000")
  public int entries;

  @Param("200")
  public int valueSize;

  /** The store's memory quota when measured, in MiB (the data is about 50x of 8 MiB by default). */
  @Param("8")
  public int memoryMiB;

  @Param({"uring", "pool"})
  public String transport;

  @Param("true")
  public boolean directReads;

  /** Reads in flight at most: the io_uring queue depth, or the built-in pool's threads. */
  @Param("32")
  public int readQueueDepth;

  @Param("/tmp/basalt-batched-read-bench")
  public String dir;

  Basalt db;
  Keyspace ks;

  @Setup(Level.Trial)
  public void setup() throws IOException {
    if (transport.equals("pool")) System.setProperty("basalt.io.uring", "false");
    else if (transport.equals("uring")) System.clearProperty("basalt.io.uring");
    else throw new IllegalArgumentException("transport " + transport);
    Path store =
        Files.createDirectories(Path.of(dir)).resolve("store-" + entries + "-" + valueSize);
    if (!Files.exists(store.resolve("LOADED"))) {
      MemoryBackupBenchmark.deleteTree(store);
      try (Basalt loading = Basalt.open(store, Options.defaults().memoryQuota(256L << 20))) {
        Keyspace k = loading.keyspace("default");
        SplittableRandom r = new SplittableRandom(1);
        byte[] value = new byte[valueSize];
        for (int i = 0; i < entries; i++) {
          for (int b = 0; b < valueSize; b += 8) {
            long x = r.nextLong();
            for (int j = 0; j < 8 && b + j < valueSize; j++) value[b + j] = (byte) (x >>> (8 * j));
          }
          k.put(key(i), value);
        }
        loading.flush();
      }
      Files.write(store.resolve("LOADED"), new byte[0]);
    }
    db =
        Basalt.open(
            store,
            Options.defaults()
                .memoryQuota((long) memoryMiB << 20)
                .directReads(directReads)
                .readQueueDepth(readQueueDepth));
    ks = db.keyspace("default");
  }

  @TearDown(Level.Trial)
  public void close() {
    db.close();
    System.clearProperty("basalt.io.uring");
  }

  static byte[] key(long i) {
    byte[] k = new byte[16];
    long x = i * 0x9E3779B97F4A7C15L;
    for (int j = 0; j < 8; j++) k[j] = (byte) (x >>> (56 - 8 * j));
    for (int j = 0; j < 8; j++) k[8 + j] = (byte) (i >>> (56 - 8 * j));
    return k;
  }

  /** Each thread's random keys. */
  @State(Scope.Thread)
  public static class Keys {
    final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
    final List<byte[]> batch = new ArrayList<>(BATCH);

    List<byte[]> next(int entries) {
      batch.clear();
      for (int i = 0; i < BATCH; i++) batch.add(key(random.nextInt(entries)));
      return batch;
    }
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void getAll(Keys k, Blackhole bh) {
    List<byte[]> values = ks.getAll(k.next(entries));
    for (byte[] v : values) {
      if (v == null) throw new IllegalStateException("a loaded key is missing");
      bh.consume(v);
    }
  }

  /**
   * A point get through the read transport: {@code getAll} of one key at a time (against {@link
   * #get}).
   */
  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void getOne(Keys k, Blackhole bh) {
    for (byte[] key : k.next(entries)) {
      byte[] v = ks.getAll(List.of(key)).get(0);
      if (v == null) throw new IllegalStateException("a loaded key is missing");
      bh.consume(v);
    }
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void get(Keys k, Blackhole bh) {
    for (byte[] key : k.next(entries)) {
      byte[] v = ks.get(key);
      if (v == null) throw new IllegalStateException("a loaded key is missing");
      bh.consume(v);
    }
  }
}
