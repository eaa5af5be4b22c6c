package io.basaltdb.jmh;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.FlushOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * RocksDB as the issue sets it up: leveled compaction (its default), a 10 bits/key bloom filter,
 * LZ4, a WAL fsynced per batch, and the same memory budget split between two write buffers (a
 * quarter each) and the block cache (a half). Basalt charges its index and filter blocks to its
 * quota, so the fair RocksDB ({@code rocksdb}) keeps them in its block cache too, with RocksDB's
 * recommended settings for that (high priority, level-0 ones pinned); {@code rocksdb-heapindex}
 * keeps them outside any budget (RocksDB's default), the setting that flatters RocksDB's reads.
 *
 * <p>Thread-safety: as RocksDB's; writers share it.
 */
final class RocksStore implements Race.Store {
  static {
    RocksDB.loadLibrary();
  }

  final Path dir;
  final org.rocksdb.Options options;
  final RocksDB db;
  final WriteOptions sync = new WriteOptions().setSync(true);
  final LRUCache cache;

  RocksStore(Path dir, long memory, boolean indexInCache) throws RocksDBException {
    this(dir, memory, indexInCache, 0);
  }

  /**
   * {@code ttlSeconds} above 0: opened as a {@code TtlDB} (RocksDB's expiry: each write's timestamp
   * is appended to its value, and compaction drops what is older than the TTL), with the
   * level-compaction {@code ttl} and {@code periodic_compaction_seconds} options at the same TTL,
   * so files holding only expired data become due for compaction without writes.
   */
  RocksStore(Path dir, long memory, boolean indexInCache, int ttlSeconds) throws RocksDBException {
    this(dir, memory, indexInCache, ttlSeconds, false);
  }

  /**
   * As above; {@code directReads} reads the files with O_DIRECT ({@code use_direct_reads}), as
   * Basalt's option.
   */
  RocksStore(Path dir, long memory, boolean indexInCache, int ttlSeconds, boolean directReads)
      throws RocksDBException {
    this.dir = dir;
    cache = new LRUCache(memory / 2);
    BlockBasedTableConfig table =
        new BlockBasedTableConfig()
            .setFilterPolicy(new BloomFilter(10, false))
            .setBlockCache(cache)
            .setCacheIndexAndFilterBlocks(indexInCache)
            .setCacheIndexAndFilterBlocksWithHighPriority(true)
            .setPinL0FilterAndIndexBlocksInCache(indexInCache);
    options =
        new org.rocksdb.Options()
            .setCreateIfMissing(true)
            .setCompressionType(CompressionType.LZ4_COMPRESSION)
            .setWriteBufferSize(memory / 4)
            .setMaxWriteBufferNumber(2)
            .setMaxBackgroundJobs(3)
            .setTableFormatConfig(table)
            .setUseDirectReads(directReads);
    if (ttlSeconds > 0) {
      options.setTtl(ttlSeconds).setPeriodicCompactionSeconds(ttlSeconds);
      db = org.rocksdb.TtlDB.open(options, dir.toString(), ttlSeconds, false);
    } else {
      db = RocksDB.open(options, dir.toString());
    }
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
  public long[] readAll(String kind) {
    if (!kind.equals("scan"))
      throw new IllegalArgumentException("RocksDB reads all by scan only, not " + kind);
    long records = 0, bytes = 0;
    try (org.rocksdb.RocksIterator it = db.newIterator()) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        records++;
        bytes += it.value().length;
      }
    }
    return new long[] {records, bytes};
  }

  @Override
  public int scan(byte[] from, int count) {
    int n = 0;
    try (org.rocksdb.RocksIterator it = db.newIterator()) {
      for (it.seek(from); n < count && it.isValid(); it.next()) {
        if (it.value() == null) throw new IllegalStateException("a scanned key without a value");
        n++;
      }
    }
    return n;
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
  public void compactAll() throws RocksDBException {
    db.compactRange();
  }

  @Override
  public Map<String, String> figures() throws RocksDBException {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    long tables = 0;
    for (int l = 0; l < 7; l++)
      tables += Long.parseLong(db.getProperty("rocksdb.num-files-at-level" + l));
    m.put("tables", Long.toString(tables));
    return m;
  }

  @Override
  public Path directory() {
    return dir;
  }

  @Override
  public Map<String, Long> counters() throws RocksDBException {
    Map<String, Long> m = new HashMap<>();
    for (String p :
        new String[] {
          "total-sst-files-size", "live-sst-files-size", "estimate-pending-compaction-bytes"
        }) {
      m.put(p, db.getLongProperty("rocksdb." + p));
    }
    long tables = 0;
    for (int l = 0; l < 7; l++)
      tables += Long.parseLong(db.getProperty("rocksdb.num-files-at-level" + l));
    m.put("tables", tables);
    return m;
  }

  /**
   * At the phase's end: the table files' bytes, those of the current version, the pending
   * compaction.
   */
  @Override
  public Map<String, String> phaseFigures(Map<String, Long> before, Map<String, Long> after) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    m.put("sstMiB", Phase.mib(after.get("total-sst-files-size")));
    m.put("liveSstMiB", Phase.mib(after.get("live-sst-files-size")));
    m.put("pendingCompactionMiB", Phase.mib(after.get("estimate-pending-compaction-bytes")));
    m.put("tables", Long.toString(after.get("tables")));
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
