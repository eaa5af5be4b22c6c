package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Damaged segment files: every read either returns exactly the right answer or throws
 * CorruptionException; never a wrong document, never another exception.
 */
class SegmentCorruptionTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());

  static {
    System.out.println(
        "SegmentCorruptionTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  /**
   * A segment with several blocks, a two-level index and stale checkpoint pages; every fifth group
   * of documents is a key-ordered run.
   */
  static SegmentState build(ByteArrayFile file, TestDocs t, int docs) {
    SegmentWriter w =
        SegmentWriter.create(
            file, 6, 1, SegmentOptions.defaults().withBlockSize(300).withPageSize(64));
    for (int i = 0; i < docs; i++) {
      if (i % 35 == 20) { // a run of small documents, as a flush writes them
        java.util.List<Document> run = new ArrayList<>();
        for (int j = 0; j < 7; j++) {
          Document d = t.next();
          run.add(new Document(d.seqno(), d.key(), t.bytes(t.random.nextInt(120)), d.tombstone()));
        }
        run.sort((a, b) -> java.util.Arrays.compareUnsigned(a.key(), b.key()));
        long[] h = new long[run.size()];
        w.appendRun(TestDocs.run(run), h, new int[run.size()]);
        for (int j = 0; j < run.size(); j++) {
          t.docs.put(run.get(j).seqno(), run.get(j));
          t.hints.put(run.get(j).seqno(), h[j]);
        }
        i += run.size() - 1;
        continue;
      }
      Document d = t.next();
      t.append(w, new Document(d.seqno(), d.key(), t.bytes(t.random.nextInt(120)), d.tombstone()));
      if (i % 7 == 3) {
        w.checkpoint();
      }
    }
    return w.checkpoint();
  }

  /**
   * Reads every seqno with and without its hint and iterates from the start; returns corruptions
   * seen.
   */
  private static int readAll(SegmentReader r, TestDocs t, String what) {
    return readAll(r, t, what, false);
  }

  /**
   * Reads every seqno (and one past each end) with and without its hint, then iterates; with {@code
   * alsoUncached}, reads each again past the block cache. Returns the corruptions reported; a wrong
   * answer fails the test.
   */
  static int readAll(SegmentReader r, TestDocs t, String what, boolean alsoUncached) {
    int corruptions = 0;
    SegmentState s = r.state();
    for (int round = 0; round < (alsoUncached ? 2 : 1); round++) {
      for (long q = s.startSeqno() - 1; q <= s.lastSeqno() + 1; q++) {
        Document expected = t.docs.get(q);
        for (long hint : new long[] {t.hints.getOrDefault(q, -1L), -1}) {
          try {
            Document d = round == 0 ? r.read(q, hint) : r.readUncached(q, hint);
            if (expected == null) {
              assertNull(d, what + ": seqno " + q);
            } else {
              assertEquals(expected, d, what + ": seqno " + q + " hint " + hint);
            }
          } catch (CorruptionException e) {
            corruptions++;
          }
        }
      }
    }
    try {
      DocumentIterator it = r.iterator(0);
      for (Document expected : t.docs.values()) {
        assertTrue(it.hasNext(), what);
        assertEquals(expected, it.next(), what);
      }
      assertTrue(!it.hasNext(), what);
    } catch (CorruptionException e) {
      corruptions++;
    }
    return corruptions;
  }

  @Test
  void everyFlippedByte_givesTheRightDocumentOrCorruption_withAndWithoutABlockCache() {
    ByteArrayFile pristine = new ByteArrayFile();
    TestDocs t = new TestDocs(SEED, 1);
    SegmentState s = build(pristine, t, 24);
    assertTrue(s.levels() >= 2, s.toString());
    byte[] bytes = pristine.contents();
    try (BlockCache cache = new BlockCache(1 << 20)) {
      for (BlockCache c : java.util.Arrays.asList(null, cache)) {
        // Through a cache, each seqno is also read past it: the copy a damaged block left in the
        // cache
        // must be right too.
        java.util.function.Function<ByteArrayFile, SegmentReader> open =
            f -> c == null ? new SegmentReader(f, s) : new SegmentReader(f, s, c, c.newOwners(2));
        String how = c == null ? "" : ", through a block cache";
        assertEquals(0, readAll(open.apply(pristine), t, "pristine" + how, c != null));
        SplittableRandom r = new SplittableRandom(SEED);
        for (int pos = SegmentFormat.FILE_HEADER_SIZE; pos < s.tailOffset(); pos++) {
          ByteArrayFile f = new ByteArrayFile(bytes);
          f.flip(pos, 1 + r.nextInt(255));
          int corruptions = readAll(open.apply(f), t, "byte " + pos + " flipped" + how, c != null);
          // Every byte below the tail is in some record the iterator checks.
          assertTrue(corruptions > 0, "byte " + pos + " flipped unnoticed" + how);
        }
      }
    }
  }

  @Test
  void randomDamage_inABiggerSegment() {
    ByteArrayFile pristine = new ByteArrayFile();
    TestDocs t = new TestDocs(SEED + 1, 1);
    SegmentState s = build(pristine, t, 400);
    byte[] bytes = pristine.contents();
    SplittableRandom r = new SplittableRandom(SEED + 1);
    for (int trial = 0; trial < 60; trial++) {
      ByteArrayFile f = new ByteArrayFile(bytes);
      int flips = 1 + r.nextInt(4);
      for (int i = 0; i < flips; i++) {
        f.flip(r.nextLong(s.tailOffset()), 1 + r.nextInt(255));
      }
      readAll(new SegmentReader(f, s), t, "trial " + trial);
    }
  }

  @Test
  void truncatedFile_isCorruption() {
    ByteArrayFile f = new ByteArrayFile();
    TestDocs t = new TestDocs(SEED + 2, 1);
    SegmentState s = build(f, t, 100);
    f.truncate(s.tailOffset() - 100);
    SegmentReader r = new SegmentReader(f, s);
    assertThrows(
        CorruptionException.class, () -> r.read(t.docs.firstKey(), -1)); // the root is gone
    assertThrows(
        CorruptionException.class,
        () -> {
          for (DocumentIterator it = r.iterator(0); it.hasNext(); ) {
            it.next();
          }
        });
  }

  /**
   * Damage with the checksum recomputed (a checksum collision, or a writer bug): the decoders must
   * still refuse or survive it without any exception but CorruptionException. Contents may be wrong
   * here, so only the kind of outcome is checked.
   */
  @Test
  void damageBehindValidChecksums_onlyEverRaisesCorruption() {
    ByteArrayFile pristine = new ByteArrayFile();
    TestDocs t = new TestDocs(SEED + 3, 1);
    SegmentState s = build(pristine, t, 80);
    byte[] bytes = pristine.contents();
    List<long[]> records = new ArrayList<>(); // {offset, length}
    for (int p = SegmentFormat.FILE_HEADER_SIZE; p < s.tailOffset(); ) {
      int n =
          bytes[p + SegmentFormat.TYPE_OFFSET] == SegmentFormat.TYPE_BLOCK
              ? Block.recordLength(bytes, p)
              : IndexPage.recordLength(bytes, p);
      assertTrue(n > 0);
      records.add(new long[] {p, n});
      p += n;
    }
    SplittableRandom r = new SplittableRandom(SEED + 3);
    for (int trial = 0; trial < 150; trial++) {
      byte[] b = bytes.clone();
      long[] rec = records.get(r.nextInt(records.size()));
      int from = (int) rec[0];
      int to = from + (int) rec[1];
      int flips = 1 + r.nextInt(3);
      for (int i = 0; i < flips; i++) {
        int at = from + SegmentFormat.CRC_SIZE + r.nextInt(to - from - SegmentFormat.CRC_SIZE);
        b[at] = r.nextInt(4) == 0 ? (byte) 0xFF : (byte) r.nextInt(256);
      }
      SegmentFormat.putInt(b, from, SegmentFormat.crc(b, from + SegmentFormat.CRC_SIZE, to));
      SegmentReader reader = new SegmentReader(new ByteArrayFile(b), s);
      for (long q = s.startSeqno(); q <= s.lastSeqno(); q++) {
        for (long hint : new long[] {t.hints.getOrDefault(q, -1L), -1}) {
          try {
            Document d = reader.read(q, hint);
            if (d != null) {
              assertEquals(q, d.seqno());
            }
          } catch (CorruptionException expected) {
            // fine
          }
        }
      }
      try {
        for (DocumentIterator it = reader.iterator(0); it.hasNext(); ) {
          assertNotNull(it.next());
        }
      } catch (CorruptionException expected) {
        // fine
      }
    }
  }
}
