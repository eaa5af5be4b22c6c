package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.Stats;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
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
import org.rocksdb.WriteOptions;

/**
 * The first race with RocksDB (issue 4): one engine per JVM, so {@code /proc/self/io} counts only its
 * own disk traffic. Loads unique 40-byte keys in random order with 1 KiB values in batches of 100, each
 * batch fsynced to the WAL before it is acknowledged, waits for flushes and compactions to settle, then
 * reads random existing keys. Prints one line of {@code name=value} results; {@code bin/race} runs both
 * engines and tabulates them.
 *
 * <p>Write amplification is {@code write_bytes} of {@code /proc/self/io} (bytes the process sent to the
 * block layer, background threads included) over the user bytes (keys plus values). Reads per get are
 * read system calls ({@code syscr}) per get: both engines read with {@code pread}, and a page-cache hit
 * is still a call, so this counts I/Os the way Magma's paper does even when the data set fits the page
 * cache of this machine.
 *
 * <p>Usage: {@code Race --engine basalt|rocksdb|rocksdb-heapindex --dir D --keys N --reads M --memory-mb B
 * [--writers W] [--seed S]}: W writer threads (default 1) share the load, batch by batch.
 */
public final class Race {
  static final int KEY_SIZE = 40;
  static final int VALUE_SIZE = 1024;
  static final int BATCH = 100;

  /** What the race needs from an engine. */
  interface Store extends AutoCloseable {
    void write(byte[][] keys, byte[][] values) throws Exception;

    byte[] get(byte[] key) throws Exception;

    /** Flushes and waits until background compaction has nothing left to do. */
    void settle() throws Exception;

    /** Engine-specific figures for the report. */
    Map<String, String> figures() throws Exception;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> a = parse(args);
    String engine = a.getOrDefault("engine", "basalt");
    Path dir = Path.of(a.getOrDefault("dir", "target/race-" + engine));
    long keys = Long.parseLong(a.getOrDefault("keys", "655360"));
    long reads = Long.parseLong(a.getOrDefault("reads", "200000"));
    long memory = Long.parseLong(a.getOrDefault("memory-mb", "32")) << 20;
    long seed = Long.parseLong(a.getOrDefault("seed", "1"));
    int writers = Integer.parseInt(a.getOrDefault("writers", "1"));
    if (writers < 1) throw new IllegalArgumentException("--writers must be at least 1");
    deleteTree(dir);
    Files.createDirectories(dir);

