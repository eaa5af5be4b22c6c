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
 * seqnos stay gap-free (lastSeqno equals the operations written), and a snapshot scan always sees whole
 * batches (each batch writes the same value under two keys).
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ConcurrentWritersTest {
  @Test
  void put_fromManyThreads_isDurableGapFreeAndAtomic() throws Exception {
    MemStorage storage = new MemStorage(9);
    Options options = Options.defaults().memoryQuota(32L << 20).writeCacheSize(256 << 10).segmentSize(256 << 10);
    int threads = 4, perThread = 1500;
    AtomicReference<Throwable> error = new AtomicReference<>();
    try (Basalt db = Basalt.open(storage, options)) {
      Keyspace ks = db.keyspace("default");
      List<Thread> all = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        all.add(new Thread(() -> {
          try {
            for (int i = 0; i < perThread; i++) {
              byte[] v = ("v" + id + "-" + i).getBytes();
              db.write(new WriteBatch().put(ks, ("a" + id + "-" + i).getBytes(), v).put(ks, ("b" + id + "-" + i).getBytes(), v));
              assertArrayEquals(v, ks.get(("b" + id + "-" + i).getBytes()));
            }
          } catch (Throwable e) {
            error.compareAndSet(null, e);
          }
        }));
      }
      Thread reader = new Thread(() -> {
        try {
          for (int round = 0; round < 40; round++) {
            java.util.Map<String, String> seen = new java.util.HashMap<>();
            try (Snapshot s = db.snapshot(); Cursor c = s.scan(ks, null, null)) {
              while (c.next()) seen.put(new String(c.key()), new String(c.value()));
            }
            for (var e : seen.entrySet()) {
              if (e.getKey().startsWith("a")) {
                String other = seen.get("b" + e.getKey().substring(1));
                if (!e.getValue().equals(other)) throw new AssertionError("half a batch visible: " + e.getKey());
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
    }
    try (Basalt db = Basalt.open(storage, options)) {
      Keyspace ks = db.keyspace("default");
      for (int t = 0; t < threads; t++) {
        for (int i = 0; i < perThread; i++) {
          byte[] v = ("v" + t + "-" + i).getBytes();
          assertArrayEquals(v, ks.get(("a" + t + "-" + i).getBytes()));
          assertArrayEquals(v, ks.get(("b" + t + "-" + i).getBytes()));
        }
      }
      assertEquals(2L * threads * perThread, db.stats().lastSeqno());
    }
  }
}
