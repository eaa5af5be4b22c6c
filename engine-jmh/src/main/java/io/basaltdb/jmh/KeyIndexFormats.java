package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.KeyspaceOptions;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import org.rocksdb.WriteOptions;

/**
 * Basalt's two key index formats (block tables and ForestDB's HB+-trie, seed 003) beside RocksDB,
 * for one key pattern and key size, in one process and one run: what the key index costs on disk
 * and in the cache, how many of its blocks a get reads, and how fast gets and scans go. A plain
 * program, not a JMH benchmark: most of what it reports are counts and sizes; its two rates are
 * single-threaded loops over random loaded keys, reported beside the peer measured in the same run.
 *
 * <p><b>Data.</b> {@code --entries} keys of {@code --pattern} ({@link KeyPattern}) with random
 * {@code --value-size}-byte values (200), loaded once per engine under {@code --dir} with a 256 MiB
 * budget, no WAL sync, batches of 1,000, in the keys' generation order (not sorted); then flushed
 * and left to settle (Basalt: its compactions finish; RocksDB: flush, then one {@code
 * compactRange}). Loading reports the key index bytes written by flushes and compactions (Basalt's
 * {@code indexBytesWritten + compactionBytesWritten}; RocksDB's flush and compaction write bytes,
 * which hold its values too).
 *
 * <p><b>Engines.</b> {@code basalt}: the default keyspace, block tables. {@code basalt-trie}: a
 * keyspace created with {@code KeyspaceOptions.keyIndexFormat(HB_TRIE)} and {@code --chunk}-byte
 * chunks (8). {@code rocksdb}: {@link ReadAmplification#rocksOptions} (index and filter blocks in
 * its block cache, 10-bit bloom filter, LZ4).
 *
 * <p><b>Measured</b> after reopening with {@code --memory-mib} (Basalt's quota; RocksDB's block
 * cache gets half of it) and direct reads: table bytes per key (Basalt: its key index tables;
 * RocksDB: all its tables, values included), index bytes per key (Basalt's {@code
 * keyIndexIndexBytes}: block tables' index blocks, trie tables' navigation pages and header;
 * RocksDB's index blocks from its aggregated table properties), then {@code --warmup} and {@code
 * --gets} random gets of loaded keys (each checked) with gets per second and key index blocks read
 * per get (Basalt: block cache misses of index or navigation, filter and data blocks; RocksDB:
 * index, filter and data block cache misses; documents and RocksDB's values in data blocks aside),
 * then {@code --scans} scans of 100 keys from random loaded keys, scans per second.
 *
 * <p>Run: {@code java -cp engine-jmh/target/benchmarks.jar io.basaltdb.jmh.KeyIndexFormats
 * [--pattern random|two-level|worst] [--key-size 64] [--prefix-bytes 100] [--entries 1000000]
 * [--value-size 200] [--memory-mib 64] [--chunk 8] [--gets 200000] [--warmup 100000] [--scans
 * 20000] [--engines basalt,basalt-trie,rocksdb] [--dir /tmp/basalt-keyindex]}
 *
 * <p>Thread-safety: a program; one thread does every read.
 */
public final class KeyIndexFormats {
  static {
    RocksDB.loadLibrary();
  }

  private KeyIndexFormats() {}

  /**
   * The key patterns (ForestDB's table 2): each key is a function of its index, so a get can be
   * made for any loaded key.
   */
  enum KeyPattern {
    /** {@code key-size} random bytes (the first 8 a bijection of the index: no duplicates). */
    RANDOM,
    /**
     * Two levels of 192 prefixes of {@code prefix-bytes} each, then 16 random bytes (the first 8 a
     * bijection of the index).
     */
    TWO_LEVEL,
    /**
     * 20 levels of two 10-byte words, chosen by the index's 20 low bits: 200 bytes, every level a
     * two-way branch (at most 2^20 keys).
     */
    WORST;

    static KeyPattern parse(String s) {
      return valueOf(s.toUpperCase().replace('-', '_'));
    }
  }

