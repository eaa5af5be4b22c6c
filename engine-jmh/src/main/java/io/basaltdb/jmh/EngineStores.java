package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.Stats;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.lmdbjava.Dbi;
import org.lmdbjava.DbiFlags;
import org.lmdbjava.Env;
import org.lmdbjava.EnvFlags;
import org.lmdbjava.GetOp;
import org.lmdbjava.Txn;
import org.openjdk.jmh.infra.Blackhole;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;

/**
 * The three engines of {@link EngineBenchmark}, each behind {@link Engine} and set up as that
 * class's javadoc says: Basalt, RocksDB ({@link RocksStore}) and LMDB (lmdbjava).
 *
 * <p>Thread-safety: an engine's reads and puts may run on many threads at once, each with its own
 * {@link EngineBenchmark.Caller}; {@link Engine#write}, {@link Engine#settle} and {@link
 * Engine#close} run alone.
 */
final class EngineStores {
  private EngineStores() {}

  /** One engine as the benchmark drives it; reads return fresh arrays, null for an absent key. */
  interface Engine extends AutoCloseable {
    byte[] get(EngineBenchmark.Caller c, byte[] key);

    List<byte[]> getAll(EngineBenchmark.Caller c, List<byte[]> keys);

    /**
     * Reads up to {@code count} keys and their values from {@code from} on into {@code bh}, and
     * returns how many it read; throws if {@code from} is absent.
     */
    int scan(EngineBenchmark.Caller c, byte[] from, int count, Blackhole bh);

    void put(EngineBenchmark.Caller c, byte[] key, byte[] value);

    /** Writes the pairs as one batch (for the load). */
    void write(List<byte[]> keys, List<byte[]> values);

    /** Flushes what is written to the files, fsynced, and waits for the compactions it leads to. */
    void settle();

    /** One line on what the engine's memory holds, for the trial's log. */
    String summary();

    Path directory();

    @Override
    void close();
  }

  /**
   * Opens {@code impl}'s store in {@code dir} (created if empty) with {@code memory} as its budget.
   */
  static Engine open(String impl, Path dir, long memory, long entries, int valueSize) {
    return open(impl, dir, memory, entries, valueSize, false);
  }

  /**
   * As above; {@code directReads} has Basalt and RocksDB read their files with O_DIRECT (LMDB
   * cannot).
   */
  static Engine open(
      String impl, Path dir, long memory, long entries, int valueSize, boolean directReads) {
    return switch (impl) {
      case "basalt" -> new BasaltEngine(dir, memory, directReads, "default");
      case "basalt-trie" -> new BasaltEngine(dir, memory, directReads, "trie");
      case "basalt-hashed" -> new BasaltEngine(dir, memory, directReads, "hashed");
      case "rocksdb" -> new RocksEngine(dir, memory, directReads);
      case "lmdb" ->
          new LmdbEngine(
              dir, Math.max(1L << 30, 4 * entries * (EngineBenchmark.KEY_SIZE + valueSize)));
      default ->
          throw new IllegalArgumentException(
              "impl is basalt, basalt-trie, basalt-hashed, rocksdb or lmdb, not " + impl);
    };
  }

  static void checkStart(byte[] first, byte[] from) {
    if (!Arrays.equals(first, from)) throw EngineBenchmark.missing(from);
  }

  static final class BasaltEngine implements Engine {
    private final Path dir;
    private final Basalt db;
    private final Keyspace ks;

