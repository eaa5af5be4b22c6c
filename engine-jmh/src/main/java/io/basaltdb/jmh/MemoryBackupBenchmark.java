package io.basaltdb.jmh;

import io.basaltdb.Backup;
import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
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
 * A full backup of an in-memory store (Nitro, seed 001 section 5.1; issue 17): {@code entries} keys
 * of 16 bytes in random order with random (incompressible) 100-byte values, loaded in
 * {@code @Setup}; each op backs the store up on {@code threads} threads (as many shards), LZ4 with
 * {@code compression}, into a new directory under {@code dir}, every file synced before the marker;
 * the directory is deleted after each op, outside the measured time. The setup prints the backup's
 * size against the items' bytes. Compare the bytes per second with the disk's own sequential write
 * rate on the same file system ({@code dd if=/dev/zero of=<dir>/dd bs=1M count=2048 conv=fsync}, or
 * fio).
 *
 * <p>Run: {@code java @jvm.flags -jar engine-jmh/target/benchmarks.jar MemoryBackupBenchmark}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseParallelGC"})
public class MemoryBackupBenchmark {
  static final int KEY_SIZE = 16;
  static final int VALUE_SIZE = 100;

  @Param("10000000")
  public int entries;

  @Param({"1", "2"})
  public int threads;

  @Param({"false"})
  public boolean compression;

  /** Where the backups go (a directory on the file system under test). */
  @Param("/tmp/basalt-memory-backup-bench")
  public String dir;

  Basalt db;
  Path target;
  int round;

  static Options options(int threads) {
    return Options.defaults().memoryQuota(6L << 30).backupThreads(threads);
  }

  @Setup(Level.Trial)
  public void setup() throws IOException {
    Files.createDirectories(Path.of(dir));
    db = load(options(threads).backupCompression(compression), entries);
  }

  /** A store of {@code entries} random 16-byte keys with random 100-byte values. */
  static Basalt load(Options o, int entries) {
    Basalt db = Basalt.openInMemory(o);
    Keyspace ks = db.keyspace("default");
    byte[] value = new byte[VALUE_SIZE];
    ByteBuffer key = ByteBuffer.allocate(KEY_SIZE);
    WriteBatch batch = new WriteBatch();
    for (int i = 0; i < entries; i++) {
      item(i, key, value);
      batch.put(ks, key, ByteBuffer.wrap(value));
      if (batch.size() == 100) {
        db.write(batch);
        batch.clear();
      }
    }
    db.write(batch);
    return db;
  }

  /**
   * Item {@code i}: its key (random order, unique) into {@code key}, flipped, and its value (random
   * bytes) into {@code value}.
   */
  static void item(long i, ByteBuffer key, byte[] value) {
    key.clear().putLong(mix(i)).putLong(i).flip();
    for (int j = 0; j < value.length; j += 8) {
      long x = mix(i * 31 + j + 1);
      for (int b = 0; b < 8 && j + b < value.length; b++) value[j + b] = (byte) (x >>> (8 * b));
    }
  }

  static void report(Backup b, int entries) {
    long items = (long) entries * (KEY_SIZE + VALUE_SIZE);
    System.out.printf(
        "%nbackup of %,d entries: %,d bytes in %d files, %.3fx the keys' and values' %,d bytes%n",
        entries, b.bytes(), b.files(), (double) b.bytes() / items, items);
  }

  static long mix(long x) {
    x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
    x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
    return x ^ (x >>> 31);
  }

  @Benchmark
  public Backup backup() {
    target = Path.of(dir).resolve("run-" + round++);
    Backup b = db.backup(target);
    if (round == 1) report(b, entries);
    return b;
  }

  @TearDown(Level.Invocation)
  public void deleteBackup() throws IOException {
    if (target != null) deleteTree(target);
    target = null;
  }

  @TearDown(Level.Trial)
  public void close() {
    db.close();
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
