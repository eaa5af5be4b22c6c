package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The commit leader links a group into the write cache while its WAL fsync runs ({@link WalSyncer}) and
 * publishes it after: no reader may see the group before the fsync succeeded, nor ever if it failed.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class PipelinedSyncTest {

  @Test
  void aGroupWhoseFsyncFails_isNeverSeen_thoughItWasLinkedWhileTheFsyncRan() throws Exception {
    MemStorage storage = new MemStorage(11);
    CountDownLatch inSync = new CountDownLatch(1), release = new CountDownLatch(1);
    Engine e = Engine.open(storage, Options.defaults().memoryQuota(32L << 20));
    try {
      put(e, "k", "v1");
      put(e, "other", "o");
      long published = e.versions().lastSeqno;
      storage.setFaultInjector((op, name) -> {
        if (op != MemStorage.Op.SYNC || !name.startsWith("wal/")) return MemStorage.Fault.NONE;
        inSync.countDown();
        try {
          release.await();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
        }
        return MemStorage.Fault.IO_ERROR;
      });
      AtomicReference<Throwable> writeOutcome = new AtomicReference<>();
      Thread writer = new Thread(() -> {
        try {
          put(e, "k", "v2");
          writeOutcome.set(new AssertionError("the write returned although its fsync failed"));
        } catch (Throwable t) {
          writeOutcome.set(t);
        }
      });
      writer.start();
      assertTrue(inSync.await(10, TimeUnit.SECONDS), "the group's fsync started");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (e.versions().current().active.maxSeqno <= published) { // the leader links it meanwhile
        assertTrue(System.nanoTime() < deadline, "the group was linked while its fsync ran");
        Thread.sleep(1);
      }
      assertEquals(published, e.versions().lastSeqno, "linked, not published");
      AtomicReference<Object> getOutcome = new AtomicReference<>();
      Thread reader = new Thread(() -> {
        try {
          getOutcome.set(new String(e.get(1, "k".getBytes())));
        } catch (Throwable t) {
          getOutcome.set(t);
        }
      });
      reader.start();
      reader.join(100);
      assertTrue(reader.isAlive(), "a get that meets the unpublished entry waits for its fsync: " + getOutcome.get());
      release.countDown();
      writer.join(10_000);
      reader.join(10_000);
      assertTrue(writeOutcome.get() instanceof StorageException, "the write failed: " + writeOutcome.get());
      assertTrue(getOutcome.get() instanceof StorageException, "the waiting get got the failure: " + getOutcome.get());
      assertEquals(published, e.versions().lastSeqno, "never published");
      assertThrows(StorageException.class, () -> e.get(1, "k".getBytes()), "the unpublished entry is not served");
      assertThrows(StorageException.class, e::snapshot, "a snapshot would see it: refused");
      assertThrows(StorageException.class, () -> e.scan(1, null, null), "a scan would see it: refused");
      assertArrayEquals("o".getBytes(), e.get(1, "other".getBytes()), "other keys still read");
      assertThrows(StorageException.class, () -> put(e, "x", "y"), "the store refuses writes");
    } finally {
      release.countDown();
      storage.setFaultInjector(null);
      try {
        e.close();
      } catch (BasaltException closeFailure) {
        // closing a failed store may report its failure again
      }
    }
  }

  @Test
  void aWriterWithItsInterruptStatusSet_commitsWithoutLosingIt() {
    // The leader parks while the fsync thread syncs; a set interrupt status must neither make it spin nor
    // fail the write, and the caller gets its status back.
    try (Engine e = Engine.open(new MemStorage(12), Options.defaults().memoryQuota(32L << 20))) {
      for (int i = 0; i < 20; i++) {
        Thread.currentThread().interrupt();
        put(e, "k" + i, "v" + i);
        assertTrue(Thread.interrupted(), "the interrupt status is kept");
      }
      for (int i = 0; i < 20; i++) assertArrayEquals(("v" + i).getBytes(), e.get(1, ("k" + i).getBytes()));
      assertFalse(Thread.currentThread().isInterrupted());
    }
  }

  private static void put(Engine e, String key, String value) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key.getBytes(), value.getBytes());
    e.write(b);
  }
}
