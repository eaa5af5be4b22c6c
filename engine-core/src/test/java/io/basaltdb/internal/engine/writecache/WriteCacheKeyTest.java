package io.basaltdb.internal.engine.writecache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The write cache's store keys: keyspace and user key round-trip, and the order is (keyspace, key).
 */
class WriteCacheKeyTest {
  private static final int[] IDS = {
    0, 1, 2, 100, 0xEE, 0xEF, 0xF0, 0xF1, 0xFF, 0x100, 0xFFFF, 1 << 24, Integer.MAX_VALUE
  };

  @Test
  void storeKeys_roundTrip_andSortByKeyspaceThenKey() {
    SplittableRandom r = new SplittableRandom(7);
    byte[][] keys = new byte[40][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = new byte[r.nextInt(12)];
      for (int j = 0; j < keys[i].length; j++) keys[i][j] = (byte) r.nextInt(256);
    }
    for (int a : IDS) {
      for (byte[] ka : keys) {
        byte[] sa = WriteCache.storeKey(a, ka);
        assertEquals(a, WriteCache.keyspaceOf(sa));
        assertArrayEquals(ka, WriteCache.userKey(sa));
        assertEquals(a < WriteCache.LONG_KEYSPACE ? 1 + ka.length : 5 + ka.length, sa.length);
        for (int b : IDS) {
          for (byte[] kb : keys) {
            int expected = a != b ? Integer.compare(a, b) : Arrays.compareUnsigned(ka, kb);
            int got = Arrays.compareUnsigned(sa, WriteCache.storeKey(b, kb));
            assertEquals(
                Integer.signum(expected),
                Integer.signum(got),
                a + "/" + Arrays.toString(ka) + " vs " + b + "/" + Arrays.toString(kb));
          }
        }
      }
    }
    assertTrue(WriteCache.storeKey(3, new byte[] {1})[0] == 3, "a small id is one byte");
  }
}
