package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Writers on several threads through group commit, with readers and snapshot scans running and the
 * write cache flushing underneath: every acknowledged write is readable at once and after a reopen,
 * seqnos stay gap-free (lastSeqno equals the operations written), and a snapshot scan always sees
 * whole batches (each batch writes the same value under two keys). Plain gets see whole batches
 * too: once a get has returned one write of a batch, no later get returns a state from before it.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ConcurrentWritersTest {
  @Test
  void put_fromManyThreads_isDurableGapFreeAndAtomic() throws Exception {
    MemStorage storage = new MemStorage(9);
    // Writer 0's every 25th batch carries 3 KB values, so it skips the WAL (walSkipBytes) amid the
    // others.
    Options options =
        Options.defaults()
            .memoryQuota(32L << 20)
            .writeCacheSize(256 << 10)
            .segmentSize(256 << 10)
            .walSkipBytes(4096);
    int threads = 4, perThread = 1500;
    AtomicReference<Throwable> error = new AtomicReference<>();
    try (Basalt db = Basalt.open(storage, options)) {
      Keyspace ks = db.keyspace("default");
      List<Thread> all = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        all.add(
            new Thread(
                () -> {
                  try {
                    for (int i = 0; i < perThread; i++) {
                      byte[] v = value(id, i);
                      db.write(
                          new WriteBatch()
                              .put(ks, ("a" + id + "-" + i).getBytes(), v)
                              .put(ks, ("b" + id + "-" + i).getBytes(), v));
                      assertArrayEquals(v, ks.get(("b" + id + "-" + i).getBytes()));
                    }
                  } catch (Throwable e) {
                    error.compareAndSet(null, e);
                  }
                }));
      }
      Thread reader =
          new Thread(
              () -> {
                try {
                  for (int round = 0; round < 40; round++) {
                    java.util.Map<String, String> seen = new java.util.HashMap<>();
                    try (Snapshot s = db.snapshot();
                        Cursor c = s.scan(ks, null, null)) {
                      while (c.next()) seen.put(new String(c.key()), new String(c.value()));
                    }
                    for (var e : seen.entrySet()) {
                      if (e.getKey().startsWith("a")) {
                        String other = seen.get("b" + e.getKey().substring(1));
                        if (!e.getValue().equals(other))
                          throw new AssertionError("half a batch visible: " + e.getKey());
                      }
                    }
                  }
                } catch (Throwable e) {
                  error.compareAndSet(null, e);
                }
              });
      all.forEach(Thread::start);
      reader.start();
      for (Thread t : all) t.join();
      reader.join();
      if (error.get() != null) throw new AssertionError(error.get());
      Stats st = db.stats();
      assertEquals(2L * threads * perThread, st.lastSeqno());
      assertTrue(st.get("groupCommits") <= st.get("batches"));
      assertTrue(st.flushes() > 0, "the write cache never flushed: " + st);
      assertEquals(perThread / 25, st.get("walSkippedBatches"));
    }
    try (Basalt db = Basalt.open(storage, options)) {
      Keyspace ks = db.keyspace("default");
      for (int t = 0; t < threads; t++) {
        for (int i = 0; i < perThread; i++) {
          byte[] v = value(t, i);
          assertArrayEquals(v, ks.get(("a" + t + "-" + i).getBytes()));
          assertArrayEquals(v, ks.get(("b" + t + "-" + i).getBytes()));
        }
      }
      assertEquals(2L * threads * perThread, db.stats().lastSeqno());
    }
  }

  /**
   * Writer {@code id}'s value {@code i}: 3 KB for writer 0's every 25th (its batch skips the WAL).
   */
  private static byte[] value(int id, int i) {
    String v = "v" + id + "-" + i;
    return (id == 0 && i % 25 == 24 ? v + "-".repeat(3000) : v).getBytes();
  }

  @Test
  void groupCommit_writersWaitingOnAnFsync_shareTheNextOne() throws Exception {
    // Every WAL fsync takes 2 ms, as on a disk without a write cache. While the leader waits, the
    // other writers queue, and the next leader commits them all with one write and one fsync.
    MemStorage storage = new MemStorage(5);
    storage.setFaultInjector(
        (op, name) -> {
          if (op == MemStorage.Op.SYNC && name.startsWith("wal/")) {
            try {
              Thread.sleep(2);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
          return MemStorage.Fault.NONE;
        });
    int threads = 8, perThread = 100;
    AtomicReference<Throwable> error = new AtomicReference<>();
    try (Basalt db = Basalt.open(storage, Options.defaults().memoryQuota(32L << 20))) {
      Keyspace ks = db.keyspace("default");
      List<Thread> all = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        all.add(
            new Thread(
                () -> {
                  try {
                    for (int i = 0; i < perThread; i++)
                      ks.put(("k" + id + "-" + i).getBytes(), new byte[100]);
                  } catch (Throwable e) {
                    error.compareAndSet(null, e);
                  }
                }));
      }
      all.forEach(Thread::start);
      for (Thread t : all) t.join();
      if (error.get() != null) throw new AssertionError(error.get());
      Stats st = db.stats();
      assertEquals(threads * perThread, st.get("batches"));
      assertEquals(st.get("groupCommits"), st.get("walSyncs"), "one fsync per group in SYNC mode");
      assertTrue(
          st.get("walSyncs") * 3 <= st.get("batches"),
          "8 writers behind 2 ms fsyncs should share them, at least 3 batches per fsync on average: "
              + st);
    }
    storage.setFaultInjector(null);
    storage.crash(MemStorage.CrashMode.KEEP_NONE);
    try (Basalt db = Basalt.open(storage, Options.defaults().memoryQuota(32L << 20))) {
      Keyspace ks = db.keyspace("default");
      for (int t = 0; t < threads; t++) {
        for (int i = 0; i < perThread; i++) {
          assertEquals(
              100,
              ks.get(("k" + t + "-" + i).getBytes()).length,
              "acknowledged write lost at a crash");
        }
      }
    }
  }

  @Test
  void plainGets_neverSeeHalfABatch_onDisk() throws Exception {
    try (Basalt db =
        Basalt.open(
            new MemStorage(3),
            Options.defaults()
                .syncMode(SyncMode.NONE)
                .memoryQuota(32L << 20)
                .writeCacheSize(1 << 20))) {
      checkGetsSeeWholeBatches(db);
    }
  }

  @Test
  void plainGets_neverSeeHalfABatch_inMemory() throws Exception {
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(32L << 20))) {
      checkGetsSeeWholeBatches(db);
    }
  }

  /**
   * Batch r writes "round" = r first, then puts r under 40 keys (even r) or deletes them (odd r). A
   * reader gets "round" and then the last key: the key must show round r or later. With half
   * batches visible, the reader meets the new round with the last key still from the round before.
   */
  private static void checkGetsSeeWholeBatches(Basalt db) throws Exception {
    Keyspace ks = db.keyspace("default");
    int rounds = 3000, keys = 40;
    byte[] last = key(keys - 1);
    AtomicReference<Throwable> error = new AtomicReference<>();
    java.util.concurrent.atomic.AtomicBoolean writing =
        new java.util.concurrent.atomic.AtomicBoolean(true);
    java.util.concurrent.atomic.AtomicLong checks = new java.util.concurrent.atomic.AtomicLong();
    Thread writer =
        new Thread(
            () -> {
              try {
                for (int r = 1; r <= rounds; r++) {
                  WriteBatch b = new WriteBatch().put(ks, "round".getBytes(), intBytes(r));
                  for (int k = 0; k < keys; k++) {
                    if (r % 2 == 0) b.put(ks, key(k), intBytes(r));
                    else b.delete(ks, key(k));
                  }
                  db.write(b);
                }
              } catch (Throwable e) {
                error.compareAndSet(null, e);
              } finally {
                writing.set(false);
              }
            });
    List<Thread> readers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      readers.add(
          new Thread(
              () -> {
                try {
                  while (writing.get()) {
                    byte[] rb = ks.get("round".getBytes());
                    if (rb == null) continue;
                    int r = intOf(rb);
                    byte[] x = ks.get(last);
                    if (x != null) {
                      int e = intOf(x); // written by even round e
                      if (r % 2 == 0 ? e < r : e <= r)
                        throw new AssertionError(
                            "round " + r + " visible, last key from round " + e);
                    } else if (r % 2 == 0 && intOf(ks.get("round".getBytes())) == r) {
                      throw new AssertionError(
                          "round " + r + " visible, last key still deleted by round " + (r - 1));
                    }
                    checks.incrementAndGet();
                  }
                } catch (Throwable e) {
                  error.compareAndSet(null, e);
                }
              }));
    }
    writer.start();
    readers.forEach(Thread::start);
    writer.join();
    for (Thread t : readers) t.join();
    if (error.get() != null) throw new AssertionError(error.get());
    assertTrue(checks.get() > 0, "the readers checked nothing");
    assertArrayEquals(intBytes(rounds), ks.get(last));
  }

  private static byte[] key(int k) {
    return ("k" + k).getBytes();
  }

  private static byte[] intBytes(int v) {
    return java.nio.ByteBuffer.allocate(4).putInt(v).array();
  }

  private static int intOf(byte[] b) {
    return java.nio.ByteBuffer.wrap(b).getInt();
  }
}