  record Params(
      KeyPattern pattern,
      int keySize,
      int prefixBytes,
      long entries,
      int valueSize,
      long memory,
      int chunk,
      int gets,
      int warmup,
      int scans,
      List<String> engines,
      Path dir) {
    static Params parse(String[] args) {
      Map<String, String> a = new LinkedHashMap<>();
      a.put("pattern", "random");
      a.put("key-size", "64");
      a.put("prefix-bytes", "100");
      a.put("entries", "1000000");
      a.put("value-size", "200");
      a.put("memory-mib", "64");
      a.put("chunk", "8");
      a.put("gets", "200000");
      a.put("warmup", "100000");
      a.put("scans", "20000");
      a.put("engines", "basalt,basalt-trie,rocksdb");
      a.put("dir", "/tmp/basalt-keyindex");
      for (int i = 0; i < args.length; i += 2) {
        String name = args[i].startsWith("--") ? args[i].substring(2) : "";
        if (i + 1 == args.length || !a.containsKey(name))
          throw new IllegalArgumentException(
              "options: " + a.keySet() + "; not understood: " + args[i]);
        a.put(name, args[i + 1]);
      }
      Params p =
          new Params(
              KeyPattern.parse(a.get("pattern")),
              Integer.parseInt(a.get("key-size")),
              Integer.parseInt(a.get("prefix-bytes")),
              Long.parseLong(a.get("entries")),
              Integer.parseInt(a.get("value-size")),
              Long.parseLong(a.get("memory-mib")) << 20,
              Integer.parseInt(a.get("chunk")),
              Integer.parseInt(a.get("gets")),
              Integer.parseInt(a.get("warmup")),
              Integer.parseInt(a.get("scans")),
              List.of(a.get("engines").split(",")),
              Path.of(a.get("dir")));
      if (p.pattern == KeyPattern.RANDOM && p.keySize < 8)
        throw new IllegalArgumentException("random keys need at least 8 bytes");
      if (p.pattern == KeyPattern.WORST && p.entries > 1 << 20)
        throw new IllegalArgumentException("the worst pattern has 2^20 keys");
      return p;
    }

    String describe() {
      return switch (pattern) {
        case RANDOM -> "random " + keySize + "-byte keys";
        case TWO_LEVEL -> "two-level " + prefixBytes + "+" + prefixBytes + "+16-byte keys";
        case WORST -> "worst-pattern 200-byte keys";
      };
    }

    Path store(String engine) {
      String shape =
          switch (pattern) {
            case RANDOM -> "random" + keySize;
            case TWO_LEVEL -> "twolevel" + prefixBytes;
            case WORST -> "worst";
          };
      String format = engine.equals("basalt-trie") ? engine + chunk : engine;
      return dir.resolve(format + "-" + shape + "-" + entries + "x" + valueSize);
    }
  }

  /** The bytes of one key of {@code pattern}. */
  static int keyBytes(KeyPattern pattern, int keySize, int prefixBytes) {
    return switch (pattern) {
      case RANDOM -> keySize;
      case TWO_LEVEL -> 2 * prefixBytes + 16;
      case WORST -> 200;
    };
  }

  /** Prefix words of the two-level and worst patterns, the same in every run. */
  static final class Words {
    final byte[][] level1, level2;
    final byte[][][] worst = new byte[20][2][];

    Words(int prefixBytes) {
      SplittableRandom r = new SplittableRandom(20261127);
      level1 = words(r, 192, prefixBytes);
      level2 = words(r, 192, prefixBytes);
      for (int l = 0; l < 20; l++) worst[l] = words(r, 2, 10);
    }

    private static byte[][] words(SplittableRandom r, int n, int len) {
      byte[][] w = new byte[n][len];
      for (byte[] x : w) fill(r, x, 0, len);
      return w;
    }
  }

  static void fill(SplittableRandom r, byte[] b, int from, int to) {
    for (int i = from; i < to; i++) b[i] = (byte) r.nextInt(256);
  }

  /** Key {@code i} of the pattern. */
  static byte[] key(Params p, Words w, long i) {
    return key(p.pattern, p.keySize, p.prefixBytes, w, i);
  }

