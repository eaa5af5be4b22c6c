package io.basaltdb.jmh;

import io.basaltdb.internal.skiplist.SkipList;
import io.basaltdb.internal.skiplist.SkipListConfig;
import io.basaltdb.internal.skiplist.SkipListStats;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Point reads and updates of the Nitro skiplist against {@link ConcurrentSkipListMap}, measured
 * side by side: 16-byte random keys, 100-byte values, {@code entries} keys loaded in
 * {@code @Setup}; each operation picks a random loaded key, so {@code get} always hits and {@code
 * put} replaces a value (a new version for Basalt, whose old version is unlinked and reclaimed by
 * its collector). The caller supplies the output buffer, so Basalt's {@code get} allocates nothing
 * on the heap.
 *
 * <p>Run (see docs/benchmarks.md for the full matrix):
 *
 * <pre>
 * java @jvm.flags -jar engine-jmh/target/benchmarks.jar SkipListBenchmark -p entries=10000000 -t 1 -prof gc
 * java @jvm.flags -jar engine-jmh/target/benchmarks.jar SkipListBenchmark -p entries=10000000 -t 2 -prof gc
 * java @jvm.flags -jar engine-jmh/target/benchmarks.jar SkipListBenchmark.put -p impl=basalt -p entries=1000000 -p gcWorkers=1,0 -t 2
 * </pre>
 *
 * {@code @jvm.flags} (the JVM flags, docs/operations.md) is for the fork: it inherits the JMH JVM's
 * flags. After loading, the setup prints Basalt's metadata bytes per entry (memory in use minus key
 * and value bytes).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
// The fork inherits the JMH JVM's flags (JMH's default), so jvm.flags reaches it from the command
// line.
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms8g", "-Xmx8g", "-XX:+UseParallelGC"})
public class SkipListBenchmark {
  static final int KEY_SIZE = 16;
  static final int VALUE_SIZE = 100;

  @Param({"basalt", "cslm"})
  public String impl;

  @Param({"1000000", "10000000"})
  public int entries;

  /**
   * Basalt's collector threads: 0 (the default), one per writer thread up to the processors (Nitro
   * section 4); 1 for the single collector, to measure against.
   */
  @Param({"0"})
  public int gcWorkers;

  byte[][] keys;
  byte[] value;
  SkipList basalt;
  ConcurrentSkipListMap<byte[], byte[]> cslm;

  @Setup(Level.Trial)
  public void load() {
    SplittableRandom r = new SplittableRandom(42);
    keys = new byte[entries][];
    for (int i = 0; i < entries; i++) {
      byte[] k = new byte[KEY_SIZE];
      for (int j = 0; j < KEY_SIZE; j += 8) {
        long x = r.nextLong();
        for (int b = 0; b < 8; b++) k[j + b] = (byte) (x >>> (8 * b));
      }
      keys[i] = k;
    }
    value = new byte[VALUE_SIZE];
    Arrays.fill(value, (byte) 'v');
    switch (impl) {
      case "basalt" -> {
        long quota = (long) entries * 256 + (256L << 20);
        basalt =
            new SkipList(SkipListConfig.defaults().withMemoryQuota(quota).withGcWorkers(gcWorkers));
        for (byte[] k : keys) basalt.put(k, value);
        SkipListStats st = basalt.stats(); // reported here, outside any measured iteration
        System.out.printf(
            "%n# basalt: %d items, %d nodes, metadata %.1f bytes/entry (used %d B, user %d B), levels %s%n",
            st.items(),
            st.nodes(),
            st.metadataBytesPerNode(),
            st.memoryUsed(),
            st.userBytes(),
            Arrays.toString(st.nodesPerLevel()));
      }
      case "cslm" -> {
        cslm = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);
        for (byte[] k : keys) cslm.put(k, value);
      }
      default -> throw new IllegalArgumentException("impl must be basalt or cslm, was " + impl);
    }
  }

  @TearDown(Level.Trial)
  public void close() {
    if (basalt != null) {
      basalt.close();
      basalt = null;
    }
    cslm = null;
  }

  /** Per-thread random stream and output buffer, so the measured loop allocates nothing itself. */
  @State(Scope.Thread)
  public static class ThreadState {
    SplittableRandom random =
        new SplittableRandom(Thread.currentThread().getId() * 0x9E3779B97F4A7C15L);
    byte[] out = new byte[VALUE_SIZE];
  }

  @Benchmark
  public void get(ThreadState t, Blackhole bh) {
    byte[] k = keys[t.random.nextInt(entries)];
    if (basalt != null) {
      bh.consume(basalt.get(k, t.out));
    } else {
      bh.consume(cslm.get(k));
    }
  }

  @Benchmark
  public void put(ThreadState t) {
    byte[] k = keys[t.random.nextInt(entries)];
    if (basalt != null) {
      basalt.put(k, value);
    } else {
      cslm.put(k, value);
    }
  }
}
