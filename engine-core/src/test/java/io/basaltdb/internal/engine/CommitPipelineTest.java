package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Work that runs between commit groups (flush, checkpoint, an in-memory drop) among concurrent
 * writers: a leader never takes its place in the queue into a group (which left the caller waiting
 * forever), and a flush racing close ends instead of waiting for a flusher that stopped; a batch is
 * in one write at a time.
 */
class CommitPipelineTest {
  private static Options options() {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(256 << 10);
  }

  private static List<Thread> writers(Engine e, AtomicBoolean stop, AtomicInteger written) {
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      int id = t;
      threads.add(
          new Thread(
              () -> {
                for (int i = 0; !stop.get(); i++) {
                  Batch b = new Batch(1);
                  b.add(
                      1,
                      Batch.PUT,
                      ("w" + id + "-" + (i % 500)).getBytes(StandardCharsets.UTF_8),
                      new byte[200]);
                  try {
                    e.write(b);
                    written.incrementAndGet();
                  } catch (BasaltException closed) {
                    return;
                  }
                }
              }));
    }
    threads.forEach(Thread::start);
    return threads;
  }

  @Test
  void flushesAndInMemoryDropsAmongWriters_allReturn() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          for (boolean inMemory : new boolean[] {false, true}) {
            try (Engine e = Engine.open(inMemory ? null : new MemStorage(1), options())) {
              AtomicBoolean stop = new AtomicBoolean();
              AtomicInteger written = new AtomicInteger();
              List<Thread> threads = writers(e, stop, written);
              // The flushes and drops must land among writes: 40 of them on an idle store can end
              // before the
              // writer threads are first scheduled (it happened on a loaded machine).
              while (e.get(1, "w0-0".getBytes(StandardCharsets.UTF_8)) == null) Thread.onSpinWait();
              for (int i = 0; i < 40; i++) {
                if (inMemory) {
                  e.createKeyspace("ks" + i);
                  e.dropKeyspace("ks" + i);
                } else {
                  e.flush();
                }
              }
              stop.set(true);
              for (Thread t : threads) t.join();
              assertTrue(written.get() > 0);
              assertArrayEquals(new byte[200], e.get(1, "w0-0".getBytes(StandardCharsets.UTF_8)));
            }
          }
        });
  }

  @Test
  void flushRacingClose_ends() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          for (int round = 0; round < 20; round++) {
            Engine e = Engine.open(new MemStorage(round), options());
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> threads = writers(e, stop, new AtomicInteger());
            Thread flusher =
                new Thread(
                    () -> {
                      try {
                        while (true) e.flush();
                      } catch (BasaltException closed) {
                        // ClosedException once close began: the flush ends
                      }
                    });
            flusher.start();
            Thread.sleep(20);
            e.close();
            stop.set(true);
            flusher.join();
            for (Thread t : threads) t.join();
          }
        });
  }

  /**
   * A batch is in one write at a time (its seqnos are that write's): a second write of a batch
   * still being written is refused with nothing written, and the batch is writable again once the
   * first ends.
   */
  /**
   * Queued writers park and are woken one by one (the leader wakes its group's writers and the next
   * head, not every waiter): many writers of single puts, with the write cache switching under
   * them, all return and every put is there. A wake-up lost (a leader reading the group list after
   * the next leader refilled it did so) leaves writers parked for ever, which the timeout turns
   * into a failure.
   */
  @Test
  void manyWriters_areAllWoken_andEveryWriteApplied() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> {
          try (Engine e =
              Engine.open(new MemStorage(11), options().syncMode(io.basaltdb.SyncMode.NONE))) {
            List<Thread> threads = new ArrayList<>();
            int perThread = 3000;
            for (int t = 0; t < 8; t++) {
              int id = t;
              threads.add(
                  new Thread(
                      () -> {
                        for (int i = 0; i < perThread; i++) {
                          Batch b = new Batch(1);
                          b.add(
                              1,
                              Batch.PUT,
                              ("m" + id + "-" + i).getBytes(StandardCharsets.UTF_8),
                              ("v" + i).getBytes(StandardCharsets.UTF_8));
                          e.write(b);
                        }
                      }));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) t.join();
            for (int t = 0; t < 8; t++) {
              for (int i = 0; i < perThread; i += 7) {
                assertArrayEquals(
                    ("v" + i).getBytes(StandardCharsets.UTF_8),
                    e.get(1, ("m" + t + "-" + i).getBytes(StandardCharsets.UTF_8)),
                    "m" + t + "-" + i);
              }
            }
            assertTrue(e.stats().get("groupCommits") <= 8 * perThread);
          }
        });
  }

  @Test
  void aBatchInAWriteIsRefusedBySecondWrite() {
    try (Engine e = Engine.open(new MemStorage(7), options())) {
      e.createKeyspace("k");
      int ks = e.keyspaceId("k");
      Batch b = new Batch(1);
      b.add(
          ks,
          Batch.PUT,
          "key".getBytes(StandardCharsets.UTF_8),
          "v".getBytes(StandardCharsets.UTF_8));
      assertTrue(b.beginWrite()); // as a write in progress on another thread does
      io.basaltdb.InvalidArgumentException refused =
          org.junit.jupiter.api.Assertions.assertThrows(
              io.basaltdb.InvalidArgumentException.class, () -> e.write(b));
      assertTrue(refused.getMessage().contains("one write at a time"), refused.getMessage());
      org.junit.jupiter.api.Assertions.assertNull(
          e.get(ks, "key".getBytes(StandardCharsets.UTF_8)));
      b.endWrite();
      e.write(b);
      assertArrayEquals(
          "v".getBytes(StandardCharsets.UTF_8), e.get(ks, "key".getBytes(StandardCharsets.UTF_8)));
    }
  }
}
