package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import org.rocksdb.WriteOptions;

/**
 * Read amplification of point gets with direct I/O at 1% memory, Basalt beside RocksDB in one
 * process and one run (the issue: "I/Os per get at most 1.5"; the Magma paper measured 1.79 for
 * Magma and 2.18 for RocksDB). A plain program, not a JMH benchmark: it counts I/Os, it does not
 * time them.
 *
 * <p>What it measures, per engine: {@code --warmup} random gets of loaded keys, then {@code --gets}
 * measured ones, all on the main thread, and that thread's own I/O counters over the measured gets
 * ({@code /proc/thread-self/io}): {@code syscr}, its read system calls (both engines read a point
 * get's blocks with a pread on the calling thread, one per block fetched), and {@code read_bytes},
 * the bytes it fetched from the block device (direct reads count there; page cache hits would not).
 * Beside them, the whole process's counters over the same gets and over an idle interval as long
 * (the JVM's and the engines' background reads), and each engine's own count of the blocks it read:
 * Basalt's {@link io.basaltdb.Stats}, RocksDB's statistics tickers. Every get must return its key's
 * value.
 *
 * <p>The stores: {@code --entries} 16-byte keys ({@link BatchedReadBenchmark#key}), or with {@code
 * --key-pattern random|two-level|worst} {@link KeyIndexFormats}' keys ({@code --key-size}, {@code
 * --prefix-bytes}), with random, incompressible {@code --value-size}-byte values, the same in both;
 * by default as many entries as make the data 100 times {@code --memory-mib}. They are loaded once
 * under {@code --dir} and kept, a LOADED marker telling later runs to reuse them. After loading,
 * Basalt flushes and waits for its compactions, RocksDB flushes and runs one {@code compactRange}
 * (leaving every table in its bottom level). Then each is opened with the budget: Basalt with
 * {@code memoryQuota(budget).directReads(true)}, RocksDB as {@link RocksStore} sets it up (block
 * cache of half the budget holding the index and filter blocks, 10-bit bloom filter, LZ4) with
 * {@code use_direct_reads}.
 *
 * <p>Run: {@code java @jvm.flags -cp engine-jmh/target/benchmarks.jar
 * io.basaltdb.jmh.ReadAmplification [--memory-mib 8] [--entries N] [--value-size 200] [--warmup
 * 200000] [--gets 200000] [--engines basalt,rocksdb] [--dir /tmp/basalt-readamp] [--key-pattern
 * seq16|random|two-level|worst] [--key-size 16] [--prefix-bytes 100]}; engine {@code basalt-trie}
 * is Basalt with the keys in a keyspace of HB+-trie tables ({@code KeyspaceOptions}).
 *
 * <p>Thread-safety: a program; one thread does every get.
 */
public final class ReadAmplification {
  static {
    RocksDB.loadLibrary();
  }

  private ReadAmplification() {}

