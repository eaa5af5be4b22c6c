package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableModel.assertRecord;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Review tests: corruption and edge cases of the SSTable read path with a block cache. */
class TableReviewTest {
  @Test
  void everyFlippedByte_withABlockCache_isDetectedOrRight() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 40, 20);
      byte[] good = m.tableBytes(new TableOptions(128, 4, 10));
      List<byte[]> absent = new ArrayList<>();
      for (byte[] k : m.map.keySet()) {
        byte[] next = Arrays.copyOf(k, k.length + 1);
        if (!m.map.containsKey(next)) absent.add(next);
      }
      for (long cap : new long[] {1 << 20, 300}) {
        try (BlockCache cache = new BlockCache(cap)) {
          assertEquals(0, readAll(good, m, absent, cache));
          for (int pos = 0; pos < good.length; pos++) {
            byte[] bad = good.clone();
            bad[pos] ^= (byte) (1 + r.nextInt(255));
            assertTrue(readAll(bad, m, absent, cache) > 0, "flip at " + pos + " unnoticed");
          }
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError("failed with seed " + seed, e);
    }
  }

  private static int readAll(byte[] contents, TableModel m, List<byte[]> absent, BlockCache cache) {
    TableReader t;
    try {
      t = TableReader.open(TableModel.file(contents), "t.sst", cache);
    } catch (CorruptionException e) {
      return 1;
    }
    int detected = 0;
    try (t) {
      for (int round = 0; round < 2; round++)
        detected += TableCorruptionTest.probeAll(t, m, absent, round == 0);
    }
    return detected;
  }

  /**
   * As TableStructureFuzzTest, through a block cache: cached blocks are read off the heap
   * (bounds-checked in debug mode).
   */
  @Test
  void forgedChecksums_withABlockCache_giveOnlyCorruptionExceptions() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = TableModel.random(r, 30, 20);
      byte[] good = m.tableBytes(new TableOptions(128, 4, 10));
      List<byte[]> probes = new ArrayList<>(m.map.keySet());
      for (int i = 0; i < 10; i++) probes.add(TableModel.bytes(r, r.nextInt(6)));
      try (BlockCache cache = new BlockCache(1 << 20)) {
        for (long[] b : TableStructureFuzzTest.blocks(good)) {
          int off = (int) b[0];
          int size = (int) b[1];
          for (int pos = off; pos < off + size; pos++) {
            byte[] bad = good.clone();
            bad[pos] ^= (byte) r.nextInt(1, 256);
            Format.putIntLE(
                bad, off + size + Format.TRAILER_CRC_OFFSET, Format.crc(bad, off, size + 1));
            TableReader t;
            try {
              t = TableReader.open(TableModel.file(bad), "t.sst", cache);
            } catch (CorruptionException e) {
              continue;
            }
            try (t) {
              KeyRecord out = new KeyRecord();
              for (int round = 0; round < 2; round++) {
                for (byte[] p : probes) {
                  try {
                    t.get(p, out);
                  } catch (CorruptionException e) {
                    // fine
                  }
                }
                try (TableIterator it = t.iterator(true)) {
                  long steps = 0;
                  for (it.seekFirst(); it.valid() && steps < 1_000_000; it.next()) steps++;
                } catch (CorruptionException e) {
                  // fine
                }
              }
            }
          }
        }
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError("failed with seed " + seed, e);
    }
  }

  /**
   * Gets and iterators on several threads through a cache too small for the table's blocks, so
   * blocks are evicted while other threads hold pins on them; every answer must be right.
   */
  @Test
  void concurrentGets_throughATinyCache_areRight() throws Exception {
    long seed = TableRoundTripTest.seed();
    SplittableRandom r = new SplittableRandom(seed);
    TableModel m = TableModel.random(r, 3000, 24);
    StorageFile f = TableModel.newFile();
    m.write(f, new TableOptions(256, 4, 10));
    List<KeyRecord> recs = new ArrayList<>(m.map.values());
    try (BlockCache cache = new BlockCache(16 << 10);
        TableReader t = TableReader.open(f, "t.sst", cache)) {
      java.util.concurrent.atomic.AtomicReference<Throwable> failure =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread[] threads = new Thread[4];
      for (int n = 0; n < threads.length; n++) {
        long s = seed + n;
        threads[n] =
            new Thread(
                () -> {
                  SplittableRandom tr = new SplittableRandom(s);
                  KeyRecord out = new KeyRecord();
                  try {
                    for (int i = 0; i < 20_000; i++) {
                      KeyRecord want = recs.get(tr.nextInt(recs.size()));
                      if (tr.nextInt(50) == 0) {
                        try (TableIterator it = t.iterator(tr.nextBoolean())) {
                          it.seek(want.key);
                          for (int j = 0; j < 20 && it.valid(); j++) it.next();
                        }
                      }
                      assertTrue(t.get(want.key, out));
                      assertRecord(want, out, "get");
                    }
                  } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                  }
                });
        threads[n].start();
      }
      for (Thread th : threads) th.join();
      if (failure.get() != null) throw new AssertionError("seed " + seed, failure.get());
      assertTrue(cache.evictions() > 0);
    }
  }

  /**
   * A table whose index block is prefix-compressed (the writer restarts the index at every entry,
   * so it never is): {@code n} separators of 64 KiB that differ only in their last two bytes, about
   * 10 bytes each on disk. Data blocks are empty trailers (never read at open). All checksums
   * valid.
   */
  static byte[] prefixBombTable(int n) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] trailer = withTrailer(new Output(16));
    BlockBuilder index = new BlockBuilder(Integer.MAX_VALUE, 1 << 16);
    byte[] first = null;
    byte[] last = null;
    for (int i = 0; i < n; i++) {
      byte[] k = new byte[KeyRecord.MAX_KEY_SIZE];
      k[k.length - 2] = (byte) (i >>> 8);
      k[k.length - 1] = (byte) i;
      index.addHandle(k, (long) i * Format.TRAILER_SIZE, 0);
      out.writeBytes(trailer);
      if (first == null) first = k;
      last = k;
    }
    long metaOffset = out.size();
    Output meta = new Output(16);
    MetaBlock.encode(meta, first, last, null, 0, Format.VERSION_WITHOUT_EXPIRY);
    out.writeBytes(withTrailer(meta));
    long indexOffset = out.size();
    Output idx = index.finish();
    out.writeBytes(withTrailer(idx));
    out.writeBytes(
        new Footer(0, 0, metaOffset, meta.size(), indexOffset, idx.size(), n, 1, 1, 4).encode());
    return out.toByteArray();
  }

  static byte[] withTrailer(Output contents) {
    int size = contents.size();
    byte[] b = Arrays.copyOf(contents.array(), size + Format.TRAILER_SIZE);
    b[size] = Format.COMPRESSION_NONE;
    Format.putIntLE(b, size + Format.TRAILER_CRC_OFFSET, Format.crc(b, 0, size + 1));
    return b;
  }

  /**
   * An index block with prefix-compressed separators (valid checksums): each entry of about 10
   * bytes decodes to a 64 KiB separator, so a table of under 1 MB took over 2 GiB of heap to open
   * ({@code prefixBombTable(40_000)} ended in OutOfMemoryError). Must be a CorruptionException,
   * found before the decoded index grows far past the block.
   */
  @Test
  void prefixCompressedIndex_isCorruption_notAHeapBlowup() {
    byte[] t = prefixBombTable(200);
    assertTrue(t.length < 300_000, "crafted table of " + t.length + " bytes");
    CorruptionException e =
        assertThrows(
            CorruptionException.class, () -> TableReader.open(TableModel.file(t), "bomb.sst"));
    assertTrue(
        e.getMessage().contains("bomb.sst") && e.getMessage().contains("index separators"),
        e.getMessage());
  }

  /**
   * An Error while opening (an OutOfMemoryError from a big block) must not leak the file handle.
   */
  @Test
  void anErrorWhileOpening_closesTheFile() {
    TableModel m = TableModel.random(new SplittableRandom(3), 50, 10);
    StorageFile f = TableModel.newFile();
    m.write(f, TableOptions.defaults());
    boolean[] closed = {false};
    StorageFile failing =
        new StorageFile() {
          public String name() {
            return f.name();
          }

          public int read(long p, ByteBuffer d) {
            throw new OutOfMemoryError("test: no heap for the block");
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
            closed[0] = true;
            f.close();
          }
        };
    assertThrows(OutOfMemoryError.class, () -> TableReader.open(failing, "t.sst"));
    assertTrue(closed[0], "file handle leaked by a failed open");
  }
}
