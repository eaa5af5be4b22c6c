package io.basaltdb.internal.engine.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * {@link BatchOrder}: the newest write of each key in store key order, as a sorted map of store
 * keys says, for keys that share long prefixes, hold zero bytes, are prefixes of one another or
 * empty, across short and long keyspace ids, and for input already in order.
 */
class BatchOrderTest {
  /** A key of 0-11 bytes from a small alphabet (0, 1, 0xFF), so prefixes and zeros are common. */
  static byte[] key(Random r) {
    byte[] k = new byte[r.nextInt(12)];
    byte[] alphabet = {0, 1, (byte) 0xFF};
    for (int i = 0; i < k.length; i++) k[i] = alphabet[r.nextInt(alphabet.length)];
    return k;
  }

  static void check(Batch b) {
    TreeMap<byte[], Integer> newest = new TreeMap<>(Arrays::compareUnsigned);
    for (int i = 0; i < b.count; i++) newest.put(WriteCache.storeKey(b.keyspaces[i], b.key(i)), i);
    int[] ops = BatchOrder.newestInKeyOrder(b);
    assertEquals(newest.size(), ops.length);
    int j = 0;
    for (Map.Entry<byte[], Integer> e : newest.entrySet()) {
      assertEquals(e.getValue(), ops[j], "operation at " + j);
      assertArrayEquals(e.getKey(), WriteCache.storeKey(b.keyspaces[ops[j]], b.key(ops[j])));
      j++;
    }
  }

  @Test
  void newestInKeyOrder_matchesASortedMap() {
    int[] keyspaces = {0, 3, 239, 240, 70_000};
    for (long seed = 0; seed < 40; seed++) {
      Random r = new Random(seed);
      Batch b = new Batch(0);
      int n = 1 + r.nextInt(3000);
      boolean one = seed % 3 == 0;
      for (int i = 0; i < n; i++) {
        int ks = one ? 7 : keyspaces[r.nextInt(keyspaces.length)];
        if (r.nextInt(8) == 0) b.add(ks, Batch.DELETE, key(r), null);
        else b.add(ks, Batch.PUT, key(r), new byte[] {(byte) i});
      }
      check(b);
    }
  }

  /** Keys of up to 64 KiB sharing most of their bytes: sorted without deep recursion. */
  @Test
  void longKeysWithLongSharedPrefixes_sortInBoundedDepth() {
    Random r = new Random(3);
    Batch b = new Batch(0);
    byte[] base = new byte[65_000];
    for (int i = 0; i < 400; i++) {
      byte[] k = Arrays.copyOf(base, base.length - r.nextInt(40));
      if (r.nextBoolean()) k[k.length - 1 - r.nextInt(8)] = (byte) r.nextInt(3);
      b.add(2, Batch.PUT, k, new byte[] {(byte) i});
    }
    check(b);
  }

  @Test
  void anOrderedBatch_staysAsItIs() {
    Batch b = new Batch(0);
    for (int i = 0; i < 1000; i++) {
      b.add(1, Batch.PUT, String.format("k%05d", i).getBytes(), new byte[3]);
    }
    int[] ops = BatchOrder.newestInKeyOrder(b);
    for (int i = 0; i < ops.length; i++) assertEquals(i, ops[i]);
    check(b);
  }
}