  /** The command line; see the class javadoc. */
  record Params(
      long memory,
      long entries,
      int valueSize,
      int warmup,
      int gets,
      List<String> engines,
      Path dir,
      String keyPattern,
      int keySize,
      int prefixBytes,
      KeyIndexFormats.Words words) {
    static Params parse(String[] args) {
      Map<String, String> a =
          new LinkedHashMap<>(
              Map.of(
                  "memory-mib",
                  "8",
                  "value-size",
                  "200",
                  "warmup",
                  "200000",
                  "gets",
                  "200000",
                  "engines",
                  "basalt,rocksdb",
                  "dir",
                  "/tmp/basalt-readamp",
                  "key-pattern",
                  "seq16",
                  "key-size",
                  "16",
                  "prefix-bytes",
                  "100"));
      for (int i = 0; i < args.length; i += 2) {
        String name = args[i].startsWith("--") ? args[i].substring(2) : "";
        if (i + 1 == args.length || !(a.containsKey(name) || name.equals("entries"))) {
          throw new IllegalArgumentException(
              "usage: [--memory-mib M] [--entries N] [--value-size B] [--warmup W]"
                  + " [--gets G] [--engines basalt,rocksdb] [--dir D]; not understood: "
                  + args[i]);
        }
        a.put(name, args[i + 1]);
      }
      long memory = Long.parseLong(a.get("memory-mib")) << 20;
      int valueSize = Integer.parseInt(a.get("value-size"));
      long entries =
          a.containsKey("entries")
              ? Long.parseLong(a.get("entries"))
              : 100
                  * memory
                  / (keyBytes(
                          a.get("key-pattern"),
                          Integer.parseInt(a.get("key-size")),
                          Integer.parseInt(a.get("prefix-bytes")))
                      + valueSize);
      return new Params(
          memory,
          entries,
          valueSize,
          Integer.parseInt(a.get("warmup")),
          Integer.parseInt(a.get("gets")),
          List.of(a.get("engines").split(",")),
          Path.of(a.get("dir")),
          a.get("key-pattern"),
          Integer.parseInt(a.get("key-size")),
          Integer.parseInt(a.get("prefix-bytes")),
          new KeyIndexFormats.Words(Integer.parseInt(a.get("prefix-bytes"))));
    }

    static int keyBytes(String pattern, int keySize, int prefixBytes) {
      return pattern.equals("seq16")
          ? 16
          : KeyIndexFormats.keyBytes(
              KeyIndexFormats.KeyPattern.parse(pattern), keySize, prefixBytes);
    }

    long dataBytes() {
      return entries * (keyBytes(keyPattern, keySize, prefixBytes) + valueSize);
    }

    /** Key {@code i}. */
    byte[] key(long i) {
      return keyPattern.equals("seq16")
          ? BatchedReadBenchmark.key(i)
          : KeyIndexFormats.key(
              KeyIndexFormats.KeyPattern.parse(keyPattern), keySize, prefixBytes, words, i);
    }

    Path store(String engine) {
      String keys =
          keyPattern.equals("seq16")
              ? ""
              : "-" + keyPattern + keyBytes(keyPattern, keySize, prefixBytes);
      return dir.resolve(engine + keys + "-" + entries + "x" + valueSize);
    }
  }

  /** One engine's store opened for reading with the budget. */
  interface Reader extends AutoCloseable {
    byte[] get(byte[] key) throws Exception;

    /** The engine's own counters, of which the measured gets' deltas are reported. */
    Map<String, Long> counters() throws Exception;

    /**
     * The blocks read from disk per get by the engine's own count, from two {@link #counters}
     * readings.
     */
    double readsPerGet(Map<String, Long> before, Map<String, Long> after, long gets);

    /** The store's file layout, for the report. */
    String shape() throws Exception;
  }

  /** An I/O counter reading from a {@code /proc/.../io} file. */
  record Io(long syscr, long readBytes) {
    static Io of(String file) throws IOException {
      long syscr = -1, readBytes = -1;
      for (String line : Files.readAllLines(Path.of(file))) {
        if (line.startsWith("syscr: ")) syscr = Long.parseLong(line.substring(7).trim());
        if (line.startsWith("read_bytes: ")) readBytes = Long.parseLong(line.substring(12).trim());
      }
      if (syscr < 0 || readBytes < 0)
        throw new IOException(file + " has no syscr or read_bytes (no task I/O accounting?)");
      return new Io(syscr, readBytes);
    }

    Io minus(Io o) {
      return new Io(syscr - o.syscr, readBytes - o.readBytes);
    }
  }

  /**
   * The value of entry {@code i}: random bytes seeded by {@code i}, so a get can check what it
   * reads.
   */
  static byte[] value(long i, int size) {
    SplittableRandom r = new SplittableRandom(i);
    byte[] v = new byte[size];
    for (int b = 0; b < size; b += 8) {
      long x = r.nextLong();
      for (int j = 0; j < 8 && b + j < size; j++) v[b + j] = (byte) (x >>> (8 * j));
    }
    return v;
  }

