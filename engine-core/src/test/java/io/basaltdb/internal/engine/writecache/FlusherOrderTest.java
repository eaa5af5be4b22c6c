package io.basaltdb.internal.engine.writecache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The flusher writes documents in seqno order: {@link
 * io.basaltdb.internal.engine.write.Flusher#seqnoOrder} against a boxed sort.
 */
class FlusherOrderTest {
  private static int[] expected(long[] seqnos) {
    return IntStream.range(0, seqnos.length)
        .boxed()
        .sorted(Comparator.comparingLong(i -> seqnos[i]))
        .mapToInt(Integer::intValue)
        .toArray();
  }

  @Test
  void seqnoOrder_matchesASortOfTheSeqnos_forNarrowAndWideSpans() {
    Random rnd = new Random(42);
    for (long span : new long[] {1, 1000, (1L << 31) - 1, 1L << 31, 1L << 40, Long.MAX_VALUE / 2}) {
      for (int n : new int[] {0, 1, 2, 17, 5000}) {
        long base = 1 + rnd.nextInt(1 << 20);
        long[] seqnos =
            rnd.longs(n * 4L, 0, Math.max(span, n * 4L))
                .distinct()
                .limit(n)
                .map(q -> base + q)
                .toArray();
        if (seqnos.length < n) continue; // too few distinct values in a tiny span
        if (n >= 2) { // make the span exact: one at each end
          seqnos[0] = base;
          seqnos[n - 1] = base + Math.max(span, n) - 1;
          if (Arrays.stream(seqnos).distinct().count() < n) continue;
        }
        assertArrayEquals(
            expected(seqnos), WriteCache.seqnoOrder(seqnos), "span " + span + ", " + n + " seqnos");
      }
    }
  }
}