  /**
   * Key {@code i} of {@code pattern}: {@code keySize} bytes (random), or two levels of {@code
   * prefixBytes}-byte prefixes and 16 bytes (two-level), or 200 bytes (worst).
   */
  static byte[] key(KeyPattern pattern, int keySize, int prefixBytes, Words w, long i) {
    long mixed = i * 0x9E3779B97F4A7C15L; // a bijection: distinct indexes give distinct keys
    SplittableRandom r = new SplittableRandom(i);
    switch (pattern) {
      case RANDOM -> {
        byte[] k = new byte[keySize];
        putLong(k, 0, mixed);
        fill(r, k, 8, k.length);
        return k;
      }
      case TWO_LEVEL -> {
        int pb = prefixBytes;
        byte[] k = new byte[2 * pb + 16];
        long h = Long.remainderUnsigned(mixed >>> 8, 192 * 192);
        System.arraycopy(w.level1[(int) (h % 192)], 0, k, 0, pb);
        System.arraycopy(w.level2[(int) (h / 192)], 0, k, pb, pb);
        putLong(k, 2 * pb, mixed);
        fill(r, k, 2 * pb + 8, k.length);
        return k;
      }
      default -> {
        byte[] k = new byte[200];
        for (int l = 0; l < 20; l++)
          System.arraycopy(w.worst[l][(int) (i >>> l) & 1], 0, k, 10 * l, 10);
        return k;
      }
    }
  }

  private static void putLong(byte[] b, int at, long v) {
    for (int j = 0; j < 8; j++) b[at + j] = (byte) (v >>> (56 - 8 * j));
  }

  public static void main(String[] args) throws Exception {
    Params p = Params.parse(args);
    Words w = new Words(p.prefixBytes);
    Files.createDirectories(p.dir);
    List<String> rows = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    for (String engine : p.engines) {
      String written = load(engine, p, w);
      try (Store s = open(engine, p)) {
        rows.add(measure(engine, s, p, w, written, notes));
      }
    }
    System.out.printf(
        "%nKey index formats: %d %s, %d-byte values; budget %d MiB, direct reads; %d warm-up then %d"
            + " measured random gets, %d scans of 100, one thread%n",
        p.entries, p.describe(), p.valueSize, p.memory >> 20, p.warmup, p.gets, p.scans);
    System.out.printf(
        "JDK %s, %d cores, stores in %s%n%n",
        System.getProperty("java.runtime.version"),
        Runtime.getRuntime().availableProcessors(),
        p.dir);
    System.out.printf(
        "%-12s %12s %12s %14s %12s %12s %10s %16s%n",
        "engine",
        "table B/key",
        "index B/key",
        "index written",
        "gets/s",
        "index rd/get",
        "scans/s",
        "cache");
    rows.forEach(System.out::println);
    System.out.println();
    notes.forEach(System.out::println);
  }

  /** Loads the store unless its LOADED marker is there; returns the key index bytes written. */
  static String load(String engine, Params p, Words w) throws Exception {
    Path store = p.store(engine);
    Path marker = store.resolve("LOADED");
    if (Files.exists(marker)) return Files.readString(marker);
    MemoryBackupBenchmark.deleteTree(store);
    long t0 = System.nanoTime();
    String written;
    if (engine.startsWith("basalt")) {
      try (Basalt db =
          Basalt.open(store, Options.defaults().memoryQuota(256L << 20).syncMode(SyncMode.NONE))) {
        Keyspace ks =
            engine.equals("basalt")
                ? db.keyspace("default")
                : db.createKeyspace(
                    "trie",
                    KeyspaceOptions.defaults()
                        .keyIndexFormat(KeyspaceOptions.KeyIndexFormat.HB_TRIE)
                        .trieChunkBytes(p.chunk));
        WriteBatch batch = new WriteBatch();
        for (long i = 0; i < p.entries; i++) {
          batch.put(ks, key(p, w, i), ReadAmplification.value(i, p.valueSize));
          if (batch.size() == 1000 || i == p.entries - 1) {
            db.write(batch);
            batch.clear();
          }
        }
        db.flush();
        if (!db.waitForCompactions(60 * 60_000L)) throw new IllegalStateException("no settling");
        Map<String, Long> s = db.stats().asMap();
        written = Long.toString(s.get("indexBytesWritten") + s.get("compactionBytesWritten"));
      }
    } else {
      try (LRUCache cache = new LRUCache(64L << 20);
          Statistics stats = new Statistics();
          org.rocksdb.Options o =
              ReadAmplification.rocksOptions(cache)
                  .setWriteBufferSize(64L << 20)
                  .setStatistics(stats);
          RocksDB db = RocksDB.open(o, store.toString());
          WriteOptions noWal = new WriteOptions().setDisableWAL(true);
          org.rocksdb.WriteBatch batch = new org.rocksdb.WriteBatch();
          FlushOptions wait = new FlushOptions().setWaitForFlush(true)) {
        for (long i = 0; i < p.entries; i++) {
          batch.put(key(p, w, i), ReadAmplification.value(i, p.valueSize));
          if (batch.count() == 1000 || i == p.entries - 1) {
            db.write(noWal, batch);
            batch.clear();
          }
        }
        db.flush(wait);
        db.compactRange();
        written =
            Long.toString(
                stats.getTickerCount(TickerType.FLUSH_WRITE_BYTES)
                    + stats.getTickerCount(TickerType.COMPACT_WRITE_BYTES));
      }
    }
    Files.writeString(marker, written);
    System.out.printf("loaded %s in %.0f s%n", engine, (System.nanoTime() - t0) / 1e9);
    return written;
  }