  public static void main(String[] args) throws Exception {
    Params p = Params.parse(args);
    Files.createDirectories(p.dir);
    List<String> rows = new ArrayList<>(), details = new ArrayList<>();
    for (String engine : p.engines) {
      long start = System.nanoTime();
      boolean loaded = load(engine, p);
      if (loaded)
        System.out.printf("loaded %s in %.0f s%n", engine, (System.nanoTime() - start) / 1e9);
      try (Reader r = open(engine, p)) {
        measure(engine, r, p, rows, details);
      }
    }
    System.out.printf(
        "%nRead amplification of point gets, direct I/O: %d entries x (%d + %d) bytes = %.1f MB of data,"
            + " budget %d MiB (%.2f%% of the data); %d warm-up then %d measured random gets of existing keys, one thread%n",
        p.entries,
        Params.keyBytes(p.keyPattern, p.keySize, p.prefixBytes),
        p.valueSize,
        p.dataBytes() / 1e6,
        p.memory >> 20,
        100.0 * p.memory / p.dataBytes(),
        p.warmup,
        p.gets);
    System.out.printf(
        "JDK %s (%s), kernel %s, %d cores, stores in %s%n%n",
        System.getProperty("java.runtime.version"),
        System.getProperty("java.vm.vendor"),
        Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim(),
        Runtime.getRuntime().availableProcessors(),
        p.dir);
    System.out.printf(
        "%-8s %8s %10s %15s %11s %15s %11s %16s %12s %8s%n",
        "engine",
        "gets",
        "syscr/get",
        "read_bytes/get",
        "proc syscr",
        "proc rd_bytes",
        "idle syscr",
        "idle rd_bytes",
        "engine rd/get",
        "seconds");
    System.out.printf(
        "%-8s %8s %10s %15s %11s %15s %11s %16s %12s %8s%n",
        "", "", "(thread)", "(thread)", "/get", "/get", "/get", "/get", "", "");
    rows.forEach(System.out::println);
    System.out.println();
    details.forEach(System.out::println);
  }

  /**
   * Loads {@code engine}'s store unless a LOADED marker says it is there; true if it loaded it now.
   */
  static boolean load(String engine, Params p) throws Exception {
    Path store = p.store(engine);
    if (Files.exists(store.resolve("LOADED"))) return false;
    MemoryBackupBenchmark.deleteTree(store);
    System.out.printf("loading %s: %d entries into %s%n", engine, p.entries, store);
    switch (engine) {
      case "basalt", "basalt-trie" -> loadBasalt(store, p, engine.equals("basalt-trie"));
      case "rocksdb" -> loadRocks(store, p);
      default ->
          throw new IllegalArgumentException(
              "engine " + engine + ": basalt, basalt-trie or rocksdb");
    }
    Files.write(store.resolve("LOADED"), new byte[0]);
    return true;
  }

  static void loadBasalt(Path store, Params p, boolean trie) {
    try (Basalt db =
        Basalt.open(store, Options.defaults().memoryQuota(256L << 20).syncMode(SyncMode.NONE))) {
      Keyspace ks =
          trie
              ? db.createKeyspace(
                  "trie",
                  io.basaltdb.KeyspaceOptions.defaults()
                      .keyIndexFormat(io.basaltdb.KeyspaceOptions.KeyIndexFormat.HB_TRIE))
              : db.keyspace("default");
      WriteBatch batch = new WriteBatch();
      for (long i = 0; i < p.entries; i++) {
        batch.put(ks, p.key(i), value(i, p.valueSize));
        if (batch.size() == 1000 || i == p.entries - 1) {
          db.write(batch);
          batch.clear();
        }
      }
      db.flush();
      if (!db.waitForCompactions(30 * 60_000L))
        throw new IllegalStateException("Basalt's compactions did not settle");
    }
  }

