package io.basaltdb.jmh;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * The first race with RocksDB (issue 4): one engine per JVM, so {@code /proc/self/io} counts only
 * its own disk traffic. Loads unique 40-byte keys in random order with 1 KiB values in batches of
 * 100 (or {@code --batch B}: B records of 1,064 bytes, so 3,942 make a batch of 4 MiB, Basalt's
 * walSkipBytes), each batch fsynced to the WAL before it is acknowledged, waits for flushes and
 * compactions to settle, then reads random existing keys. Prints one line of {@code name=value}
 * results; {@code bin/race} runs both engines and tabulates them.
 *
 * <p>With {@code --update-rounds R}, Magma's update workload (paper section 9.2.3) runs between the
 * load and the reads: R rounds, each updating every key once in a fresh random order, then a settle
 * ({@link Updates#rounds}); with {@code --soak-seconds S} instead, zipfian updates for S seconds
 * ({@link Updates#soak}). Either way each phase (the load, each round, the settle) prints a {@code
 * phase} line ({@link Phase}: throughput, write and space amplification, the engine's own figures),
 * with a {@link SpaceSampler} keeping the directory's peak size. {@code --reads 0} skips the reads.
 * The engines: {@link BasaltStore} and {@link RocksStore}.
 *
 * <p>Write amplification is {@code write_bytes} of {@code /proc/self/io} (bytes the process sent to
 * the block layer, background threads included) over the user bytes (keys plus values). Reads per
 * get are read system calls ({@code syscr}) per get: both engines read with {@code pread}, and a
 * page-cache hit is still a call, so this counts I/Os the way Magma's paper does even when the data
 * set fits the page cache of this machine.
 *
 * <p>Usage: {@code Race --engine basalt|rocksdb|rocksdb-heapindex --dir D --keys N --reads M
 * --memory-mb B [--writers W] [--batch B] [--seed S] [--values pool|random] [--update-rounds R |
 * --soak-seconds S] [--checkpoint-retention-ms C] [--basalt-options name=value,...] [--scans S
 * [--scan-length L]] [--timeline-ms T] [--feeds 1] [--ttl-seconds T [--watch-seconds W]]}:
 * --ttl-seconds makes every write expire T seconds after it is made and then watches the engine
 * give the space back ({@link #expiry}); --feeds 1 reads every record once after the rounds, by
 * scan and (Basalt) by change feed ({@link #readAlls}); T prints the load's and each round's
 * throughput every T ms ({@code timeline} lines); S scans of L keys (default 100) from random keys
 * after the load's last write and again after its settle ({@link #scans}); W writer threads
 * (default 1) share the load and the updates, batch by batch; {@link #values} describes the two
 * kinds of value; C sets Basalt's checkpoint retention (default Basalt's, 10 minutes), which holds
 * the segments garbage collection replaced; {@code --basalt-options} sets further Basalt options by
 * name (e.g. {@code l0BaseRatio=0.25,fragmentationThreshold=0.4}).
 */
public final class Race {
  static final int KEY_SIZE = 40;
  static final int VALUE_SIZE = 1024;

  /** Bytes of the pool {@code --values random} takes its values from. */
  static final int RANDOM_POOL = 64 << 20;

  /** Records per write batch: 100, or {@code --batch} (before any writer starts). */
  static int batch = 100;

  /** What the race needs from an engine. */
  interface Store extends AutoCloseable {
    void write(byte[][] keys, byte[][] values) throws Exception;

    byte[] get(byte[] key) throws Exception;

    /**
     * Reads up to {@code count} keys with their values from {@code from} on; returns how many it
     * read.
     */
    int scan(byte[] from, int count) throws Exception;

    /** Flushes and waits until background compaction has nothing left to do. */
    void settle() throws Exception;

    /**
     * A manual compaction of everything, where the engine has one (the expiry race's last step).
     */
    void compactAll() throws Exception;

    /** Engine-specific figures for the report. */
    Map<String, String> figures() throws Exception;

    /** The store's directory. */
    Path directory();

    /** The engine's counters and gauges, for {@link #phaseFigures}. */
    Map<String, Long> counters() throws Exception;

    /** The engine's figures for a phase, from its counters at the start and at the end. */
    Map<String, String> phaseFigures(Map<String, Long> before, Map<String, Long> after);

    /**
     * Reads every record of the store in one pass, {@code kind} saying how: {@code scan} (a cursor
     * over every key), and for Basalt {@code feed} / {@code feed-exact} (its change feed from seqno
     * 0, fast or exact) and {@code feed-tail} (the feed of the last tenth of the seqnos); returns
     * {records, value bytes}.
     */
    long[] readAll(String kind) throws Exception;
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
    batch = Integer.parseInt(a.getOrDefault("batch", "100"));
    if (batch < 1) throw new IllegalArgumentException("--batch must be at least 1");
    int rounds = Integer.parseInt(a.getOrDefault("update-rounds", "0"));
    long soakSeconds = Long.parseLong(a.getOrDefault("soak-seconds", "0"));
    long scans = Long.parseLong(a.getOrDefault("scans", "0"));
    boolean feeds = a.getOrDefault("feeds", "0").equals("1");
    int ttlSeconds = Integer.parseInt(a.getOrDefault("ttl-seconds", "0"));
    int watchSeconds = Integer.parseInt(a.getOrDefault("watch-seconds", "120"));
    if (ttlSeconds < 0 || (ttlSeconds > 0 && (reads > 0 || rounds > 0 || soakSeconds > 0))) {
      throw new IllegalArgumentException(
          "--ttl-seconds wants --reads 0 and no updates (every key expires)");
    }
    int scanLength = Integer.parseInt(a.getOrDefault("scan-length", "100"));
    timelineMillis = Long.parseLong(a.getOrDefault("timeline-ms", "0"));
    if (scans < 0 || scanLength < 1)
      throw new IllegalArgumentException("--scans must not be negative, --scan-length positive");
    if (writers < 1) throw new IllegalArgumentException("--writers must be at least 1");
    if (rounds < 0 || soakSeconds < 0) {
      throw new IllegalArgumentException("--update-rounds and --soak-seconds must not be negative");
    }
    if (rounds > 0 && soakSeconds > 0) {
      throw new IllegalArgumentException("--update-rounds or --soak-seconds, not both");
    }
    boolean phases = rounds > 0 || soakSeconds > 0;
    deleteTree(dir);
    Files.createDirectories(dir);

    Map<String, String> out = new java.util.LinkedHashMap<>();
    out.put("engine", engine);
    out.put("keys", Long.toString(keys));
    out.put("memoryMiB", Long.toString(memory >> 20));
    out.put("writers", Integer.toString(writers));
    out.put("dataMiB", Long.toString(keys * (KEY_SIZE + VALUE_SIZE) >> 20));
    Store opened =
        switch (engine) {
          case "rocksdb" -> new RocksStore(dir, memory, true, ttlSeconds);
          case "rocksdb-heapindex" -> new RocksStore(dir, memory, false);
          case "basalt" -> {
            BasaltStore b =
                new BasaltStore(
                    dir,
                    memory,
                    Long.parseLong(a.getOrDefault("checkpoint-retention-ms", "-1")),
                    a.getOrDefault("basalt-options", ""));
            b.ttlMillis = ttlSeconds * 1000L;
            yield b;
          }
          default ->
              throw new IllegalArgumentException(
                  "--engine basalt|rocksdb|rocksdb-heapindex, not " + engine);
        };
    long user = keys * (KEY_SIZE + VALUE_SIZE);
    try (Store store = opened;
        SpaceSampler sampler = phases ? SpaceSampler.start(dir) : null) {
      String valueKind = a.getOrDefault("values", "pool");
      Values values = values(valueKind, seed);
      if (!valueKind.equals("pool")) out.put("values", valueKind);
      Phase load = phases ? new Phase(engine, "load", store, sampler, user) : null;
      Map<String, Long> io0 = procIo();
      long t0 = System.nanoTime();
      writeAll(store, writers, keys, i -> i, 0, values);
      long loadNanos = System.nanoTime() - t0;
      if (scans > 0)
        scans(
            engine, "loaded", store, keys, scans, scanLength, seed); // level 0 as the load left it
      store.settle();
      long settledNanos = System.nanoTime() - t0;
      Map<String, Long> io1 = procIo();
      out.put("loadSeconds", fmt(loadNanos / 1e9));
      out.put("loadOpsPerSec", fmt(keys / (loadNanos / 1e9)));
      out.put("settleSeconds", fmt((settledNanos - loadNanos) / 1e9));
      out.put("writeAmp", fmt((double) (io1.get("write_bytes") - io0.get("write_bytes")) / user));
      out.put("diskMiB", Long.toString(treeSize(dir) >> 20));
      if (load != null) Phase.print(load.finish(keys, loadNanos, user));
      if (scans > 0) scans(engine, "settled", store, keys, scans, scanLength, seed);
      if (rounds > 0) {
        out.put("updateRounds", Integer.toString(rounds));
        Updates.rounds(engine, store, sampler, keys, writers, rounds, seed, values);
      } else if (soakSeconds > 0) {
        out.put("soakSeconds", Long.toString(soakSeconds));
        Updates.soak(engine, store, sampler, keys, writers, soakSeconds, seed, values);
      }

      if (feeds) readAlls(engine, store);
      if (ttlSeconds > 0 && watchSeconds > 0)
        expiry(engine, store, dir, keys, seed, t0 + loadNanos, ttlSeconds, watchSeconds);
      if (reads > 0) {
        SplittableRandom r = new SplittableRandom(seed + 1);
        Map<String, Long> io2 = procIo();
        long found = 0;
        long t1 = System.nanoTime();
        for (long i = 0; i < reads; i++) {
          if (store.get(key(r.nextLong(keys))) != null) found++;
        }
        long readNanos = System.nanoTime() - t1;
        Map<String, Long> io3 = procIo();
        if (found != reads)
          throw new IllegalStateException("lost keys: found " + found + " of " + reads);
        out.put("readOpsPerSec", fmt(reads / (readNanos / 1e9)));
        out.put("readSyscallsPerGet", fmt((double) (io3.get("syscr") - io2.get("syscr")) / reads));
        out.put(
            "diskReadBytesPerGet",
            fmt((double) (io3.get("read_bytes") - io2.get("read_bytes")) / reads));
      }
      out.putAll(store.figures());
    }
    StringBuilder line = new StringBuilder("race");
    out.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
    System.out.println(line);
  }

  /**
   * {@code --ttl-seconds T}: every write of the load expired T seconds after it was made. Once the
   * last has expired, nothing is written for W seconds ({@code --watch-seconds}, default 120; 0
   * skips this phase, to measure what expiring writes cost the load): one {@code expiry} line says
   * how much of the directory the engine gave back by itself, and how soon, how many of 10,000
   * random keys still read (RocksDB's TtlDB returns expired values until compaction drops them),
   * then the directory after a manual compaction (RocksDB's {@code compactRange}; Basalt's settle).
   * {@code loadEnd}: when the load's last write was made ({@link System#nanoTime}).
   */
  static void expiry(
      String engine,
      Store store,
      Path dir,
      long keys,
      long seed,
      long loadEnd,
      int ttlSeconds,
      int watchSeconds)
      throws Exception {
    long before = treeSize(dir);
    long waitNanos = loadEnd + (ttlSeconds + 1) * 1_000_000_000L - System.nanoTime();
    if (waitNanos > 0) Thread.sleep(waitNanos / 1_000_000);
    SplittableRandom r = new SplittableRandom(seed + 3);
    long readable = 0;
    for (int i = 0; i < 10_000; i++) if (store.get(key(r.nextLong(keys))) != null) readable++;
    long t0 = System.nanoTime(), quarterAt = -1;
    long size = before;
    for (int s = 1; s <= watchSeconds; s++) {
      Thread.sleep(1000);
      size = treeSize(dir);
      if (quarterAt < 0 && size <= before / 4) quarterAt = System.nanoTime() - t0;
    }
    long readableAfter = 0;
    for (int i = 0; i < 10_000; i++) if (store.get(key(r.nextLong(keys))) != null) readableAfter++;
    long t1 = System.nanoTime();
    store.compactAll();
    long compactNanos = System.nanoTime() - t1;
    System.out.println(
        "expiry engine="
            + engine
            + " ttlSeconds="
            + ttlSeconds
            + " diskMiBBefore="
            + (before >> 20)
            + " readableOf10kAtExpiry="
            + readable
            + " watchSeconds="
            + watchSeconds
            + " diskMiBAfterWatch="
            + (size >> 20)
            + " secondsToQuarter="
            + (quarterAt < 0 ? "never" : fmt(quarterAt / 1e9))
            + " readableOf10kAfterWatch="
            + readableAfter
            + " compactSeconds="
            + fmt(compactNanos / 1e9)
            + " diskMiBAfterCompact="
            + (treeSize(dir) >> 20)
            + selected(
                store.counters(),
                "expiredRecordsCompacted",
                "expiryCompactions",
                "gcRuns",
                "segmentBytes",
                "total-sst-files-size"));
  }

  /** " name=value" for each of {@code names} that {@code counters} holds. */
  static String selected(Map<String, Long> counters, String... names) {
    StringBuilder b = new StringBuilder();
    for (String n : names)
      if (counters.containsKey(n)) b.append(' ').append(n).append('=').append(counters.get(n));
    return b.toString();
  }

  /**
   * {@code scans} scans of {@code length} keys from random existing keys, single-threaded; prints
   * one {@code scan} line: scans and records per second, read system calls and disk bytes per scan,
   * and the store's tables (Basalt: level 0's too, to tell a deep level 0 from a merged one). The
   * load's scans run after its last write, before the settle; the settled ones after it.
   */
  static void scans(
      String engine, String point, Store store, long keys, long scans, int length, long seed)
      throws Exception {
    SplittableRandom r = new SplittableRandom(seed + 2);
    Map<String, Long> c = store.counters();
    Map<String, Long> io0 = procIo();
    long records = 0;
    long t0 = System.nanoTime();
    for (long i = 0; i < scans; i++) records += store.scan(key(r.nextLong(keys)), length);
    long nanos = System.nanoTime() - t0;
    Map<String, Long> io1 = procIo();
    StringBuilder line =
        new StringBuilder(
            "scan engine="
                + engine
                + " point="
                + point
                + " scans="
                + scans
                + " length="
                + length
                + " scansPerSec="
                + fmt(scans / (nanos / 1e9))
                + " recordsPerSec="
                + fmt(records / (nanos / 1e9))
                + " recordsPerScan="
                + fmt((double) records / scans)
                + " readSyscallsPerScan="
                + fmt((double) (io1.get("syscr") - io0.get("syscr")) / scans)
                + " diskReadBytesPerScan="
                + fmt((double) (io1.get("read_bytes") - io0.get("read_bytes")) / scans));
    for (String k : new String[] {"tables", "tablesAtLevel0"})
      if (c.containsKey(k)) line.append(' ').append(k).append('=').append(c.get(k));
    System.out.println(line);
  }

  /**
   * {@code --feeds}: once the rounds are done (and settled), every way the engine offers of reading
   * all its records in one pass ({@link Store#readAll}), one after the other, single-threaded;
   * prints one {@code readall} line each: records and MiB of values per second, disk bytes read,
   * and the engine's counters of skipped stale versions.
   */
  static void readAlls(String engine, Store store) throws Exception {
    String[] kinds =
        engine.equals("basalt")
            ? new String[] {"scan", "feed", "feed-exact", "feed-tail"}
            : new String[] {"scan"};
    for (String kind : kinds) {
      Map<String, Long> c0 = store.counters();
      Map<String, Long> io0 = procIo();
      long t0 = System.nanoTime();
      long[] got = store.readAll(kind);
      long nanos = System.nanoTime() - t0;
      Map<String, Long> io1 = procIo();
      Map<String, Long> c1 = store.counters();
      StringBuilder line =
          new StringBuilder(
              "readall engine="
                  + engine
                  + " kind="
                  + kind
                  + " records="
                  + got[0]
                  + " seconds="
                  + fmt(nanos / 1e9)
                  + " recordsPerSec="
                  + fmt(got[0] / (nanos / 1e9))
                  + " valueMiBPerSec="
                  + fmt(got[1] / (nanos / 1e9) / (1 << 20))
                  + " diskReadMiB="
                  + fmt((io1.get("read_bytes") - io0.get("read_bytes")) / (double) (1 << 20)));
      for (String k : new String[] {"changesSkippedStale", "changesSkippedExact"}) {
        if (c1.containsKey(k))
          line.append(' ').append(k).append('=').append(c1.get(k) - c0.getOrDefault(k, 0L));
      }
      System.out.println(line);
    }
  }

  /**
   * Writes {@code count} keys, {@code key(index(i))} for i from 0, with {@code
   * values.value(index(i), salt)}, in batches of {@link #batch} shared by {@code writers} threads:
   * writer w writes batches w, w + writers, w + 2 * writers, ..., so the batches are the same
   * whatever the number of writers, each acknowledged at the engine's durability.
   */
  /** {@code --timeline-ms}: the interval of {@link #writeAll}'s progress lines, 0 for none. */
  static volatile long timelineMillis;

  static void writeAll(
      Store store,
      int writers,
      long count,
      java.util.function.LongUnaryOperator index,
      long salt,
      Values values)
      throws InterruptedException {
    java.util.concurrent.atomic.AtomicReference<Throwable> failed =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
    java.util.List<Thread> threads = new java.util.ArrayList<>();
    for (int w = 0; w < writers; w++) {
      long first = (long) w * batch;
      long stride = (long) writers * batch;
      threads.add(
          new Thread(
              () -> {
                try {
                  for (long i = first; i < count && failed.get() == null; i += stride) {
                    int n = (int) Math.min(batch, count - i);
                    byte[][] ks = new byte[n][];
                    byte[][] vs = new byte[n][];
                    for (int j = 0; j < n; j++) {
                      long k = index.applyAsLong(i + j);
                      ks[j] = key(k);
                      vs[j] = values.value(k, salt);
                    }
                    store.write(ks, vs);
                    done.addAndGet(n);
                  }
                } catch (Throwable e) {
                  failed.compareAndSet(null, e);
                }
              },
              "race-writer-" + w));
    }
    long interval = timelineMillis;
    Thread timeline =
        interval <= 0
            ? null
            : new Thread(
                () -> {
                  long t0 = System.nanoTime(), last = 0;
                  try {
                    while (true) {
                      Thread.sleep(interval);
                      long n = done.get();
                      System.out.printf(
                          "timeline t=%.1f opsPerSec=%.0f ops=%d%n",
                          (System.nanoTime() - t0) / 1e9, (n - last) * 1000.0 / interval, n);
                      last = n;
                    }
                  } catch (InterruptedException e) {
                    // the phase ended
                  }
                },
                "race-timeline");
    for (Thread t : threads) t.start();
    if (timeline != null) {
      timeline.setDaemon(true);
      timeline.start();
    }
    for (Thread t : threads) t.join();
    if (timeline != null) timeline.interrupt();
    if (failed.get() != null) throw new IllegalStateException("a writer failed", failed.get());
  }

  /** Unique keys in random order: a bijection of the index, printed as 40 decimal digits. */
  static byte[] key(long i) {
    long x = i * 0x9E3779B97F4A7C15L;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    x ^= x >>> 29;
    // What String.format("%040d", x & Long.MAX_VALUE) gives, without the formatter (7% of a
    // writer's time).
    byte[] out = new byte[KEY_SIZE];
    long v = x & Long.MAX_VALUE;
    for (int p = KEY_SIZE - 1; p >= 0; p--, v /= 10) out[p] = (byte) ('0' + v % 10);
    return out;
  }

  /**
   * The 1 KiB value written for a key index and a salt (0 for the load, the round for an update).
   */
  interface Values {
    byte[] value(long index, long salt);
  }

  /**
   * {@code pool} (the default): {@code value(pool, index + salt)}, slices of one 64 KiB random
   * pool. {@code random}: per index and salt, a 1 KiB slice of a 64 MiB random pool at an offset
   * hashed from both. Two values share bytes only when their offsets fall within 1 KiB of each
   * other (about one pair in 32,000), so a block of either engine has nothing to compress however
   * it groups them; a value costs a copy (fresh random bytes per value took a quarter of the
   * writer's time, both engines').
   */
  static Values values(String kind, long seed) {
    switch (kind) {
      case "pool":
        {
          byte[] pool = new byte[VALUE_SIZE * 64];
          new SplittableRandom(seed).nextBytes(pool);
          return (i, salt) -> value(pool, i + salt);
        }
      case "random":
        {
          byte[] pool = new byte[RANDOM_POOL];
          new SplittableRandom(mix(seed)).nextBytes(pool);
          return (i, salt) -> {
            int off =
                (int)
                    Long.remainderUnsigned(
                        mix(mix(mix(seed) ^ i) ^ salt), RANDOM_POOL - VALUE_SIZE + 1);
            return java.util.Arrays.copyOfRange(pool, off, off + VALUE_SIZE);
          };
        }
      default:
        throw new IllegalArgumentException("--values pool|random, not " + kind);
    }
  }

  /** Stafford's variant 13 of MurmurHash3's 64-bit finalizer. */
  static long mix(long x) {
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  /**
   * 1 KiB of random bytes, a different slice of the pool for neighbouring keys. The slices of keys
   * i and i + 1 overlap by 927 bytes, so a block holding neighbouring indexes (the load writes them
   * in index order) compresses: Basalt's log segments, in arrival order, do; RocksDB's tables, in
   * key order (key(i) scatters the indexes), barely do. {@code --values random} avoids that.
   */
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

  static long treeSize(Path dir) {
    return SpaceSampler.apparentSize(dir);
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
      if (!args[i].startsWith("--"))
        throw new IllegalArgumentException("expected --name value, got " + args[i]);
      m.put(args[i].substring(2), args[i + 1]);
    }
    return m;
  }
}