  /** One store opened for measuring. */
  interface Store extends AutoCloseable {
    byte[] get(byte[] key) throws Exception;

    /** Reads {@code n} keys from the first at or after {@code from}; returns how many. */
    int scan(byte[] from, int n) throws Exception;

    /** Key index blocks read from the file so far. */
    long indexReads() throws Exception;

    /** The engine's read counters by kind, for the per-get breakdown in the notes. */
    Map<String, Long> readCounters() throws Exception;

    long tableBytes() throws Exception;

    long indexBytes() throws Exception;

    String cache() throws Exception;
  }

  static Store open(String engine, Params p) throws Exception {
    if (!engine.startsWith("basalt")) return new Rocks(p);
    Basalt db =
        Basalt.open(
            p.store(engine),
            EngineStores.BasaltEngine.extraOptions(
                Options.defaults().memoryQuota(p.memory).directReads(true)));
    Keyspace ks = db.keyspace(engine.equals("basalt") ? "default" : "trie");
    return new Store() {
      @Override
      public byte[] get(byte[] key) {
        return ks.get(key);
      }

      @Override
      public int scan(byte[] from, int n) {
        int got = 0;
        try (Cursor c = ks.scan(from, null, n)) {
          while (got < n && c.next()) {
            if (c.value() == null) throw new IllegalStateException("no value");
            got++;
          }
        }
        return got;
      }

      @Override
      public long indexReads() {
        Map<String, Long> s = db.stats().asMap();
        return s.get("indexBlockReads") + s.get("indexNavigationReads") + s.get("indexFilterReads");
      }

      @Override
      public Map<String, Long> readCounters() {
        Map<String, Long> s = db.stats().asMap();
        Map<String, Long> m = new LinkedHashMap<>();
        for (String k :
            List.of(
                "tableLookups",
                "indexBlockReads",
                "indexNavigationReads",
                "indexFilterReads",
                "documentReads")) {
          m.put(k, s.get(k));
        }
        return m;
      }

      @Override
      public long tableBytes() {
        return db.stats().asMap().get("keyIndexBytes");
      }

      @Override
      public long indexBytes() {
        return db.stats().asMap().get("keyIndexIndexBytes");
      }

      @Override
      public String cache() {
        Map<String, Long> s = db.stats().asMap();
        return String.format(
            "%.1f/%.1f MB (index %.1f)",
            s.get("blockCacheBytes") / 1e6,
            s.get("blockCacheCapacity") / 1e6,
            s.get("blockCacheIndexBytes") / 1e6);
      }

      @Override
      public void close() {
        db.close();
      }
    };
  }

  /**
   * RocksDB with half the budget as its block cache, direct reads and statistics, opened as {@link
   * ReadAmplification.RocksReader} opens it.
   */
  static final class Rocks implements Store {
    final ReadAmplification.RocksReader reader;
    final RocksDB db;
    final Statistics statistics;
    final LRUCache cache;
    final long cacheBytes;

    Rocks(Params p) throws Exception {
      reader = new ReadAmplification.RocksReader(p.memory, p.store("rocksdb"));
      db = reader.db;
      statistics = reader.statistics;
      cache = reader.cache;
      cacheBytes = reader.cacheBytes;
    }

    @Override
    public byte[] get(byte[] key) throws Exception {
      return db.get(key);
    }