  static void loadRocks(Path store, Params p) throws RocksDBException {
    try (LRUCache cache = new LRUCache(64L << 20);
        org.rocksdb.Options o = rocksOptions(cache).setWriteBufferSize(64L << 20);
        RocksDB db = RocksDB.open(o, store.toString());
        WriteOptions noWal = new WriteOptions().setDisableWAL(true);
        org.rocksdb.WriteBatch batch = new org.rocksdb.WriteBatch();
        FlushOptions wait = new FlushOptions().setWaitForFlush(true)) {
      for (long i = 0; i < p.entries; i++) {
        batch.put(p.key(i), value(i, p.valueSize));
        if (batch.count() == 1000 || i == p.entries - 1) {
          db.write(noWal, batch);
          batch.clear();
        }
      }
      db.flush(wait);
      db.compactRange();
    }
  }

  /**
   * {@link RocksStore}'s table and compression settings, with the index and filter blocks in {@code
   * cache}.
   */
  static org.rocksdb.Options rocksOptions(LRUCache cache) {
    BlockBasedTableConfig table =
        new BlockBasedTableConfig()
            .setFilterPolicy(new BloomFilter(10, false))
            .setBlockCache(cache)
            .setCacheIndexAndFilterBlocks(true)
            .setCacheIndexAndFilterBlocksWithHighPriority(true)
            .setPinL0FilterAndIndexBlocksInCache(true);
    return new org.rocksdb.Options()
        .setCreateIfMissing(true)
        .setCompressionType(CompressionType.LZ4_COMPRESSION)
        .setMaxWriteBufferNumber(2)
        .setMaxBackgroundJobs(3)
        .setTableFormatConfig(table);
  }

  static Reader open(String engine, Params p) throws Exception {
    return engine.startsWith("basalt") ? new BasaltReader(p, engine) : new RocksReader(p);
  }

  /**
   * Warms up, then measures {@code p.gets} gets between readings of the thread's and the process's
   * I/O counters, then an idle interval as long; adds the table row and the detail lines.
   */
  static void measure(String engine, Reader r, Params p, List<String> rows, List<String> details)
      throws Exception {
    SplittableRandom random = new SplittableRandom(42);
    gets(r, random, p.warmup, p);
    Io probe0 = Io.of("/proc/thread-self/io");
    Io probe =
        Io.of("/proc/thread-self/io")
            .minus(probe0); // what one reading of the file costs the thread
    Map<String, Long> before = r.counters();
    Io thread0 = Io.of("/proc/thread-self/io");
    Io process0 = Io.of("/proc/self/io");
    long start = System.nanoTime();
    gets(r, random, p.gets, p);
    long nanos = System.nanoTime() - start;
    Io thread = Io.of("/proc/thread-self/io").minus(thread0).minus(probe);
    Io process = Io.of("/proc/self/io").minus(process0);
    Map<String, Long> after = r.counters();
    Io idle0 = Io.of("/proc/self/io");
    Thread.sleep(nanos / 1_000_000);
    Io idle = Io.of("/proc/self/io").minus(idle0);
    double n = p.gets, engineReads = r.readsPerGet(before, after, p.gets);
    rows.add(
        String.format(
            "%-8s %8d %10.3f %15.1f %11.3f %15.1f %11.4f %16.1f %12.3f %8.1f",
            engine,
            p.gets,
            thread.syscr / n,
            thread.readBytes / n,
            process.syscr / n,
            process.readBytes / n,
            idle.syscr / n,
            idle.readBytes / n,
            engineReads,
            nanos / 1e9));
    StringBuilder d =
        new StringBuilder(
            engine
                + ": "
                + r.shape()
                + "\n  table files (.sst): "
                + tableBytes(p.store(engine), p)
                + "\n  own counters over the measured gets, per get:");
    for (Map.Entry<String, Long> e : after.entrySet()) {
      long delta = e.getValue() - before.getOrDefault(e.getKey(), 0L);
      if (delta != 0) d.append(String.format(" %s=%.3f", e.getKey(), delta / n));
    }
    if (thread.readBytes == 0 && thread.syscr > 0)
      d.append("\n  NOTE: no read_bytes on the thread: no block I/O accounting here?");
    if (Math.abs(thread.syscr / n - engineReads) > 0.05 * Math.max(engineReads, 0.01)) {
      d.append(
          String.format(
              "%n  NOTE: the thread's read calls (%.3f/get) and the engine's own count (%.3f/get) differ by over 5%%",
              thread.syscr / n, engineReads));
    }
    details.add(d.toString());
  }

