package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
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
 * The {@code byte[]} API against the {@code ByteBuffer} one (heap and direct buffers), for the heap
 * bytes each call allocates ({@code -prof gc}'s {@code gc.alloc.rate.norm}) and its throughput: 16-byte
 * keys, 100-byte values, {@code entries} keys loaded in {@code @Setup}. With {@code where=cache} every
 * get is served by the write cache; with {@code where=files} the data is flushed to the key index and
 * the log segments first and the block cache holds it all, so a get reads no file. Puts replace a random
 * loaded key (sync mode NONE: no fsync per put); a batch puts 16 of them.
 *
 * <p>Run: {@code java @jvm.flags -jar engine-jmh/target/benchmarks.jar ApiBenchmark -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+UseParallelGC"})
public class ApiBenchmark {
  static final int KEY_SIZE = 16;
  static final int VALUE_SIZE = 100;
  static final int BATCH = 16;

  @Param({"cache", "files"})
  public String where;

  @Param("200000")
  public int entries;

  byte[][] keys;
  byte[] value;
  Path dir;
  Basalt db;
  Keyspace ks;

  @Setup(Level.Trial)
  public void load() throws IOException {
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
    r.nextBytes(value);
    dir = Files.createTempDirectory("basalt-api-bench");
    db = Basalt.open(dir, new Options().memoryQuota(1L << 30).writeCacheSize(256L << 20)
        .blockCacheSize(256L << 20).syncMode(SyncMode.NONE));
    ks = db.createKeyspace("bench");
    for (byte[] k : keys) ks.put(k, value);
    if (where.equals("files")) {
      db.flush();
      db.waitForCompactions(60_000);
    } else if (!where.equals("cache")) {
      throw new IllegalArgumentException("where is cache or files, not " + where);
    }
    byte[] out = new byte[VALUE_SIZE];
    for (byte[] k : keys) { // warms the block cache (a block is cached on its second read)
      if (ks.get(k) == null || ks.get(ByteBuffer.wrap(k), ByteBuffer.wrap(out)) != VALUE_SIZE) {
        throw new IllegalStateException("a loaded key is missing");
      }
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    db.close();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.delete(p);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    }
  }

  /** Per-thread state: a random generator and the caller's reusable buffers. */
  @State(Scope.Thread)
  public static class Caller {
    final SplittableRandom random = new SplittableRandom(Thread.currentThread().getId());
    final ByteBuffer heapKey = ByteBuffer.allocate(KEY_SIZE);
    final ByteBuffer heapValue = ByteBuffer.allocate(VALUE_SIZE + 16);
    final ByteBuffer directKey = ByteBuffer.allocateDirect(KEY_SIZE);
    final ByteBuffer directValue = ByteBuffer.allocateDirect(VALUE_SIZE + 16);
    final WriteBatch batch = new WriteBatch();

    int next(int bound) {
      return random.nextInt(bound);
    }
  }

  static ByteBuffer fill(ByteBuffer b, byte[] bytes) {
    b.clear();
    b.put(bytes).flip();
    return b;
  }

  @Benchmark
  public byte[] getArray(Caller c) {
    return ks.get(keys[c.next(entries)]);
  }

  @Benchmark
  public int getHeapBuffer(Caller c) {
    c.heapValue.clear();
    return ks.get(fill(c.heapKey, keys[c.next(entries)]), c.heapValue);
  }

  @Benchmark
  public int getDirectBuffer(Caller c) {
    c.directValue.clear();
    return ks.get(fill(c.directKey, keys[c.next(entries)]), c.directValue);
  }

  @Benchmark
  public void putArray(Caller c) {
    ks.put(keys[c.next(entries)], value);
  }

  @Benchmark
  public void putDirectBuffer(Caller c) {
    fill(c.directValue, value);
    ks.put(fill(c.directKey, keys[c.next(entries)]), c.directValue);
  }

  @Benchmark
  public void batchArray(Caller c) {
    WriteBatch b = new WriteBatch();
    for (int i = 0; i < BATCH; i++) b.put(ks, keys[c.next(entries)], value);
    db.write(b);
  }

  @Benchmark
  public void batchDirectBuffer(Caller c, Blackhole bh) {
    WriteBatch b = c.batch.clear();
    fill(c.directValue, value);
    for (int i = 0; i < BATCH; i++) b.put(ks, fill(c.directKey, keys[c.next(entries)]), c.directValue);
    db.write(b);
  }
}
