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

/**
 * The {@code byte[]} API against the {@code ByteBuffer} one (heap and direct buffers), for the heap
 * bytes each call allocates ({@code -prof gc}'s {@code gc.alloc.rate.norm}: every thread's
 * allocation, the store's background threads included, over the calls made) and its throughput,
 * Basalt beside RocksDB JNI's own {@code ByteBuffer} methods: 16-byte keys, 100-byte values, {@code
 * entries} keys loaded in {@code @Setup}, the same memory budget (512 MiB: RocksDB's {@link
 * RocksStore} split, two write buffers of 128 MiB and a 256 MiB block cache; Basalt's two write
 * caches of 128 MiB and a 240 MiB block cache, the most its quota leaves). With {@code where=cache}
 * every get is served by the write cache (memtable); with {@code where=files} the data is flushed
 * and compacted first and the block cache holds it all, so a get reads no file. Puts replace a
 * random loaded key, with the WAL written but not fsynced per put; a batch puts 16 of them.
 *
 * <p>Run: {@code java @jvm.flags -jar engine-jmh/target/benchmarks.jar ApiBenchmark -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+UseParallelGC"})
public class ApiBenchmark {
  static final int KEY_SIZE = 16;
  static final int VALUE_SIZE = 100;
  static final int BATCH = 16;

  @Param({"basalt", "rocksdb"})
  public String impl;

  @Param({"cache", "files"})
  public String where;

  @Param("200000")
  public int entries;

  byte[][] keys;
  byte[] value;
  Path dir;
  Basalt db;
  Keyspace ks;
  RocksStore rocks;

  /**
   * RocksDB's write options (the WAL written, not fsynced) and read options; made once its library
   * is loaded.
   */
  org.rocksdb.WriteOptions noSync;

  org.rocksdb.ReadOptions read;

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
    if (!where.equals("cache") && !where.equals("files")) {
      throw new IllegalArgumentException("where is cache or files, not " + where);
    }
    switch (impl) {
      case "basalt" -> {
        db =
            Basalt.open(
                dir,
                new Options()
                    .memoryQuota(512L << 20)
                    .writeCacheSize(128L << 20)
                    .blockCacheSize(240L << 20)
                    .syncMode(SyncMode.NONE));
        ks = db.createKeyspace("bench");
        for (byte[] k : keys) ks.put(k, value);
        if (where.equals("files")) {
          db.flush();
          db.waitForCompactions(60_000);
        }
      }
      case "rocksdb" -> {
        try {
          rocks = new RocksStore(dir, 512L << 20, true);
          noSync = new org.rocksdb.WriteOptions().setSync(false);
          read = new org.rocksdb.ReadOptions();
          for (byte[] k : keys) rocks.db.put(noSync, k, value);
          if (where.equals("files")) {
            try (org.rocksdb.FlushOptions f =
                new org.rocksdb.FlushOptions().setWaitForFlush(true)) {
              rocks.db.flush(f);
            }
            rocks.db.compactRange();
          }
        } catch (org.rocksdb.RocksDBException e) {
          throw new IOException(e);
        }
      }
      default -> throw new IllegalArgumentException("impl is basalt or rocksdb, not " + impl);
    }
    Caller warm = new Caller();
    for (int round = 0;
        round < 2;
        round++) { // warms the block caches (Basalt caches a block on its second read)
      for (int i = 0; i < entries; i++) {
        if (getArray(keys[i]) == null
            || getInto(fill(warm.heapKey, keys[i]), warm.heapValue.clear()) != VALUE_SIZE) {
          throw new IllegalStateException("a loaded key is missing");
        }
      }
    }
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    if (db != null) db.close();
    if (rocks != null) {
      noSync.close();
      read.close();
      rocks.close();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files
          .sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
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
    private org.rocksdb.WriteBatch rocksBatch;

    int next(int bound) {
      return random.nextInt(bound);
    }

    org.rocksdb.WriteBatch rocksBatch() {
      if (rocksBatch == null) rocksBatch = new org.rocksdb.WriteBatch();
      return rocksBatch;
    }

    @TearDown(Level.Trial)
    public void close() {
      if (rocksBatch != null) rocksBatch.close();
    }
  }

  static ByteBuffer fill(ByteBuffer b, byte[] bytes) {
    b.clear();
    b.put(bytes).flip();
    return b;
  }

  byte[] getArray(byte[] key) {
    try {
      return db != null ? ks.get(key) : rocks.db.get(key);
    } catch (org.rocksdb.RocksDBException e) {
      throw new IllegalStateException(e);
    }
  }

  int getInto(ByteBuffer key, ByteBuffer value) {
    try {
      return db != null ? ks.get(key, value) : rocks.db.get(read, key, value);
    } catch (org.rocksdb.RocksDBException e) {
      throw new IllegalStateException(e);
    }
  }

  void put(byte[] key, byte[] value) {
    try {
      if (db != null) ks.put(key, value);
      else rocks.db.put(noSync, key, value);
    } catch (org.rocksdb.RocksDBException e) {
      throw new IllegalStateException(e);
    }
  }

  void put(ByteBuffer key, ByteBuffer value) {
    try {
      if (db != null) ks.put(key, value);
      else rocks.db.put(noSync, key, value);
    } catch (org.rocksdb.RocksDBException e) {
      throw new IllegalStateException(e);
    }
  }

  @Benchmark
  public byte[] getArray(Caller c) {
    return getArray(keys[c.next(entries)]);
  }

  @Benchmark
  public int getHeapBuffer(Caller c) {
    c.heapValue.clear();
    return getInto(fill(c.heapKey, keys[c.next(entries)]), c.heapValue);
  }

  @Benchmark
  public int getDirectBuffer(Caller c) {
    c.directValue.clear();
    return getInto(fill(c.directKey, keys[c.next(entries)]), c.directValue);
  }

  @Benchmark
  public void putArray(Caller c) {
    put(keys[c.next(entries)], value);
  }

  @Benchmark
  public void putDirectBuffer(Caller c) {
    fill(c.directValue, value);
    put(fill(c.directKey, keys[c.next(entries)]), c.directValue);
  }

  @Benchmark
  public void batchArray(Caller c) throws org.rocksdb.RocksDBException {
    if (db != null) {
      WriteBatch b = new WriteBatch();
      for (int i = 0; i < BATCH; i++) b.put(ks, keys[c.next(entries)], value);
      db.write(b);
    } else {
      try (org.rocksdb.WriteBatch b = new org.rocksdb.WriteBatch()) {
        for (int i = 0; i < BATCH; i++) b.put(keys[c.next(entries)], value);
        rocks.db.write(noSync, b);
      }
    }
  }

  /** A batch the caller keeps and clears, filled from direct buffers. */
  @Benchmark
  public void batchDirectBuffer(Caller c) throws org.rocksdb.RocksDBException {
    fill(c.directValue, value);
    if (db != null) {
      WriteBatch b = c.batch.clear();
      for (int i = 0; i < BATCH; i++)
        b.put(ks, fill(c.directKey, keys[c.next(entries)]), c.directValue);
      db.write(b);
    } else {
      org.rocksdb.WriteBatch b = c.rocksBatch();
      b.clear();
      for (int i = 0; i < BATCH; i++)
        b.put(
            fill(c.directKey, keys[c.next(entries)]),
            c.directValue.position(0)); // RocksDB consumes it
      rocks.db.write(noSync, b);
    }
  }
}