  /**
   * The bytes of a store's table files ({@code .sst}: Basalt's key index, all of RocksDB's data),
   * also as a share of the data: what its block cache would need to hold every block a get may read
   * but the values.
   */
  static String tableBytes(Path store, Params p) throws IOException {
    long n = 0;
    try (Stream<Path> all = Files.walk(store)) {
      for (Path f : all.filter(f -> f.toString().endsWith(".sst")).toList()) n += Files.size(f);
    }
    return String.format("%.1f MB (%.1f%% of the data)", n / 1e6, 100.0 * n / p.dataBytes());
  }

  /** {@code count} gets of random loaded keys, each checked against its value. */
  static void gets(Reader r, SplittableRandom random, int count, Params p) throws Exception {
    for (int g = 0; g < count; g++) {
      long i = random.nextLong(p.entries);
      byte[] v = r.get(p.key(i));
      if (v == null) throw new IllegalStateException("key " + i + " is missing");
      if (!Arrays.equals(v, value(i, p.valueSize)))
        throw new IllegalStateException("key " + i + " has a wrong value");
    }
  }

  /** Basalt with the budget as its memory quota and direct reads. */
  static final class BasaltReader implements Reader {
    final Basalt db;
    final Keyspace ks;

    BasaltReader(Params p, String engine) {
      db =
          Basalt.open(
              p.store(engine),
              EngineStores.BasaltEngine.extraOptions(
                  Options.defaults().memoryQuota(p.memory).directReads(true)));
      ks = db.keyspace(engine.equals("basalt-trie") ? "trie" : "default");
    }

    @Override
    public byte[] get(byte[] key) {
      return ks.get(key);
    }

    /** The counters of Basalt's reads (its other statistics do not move under gets). */
    @Override
    public Map<String, Long> counters() {
      Map<String, Long> m = new LinkedHashMap<>();
      Map<String, Long> all = db.stats().asMap();
      for (String k :
          List.of(
              "gets",
              "tableLookups",
              "indexBlockReads",
              "documentReads",
              "hintMisses",
              "blockCacheHits",
              "blockCacheMisses",
              "blockCacheDocumentHits",
              "blockCacheDocumentMisses",
              "blockCacheEvictions",
              "blockCacheDeclined")) {
        m.put(k, all.getOrDefault(k, 0L));
      }
      // the misses of neither data blocks nor documents: key index index and filter blocks, segment
      // index pages
      m.put(
          "otherMisses(index,filter,page)",
          m.get("blockCacheMisses") - m.get("indexBlockReads") - m.get("blockCacheDocumentMisses"));
      return m;
    }

    /**
     * As {@link io.basaltdb.Stats#readsPerGet}: block cache misses but documents', plus document
     * reads.
     */
    @Override
    public double readsPerGet(Map<String, Long> before, Map<String, Long> after, long gets) {
      long misses = after.get("blockCacheMisses") - before.get("blockCacheMisses");
      long documentMisses =
          after.get("blockCacheDocumentMisses") - before.get("blockCacheDocumentMisses");
      long documentReads = after.get("documentReads") - before.get("documentReads");
      return (double) (misses - documentMisses + documentReads) / gets;
    }

