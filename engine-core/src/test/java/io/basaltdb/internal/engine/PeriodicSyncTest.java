package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The periodic WAL sync runs beside the commit leader: a write is appended while the syncer's fsync is
 * in progress, instead of waiting for it ({@link CommitLog#sync}). Before, the fsync held the WAL's
 * monitor, and with the WAL synced every 100 ms every writer stood still for each fsync.
 */
class PeriodicSyncTest {
  @Test
  void aWrite_isNotHeldByAPeriodicSyncInProgress() throws Exception {
    CountDownLatch syncing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    SlowSyncStorage storage = new SlowSyncStorage(new MemStorage(3), syncing, release);
    Options o = Options.defaults().memoryQuota(16L << 20).syncMode(SyncMode.PERIODIC).syncIntervalMillis(5);
    try (Engine e = Engine.open(storage, o)) {
      int ks = e.keyspaceId("default");
      storage.armed = true;
      put(e, ks, "first");
      assertTrue(syncing.await(10, TimeUnit.SECONDS), "the periodic syncer started an fsync of the WAL");
      try {
        // The syncer is inside the fsync, held there: a write must still go through.
        CompletableFuture<Void> second = CompletableFuture.runAsync(() -> put(e, ks, "second"));
        second.get(10, TimeUnit.SECONDS);
        assertArrayEquals("second".getBytes(), e.get(ks, "second".getBytes()));
      } finally {
        release.countDown();
      }
    }
  }

  private static void put(Engine e, int ks, String key) {
    Batch b = new Batch(1);
    b.add(ks, Batch.PUT, key.getBytes(), key.getBytes());
    e.write(b);
  }

  /** Storage whose WAL fsyncs, once armed, wait for the test (outside the wrapped storage's lock). */
  private static final class SlowSyncStorage implements Storage {
    final Storage inner;
    final CountDownLatch syncing;
    final CountDownLatch release;
    volatile boolean armed;

    SlowSyncStorage(Storage inner, CountDownLatch syncing, CountDownLatch release) {
      this.inner = inner;
      this.syncing = syncing;
      this.release = release;
    }

    private StorageFile wrap(StorageFile f) {
      if (!f.name().startsWith(FileNames.WAL_DIR)) return f;
      return new StorageFile() {
        @Override public String name() { return f.name(); }
        @Override public int read(long position, ByteBuffer dst) { return f.read(position, dst); }
        @Override public void write(long position, ByteBuffer src) { f.write(position, src); }
        @Override public long size() { return f.size(); }
        @Override public void truncate(long size) { f.truncate(size); }
        @Override public void preallocate(long size) { f.preallocate(size); }
        @Override public void close() { f.close(); }

        @Override
        public void sync() {
          if (armed && Thread.currentThread().getName().equals("basalt-wal-sync")) {
            syncing.countDown();
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          f.sync();
        }
      };
    }

    @Override public StorageFile create(String name) { return wrap(inner.create(name)); }
    @Override public StorageFile open(String name) { return wrap(inner.open(name)); }
    @Override public boolean exists(String name) { return inner.exists(name); }
    @Override public List<String> list(String dir) { return inner.list(dir); }
    @Override public void delete(String name) { inner.delete(name); }
    @Override public void rename(String from, String to) { inner.rename(from, to); }
    @Override public void mkdirs(String dir) { inner.mkdirs(dir); }
    @Override public AutoCloseable lock(String name) { return inner.lock(name); }
    @Override public String describe(String name) { return inner.describe(name); }
    @Override public long usableSpace() { return inner.usableSpace(); }
    @Override public void syncDirectory(String dir) { inner.syncDirectory(dir); }
  }
}
