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

  /**
   * A scan whose table index the cache drops between two blocks (other readers' blocks evict it)
   * decodes the index once per 64 blocks, not once per block: the garbage collector's delete-list
   * scans spent half their time decoding indexes under a busy cache.
   */
  @Test
  void aScanWhoseIndexIsEvicted_decodesItOncePerWindowOfBlocks() {
    try (BlockCache cache = new BlockCache(1 << 20)) {
      TableReader r = TableReader.open(table(100_000, 10), "t.sst", cache);
      long owner = cache.newOwner() - 1; // the reader took the one before
      int blocks = r.blockCount();
      assertTrue(blocks > 128, "the table spans " + blocks + " blocks");
      long before = r.metaReads();
      int n = 0;
      try (TableIterator it = r.iterator(false)) {
        for (it.seekFirst(); it.valid(); it.next()) {
          assertEquals(ByteBuffer.wrap(key(n)), ByteBuffer.wrap(it.key()), "record " + n);
          n++;
          cache.removeOwner(owner); // the index is gone whenever the next block is loaded
        }
      }
      assertEquals(100_000, n);
      long decodes = r.metaReads() - before;
      assertTrue(decodes > 0, "the cache never dropped the index: the test shows nothing");
      assertTrue(
          decodes <= blocks / 64 + 1,
          decodes + " index decodes for a scan of " + blocks + " blocks");
      r.close();
    }
  }
}
