package io.basaltdb.internal.sstable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** A table reader's use of the block cache (cases found by review). */
class TableReaderCacheTest {
  private static byte[] key(int i) {
    return ByteBuffer.allocate(8).putLong(i).array();
  }

  private static StorageFile table(int n, int bitsPerKey) {
    StorageFile f = new MemStorage(0).create("t.sst");
    TableWriter w = new TableWriter(f, TableOptions.defaults().withBloomBitsPerKey(bitsPerKey));
    for (int i = 0; i < n; i++) w.add(key(i), i + 1, 10, false, 0);
    w.finish();
    return f;
  }

  /**
   * A StorageFile whose close fails (FileStorageFile.close throws StorageException on an
   * IOException).
   */
  private static StorageFile failingClose(StorageFile f) {
    return new StorageFile() {
      public String name() {
        return f.name();
      }

      public int read(long p, ByteBuffer d) {
        return f.read(p, d);
      }

      public void write(long p, ByteBuffer s) {
        f.write(p, s);
      }

      public long size() {
        return f.size();
      }

      public void truncate(long s) {
        f.truncate(s);
      }

      public void preallocate(long s) {
        f.preallocate(s);
      }

      public void sync() {
        f.sync();
      }

      public void close() {
        f.close();
        throw new StorageException("close failed");
      }
    };
  }

  @Test
  void aCloseWhoseFileCloseFails_stillDropsTheTablesBlocks() {
    try (BlockCache cache = new BlockCache(1 << 20)) {
      TableReader r = TableReader.open(failingClose(table(1000, 10)), "t.sst", cache);
      assertTrue(cache.bytes() > 0);
      assertThrows(StorageException.class, r::close);
      r.close(); // idempotent: returns at once, so nothing retries the removal
      assertEquals(0, cache.entries(), "index and filter of a closed table left in the cache");
      assertEquals(0, cache.bytes());
    }
  }

  /**
   * An 8 MiB cache (2 shards of 4 MiB) and a table whose filter is about 4.8 MiB, more than a shard
   * takes: the reader keeps it on the heap instead of reading it from the file at every probe.
   */
  @Test
  void aFilterTooBigForAShard_isNotReadFromDiskOnEveryProbe() {
    try (BlockCache cache = new BlockCache(8L << 20)) {
      TableReader r = TableReader.open(table(600_000, 64), "t.sst", cache);
      long before = r.metaReads();
      for (int i = 0; i < 20; i++) r.mayContain(key(i * 7));
      assertEquals(0, r.metaReads() - before, "filter re-read from the file per probe");
      assertTrue(r.get(key(14), new KeyRecord()), "reads work with a heap filter");
      r.close();
    }
  }
}
