package io.basaltdb.jmh;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
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
 * Basalt against RocksDB and LMDB at the engine level: point gets, batched gets, short scans and
 * overwrites of random existing keys, each engine driven through its own Java binding ({@link
 * EngineStores}), from a data set that fits the memory budget ({@code dataset=fit}) and from one 20
 * times it ({@code large}).
 *
 * <p><b>Data.</b> {@code fitEntries} (default 30,000) or {@code largeEntries} (3,200,000) 16-byte
 * keys with random, incompressible {@code valueSize}-byte values (200): 6.5 MB or 691 MB of keys
 * and values against a {@code memoryMiB} budget of 32 MiB. The small set fits every cache (Basalt's
 * 14.5 MiB block cache holds it in about 10 MiB, RocksDB's 16 MiB one in about 7; at 50,000 entries
 * Basalt's cache was full and missed 5% of its lookups); the large one takes about 22 times the
 * budget on disk (RocksDB's files, the smallest). Keys are {@link BatchedReadBenchmark}'s (a hashed
 * prefix, so the load inserts in random order); {@code -p keySize=N} makes them N bytes (the same
 * 16, then bytes derived from the index), and {@code -p impl=basalt-trie} runs Basalt with its keys
 * in a keyspace of HB+-trie key index tables (docs/benchmarks.md, "HB+-trie"). Each store is loaded
 * once, with a 256 MiB budget and batches of {@value #LOAD_BATCH} keys, under {@code
 * dir/<impl>-<entries>-<valueSize>}, left to settle (flushed, fsynced, the engine's own compactions
 * finished; no manual full compaction for any engine), marked {@code LOADED} and reused by every
 * later trial and run. Each trial opens it with the measured budget and logs a line on its cache at
 * its end.
 *
 * <p><b>Engines</b>, all with the same durability: every write reaches the operating system before
 * it returns (a process crash loses nothing) and none is fsynced (a power loss may lose the last
 * writes).
 *
 * <ul>
 *   <li>{@code basalt}: the budget as its memory quota, {@code readQueueDepth} 32, {@code
 *       SyncMode.NONE} (the WAL written per write, fsynced only when a flush rotates it). engine-io
 *       is on the class path, so batched gets and scans read through io_uring where the kernel has
 *       it.
 *   <li>{@code rocksdb}: {@link RocksStore} with index and filter blocks in its block cache (Basalt
 *       charges them to its quota): two write buffers of a quarter of the budget, an LRU block
 *       cache of half, LZ4, a 10 bits/key bloom filter; writes with the WAL on and {@code
 *       sync=false}.
 *   <li>{@code lmdb}: lmdbjava with direct buffers, {@code MDB_NOSYNC | MDB_NOMETASYNC} (a commit
 *       writes its pages, never fsyncs them), {@code MDB_NORDAHEAD} (random reads). LMDB has no
 *       memory budget: it reads through its memory map, so its cache is the operating system's page
 *       cache, unbounded here. Its map size is four times the keys and values, at least 1 GiB:
 *       address space, not disk (the file grows as pages are used).
 * </ul>
 *
 * The data set is 20 times the budget, not the machine's memory: the operating system's page cache
 * can hold all the files, so with {@code directReads} (the default) Basalt and RocksDB read their
 * files with O_DIRECT and a miss in their caches is a disk read; LMDB has no such mode and is
 * served by the page cache ({@code -p directReads=false} gives the other two the same).
 *
 * <p><b>Operations</b>, each thread drawing its own random existing keys; a read that does not find
 * a loaded key throws, so a broken store cannot report a score. Keys are written into each thread's
 * reused arrays from a random index (a multiplication and 16 byte stores, no allocation) rather
 * than made in {@code @Setup}: a key array per entry would take over 100 MB of the 1 GiB heap, and
 * a smaller pool would shrink the large set's working set.
 *
 * <ul>
 *   <li>{@code get}: one key; gets per second.
 *   <li>{@code getAll}: {@value #BATCH} keys in one call (Basalt {@code Keyspace.getAll}, RocksDB
 *       {@code multiGetAsList}, LMDB {@value #BATCH} gets in one read transaction); keys per
 *       second.
 *   <li>{@code scan}: one scan positions a cursor at a random existing key (one with at least
 *       {@value #SCAN} keys from it on) and reads {@value #SCAN} keys and their values; scans per
 *       second. Basalt's cursor is told it will take {@value #SCAN} keys ({@code
 *       Keyspace.scan(from, null, 100)}, as the YCSB binding does), RocksDB's iterator has its
 *       automatic read-ahead, LMDB's cursor walks mapped pages.
 *   <li>{@code put}: overwrites a random existing key with a fresh random value of the same size,
 *       so the data set keeps its size for later trials; puts per second. Each trial's end (outside
 *       the measurement) flushes the store and waits for its compactions, so the next trial reads a
 *       settled store; JMH runs {@code scan}'s trials after {@code put}'s, so scans read a store
 *       with overwrites in its files.
 * </ul>
 *
 * LMDB takes a read transaction per get, getAll and scan and a write transaction per put, and
 * copies keys and values out of its map into arrays, as the other two return them.
 *
 * <p>Run (24 trials of about 45 s per thread count; the first trial of each engine on {@code large}
 * loads its store, in its setup, outside the measurement): {@code java @jvm.flags -jar
 * engine-jmh/target/benchmarks.jar EngineBenchmark -t 1 -rf json -rff engine-t1.json}, then the
 * same with {@code -t 2}. A smoke run: add {@code -p fitEntries=2000 -p largeEntries=20000 -p
 * dir=/tmp/engine-bench-smoke -wi 0 -i 1 -r 1}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-XX:+UseParallelGC"})
public class EngineBenchmark {
  static final int KEY_SIZE = 16;
  static final int BATCH = 32;
  static final int SCAN = 100;
  static final int LOAD_BATCH = 10_000;
  static final long LOAD_MEMORY = 256L << 20;

  /**
   * {@code basalt-hashed}: Basalt with its keys in a hashed keyspace (a lazy-trie key index, issue
   * 39; no scans). {@code basalt-trie}: Basalt with its keys in a keyspace of HB+-trie key index
   * tables ({@code KeyspaceOptions.keyIndexFormat(HB_TRIE)}); not in the default set.
   */
  @Param({"basalt", "rocksdb", "lmdb"})
  public String impl;

  /**
   * Bytes per key, at least 16: the 16 bytes of {@link #fillKey}, then bytes derived from the key's
   * index (the first 16 alone tell keys apart and order them). LMDB takes at most 511.
   */
  @Param("16")
  public int keySize;

  /**
   * {@code seq}: the keys above. {@code random}, {@code two-level}, {@code worst}: {@link
   * KeyIndexFormats}' patterns ({@code keySize} random bytes; two levels of 192 prefixes of {@code
   * prefixBytes} and 16 bytes; 200 bytes of 20 two-way levels, at most 2^20 entries), made afresh
   * for each operation (an allocation the {@code seq} keys avoid). A scan from a key of these
   * patterns may end early at the end of the data (fewer than {@value #SCAN} keys).
   */
  @Param("seq")
  public String keyPattern;

  @Param("100")
  public int prefixBytes;

  /** The prefix words of {@link #keyPattern}. */
  KeyIndexFormats.Words words;

  /** Null for {@code seq}. */
  KeyIndexFormats.KeyPattern pattern;

  @Param({"fit", "large"})
  public String dataset;

  @Param("30000")
  public int fitEntries;

  @Param("3200000")
  public int largeEntries;

  @Param("200")
  public int valueSize;

  /** The memory budget of Basalt and RocksDB, in MiB (LMDB has none). */
  @Param("32")
  public int memoryMiB;

  /**
   * Basalt and RocksDB read their files with O_DIRECT (Basalt {@code directReads}, RocksDB {@code
   * use_direct_reads}), so a miss in their caches is a disk read, not a page-cache copy; LMDB reads
   * through its memory map, so the operating system's page cache still serves it.
   */
  @Param("true")
  public boolean directReads;

  @Param("/tmp/basalt-engine-bench")
  public String dir;

  int entries;

  /**
   * Keys whose prefix, as an unsigned number, is below this (flipped to compare signed) have at
   * least {@value #SCAN} keys from them on: the scans' starts.
   */
  long scanLimit;

  EngineStores.Engine engine;

  @Setup(Level.Trial)
  public void setup() throws IOException {
    entries =
        switch (dataset) {
          case "fit" -> fitEntries;
          case "large" -> largeEntries;
          default -> throw new IllegalArgumentException("dataset is fit or large, not " + dataset);
        };
    if (entries <= SCAN)
      throw new IllegalArgumentException("a data set needs more than " + SCAN + " entries");
    if (keySize < KEY_SIZE) throw new IllegalArgumentException("keySize is at least " + KEY_SIZE);
    pattern = keyPattern.equals("seq") ? null : KeyIndexFormats.KeyPattern.parse(keyPattern);
    if (pattern == KeyIndexFormats.KeyPattern.WORST && entries > 1 << 20)
      throw new IllegalArgumentException("the worst pattern has at most 2^20 keys");
    words = new KeyIndexFormats.Words(prefixBytes);
    scanLimit = pattern == null ? scanLimit(entries) : 0;
    String keys =
        (pattern == null
                ? ""
                : "-"
                    + keyPattern
                    + (pattern == KeyIndexFormats.KeyPattern.TWO_LEVEL ? prefixBytes : ""))
            + (keySize == KEY_SIZE ? "" : "-k" + keySize);
    Path store =
        Files.createDirectories(Path.of(dir))
            .resolve(impl + keys + "-" + entries + "-" + valueSize);
    if (!Files.exists(store.resolve("LOADED"))) load(store);
    engine =
        EngineStores.open(impl, store, (long) memoryMiB << 20, entries, valueSize, directReads);
  }

  /**
   * Loads {@code entries} keys with random values into an empty {@code store}, settles it and marks
   * it.
   */
  private void load(Path store) throws IOException {
    MemoryBackupBenchmark.deleteTree(store);
    Files.createDirectories(store);
    long start = System.nanoTime();
    try (EngineStores.Engine loading =
        EngineStores.open(impl, store, LOAD_MEMORY, entries, valueSize)) {
      SplittableRandom r = new SplittableRandom(1);
      List<byte[]> keys = new ArrayList<>(LOAD_BATCH);
      List<byte[]> values = new ArrayList<>(LOAD_BATCH);
      for (int i = 0; i < entries; i++) {
        byte[] value = new byte[valueSize];
        r.nextBytes(value);
        keys.add(keyOf(i, new byte[keySize]));
        values.add(value);
        if (keys.size() == LOAD_BATCH || i == entries - 1) {
          loading.write(keys, values);
          keys.clear();
          values.clear();
        }
      }
      long written = System.nanoTime();
      loading.settle();
      System.out.printf(
          "%n# %s: loaded %,d entries in %.1f s (writes %.1f s, settling %.1f s), %.1f MiB on disk%n",
          store.getFileName(),
          entries,
          (System.nanoTime() - start) / 1e9,
          (written - start) / 1e9,
          (System.nanoTime() - written) / 1e9,
          diskBytes(store) / 1048576.0);
    }
    Files.write(store.resolve("LOADED"), new byte[0]);
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    engine.settle(); // after puts: the next trial reads a flushed, compacted store
    System.out.printf(
        "%n# %s-%d-%d: %s, %.1f MiB on disk%n",
        impl, entries, valueSize, engine.summary(), diskBytes(engine.directory()) / 1048576.0);
    engine.close();
  }

  /** Each thread's random generator and reused keys, values and buffers. */
  @State(Scope.Thread)
  public static class Caller {
    static final int PUT_VALUES = 64;

    byte[] key;
    final List<byte[]> batch = new ArrayList<>(BATCH);

    /** Values for puts, used in turn, each with 8 fresh random bytes. */
    byte[][] values;

    int nextValue;

    /** LMDB's key and value, direct buffers as it wants them. */
    ByteBuffer directKey;

    ByteBuffer directValue;
    SplittableRandom random;
    int entries;
    long scanLimit;
    EngineBenchmark bench;

    @Setup(Level.Trial)
    public void setup(EngineBenchmark b) {
      random = new SplittableRandom(Thread.currentThread().getId());
      bench = b;
      entries = b.entries;
      scanLimit = b.scanLimit;
      int keyBytes =
          b.pattern == null
              ? b.keySize
              : KeyIndexFormats.keyBytes(b.pattern, b.keySize, b.prefixBytes);
      key = new byte[b.keySize];
      directKey = ByteBuffer.allocateDirect(keyBytes);
      for (int i = 0; i < BATCH; i++) batch.add(new byte[b.keySize]);
      values = new byte[PUT_VALUES][b.valueSize];
      for (byte[] v : values) random.nextBytes(v);
      directValue = ByteBuffer.allocateDirect(b.valueSize);
    }

    byte[] randomKey() {
      return bench.keyOf(random.nextInt(entries), key);
    }

    private Zipfian zipfian;

    /** The trial's zipfian over the loaded keys, made on first use (its setup sums n terms). */
    Zipfian zipfian() {
      if (zipfian == null) zipfian = new Zipfian(entries);
      return zipfian;
    }

    List<byte[]> randomKeys() {
      for (int j = 0; j < batch.size(); j++)
        batch.set(j, bench.keyOf(random.nextInt(entries), batch.get(j)));
      return batch;
    }

    byte[] randomScanStart() {
      if (bench.pattern != null) return randomKey();
      int i;
      do {
        i = random.nextInt(entries);
      } while ((prefix(i) ^ Long.MIN_VALUE) >= scanLimit);
      return fillKey(i, key);
    }

    byte[] nextValue() {
      byte[] v = values[nextValue++ & (PUT_VALUES - 1)];
      long x = random.nextLong();
      for (int j = 0; j < 8; j++) v[j] = (byte) (x >>> (8 * j));
      return v;
    }

    ByteBuffer directKey(byte[] k) {
      return directKey.clear().put(k).flip();
    }

    ByteBuffer directValue(byte[] v) {
      return directValue.clear().put(v).flip();
    }
  }

  @Benchmark
  public void get(Caller c, Blackhole bh) {
    byte[] key = c.randomKey();
    byte[] v = engine.get(c, key);
    if (v == null) throw missing(key);
    bh.consume(v);
  }

  @Benchmark
  @OperationsPerInvocation(BATCH)
  public void getAll(Caller c, Blackhole bh) {
    List<byte[]> keys = c.randomKeys();
    List<byte[]> values = engine.getAll(c, keys);
    for (int i = 0; i < BATCH; i++) {
      if (values.get(i) == null) throw missing(keys.get(i));
      bh.consume(values.get(i));
    }
  }

  @Benchmark
  public void scan(Caller c, Blackhole bh) {
    byte[] from = c.randomScanStart();
    int n = engine.scan(c, from, SCAN, bh);
    if (pattern == null ? n != SCAN : n == 0)
      throw new IllegalStateException(
          "a scan from " + HexFormat.of().formatHex(from) + " read " + n + " keys");
  }

  @Benchmark
  public void put(Caller c) {
    engine.put(c, c.randomKey(), c.nextValue());
  }

  /**
   * YCSB workload A's mix (issue 39's "sustained 50% zipfian updates"): half gets, half overwrites,
   * of keys drawn from a scrambled zipfian ({@link Zipfian}, theta 0.99) over the loaded keys.
   */
  @Benchmark
  public void updateMix(Caller c, Blackhole bh) {
    byte[] key = keyOf((int) c.zipfian().next(c.random), c.key);
    if (c.random.nextBoolean()) bh.consume(engine.get(c, key));
    else engine.put(c, key, c.nextValue());
  }

  /**
   * Key {@code i} of {@link #keyPattern}: written into {@code reuse} for {@code seq}, a new array
   * otherwise.
   */
  byte[] keyOf(long i, byte[] reuse) {
    return pattern == null
        ? fillKey(i, reuse)
        : KeyIndexFormats.key(pattern, keySize, prefixBytes, words, i);
  }

  /** The first 8 bytes of key {@code i}, big-endian; distinct for distinct {@code i}. */
  static long prefix(long i) {
    return i * 0x9E3779B97F4A7C15L;
  }

  /**
   * Key {@code i}, as {@link BatchedReadBenchmark#key}: {@link #prefix} then {@code i}, both
   * big-endian.
   */
  static byte[] fillKey(long i, byte[] k) {
    long x = prefix(i);
    for (int j = 0; j < 8; j++) k[j] = (byte) (x >>> (56 - 8 * j));
    for (int j = 0; j < 8; j++) k[8 + j] = (byte) (i >>> (56 - 8 * j));
    for (int j = KEY_SIZE; j < k.length; j += 8) { // longer keys: bytes of a xorshift of the index
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
      for (int b = 0; b < 8 && j + b < k.length; b++) k[j + b] = (byte) (x >>> (8 * b));
    }
    return k;
  }

  static byte[] key(long i) {
    return fillKey(i, new byte[KEY_SIZE]);
  }

  /**
   * The sign-flipped prefix of the key {@value #SCAN} places from the end in key order: the keys
   * sort by their prefixes (unsigned), which are distinct.
   */
  static long scanLimit(int entries) {
    long[] flipped = new long[entries];
    for (int i = 0; i < entries; i++) flipped[i] = prefix(i) ^ Long.MIN_VALUE;
    Arrays.sort(flipped);
    return flipped[entries - SCAN];
  }

  static IllegalStateException missing(byte[] key) {
    return new IllegalStateException("a loaded key is missing: " + HexFormat.of().formatHex(key));
  }

  static long diskBytes(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      return all.filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (java.nio.file.NoSuchFileException e) {
                  return 0; // deleted since listed: an obsolete file
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              })
          .sum();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
