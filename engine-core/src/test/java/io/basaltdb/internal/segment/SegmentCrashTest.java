package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.MemStorage.CrashMode;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Checkpoint / crash / reopen / append cycles on {@link MemStorage}, whose crashes lose, reorder
 * and tear the writes made since the last sync. The engine's protocol is modelled: a state is
 * durable once {@code checkpoint()} and {@code sync()} have returned; after a crash the writer
 * reopens from the last durable state (or, for a rollback, an older one).
 */
class SegmentCrashTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());
  private static final String NAME = "segment-000009.log";

  static {
    System.out.println(
        "SegmentCrashTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  /** A durable checkpoint and the model's contents at it. */
  private record Durable(SegmentState state, NavigableMap<Long, Document> docs) {}

  @Test
  void crashCycles_defaultBlocks() {
    crashCycles(SegmentOptions.defaults().withMaxSegmentSize(1 << 20), SEED);
  }

  @Test
  void crashCycles_twoLevels() {
    crashCycles(
        SegmentOptions.defaults().withMaxSegmentSize(1 << 20).withBlockSize(256).withPageSize(256),
        SEED + 1);
  }

  @Test
  void crashCycles_deepTree() {
    crashCycles(
        SegmentOptions.defaults().withMaxSegmentSize(1 << 20).withBlockSize(64).withPageSize(64),
        SEED + 2);
  }

  /**
   * Random appends, checkpoints (synced or not), crashes and clean restarts, sometimes back to an
   * older checkpoint (a rollback). After every checkpoint the segment must read exactly the model;
   * hints given out before a crash, now stale, must still find the documents re-appended at those
   * seqnos.
   */
  private void crashCycles(SegmentOptions options, long seed) {
    MemStorage storage = new MemStorage(seed);
    SegmentWriter w = SegmentWriter.create(storage.create(NAME), 9, 1, options);
    TestDocs t = new TestDocs(seed, 1);
    SegmentState empty = w.checkpoint();
    w.sync();
    List<Durable> durable = new ArrayList<>(List.of(new Durable(empty, new TreeMap<>())));
    Map<Long, Long> staleHints = new TreeMap<>();
    int crashes = 0;
    for (int cycle = 0; cycle < 150; cycle++) {
      int action = t.random.nextInt(10);
      if (action <= 4) {
        t.appendRandom(w, t.random.nextInt(action == 0 ? 5 : 80));
      } else if (action <= 6) {
        SegmentState s = w.checkpoint();
        if (action == 5) {
          w.sync();
          durable.add(new Durable(s, new TreeMap<>(t.docs)));
        }
        SegmentReader r = new SegmentReader(storage.open(NAME), s);
        t.checkAllReads(r);
        staleHints.forEach(
            (seqno, hint) -> {
              if (t.docs.containsKey(seqno)) {
                assertEquals(
                    t.docs.get(seqno), r.read(seqno, hint), "stale hint of seqno " + seqno);
              }
            });
      } else {
        int back = action == 9 ? t.random.nextInt(Math.min(5, durable.size())) : 0;
        Durable d = durable.get(durable.size() - 1 - back);
        durable.removeIf(c -> c.state().tailOffset() > d.state().tailOffset());
        t.hints.forEach(
            (seqno, hint) -> {
              if (seqno > d.state().lastSeqno()) {
                staleHints.put(seqno, hint);
              }
            });
        if (t.random.nextInt(4) != 0) {
          storage.crash(CrashMode.values()[t.random.nextInt(CrashMode.values().length)]);
          crashes++;
        }
        t.docs.clear();
        t.docs.putAll(d.docs());
        t.nextSeqno =
            d.state().lastSeqno() + 1; // the WAL replays the same seqnos, new contents here
        w = SegmentWriter.reopen(storage.open(NAME), d.state(), options);
        assertEquals(d.state(), w.checkpoint(), "nothing appended since the restart");
      }
    }
    t.appendRandom(w, 10);
    SegmentState s = w.checkpoint();
    SegmentReader r = new SegmentReader(storage.open(NAME), s);
    t.checkAllReads(r);
    DocumentIterator it = r.iterator(0);
    for (Document expected : t.docs.values()) {
      assertEquals(expected, it.next());
    }
    assertFalse(it.hasNext());
    System.out.println("crash cycles " + options + ": " + crashes + " crashes, final " + s);
  }

  /**
   * The storage halts after n mutating operations, for every n of a short script (a crash at each
   * write, sync and preallocate), then crashes randomly. The last state whose sync returned must
   * read back whole, and the writer reopened from it must go on appending.
   */
  @Test
  void crashAtEveryMutation_recoversTheLastSyncedState() {
    SegmentOptions o =
        SegmentOptions.defaults().withMaxSegmentSize(64 << 10).withBlockSize(200).withPageSize(64);
    int points = 0;
    for (long n = 0; ; n++) {
      MemStorage storage = new MemStorage(SEED + n);
      TestDocs t = new TestDocs(SEED, 1);
      storage.crashAfterMutations(n);
      Durable last = null;
      boolean finished = false;
      try {
        SegmentWriter w = SegmentWriter.create(storage.create(NAME), 1, 1, o);
        // Sealed blocks reach the file together at each checkpoint (SegmentWriter.WRITE_BUFFER):
        // about two
        // mutations a round (the write and the sync), so enough rounds for more than 50 crash
        // points.
        for (int round = 0; round < 30; round++) {
          t.appendRandom(w, 12);
          SegmentState s = w.checkpoint();
          w.sync();
          last = new Durable(s, new TreeMap<>(t.docs));
        }
        finished = true;
      } catch (StorageException halted) {
        points++;
      }
      storage.crash();
      if (last != null) {
        StorageFile f = storage.open(NAME);
        TestDocs.checkAllReads(new SegmentReader(f, last.state()), last.docs(), t.hints);
        SegmentWriter w = SegmentWriter.reopen(f, last.state(), o);
        t.docs.clear();
        t.docs.putAll(last.docs());
        t.nextSeqno = last.state().lastSeqno() + 1;
        t.appendRandom(w, 30);
        t.checkAllReads(new SegmentReader(f, w.checkpoint()));
      }
      if (finished) {
        break;
      }
    }
    assertTrue(points > 50, "crash points: " + points);
  }
}
