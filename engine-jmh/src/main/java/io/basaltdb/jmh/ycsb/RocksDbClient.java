package io.basaltdb.jmh.ycsb;

import io.basaltdb.ycsb.Fields;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.LRUCache;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * RocksDB JNI as a YCSB binding set up like Basalt, for {@code bin/compare}: the peer measured side
 * by side, not a published binding (it lives in engine-jmh, outside engine-ycsb's jar). Records are
 * stored in Basalt's binding's field format ({@link Fields}); a table is a key prefix ({@code table
 * + '\0'}).
 *
 * <p>The same budget as Basalt's {@code basalt.memory} (property {@code rocksdb.memory}, default
 * 256m): two write buffers of a quarter each and an LRU block cache of half, with the index and
 * filter blocks in it (as Basalt charges its own to its quota); leveled compaction, 10 bits/key
 * bloom filters, LZ4. The same durability as {@code basalt.sync} ({@code rocksdb.sync}, default
 * periodic): {@code sync} fsyncs the WAL before each acknowledgement, {@code periodic} every 100 ms
 * from a background thread, {@code none} never. {@code rocksdb.directreads=true} reads table files
 * with O_DIRECT ({@code use_direct_reads}, as Basalt's {@code directReads} option: neither engine
 * then reads through the page cache; default false). {@code rocksdb.mmapreads=true} reads table
 * files through memory mappings ({@code allow_mmap_reads}, as Basalt's default {@code mappedReads};
 * RocksDB's default is false, and bin/compare keeps it). {@code rocksdb.directwrites=true} writes
 * flushes and compactions with O_DIRECT ({@code use_direct_io_for_flush_and_compaction}, as
 * Basalt's {@code directWrites}; default false). {@code rocksdb.dir} is the directory (default
 * {@code rocksdb-ycsb-data}). Updates merge fields under the same striped locks as Basalt's
 * binding.
 *
 * <p>Thread-safety: one instance per YCSB thread; all share one database, closed by the last
 * cleanup.
 */
public final class RocksDbClient extends DB {
  private static Shared shared;
  private static int holders;
  private static final ReentrantLock[] STRIPES = new ReentrantLock[256];

  static {
    RocksDB.loadLibrary();
    for (int i = 0; i < STRIPES.length; i++) STRIPES[i] = new ReentrantLock();
  }

  /** The database and what must be closed with it. */
  private record Shared(
      RocksDB db,
      org.rocksdb.Options options,
      LRUCache cache,
      WriteOptions write,
      ScheduledExecutorService syncer) {
    void close() {
      if (syncer != null) syncer.shutdownNow();
      try {
        db.flushWal(true);
      } catch (RocksDBException e) {
        // closing anyway: the WAL sync of a periodic run is best effort, as it is for Basalt
      }
      db.close();
      write.close();
      options.close();
      cache.close();
    }
  }

  private Shared s;

  @Override
  public void init() throws DBException {
    synchronized (RocksDbClient.class) {
      if (shared == null) shared = open(getProperties());
      holders++;
      s = shared;
    }
  }

  @Override
  public void cleanup() {
    synchronized (RocksDbClient.class) {
      if (s == null) return;
      s = null;
      if (--holders == 0) {
        shared.close();
        shared = null;
      }
    }
  }

  private static Shared open(Properties p) throws DBException {
    long memory = io.basaltdb.ycsb.BasaltClient.parseBytes(p.getProperty("rocksdb.memory", "256m"));
    String sync = p.getProperty("rocksdb.sync", "periodic").trim().toLowerCase();
    if (!Set.of("sync", "periodic", "none").contains(sync)) {
      throw new DBException("rocksdb.sync must be sync, periodic or none, was '" + sync + "'");
    }
    Path dir = Path.of(p.getProperty("rocksdb.dir", "rocksdb-ycsb-data"));
    try {
      Files.createDirectories(dir);
      LRUCache cache = new LRUCache(memory / 2);
      BlockBasedTableConfig table =
          new BlockBasedTableConfig()
              .setFilterPolicy(new BloomFilter(10, false))
              .setBlockCache(cache)
              .setCacheIndexAndFilterBlocks(true)
              .setCacheIndexAndFilterBlocksWithHighPriority(true)
              .setPinL0FilterAndIndexBlocksInCache(true);
      org.rocksdb.Options options =
          new org.rocksdb.Options()
              .setCreateIfMissing(true)
              .setCompressionType(CompressionType.LZ4_COMPRESSION)
              .setWriteBufferSize(memory / 4)
              .setMaxWriteBufferNumber(2)
              .setMaxBackgroundJobs(3)
              .setTableFormatConfig(table)
              .setUseDirectReads(
                  Boolean.parseBoolean(p.getProperty("rocksdb.directreads", "false").trim()))
              .setAllowMmapReads(
                  Boolean.parseBoolean(p.getProperty("rocksdb.mmapreads", "false").trim()))
              .setUseDirectIoForFlushAndCompaction(
                  Boolean.parseBoolean(p.getProperty("rocksdb.directwrites", "false").trim()));
      RocksDB db = RocksDB.open(options, dir.toString());
      WriteOptions write = new WriteOptions().setSync(sync.equals("sync"));
      ScheduledExecutorService syncer = null;
      if (sync.equals("periodic")) {
        syncer =
            Executors.newSingleThreadScheduledExecutor(
                r -> {
                  Thread t = new Thread(r, "rocksdb-wal-sync");
                  t.setDaemon(true);
                  return t;
                });
        syncer.scheduleWithFixedDelay(
            () -> {
              try {
                db.flushWal(true);
              } catch (RocksDBException e) {
                System.err.println("rocksdb: periodic WAL sync failed: " + e);
              }
            },
            100,
            100,
            TimeUnit.MILLISECONDS);
      }
      return new Shared(db, options, cache, write, syncer);
    } catch (RocksDBException | java.io.IOException e) {
      throw new DBException("cannot open RocksDB in " + dir + ": " + e, e);
    }
  }

  private static byte[] key(String table, String key) {
    byte[] t = table.getBytes(StandardCharsets.UTF_8);
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    byte[] out = Arrays.copyOf(t, t.length + 1 + k.length);
    System.arraycopy(k, 0, out, t.length + 1, k.length);
    return out;
  }

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] v = s.db.get(key(table, key));
      if (v == null) return Status.NOT_FOUND;
      Fields.decode(v, fields, result);
      return Status.OK;
    } catch (RocksDBException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    byte[] prefix = key(table, "");
    try (RocksIterator it = s.db.newIterator()) {
      it.seek(key(table, startkey));
      for (int i = 0; i < recordcount && it.isValid(); i++, it.next()) {
        byte[] k = it.key();
        if (k.length < prefix.length
            || !Arrays.equals(k, 0, prefix.length, prefix, 0, prefix.length)) break;
        HashMap<String, ByteIterator> row = new HashMap<>();
        Fields.decode(it.value(), fields, row);
        result.add(row);
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    byte[] k = key(table, key);
    ReentrantLock lock = STRIPES[(key.hashCode() & 0x7FFF_FFFF) % STRIPES.length];
    lock.lock();
    try {
      byte[] old = s.db.get(k);
      if (old == null) return Status.NOT_FOUND;
      s.db.put(s.write, k, Fields.merge(old, values));
      return Status.OK;
    } catch (RocksDBException | RuntimeException e) {
      return Status.ERROR;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      s.db.put(s.write, key(table, key), Fields.encodeValues(values));
      return Status.OK;
    } catch (RocksDBException | RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      s.db.delete(s.write, key(table, key));
      return Status.OK;
    } catch (RocksDBException e) {
      return Status.ERROR;
    }
  }
}
