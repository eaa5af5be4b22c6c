package io.basaltdb.jmh;

import io.basaltdb.Backup;
import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.storage.FileStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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

/**
 * Restore of an in-memory store from its backup (Nitro, seed 001 section 5.2; issue 17): the store
 * of {@link MemoryBackupBenchmark} ({@code entries} random 16-byte keys, random 100-byte values),
 * backed up once by two threads (eight shards) under {@code dir} (kept for later runs). Each op
 * opens the store from the backup on {@code threads} threads: {@code method=bottomUp} builds the
 * skiplist bottom-up from each shard and joins the segments; {@code method=inserts} puts each item
 * of each shard into the skiplist, the shards concurrently (the paper's baseline). The files are in
 * the page cache. {@code method=puts} is the other way to get the same store without a backup: an
 * empty in-memory store and {@code Keyspace.put} of each item, one by one, on {@code threads}
 * threads (each its share of the items, made on the fly). The store is closed after each op,
 * outside the measured time.
 *
 * <p>Run: {@code java @jvm.flags -jar engine-jmh/target/benchmarks.jar MemoryRestoreBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseParallelGC"})
public class MemoryRestoreBenchmark {
  @Param("10000000")
  public int entries;

  @Param({"bottomUp", "inserts", "puts"})
  public String method;

  @Param({"1", "2"})
  public int threads;

  /** Where the backup is kept. */
  @Param("/tmp/basalt-memory-backup-bench")
  public String dir;

  Options options;
  Path backup;
  Engine restored;
  Basalt loaded;

  /** Makes the backup once: later runs find it under {@code dir}. */
  @Setup(Level.Trial)
  public void setup() throws IOException {
    options = MemoryBackupBenchmark.options(threads);
    backup = Files.createDirectories(Path.of(dir)).resolve("backup-v4-" + entries);
    if (Files.exists(backup.resolve("BACKUP"))) return;
    MemoryBackupBenchmark.deleteTree(backup);
    try (Basalt db =
        MemoryBackupBenchmark.load(
            MemoryBackupBenchmark.options(2), entries)) { // two threads, four shards each
      Backup b = db.backup(backup);
      MemoryBackupBenchmark.report(b, entries);
    }
  }

  @Benchmark
  public Object restore() throws InterruptedException {
    if (method.equals("puts")) {
      loaded = Basalt.openInMemory(options);
      Keyspace ks = loaded.keyspace("default");
      Thread[] workers = new Thread[threads];
      for (int t = 0; t < threads; t++) {
        int first = t;
        workers[t] =
            new Thread(
                () -> {
                  java.nio.ByteBuffer key =
                      java.nio.ByteBuffer.allocate(MemoryBackupBenchmark.KEY_SIZE);
                  byte[] value = new byte[MemoryBackupBenchmark.VALUE_SIZE];
                  java.nio.ByteBuffer v = java.nio.ByteBuffer.wrap(value);
                  for (long i = first; i < entries; i += threads) {
                    MemoryBackupBenchmark.item(i, key, value);
                    ks.put(key, v);
                  }
                });
        workers[t].start();
      }
      for (Thread w : workers) w.join();
      return loaded;
    }
    if (!method.equals("bottomUp") && !method.equals("inserts"))
      throw new IllegalArgumentException("method " + method);
    restored = Engine.openInMemory(options, new FileStorage(backup), method.equals("bottomUp"));
    return restored;
  }

  @TearDown(Level.Invocation)
  public void closeRestored() {
    if (restored != null) {
      restored.close();
      restored = null;
    }
    if (loaded != null) {
      loaded.close();
      loaded = null;
    }
  }
}
