package io.basaltdb.internal.sstable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The bloom filter's false-positive rate, its absence of false negatives, and the stability of its
 * hash.
 */
class BloomFilterTest {
  @Test
  void falsePositiveRate_at10BitsPerKey_isBelow2Percent() {
    long seed = TableRoundTripTest.seed();
    SplittableRandom r = new SplittableRandom(seed);
    int n = 100_000;
    Set<String> present = new HashSet<>();
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) {
      String k = "user" + r.nextLong(1_000_000_000_000L);
      if (!present.add(k)) {
        i--;
        continue;
      }
      hashes[i] = BloomFilter.hash(k.getBytes(StandardCharsets.UTF_8));
    }
    BloomFilter f = parse(BloomFilter.build(hashes, n, 10));
    assertEquals(7, f.probes());
    for (long h : hashes) assertTrue(f.mayContain(h), "false negative, seed " + seed);
    int falsePositives = 0;
    int absent = 0;
    while (absent < 100_000) {
      String k = "user" + r.nextLong(1_000_000_000_000L);
      if (present.contains(k)) continue;
      absent++;
      if (f.mayContain(BloomFilter.hash(k.getBytes(StandardCharsets.UTF_8)))) falsePositives++;
    }
    double rate = falsePositives / (double) absent;
    System.out.printf("bloom FPR at 10 bits/key: %.4f%% (seed %d)%n", rate * 100, seed);
    assertTrue(rate < 0.02, "false positive rate " + rate + " with seed " + seed);
  }

  @Test
  void falsePositiveRate_ofSequentialBinaryKeys() {
    int n = 50_000;
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) hashes[i] = BloomFilter.hash(be(i));
    BloomFilter f = parse(BloomFilter.build(hashes, n, 10));
    int fp = 0;
    for (int i = n; i < 2 * n; i++) if (f.mayContain(BloomFilter.hash(be(i)))) fp++;
    assertTrue(fp < n * 0.02, "false positives " + fp + " of " + n);
  }

  @Test
  void smallFilters_haveNoFalseNegatives() {
    for (int n = 0; n < 20; n++) {
      for (int bits : new int[] {1, 2, 10, 64}) {
        long[] hashes = new long[n];
        for (int i = 0; i < n; i++) hashes[i] = BloomFilter.hash(new byte[] {(byte) i});
        BloomFilter f = parse(BloomFilter.build(hashes, n, bits));
        for (long h : hashes) assertTrue(f.mayContain(h), "n=" + n + " bits=" + bits);
      }
    }
  }

  /** The hash is part of the file format: these values must never change. */
  @Test
  void hash_isStable() {
    assertEquals(0xbcb1d07bdf199599L, BloomFilter.hash(new byte[0]));
    assertEquals(0x91ec3a37fc89a2daL, BloomFilter.hash("a".getBytes(StandardCharsets.UTF_8)));
    assertEquals(
        0xb1df5f9f3b2dcfc5L,
        BloomFilter.hash("0123456789abcdef!".getBytes(StandardCharsets.UTF_8)));
    assertEquals(7, BloomFilter.probes(10));
    assertEquals(1, BloomFilter.probes(1));
    assertEquals(30, BloomFilter.probes(64));
  }

  private static BloomFilter parse(byte[] block) {
    return BloomFilter.parse(block, block.length, 0, "test");
  }

  private static byte[] be(int i) {
    return new byte[] {(byte) (i >>> 24), (byte) (i >>> 16), (byte) (i >>> 8), (byte) i};
  }
}
