package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The {@link EventListener} and {@link Basalt#health}: flushes (and a batch that skipped the WAL),
 * compactions, collection runs and stalls are told of with their figures, a background failure is
 * told of once and shows in the health without a write, and a listener that throws harms nothing.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class EventListenerTest {
  /** Every event, in order. */
  static class Recorder implements EventListener {
    final List<Object> events = new CopyOnWriteArrayList<>();
    final List<BasaltException> errors = new CopyOnWriteArrayList<>();

    @Override
    public void onFlushCompleted(FlushInfo info) {
      events.add(info);
    }

    @Override
    public void onCompactionCompleted(CompactionInfo info) {
      events.add(info);
    }

    @Override
    public void onCollectionCompleted(CollectionInfo info) {
      events.add(info);
    }

    @Override
    public void onStallBegin(Stall cause) {
      events.add("begin " + cause);
    }

    @Override
    public void onStallEnd(Stall cause, long nanos) {
      events.add("end " + cause);
    }

    @Override
    public void onBackgroundError(BasaltException error) {
      errors.add(error);
    }

    <T> List<T> of(Class<T> type) {
      return events.stream().filter(type::isInstance).map(type::cast).toList();
    }
  }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void backgroundWork_isToldOfWithItsFigures() {
    // The first flush's listener call holds the flusher until writers stall behind it: the next
    // write
    // cache fills while the flusher cannot take it (a listener should never block; this one shows
    // why).
    java.util.concurrent.CountDownLatch stalled = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean first =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    Recorder rec =
        new Recorder() {
          @Override
          public void onFlushCompleted(FlushInfo info) {
            super.onFlushCompleted(info);
            if (first.getAndSet(false)) {
              try {
                stalled.await(10, java.util.concurrent.TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }

          @Override
          public void onStallBegin(Stall cause) {
            super.onStallBegin(cause);
            stalled.countDown();
          }
        };
    MemStorage storage = new MemStorage(21);
    Options o = ChangeFeedTest.tiny().eventListener(rec).walSkipBytes(16 << 10);
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.keyspace("default");
      Random r = new Random(21);
      // Updates of 60 keys: flushes, compactions, garbage to collect; 2 KB values cross the last
      // quarter of
      // the active cache (where writers are slowed, not stalled) in a few puts.
      for (int i = 0; i < 600; i++) {
        byte[] v = new byte[2000];
        r.nextBytes(v);
        ks.put(b("k" + (i % 60)), v);
      }
      WriteBatch big = new WriteBatch();
      for (int i = 0; i < 100; i++) big.put(ks, b("big" + i), new byte[300]);
      db.write(big);
      assertTrue(db.waitForCompactions(20_000));
      List<EventListener.FlushInfo> flushes = rec.of(EventListener.FlushInfo.class);
      assertTrue(flushes.size() >= 5, "flushes: " + flushes.size());
      long last =
          -1; // by seqno: a batch that skipped the WAL is told of on the leader's thread, which may
      // come before the flusher's call for the flush the batch waited for
      for (EventListener.FlushInfo f :
          flushes.stream()
              .sorted(java.util.Comparator.comparingLong(EventListener.FlushInfo::flushedSeqno))
              .toList()) {
        assertTrue(
            f.flushedSeqno() > last
                && f.records() > 0
                && f.segmentBytes() > 0
                && f.keyspaces() == 1,
            f.toString());
        last = f.flushedSeqno();
      }
      assertEquals(1, flushes.stream().filter(EventListener.FlushInfo::walSkipped).count());
      assertEquals(db.stats().flushes(), flushes.size());
      List<EventListener.CompactionInfo> compactions = rec.of(EventListener.CompactionInfo.class);
      assertEquals(db.stats().get("compactions"), compactions.size());
      assertTrue(
          compactions.stream()
              .anyMatch(c -> c.bytesWritten() > 0 && c.bytesRead() > 0 && c.versionsDropped() > 0),
          compactions.toString());
      assertTrue(
          compactions.stream()
              .allMatch(c -> c.keyspace().equals("default") && c.inputTables() > 0));
      List<EventListener.CollectionInfo> collections = rec.of(EventListener.CollectionInfo.class);
      assertEquals(db.stats().get("gcRuns"), collections.size());
      assertTrue(
          collections.stream().anyMatch(c -> c.bytesReclaimed() > 0 && c.documentsDropped() > 0),
          collections.toString());
      // Stalls come in begin/end pairs of one cause.
      List<String> stalls =
          rec.events.stream().filter(e -> e instanceof String).map(e -> (String) e).toList();
      assertTrue(
          stalls.contains("begin WRITE_CACHE"),
          "no write cache stall: " + stalls + " " + db.stats());
      for (int i = 0; i < stalls.size(); i += 2) {
        assertTrue(
            stalls.get(i).startsWith("begin ")
                && stalls.get(i + 1).equals("end " + stalls.get(i).substring(6)),
            "unpaired stall events: " + stalls);
      }
      assertEquals(new Health(Health.State.OK, null), db.health());
      assertTrue(rec.errors.isEmpty());
    }
  }

  @Test
  void aBackgroundFailure_isToldOfOnce_andShowsInTheHealthWithoutAWrite() throws Exception {
    Recorder rec = new Recorder();
    MemStorage storage = new MemStorage(22);
    Basalt db = Basalt.open(storage, ChangeFeedTest.tiny().eventListener(rec));
    try {
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      storage.setFaultInjector(
          (op, name) ->
              op == MemStorage.Op.CREATE && name.endsWith(".sst")
                  ? MemStorage.Fault.IO_ERROR
                  : MemStorage.Fault.NONE);
      assertThrows(BasaltException.class, db::flush); // the flush of "a" fails: the store fails
      Health h = db.health(); // at once
      assertEquals(Health.State.FAILED, h.state());
      assertTrue(!h.isOk());
      long deadline =
          System.nanoTime() + 5_000_000_000L; // the listener hears of it on a thread of its own
      while (rec.errors.isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
      Thread.sleep(20);
      assertEquals(1, rec.errors.size(), "told of once");
      assertSame(rec.errors.get(0), h.failure());
      assertThrows(StorageException.class, () -> ks.put(b("b"), b("2")), "writes are refused");
      assertArrayEquals(b("1"), ks.get(b("a")), "reads still work");
      assertEquals(1, rec.errors.size());
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    assertEquals(Health.State.CLOSED, db.health().state());
    storage.setFaultInjector(null);
    try (Basalt again =
        Basalt.open(storage, ChangeFeedTest.tiny())) { // the reopen recovers the write
      assertArrayEquals(b("1"), again.keyspace("default").get(b("a")));
      assertNull(again.health().failure());
    }
  }

  @Test
  void aListenerMayCloseTheStore_whenItFails() throws Exception {
    java.util.concurrent.atomic.AtomicReference<Basalt> store =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
    EventListener closer =
        new EventListener() {
          @Override
          public void onBackgroundError(BasaltException error) {
            try {
              store.get().close();
            } catch (BasaltException expected) {
              // the failed store's WAL may refuse its clean close; what the crash left is recovered
              // at reopen
            }
            closed.countDown();
          }
        };
    MemStorage storage = new MemStorage(24);
    Basalt db = Basalt.open(storage, ChangeFeedTest.tiny().eventListener(closer));
    store.set(db);
    db.keyspace("default").put(b("a"), b("1"));
    storage.setFaultInjector(
        (op, name) ->
            op == MemStorage.Op.CREATE && name.endsWith(".sst")
                ? MemStorage.Fault.IO_ERROR
                : MemStorage.Fault.NONE);
    assertThrows(BasaltException.class, db::flush);
    assertTrue(
        closed.await(10, java.util.concurrent.TimeUnit.SECONDS),
        "the listener's close did not finish: it waited for the worker calling it");
    assertTrue(db.isClosed());
    storage.setFaultInjector(null);
    try (Basalt again = Basalt.open(storage, ChangeFeedTest.tiny())) {
      assertArrayEquals(b("1"), again.keyspace("default").get(b("a")));
    }
  }

  @Test
  void aListenerThatThrows_harmsNothing() {
    EventListener bad =
        new EventListener() {
          @Override
          public void onFlushCompleted(FlushInfo info) {
            throw new IllegalStateException("listener bug");
          }

          @Override
          public void onCompactionCompleted(CompactionInfo info) {
            throw new IllegalStateException("listener bug");
          }
        };
    try (Basalt db = Basalt.open(new MemStorage(23), ChangeFeedTest.tiny().eventListener(bad))) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 2000; i++) ks.put(b("k" + (i % 200)), new byte[100]);
      assertTrue(db.waitForCompactions(20_000));
      assertTrue(db.stats().flushes() > 0 && db.stats().get("compactions") > 0);
      assertTrue(db.health().isOk());
      assertNotNull(ks.get(b("k7")));
    }
  }
}
