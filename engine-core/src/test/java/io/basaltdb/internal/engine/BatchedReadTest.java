package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.spi.ReadTarget;
import io.basaltdb.spi.ReadTransport;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Batched gets: the default read transport keeps a batch's reads in flight together; getAll agrees with get. */
class BatchedReadTest {
  @TempDir
  Path dir;

  @Test
  void pooledTransport_hasEveryReadOfABatchInFlightAtOnce() {
    int n = 8;
    CountDownLatch inside = new CountDownLatch(n);
    ReadTarget target = (position, dst) -> {
      inside.countDown();
      try { // returns only once all n reads are inside at the same time
        if (!inside.await(10, TimeUnit.SECONDS)) throw new StorageException("reads ran one after another");
      } catch (InterruptedException e) {
        throw new StorageException("interrupted");
      }
      dst.put((byte) position);
      return 1;
    };
    try (PooledReadTransport t = new PooledReadTransport(n)) {
      List<ReadTransport.Read> reads = new ArrayList<>();
      for (int i = 0; i < n; i++) reads.add(new ReadTransport.Read(target, i, ByteBuffer.allocate(1)));
      t.submit(reads);
      for (int i = 0; i < n; i++) {
        assertEquals(1, reads.get(i).result().join());
        assertEquals(i, reads.get(i).dst().get(0));
      }
    }
  }

  @Test
  void pooledTransport_failedRead_completesItsResultExceptionally() {
    StorageException boom = new StorageException("read of /x failed: injected");
    ReadTarget bad = (position, dst) -> {
      throw boom;
    };
    try (PooledReadTransport t = new PooledReadTransport(2)) {
      List<ReadTransport.Read> reads = List.of(new ReadTransport.Read(bad, 0, ByteBuffer.allocate(1)),
          new ReadTransport.Read(bad, 1, ByteBuffer.allocate(1)));
      t.submit(reads);
      for (ReadTransport.Read r : reads) {
        CompletionException e = assertThrows(CompletionException.class, () -> r.result().join());
        assertSame(boom, e.getCause());
      }
    }
  }

  @Test
  void getAll_onDisk_readsEachBlockOnce_andAgreesWithGet() {
    Options o = Options.defaults().memoryQuota(64L << 20).syncMode(SyncMode.NONE).writeCacheSize(4L << 20);
    try (Engine e = Engine.open(new FileStorage(dir), o)) {
      int n = 2000;
      for (int i = 0; i < n; i++) {
        Batch b = new Batch(1);
        b.add(1, Batch.PUT, key(i), value(i));
        e.write(b);
      }
      e.flush();
      for (int i = 0; i < n; i += 3) { // some deleted, some rewritten and still in the write cache
        Batch b = new Batch(1);
        if (i % 2 == 0) b.add(1, Batch.DELETE, key(i), null); else b.add(1, Batch.PUT, key(i), "fresh".getBytes());
        e.write(b);
      }
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i++) keys.add(key(i));
      keys.add("absent".getBytes());
      long before = e.stats().get("documentReads");
      List<byte[]> got = e.getAll(1, keys);
      long reads = e.stats().get("documentReads") - before;
      for (int i = 0; i < n; i++) {
        assertArrayEquals(e.get(1, key(i)), got.get(i), "key " + i);
        if (i % 3 != 0) assertArrayEquals(value(i), got.get(i));
      }
      assertNull(got.get(n));
      assertTrue(reads > 0 && reads < n / 10, "one read per distinct 4 KiB block, not per key: " + reads);
    }
  }

  private static byte[] key(int i) {
    return String.format("key-%06d", i).getBytes();
  }

  private static byte[] value(int i) {
    return ("value-" + i + "-".repeat(80)).getBytes();
  }
}