    @Override
    public String shape() {
      Map<String, Long> s = db.stats().asMap();
      StringBuilder b = new StringBuilder("tables by level [");
      for (int l = 0; l < 7; l++)
        b.append(l == 0 ? "" : " ").append(s.getOrDefault("tablesAtLevel" + l, 0L));
      return b.append("], segments ")
          .append(s.get("segments"))
          .append(
              String.format(
                  ", disk %.1f MB; block cache %d of %d bytes (index %d, filter %d, data %d, pages %d, documents %d)",
                  s.get("diskBytes") / 1e6,
                  s.get("blockCacheBytes"),
                  s.get("blockCacheCapacity"),
                  s.get("blockCacheIndexBytes"),
                  s.get("blockCacheFilterBytes"),
                  s.get("blockCacheDataBytes"),
                  s.get("blockCachePageBytes"),
                  s.get("blockCacheDocumentBytes")))
          .toString();
    }

    @Override
    public void close() {
      db.close();
    }
  }

  /** RocksDB as {@link RocksStore} sets it up with the budget, plus direct reads and statistics. */
  static final class RocksReader implements Reader {
    static final TickerType[] TICKERS = {
      TickerType.BLOCK_CACHE_INDEX_MISS,
      TickerType.BLOCK_CACHE_FILTER_MISS,
      TickerType.BLOCK_CACHE_DATA_MISS,
      TickerType.BLOCK_CACHE_MISS,
      TickerType.BLOCK_CACHE_INDEX_HIT,
      TickerType.BLOCK_CACHE_FILTER_HIT,
      TickerType.BLOCK_CACHE_DATA_HIT,
      TickerType.BLOOM_FILTER_USEFUL,
      TickerType.BLOOM_FILTER_FULL_POSITIVE,
      TickerType.GET_HIT_L0,
      TickerType.GET_HIT_L1,
      TickerType.GET_HIT_L2_AND_UP
    };
    final long cacheBytes;
    final LRUCache cache;
    final Statistics statistics = new Statistics();
    final org.rocksdb.Options options;
    final RocksDB db;

    RocksReader(Params p) throws RocksDBException {
      this(p.memory, p.store("rocksdb"));
    }

    /** The store at {@code store} with budget {@code memory} (also {@link KeyIndexFormats}'). */
    RocksReader(long memory, Path store) throws RocksDBException {
      cacheBytes = memory / 2;
      cache = new LRUCache(cacheBytes);
      options =
          rocksOptions(cache)
              .setWriteBufferSize(memory / 4)
              .setUseDirectReads(true)
              .setStatistics(statistics);
      db = RocksDB.open(options, store.toString());
    }

    @Override
    public byte[] get(byte[] key) throws RocksDBException {
      return db.get(key);
    }

    @Override
    public Map<String, Long> counters() {
      Map<String, Long> m = new LinkedHashMap<>();
      for (TickerType t : TICKERS) m.put(t.name(), statistics.getTickerCount(t));
      return m;
    }

    /**
     * Block cache misses: each is a block read from disk (index, filter and data blocks all go
     * through it).
     */
    @Override
    public double readsPerGet(Map<String, Long> before, Map<String, Long> after, long gets) {
      return (double) (after.get("BLOCK_CACHE_MISS") - before.get("BLOCK_CACHE_MISS")) / gets;
    }

    @Override
    public String shape() throws RocksDBException {
      StringBuilder b = new StringBuilder("files by level [");
      for (int l = 0; l < 7; l++)
        b.append(l == 0 ? "" : " ").append(db.getProperty("rocksdb.num-files-at-level" + l));
      return b.append(
              String.format(
                  "], sst %.1f MB; block cache %d of %d bytes",
                  db.getLongProperty("rocksdb.total-sst-files-size") / 1e6,
                  cache.getUsage(),
                  cacheBytes))
          .toString();
    }

    @Override
    public void close() {
      db.close();
      options.close();
      statistics.close();
      cache.close();
    }
  }
}
