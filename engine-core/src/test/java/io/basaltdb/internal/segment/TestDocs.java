package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Map;
import java.util.NavigableMap;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * Random documents and a model of a segment's contents (seqno -> document, plus the hint each got),
 * for the segment tests. Sizes mix empty values, small and block-sized ones, compressible and
 * random bytes.
 *
 * <p>Thread-safety: none; one per test.
 */
final class TestDocs {
  final SplittableRandom random;
  final NavigableMap<Long, Document> docs = new TreeMap<>();
  final Map<Long, Long> hints = new TreeMap<>();
  long nextSeqno;

  TestDocs(long seed, long startSeqno) {
    this.random = new SplittableRandom(seed);
    this.nextSeqno = startSeqno;
  }

  /** A random document at the next seqno, after a random gap of 0 to 2 unused seqnos. */
  Document next() {
    nextSeqno += random.nextInt(3);
    long seqno = nextSeqno++;
    int keyLength = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(40);
    int valueLength =
        switch (random.nextInt(6)) {
          case 0 -> 0;
          case 1 -> 1 + random.nextInt(10);
          case 2, 3 -> random.nextInt(300);
          case 4 -> random.nextInt(2000);
          default -> 3000 + random.nextInt(6000);
        };
    return new Document(seqno, bytes(keyLength), bytes(valueLength), random.nextInt(10) == 0);
  }

  /** Half the arrays are random bytes, half repetitive (compressible) text. */
  byte[] bytes(int n) {
    byte[] b = new byte[n];
    if (random.nextBoolean()) {
      for (int i = 0; i < n; i++) {
        b[i] = (byte) random.nextInt(256);
      }
    } else {
      int period = 1 + random.nextInt(16);
      for (int i = 0; i < n; i++) {
        b[i] = (byte) ('a' + (i % period));
      }
    }
    return b;
  }

  /** Appends {@code d} and records it and its hint in the model. */
  long append(SegmentWriter w, Document d) {
    long hint = w.append(d.seqno(), d.key(), d.value(), d.tombstone());
    docs.put(d.seqno(), d);
    hints.put(d.seqno(), hint);
    return hint;
  }

  /**
   * Appends {@code n} random documents as one key-ordered run ({@link SegmentWriter#appendRun}):
   * seqnos as {@link #next} gives them, stored in key order (ties by seqno). Returns them in the
   * order stored.
   */
  java.util.List<Document> appendRun(SegmentWriter w, int n) {
    java.util.List<Document> run = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) run.add(next());
    run.sort(
        (a, b) -> {
          int c = java.util.Arrays.compareUnsigned(a.key(), b.key());
          return c != 0 ? c : Long.compare(a.seqno(), b.seqno());
        });
    long[] h = new long[n];
    int[] sizes = new int[n];
    w.appendRun(run(run), h, sizes);
    for (int i = 0; i < n; i++) {
      docs.put(run.get(i).seqno(), run.get(i));
      hints.put(run.get(i).seqno(), h[i]);
    }
    return run;
  }

  /** {@code docs} as a segment run. */
  static SegmentWriter.Run run(java.util.List<Document> docs) {
    int[] bySeqno =
        java.util.stream.IntStream.range(0, docs.size())
            .boxed()
            .sorted(java.util.Comparator.comparingLong(i -> docs.get(i).seqno()))
            .mapToInt(Integer::intValue)
            .toArray();
    return new SegmentWriter.Run() {
      @Override
      public int size() {
        return docs.size();
      }

      @Override
      public int bySeqno(int j) {
        return bySeqno[j];
      }

      @Override
      public long seqno(int i) {
        return docs.get(i).seqno();
      }

      @Override
      public byte[] key(int i) {
        return docs.get(i).key();
      }

      @Override
      public byte[] value(int i) {
        return docs.get(i).value();
      }

      @Override
      public int valueOffset(int i) {
        return 0;
      }

      @Override
      public int valueLength(int i) {
        return docs.get(i).value().length;
      }

      @Override
      public boolean tombstone(int i) {
        return docs.get(i).tombstone();
      }

      @Override
      public long expiry(int i) {
        return docs.get(i).expiry();
      }
    };
  }

  void appendRandom(SegmentWriter w, int n) {
    for (int i = 0; i < n; i++) {
      append(w, next());
    }
  }

  /**
   * Reads every seqno from {@code first - 2} to {@code last + 2} both with its hint and without.
   */
  static void checkAllReads(
      SegmentReader r, NavigableMap<Long, Document> model, Map<Long, Long> hints) {
    SegmentState s = r.state();
    for (long q = s.startSeqno() - 2; q <= s.lastSeqno() + 2; q++) {
      Document expected = q <= s.lastSeqno() ? model.get(q) : null;
      long hint = hints.getOrDefault(q, -1L);
      if (expected == null) {
        assertNull(r.read(q, hint), "seqno " + q);
        assertNull(r.read(q, -1), "seqno " + q);
      } else {
        assertEquals(expected, r.read(q, hint), "seqno " + q + " with hint");
        assertEquals(expected, r.read(q, -1), "seqno " + q + " through the index");
      }
    }
  }

  void checkAllReads(SegmentReader r) {
    checkAllReads(r, docs, hints);
  }
}
