package io.basaltdb.kafka.bench;

import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.Cache;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.WriteBufferManager;

/**
 * The bounded-memory RocksDB configuration of the Kafka Streams documentation ("Bounding memory
 * usage"), the peer with Basalt's budget: one block cache for every store of the JVM whose capacity
 * counts the memtables too (a write buffer manager charges them to it), index and filter blocks in
 * it. The budget is {@code bench.rocksdb.budget} bytes (default 256 MiB), a quarter of it for
 * memtables, as the documentation's example.
 */
public class BoundedMemoryRocksDBConfig implements RocksDBConfigSetter {
  private static final long BUDGET = Long.getLong("bench.rocksdb.budget", 256L << 20);
  private static final Cache CACHE = new LRUCache(BUDGET, -1, false, 0.1);
  private static final WriteBufferManager WBM = new WriteBufferManager(BUDGET / 4, CACHE);

  @Override
  public void setConfig(String storeName, Options options, Map<String, Object> configs) {
    BlockBasedTableConfig table = (BlockBasedTableConfig) options.tableFormatConfig();
    table.setBlockCache(CACHE);
    table.setCacheIndexAndFilterBlocks(true);
    table.setCacheIndexAndFilterBlocksWithHighPriority(true);
    table.setPinTopLevelIndexAndFilter(true);
    options.setWriteBufferManager(WBM);
    options.setTableFormatConfig(table);
  }

  @Override
  public void close(String storeName, Options options) {
    // The cache and the write buffer manager are shared by every store: never closed here.
  }
}
