package io.basaltdb.internal.segment;

import io.basaltdb.CorruptionException;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Review tests: damaged segments read through the block cache, and reopened by a writer. */
class SegmentReviewTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());

  static {
    System.out.println(
        "SegmentReviewTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  private static SegmentState build(ByteArrayFile file, TestDocs t, int docs) {
    return SegmentCorruptionTest.build(file, t, docs);
  }

  private static int readAll(SegmentReader r, TestDocs t, String what) {
    return SegmentCorruptionTest.readAll(r, t, what, true);
  }

  /**
   * Reopen a damaged file: a CorruptionException, or a writer that continues to a fully readable
   * segment.
   */
  @Test
  void everyFlippedByte_reopenEitherFailsOrContinuesCorrectly() {
    ByteArrayFile pristine = new ByteArrayFile();
    TestDocs t0 = new TestDocs(SEED + 1, 1);
    SegmentState s = build(pristine, t0, 40);
    byte[] bytes = pristine.contents();
    SplittableRandom r = new SplittableRandom(SEED + 1);
    SegmentOptions o = SegmentOptions.defaults().withBlockSize(300).withPageSize(64);
    for (int pos = 0; pos < s.tailOffset(); pos++) {
      ByteArrayFile f = new ByteArrayFile(bytes);
      f.flip(pos, 1 + r.nextInt(255));
      SegmentWriter w;
      try {
        w = SegmentWriter.reopen(f, s, o);
      } catch (CorruptionException e) {
        continue;
      }
      TestDocs t = new TestDocs(SEED + 2, 1);
      t.docs.putAll(t0.docs);
      t.hints.putAll(t0.hints);
      t.nextSeqno = t0.nextSeqno;
      t.appendRandom(w, 30);
      SegmentState s2 = w.checkpoint();
      readAll(new SegmentReader(f, s2), t, "reopened after flip at " + pos);
    }
  }
}