    Map<String, String> out = new java.util.LinkedHashMap<>();
    out.put("engine", engine);
    out.put("keys", Long.toString(keys));
    out.put("memoryMiB", Long.toString(memory >> 20));
    out.put("writers", Integer.toString(writers));
    out.put("dataMiB", Long.toString(keys * (KEY_SIZE + VALUE_SIZE) >> 20));
    Store opened = switch (engine) {
      case "rocksdb" -> new Rocks(dir, memory, true);
      case "rocksdb-heapindex" -> new Rocks(dir, memory, false);
      case "basalt" -> new BasaltStore(dir, memory);
      default -> throw new IllegalArgumentException("--engine basalt|rocksdb|rocksdb-heapindex, not " + engine);
    };
    try (Store store = opened) {
      byte[] pool = new byte[VALUE_SIZE * 64];
      new SplittableRandom(seed).nextBytes(pool);
      Map<String, Long> io0 = procIo();
      long t0 = System.nanoTime();
      // Writer w writes batches w, w + writers, w + 2 * writers, ...: the same keys in the same batches
      // whatever the number of writers, each batch fsynced before it is acknowledged.
      java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
      java.util.List<Thread> threads = new java.util.ArrayList<>();
      for (int w = 0; w < writers; w++) {
        long first = (long) w * BATCH;
        long stride = (long) writers * BATCH;
        threads.add(new Thread(() -> {
          try {
            for (long i = first; i < keys && failed.get() == null; i += stride) {
              int n = (int) Math.min(BATCH, keys - i);
              byte[][] ks = new byte[n][];
              byte[][] vs = new byte[n][];
              for (int j = 0; j < n; j++) {
                ks[j] = key(i + j);
                vs[j] = value(pool, i + j);
              }
              store.write(ks, vs);
            }
          } catch (Throwable e) {
            failed.compareAndSet(null, e);
          }
        }, "race-writer-" + w));
      }
      for (Thread t : threads) t.start();
      for (Thread t : threads) t.join();
      if (failed.get() != null) throw new IllegalStateException("a writer failed", failed.get());
      long loadNanos = System.nanoTime() - t0;
      store.settle();
      long settledNanos = System.nanoTime() - t0;
      Map<String, Long> io1 = procIo();
      long user = keys * (KEY_SIZE + VALUE_SIZE);
      out.put("loadSeconds", fmt(loadNanos / 1e9));
      out.put("loadOpsPerSec", fmt(keys / (loadNanos / 1e9)));
      out.put("settleSeconds", fmt((settledNanos - loadNanos) / 1e9));
      out.put("writeAmp", fmt((double) (io1.get("write_bytes") - io0.get("write_bytes")) / user));
      out.put("diskMiB", Long.toString(treeSize(dir) >> 20));

      SplittableRandom r = new SplittableRandom(seed + 1);
      Map<String, Long> io2 = procIo();
      long found = 0;
      long t1 = System.nanoTime();
      for (long i = 0; i < reads; i++) {
        if (store.get(key(r.nextLong(keys))) != null) found++;
      }
      long readNanos = System.nanoTime() - t1;
      Map<String, Long> io3 = procIo();
      if (found != reads) throw new IllegalStateException("lost keys: found " + found + " of " + reads);
      out.put("readOpsPerSec", fmt(reads / (readNanos / 1e9)));
      out.put("readSyscallsPerGet", fmt((double) (io3.get("syscr") - io2.get("syscr")) / reads));
      out.put("diskReadBytesPerGet", fmt((double) (io3.get("read_bytes") - io2.get("read_bytes")) / reads));
      out.putAll(store.figures());
    }
    StringBuilder line = new StringBuilder("race");
    out.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
    System.out.println(line);
  }

  /** Unique keys in random order: a bijection of the index, printed as 40 decimal digits. */
  static byte[] key(long i) {
    long x = i * 0x9E3779B97F4A7C15L;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    x ^= x >>> 29;
    return String.format("%040d", x & Long.MAX_VALUE).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  }

  /** 1 KiB of random (incompressible) bytes, a different slice of the pool for neighbouring keys. */
  static byte[] value(byte[] pool, long i) {
    int off = (int) ((i * 97) % (pool.length - VALUE_SIZE));
    return java.util.Arrays.copyOfRange(pool, off, off + VALUE_SIZE);
  }

  static Map<String, Long> procIo() throws IOException {
    Map<String, Long> m = new HashMap<>();
    for (String line : Files.readAllLines(Path.of("/proc/self/io"))) {
      int c = line.indexOf(':');
      m.put(line.substring(0, c).trim(), Long.parseLong(line.substring(c + 1).trim()));
    }
    return m;
  }

  static String fmt(double d) {
    return String.format(java.util.Locale.ROOT, "%.3f", d);
  }

