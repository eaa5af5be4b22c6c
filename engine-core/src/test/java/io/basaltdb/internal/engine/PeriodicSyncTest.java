package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.Storage;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The periodic WAL sync runs beside the commit leader: a write is appended while the syncer's fsync
 * is in progress, instead of waiting for it ({@link
 * io.basaltdb.internal.engine.write.CommitLog#sync}). Before, the fsync held the WAL's monitor, and
 * with the WAL synced every 100 ms every writer stood still for each fsync.
 */
class PeriodicSyncTest {
  @Test
  void aWrite_isNotHeldByAPeriodicSyncInProgress() throws Exception {
    CountDownLatch syncing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean armed = new AtomicBoolean();
    // WAL fsyncs of the periodic syncer, once armed, wait for the test, outside the wrapped
    // storage's lock.
    Storage storage =
        HookedStorage.beforeSync(
            new MemStorage(3),
            name -> {
              boolean syncer = Thread.currentThread().getName().equals("basalt-wal-sync");
              if (!armed.get() || !syncer || !name.startsWith(FileNames.WAL_DIR)) return;
              syncing.countDown();
              try {
                release.await(30, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    Options o =
        Options.defaults().memoryQuota(16L << 20).syncMode(SyncMode.PERIODIC).syncIntervalMillis(5);
    try (Engine e = Engine.open(storage, o)) {
      int ks = e.keyspaceId("default");
      armed.set(true);
      put(e, ks, "first");
      assertTrue(
          syncing.await(10, TimeUnit.SECONDS), "the periodic syncer started an fsync of the WAL");
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
}