    @Override
    public int scan(byte[] from, int n) {
      int got = 0;
      try (ReadOptions ro = new ReadOptions();
          RocksIterator it = db.newIterator(ro)) {
        for (it.seek(from); got < n && it.isValid(); it.next()) {
          if (it.value() == null) throw new IllegalStateException("no value");
          got++;
        }
      }
      return got;
    }

    @Override
    public long indexReads() {
      return statistics.getTickerCount(TickerType.BLOCK_CACHE_INDEX_MISS)
          + statistics.getTickerCount(TickerType.BLOCK_CACHE_FILTER_MISS)
          + statistics.getTickerCount(TickerType.BLOCK_CACHE_DATA_MISS);
    }

    @Override
    public Map<String, Long> readCounters() {
      Map<String, Long> m = new LinkedHashMap<>();
      for (TickerType t :
          List.of(
              TickerType.BLOCK_CACHE_INDEX_MISS,
              TickerType.BLOCK_CACHE_FILTER_MISS,
              TickerType.BLOCK_CACHE_DATA_MISS,
              TickerType.BLOOM_FILTER_USEFUL)) {
        m.put(t.name(), statistics.getTickerCount(t));
      }
      return m;
    }

    @Override
    public long tableBytes() throws Exception {
      return db.getLongProperty("rocksdb.total-sst-files-size");
    }

    /** The index block bytes of its tables, from the aggregated table properties; -1 if absent. */
    @Override
    public long indexBytes() throws Exception {
      String props = db.getProperty("rocksdb.aggregated-table-properties");
      Matcher m = Pattern.compile("index block size[^=]*=\\s*(\\d+)").matcher(props);
      return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    @Override
    public String cache() {
      return String.format("%.1f/%.1f MB", cache.getUsage() / 1e6, cacheBytes / 1e6);
    }

    @Override
    public void close() {
      reader.close();
    }
  }

  static String measure(
      String engine, Store s, Params p, Words w, String written, List<String> notes)
      throws Exception {
    SplittableRandom random = new SplittableRandom(42);
    gets(s, p, w, random, p.warmup);
    long reads0 = s.indexReads();
    Map<String, Long> counters0 = s.readCounters();
    long t0 = System.nanoTime();
    gets(s, p, w, random, p.gets);
    long getNanos = System.nanoTime() - t0;
    StringBuilder perGet = new StringBuilder();
    for (Map.Entry<String, Long> e : s.readCounters().entrySet()) {
      perGet.append(
          String.format(
              " %s=%.3f",
              e.getKey(), (e.getValue() - counters0.get(e.getKey())) / (double) p.gets));
    }
    double readsPerGet = (double) (s.indexReads() - reads0) / p.gets;
    for (int i = 0; i < Math.min(2000, p.scans); i++) scanOne(s, p, w, random); // warm-up
    long t1 = System.nanoTime();
    for (int i = 0; i < p.scans; i++) scanOne(s, p, w, random);
    long scanNanos = System.nanoTime() - t1;
    double n = p.entries;
    notes.add(
        String.format(
            "%s: %s; table bytes %d, index bytes %d, index bytes written loading %s; per measured"
                + " get:%s",
            engine, p.store(engine), s.tableBytes(), s.indexBytes(), written, perGet));
    return String.format(
        "%-12s %12.1f %12.2f %14.1f %12.0f %12.3f %10.0f %16s",
        engine,
        s.tableBytes() / n,
        s.indexBytes() / n,
        Long.parseLong(written.trim()) / n,
        p.gets / (getNanos / 1e9),
        readsPerGet,
        p.scans / (scanNanos / 1e9),
        s.cache());
  }

  static void gets(Store s, Params p, Words w, SplittableRandom random, int count)
      throws Exception {
    for (int g = 0; g < count; g++) {
      long i = random.nextLong(p.entries);
      byte[] v = s.get(key(p, w, i));
      if (v == null) throw new IllegalStateException("key " + i + " is missing");
      if (!Arrays.equals(v, ReadAmplification.value(i, p.valueSize)))
        throw new IllegalStateException("key " + i + " has a wrong value");
    }
  }

  static void scanOne(Store s, Params p, Words w, SplittableRandom random) throws Exception {
    s.scan(key(p, w, random.nextLong(p.entries)), 100);
  }
}
