package io.basaltdb.internal.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Copies between the heap and native memory, small, odd-sized, and longer than one copy step. */
class MemCopyTest {
  @Test
  void copiesBetweenHeapAndNative_areExact_atEveryOffsetAndAcrossCopySteps() {
    Random rnd = new Random(7);
    for (int len : new int[] {0, 1, 7, 8, 33, 1000, (1 << 20) - 3, (1 << 20) + 5, 3 << 20}) {
      byte[] src = new byte[len + 5];
      rnd.nextBytes(src);
      long a = Mem.allocateUnpooled(len + 8, this);
      try {
        Mem.copyFromArray(src, 3, a + 1, len);
        byte[] back = new byte[len + 9];
        Mem.copyToArray(a + 1, back, 4, len);
        assertArrayEquals(
            Arrays.copyOfRange(src, 3, 3 + len),
            Arrays.copyOfRange(back, 4, 4 + len),
            "length " + len);
        // The (base, offset) forms, on the heap and in native memory.
        byte[] heap = new byte[len + 2];
        Mem.copyFromArray(src, 1, heap, Mem.ARRAY_BASE + 2, len);
        byte[] out = new byte[len];
        Mem.copyToArray(heap, Mem.ARRAY_BASE + 2, out, 0, len);
        assertArrayEquals(Arrays.copyOfRange(src, 1, 1 + len), out, "heap, length " + len);
        Mem.copyFromArray(src, 0, null, a, len);
        Mem.copyToArray(null, a, out, 0, len);
        assertArrayEquals(Arrays.copyOfRange(src, 0, len), out, "native, length " + len);
      } finally {
        Mem.freeUnpooled(a, len + 8, this);
      }
    }
  }
}
