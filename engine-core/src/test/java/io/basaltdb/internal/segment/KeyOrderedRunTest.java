package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Key-ordered runs (docs/format.md, "Key-ordered runs"): documents stored in key order beside
 * blocks in seqno order, read by seqno with and without hints, walked in seqno order from any
 * seqno, and continued after a reopen.
 */
class KeyOrderedRunTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());

  static {
    System.out.println(
        "KeyOrderedRunTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  /** Every document from {@code from} on, as the iterator gives them, against the model. */
  private static void checkWalk(SegmentReader r, TestDocs t, long from) {
    DocumentIterator it = r.iterator(from);
    for (Map.Entry<Long, Document> e : t.docs.tailMap(from, true).entrySet()) {
      if (e.getKey() > r.state().lastSeqno()) break;
      assertTrue(it.hasNext(), "from " + from + ": ends before " + e.getKey());
      assertEquals(e.getValue(), it.next(), "from " + from);
      assertEquals((long) t.hints.get(e.getKey()), it.lastHint(), "hint of " + e.getKey());
      assertTrue(it.lastSize() > 0);
    }
    assertFalse(it.hasNext(), "from " + from + ": more than the model holds");
  }

  @Test
  void runsBesideSeqnoOrderedBlocks_readBySeqno_walkedInSeqnoOrder_andContinuedAfterAReopen() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentOptions o = SegmentOptions.defaults().withPageSize(256);
    SegmentWriter w = SegmentWriter.create(file, 9, 100, o);
    TestDocs t = new TestDocs(SEED, 100);
    t.appendRandom(w, 200);
    List<Document> first = t.appendRun(w, 400);
    t.appendRandom(w, 50);
    SegmentState mid = w.checkpoint();
    t.appendRun(w, 30);
    t.appendRun(w, 1); // a run of one document
    SegmentState beforeReopen = w.checkpoint();
    w = SegmentWriter.reopen(file, beforeReopen, o);
    t.appendRun(w, 700);
    t.appendRandom(w, 20);
    SegmentState last = w.checkpoint();
    assertEquals(t.docs.size(), last.documentCount());
    assertEquals(t.docs.lastKey(), last.lastSeqno());
    assertTrue(last.levels() >= 2, "an entry per document of a run fills leaf pages: " + last);

    for (SegmentState s : new SegmentState[] {mid, beforeReopen, last}) {
      SegmentReader r = new SegmentReader(file, s);
      TestDocs.checkAllReads(r, t.docs.headMap(s.lastSeqno(), true), t.hints);
      // From before the start, from every run's seqnos (mid-run: the walk starts the run over),
      // from past the end.
      for (long from = s.startSeqno() - 1; from <= s.lastSeqno() + 1; from += 37) {
        checkWalk(r, t, from);
      }
      checkWalk(r, t, s.lastSeqno());
    }

    // Neighbouring keys share blocks: the first run's 400 documents sit in far fewer blocks, and
    // documents adjacent in key order are in the same block or the next.
    Set<Long> blocks = new HashSet<>();
    long previous = -1;
    for (Document d : first) {
      long hint = t.hints.get(d.seqno());
      blocks.add(hint);
      assertTrue(hint >= previous, "blocks in key order");
      previous = hint;
    }
    assertTrue(blocks.size() < first.size(), blocks.size() + " blocks for 400 documents");
  }

  @Test
  void aRunThatCannotBeAppended_writesNothing() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 2, 1, SegmentOptions.defaults());
    TestDocs t = new TestDocs(SEED + 1, 1);
    t.appendRandom(w, 10);
    SegmentState s = w.checkpoint();
    long last = s.lastSeqno();
    List<Document> repeated = new ArrayList<>();
    repeated.add(new Document(last + 5, "a".getBytes(), new byte[3], false));
    repeated.add(new Document(last + 5, "b".getBytes(), new byte[3], false));
    assertThrows(
        InvalidArgumentException.class,
        () -> w.appendRun(TestDocs.run(repeated), new long[2], new int[2]));
    List<Document> old = List.of(new Document(last, "c".getBytes(), new byte[3], false));
    assertThrows(
        InvalidArgumentException.class,
        () -> w.appendRun(TestDocs.run(old), new long[1], new int[1]));
    List<Document> twoDocs = new ArrayList<>();
    twoDocs.add(new Document(last + 7, "d".getBytes(), new byte[3], false));
    twoDocs.add(new Document(last + 6, "e".getBytes(), new byte[3], false));
    SegmentWriter.Run sorted = TestDocs.run(twoDocs);
    for (int[] lie : new int[][] {{0, 1}, {1, 1}, {1, 2}}) {
      SegmentWriter.Run lying = // a seqno order out of order, repeating a document, out of range
          new SegmentWriter.Run() {
            @Override
            public int size() {
              return 2;
            }

            @Override
            public int bySeqno(int j) {
              return lie[j];
            }

            @Override
            public long seqno(int i) {
              return sorted.seqno(i);
            }

            @Override
            public byte[] key(int i) {
              return sorted.key(i);
            }

            @Override
            public byte[] value(int i) {
              return sorted.value(i);
            }

            @Override
            public int valueOffset(int i) {
              return 0;
            }

            @Override
            public int valueLength(int i) {
              return sorted.valueLength(i);
            }

            @Override
            public boolean tombstone(int i) {
              return false;
            }

            @Override
            public long expiry(int i) {
              return 0;
            }
          };
      assertThrows(
          InvalidArgumentException.class, () -> w.appendRun(lying, new long[2], new int[2]));
    }
    assertEquals(s, w.checkpoint(), "nothing appended");
    assertEquals(s.tailOffset(), w.size());
    t.appendRun(w, 5); // the writer is still usable
    SegmentState after = w.checkpoint();
    TestDocs.checkAllReads(new SegmentReader(file, after), t.docs, t.hints);
  }
}