  static long treeSize(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).mapToLong(p -> {
        try {
          return Files.size(p);
        } catch (IOException e) {
          return 0;
        }
      }).sum();
    }
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }

  static Map<String, String> parse(String[] args) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) throw new IllegalArgumentException("expected --name value, got " + args[i]);
      m.put(args[i].substring(2), args[i + 1]);
    }
    return m;
  }

  /** Basalt with its defaults at the given memory quota, fsync per batch. */
  static final class BasaltStore implements Store {
    final Basalt db;
    final Keyspace ks;

    BasaltStore(Path dir, long memory) {
      db = Basalt.open(dir, Options.defaults().memoryQuota(memory).syncMode(SyncMode.SYNC));
      ks = db.keyspace("default");
    }

    @Override
    public void write(byte[][] keys, byte[][] values) {
      WriteBatch b = new WriteBatch();
      for (int i = 0; i < keys.length; i++) b.put(ks, keys[i], values[i]);
      db.write(b);
    }

    @Override
    public byte[] get(byte[] key) {
      return ks.get(key);
    }

    @Override
    public void settle() {
      db.flush();
      if (!db.waitForCompactions(30 * 60_000)) throw new IllegalStateException("compactions did not settle");
    }

    @Override
    public Map<String, String> figures() {
      Stats s = db.stats();
      Map<String, String> m = new java.util.LinkedHashMap<>();
      m.put("engineWriteAmp", fmt(s.writeAmplification()));
      m.put("engineReadsPerGet", fmt(s.readsPerGet()));
      m.put("blockCacheHitRate", fmt((double) s.get("blockCacheHits")
          / Math.max(1, s.get("blockCacheHits") + s.get("blockCacheMisses"))));
      m.put("spaceAmp", fmt(s.spaceAmplification()));
      m.put("tables", Long.toString(s.get("tables")));
      m.put("segments", Long.toString(s.get("segments")));
      return m;
    }

    @Override
    public void close() {
      db.close();
    }
  }

  /**
   * RocksDB as the issue sets it up: leveled compaction (its default), a 10 bits/key bloom filter, LZ4,
   * a WAL fsynced per batch, and the same memory budget split between two write buffers (a quarter
   * each) and the block cache (a half). Basalt charges its index and filter blocks to its quota, so the
   * fair RocksDB ({@code rocksdb}) keeps them in its block cache too, with RocksDB's recommended settings
   * for that (high priority, level-0 ones pinned); {@code rocksdb-heapindex} keeps them outside any
   * budget (RocksDB's default), the setting that flatters RocksDB's reads.
   */
  static final class Rocks implements Store {
    static {
      RocksDB.loadLibrary();
    }

    final org.rocksdb.Options options;
    final RocksDB db;
    final WriteOptions sync = new WriteOptions().setSync(true);
    final LRUCache cache;

    Rocks(Path dir, long memory, boolean indexInCache) throws RocksDBException {
      cache = new LRUCache(memory / 2);
      BlockBasedTableConfig table = new BlockBasedTableConfig().setFilterPolicy(new BloomFilter(10, false))
          .setBlockCache(cache).setCacheIndexAndFilterBlocks(indexInCache)
          .setCacheIndexAndFilterBlocksWithHighPriority(true).setPinL0FilterAndIndexBlocksInCache(indexInCache);
      options = new org.rocksdb.Options().setCreateIfMissing(true).setCompressionType(CompressionType.LZ4_COMPRESSION)
          .setWriteBufferSize(memory / 4).setMaxWriteBufferNumber(2).setMaxBackgroundJobs(3)
          .setTableFormatConfig(table);
      db = RocksDB.open(options, dir.toString());
    }

    @Override
    public void write(byte[][] keys, byte[][] values) throws RocksDBException {
      try (org.rocksdb.WriteBatch b = new org.rocksdb.WriteBatch()) {
        for (int i = 0; i < keys.length; i++) b.put(keys[i], values[i]);
        db.write(sync, b);
      }
    }

    @Override
    public byte[] get(byte[] key) throws RocksDBException {
      return db.get(key);
    }

    @Override
    public void settle() throws Exception {
      try (FlushOptions f = new FlushOptions().setWaitForFlush(true)) {
        db.flush(f);
      }
      while (db.getLongProperty("rocksdb.num-running-compactions") > 0
          || db.getLongProperty("rocksdb.compaction-pending") > 0
          || db.getLongProperty("rocksdb.num-running-flushes") > 0) {
        Thread.sleep(50);
      }
    }

    @Override
    public Map<String, String> figures() throws RocksDBException {
      Map<String, String> m = new java.util.LinkedHashMap<>();
      long tables = 0;
      for (int l = 0; l < 7; l++) tables += Long.parseLong(db.getProperty("rocksdb.num-files-at-level" + l));
      m.put("tables", Long.toString(tables));
      return m;
    }

    @Override
    public void close() {
      db.close();
      options.close();
      cache.close();
      sync.close();
    }
  }
}