    /**
     * {@code options} with those of the system property {@value #OPTIONS_PROPERTY} set on top
     * ({@code name=value,name=value}, {@link Options#set}): to try a setting in a benchmark, as
     * {@code java -Dbasalt.options=l0StopWritesTrigger=100 -jar benchmarks.jar ...} (JMH passes the
     * property to its forks only with {@code -jvmArgsAppend}).
     */
    static Options extraOptions(Options options) {
      String extra = System.getProperty(OPTIONS_PROPERTY, "").trim();
      if (extra.isEmpty()) return options;
      for (String kv : extra.split(",")) {
        int eq = kv.indexOf('=');
        if (eq <= 0)
          throw new IllegalArgumentException(OPTIONS_PROPERTY + ": not name=value: " + kv);
        options.set(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
      return options;
    }

    static final String OPTIONS_PROPERTY = "basalt.options";

    /**
     * The keys live in keyspace {@code keyspace}: "default", "trie" (HB+-trie key index tables) or
     * "hashed" (a hashed keyspace: a lazy-trie key index, issue 39).
     */
    BasaltEngine(Path dir, long memory, boolean directReads, String keyspace) {
      this.dir = dir;
      db =
          Basalt.open(
              dir,
              extraOptions(
                  Options.defaults()
                      .memoryQuota(memory)
                      .readQueueDepth(32)
                      .syncMode(SyncMode.NONE)
                      .directReads(directReads)));
      io.basaltdb.KeyspaceOptions layout =
          switch (keyspace) {
            case "trie" ->
                io.basaltdb.KeyspaceOptions.defaults()
                    .keyIndexFormat(io.basaltdb.KeyspaceOptions.KeyIndexFormat.HB_TRIE);
            case "hashed" ->
                io.basaltdb.KeyspaceOptions.defaults()
                    .kind(io.basaltdb.KeyspaceOptions.Kind.HASHED);
            default -> io.basaltdb.KeyspaceOptions.defaults();
          };
      ks =
          db.keyspaceNames().contains(keyspace)
              ? db.keyspace(keyspace)
              : db.createKeyspace(keyspace, layout);
    }

    @Override
    public byte[] get(EngineBenchmark.Caller c, byte[] key) {
      return ks.get(key);
    }

    @Override
    public List<byte[]> getAll(EngineBenchmark.Caller c, List<byte[]> keys) {
      return ks.getAll(keys);
    }

    @Override
    public int scan(EngineBenchmark.Caller c, byte[] from, int count, Blackhole bh) {
      try (Cursor cursor = ks.scan(from, null, count)) {
        int n = 0;
        for (; n < count && cursor.next(); n++) {
          byte[] k = cursor.key();
          if (n == 0) checkStart(k, from);
          bh.consume(k);
          bh.consume(cursor.value());
        }
        return n;
      }
    }

    @Override
    public void put(EngineBenchmark.Caller c, byte[] key, byte[] value) {
      ks.put(key, value);
    }

    @Override
    public void write(List<byte[]> keys, List<byte[]> values) {
      WriteBatch b = new WriteBatch();
      for (int i = 0; i < keys.size(); i++) b.put(ks, keys.get(i), values.get(i));
      db.write(b);
    }

    @Override
    public void settle() {
      db.flush();
      if (!db.waitForCompactions(30 * 60_000))
        throw new IllegalStateException("Basalt's compactions did not settle");
    }

    @Override
    public String summary() {
      Stats s = db.stats();
      long hits = s.get("blockCacheHits"), misses = s.get("blockCacheMisses");
      return String.format(
          "block cache %.1f of %.1f MiB, %.2f%% hits of %,d lookups; writes: %,d puts, %,d flushes,"
              + " stalled %.1f s (%,d), slowed %.1f s (%,d), level 0 stalls %.1f s, collection stalls %.1f s and slowdowns %.1f s;"
              + " written: %.0f MiB WAL, %.0f MiB segments, %.0f MiB key index, %.0f MiB compaction, %.0f MiB collection",
          s.get("blockCacheBytes") / 1048576.0,
          s.get("blockCacheCapacity") / 1048576.0,
          100.0 * hits / Math.max(1, hits + misses),
          hits + misses,
          s.get("puts"),
          s.get("flushes"),
          s.get("stallNanos") / 1e9,
          s.get("stalls"),
          s.get("slowdownNanos") / 1e9,
          s.get("slowdowns"),
          s.get("l0StallNanos") / 1e9,
          s.get("gcStallNanos") / 1e9,
          s.get("gcSlowdownNanos") / 1e9,
          s.get("walBytesWritten") / 1048576.0,
          s.get("segmentBytesWritten") / 1048576.0,
          s.get("indexBytesWritten") / 1048576.0,
          s.get("compactionBytesWritten") / 1048576.0,
          s.get("gcBytesWritten") / 1048576.0);
    }

    @Override
    public Path directory() {
      return dir;
    }

    @Override
    public void close() {
      db.close();
    }
  }

  static final class RocksEngine implements Engine {
    private final RocksStore rocks;
    private final long cacheBytes;

    /** The WAL written, not fsynced; made once RocksStore has loaded RocksDB's library. */
    private final WriteOptions noSync;

    RocksEngine(Path dir, long memory, boolean directReads) {
      try {
        rocks = new RocksStore(dir, memory, true, 0, directReads);
        cacheBytes = memory / 2; // RocksStore's split
        noSync = new WriteOptions().setSync(false);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public byte[] get(EngineBenchmark.Caller c, byte[] key) {
      try {
        return rocks.db.get(key);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public List<byte[]> getAll(EngineBenchmark.Caller c, List<byte[]> keys) {
      try {
        return rocks.db.multiGetAsList(keys);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public int scan(EngineBenchmark.Caller c, byte[] from, int count, Blackhole bh) {
      try (RocksIterator it = rocks.db.newIterator()) {
        int n = 0;
        for (it.seek(from); n < count && it.isValid(); it.next(), n++) {
          byte[] k = it.key();
          if (n == 0) checkStart(k, from);
          bh.consume(k);
          bh.consume(it.value());
        }
        return n;
      }
    }

    @Override
    public void put(EngineBenchmark.Caller c, byte[] key, byte[] value) {
      try {
        rocks.db.put(noSync, key, value);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void write(List<byte[]> keys, List<byte[]> values) {
      try (org.rocksdb.WriteBatch b = new org.rocksdb.WriteBatch()) {
        for (int i = 0; i < keys.size(); i++) b.put(keys.get(i), values.get(i));
        rocks.db.write(noSync, b);
      } catch (RocksDBException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void settle() {
      try {
        rocks.settle(); // memtables flushed to table files (fsynced), compactions finished
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public String summary() {
      return String.format(
          "block cache %.1f of %.1f MiB",
          rocks.cache.getUsage() / 1048576.0, cacheBytes / 1048576.0);
    }

    @Override
    public Path directory() {
      return rocks.dir;
    }

    @Override
    public void close() {
      rocks.close();
      noSync.close();
    }
  }

  static final class LmdbEngine implements Engine {
    private final Path dir;
    private final Env<ByteBuffer> env;
    private final Dbi<ByteBuffer> dbi;

    LmdbEngine(Path dir, long mapSize) {
      this.dir = dir;
      env =
          Env.create()
              .setMapSize(mapSize)
              .setMaxDbs(1)
              .open(
                  dir.toFile(),
                  EnvFlags.MDB_NOSYNC,
                  EnvFlags.MDB_NOMETASYNC,
                  EnvFlags.MDB_NORDAHEAD);
      dbi = env.openDbi("bench", DbiFlags.MDB_CREATE);
    }

    @Override
    public byte[] get(EngineBenchmark.Caller c, byte[] key) {
      try (Txn<ByteBuffer> txn = env.txnRead()) {
        return copy(dbi.get(txn, c.directKey(key)));
      }
    }

    @Override
    public List<byte[]> getAll(EngineBenchmark.Caller c, List<byte[]> keys) {
      List<byte[]> values = new ArrayList<>(keys.size());
      try (Txn<ByteBuffer> txn = env.txnRead()) {
        for (byte[] k : keys) values.add(copy(dbi.get(txn, c.directKey(k))));
      }
      return values;
    }

    @Override
    public int scan(EngineBenchmark.Caller c, byte[] from, int count, Blackhole bh) {
      try (Txn<ByteBuffer> txn = env.txnRead();
          org.lmdbjava.Cursor<ByteBuffer> cursor = dbi.openCursor(txn)) {
        if (!cursor.get(c.directKey(from), GetOp.MDB_SET_KEY)) throw EngineBenchmark.missing(from);
        int n = 0;
        do {
          bh.consume(copy(cursor.key()));
          bh.consume(copy(cursor.val()));
          n++;
        } while (n < count && cursor.next());
        return n;
      }
    }

    @Override
    public void put(EngineBenchmark.Caller c, byte[] key, byte[] value) {
      try (Txn<ByteBuffer> txn = env.txnWrite()) {
        dbi.put(txn, c.directKey(key), c.directValue(value));
        txn.commit();
      }
    }

    @Override
    public void write(List<byte[]> keys, List<byte[]> values) {
      ByteBuffer key = ByteBuffer.allocateDirect(keys.get(0).length);
      ByteBuffer value = ByteBuffer.allocateDirect(values.get(0).length);
      try (Txn<ByteBuffer> txn = env.txnWrite()) {
        for (int i = 0; i < keys.size(); i++) {
          dbi.put(
              txn, key.clear().put(keys.get(i)).flip(), value.clear().put(values.get(i)).flip());
        }
        txn.commit();
      }
    }

    @Override
    public void settle() {
      env.sync(true);
    }

    @Override
    public String summary() {
      try (Txn<ByteBuffer> txn = env.txnRead()) {
        org.lmdbjava.Stat s = dbi.stat(txn);
        return String.format(
            "no cache of its own (the page cache); %,d entries, B-tree depth %d, %,d branch and %,d leaf pages",
            s.entries, s.depth, s.branchPages, s.leafPages);
      }
    }

    @Override
    public Path directory() {
      return dir;
    }

    @Override
    public void close() {
      dbi.close();
      env.close();
    }

    /**
     * A copy of the bytes {@code b} maps, which are valid only inside its transaction; null for
     * null.
     */
    private static byte[] copy(ByteBuffer b) {
      if (b == null) return null;
      byte[] a = new byte[b.remaining()];
      b.get(b.position(), a);
      return a;
    }
  }
}
