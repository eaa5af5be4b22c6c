package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;

/**
 * The table's bloom filter: {@code m} bits, {@code k} probes per key at {@code (h1 + i * h2) mod m}
 * for {@code i = 0..k-1} (Kirsch-Mitzenmacher double hashing), where {@code h1} is {@link #hash} of
 * the key and {@code h2} a second mix of {@code h1}. With {@code b} bits per key, {@code k =
 * round(b ln 2)}, which gives a false-positive rate of about {@code 0.6185^b}: 0.8% at 10 bits per
 * key.
 *
 * <p>Filter block contents (docs/format.md, "Filter block"): the bit array, {@code m / 8} bytes,
 * bit {@code j} at byte {@code j / 8}, bit {@code j % 8}; then one byte {@code k}. {@link #hash}
 * and the probe sequence are part of the on-disk format: changing them needs a new format version.
 *
 * <p>Thread-safety: an instance is immutable; the static builder is stateless.
 */
final class BloomFilter {
  static final int MIN_BITS = 64;
  static final int MAX_PROBES = 30;

  private static final long C1 = 0x87C37B91114253D5L;
  private static final long C2 = 0x4CF5AD432745937FL;
  private static final long SEED = 0x5BA5_A17B_100F_11E7L;
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  /**
   * The filter block as read: the bit array in {@code [0, numBits / 8)}, then k (and the trailer).
   */
  private final byte[] bits;

  private final long numBits;
  private final int probes;

  private BloomFilter(byte[] bits, long numBits, int probes) {
    this.bits = bits;
    this.numBits = numBits;
    this.probes = probes;
  }

  /**
   * A Murmur3-style 64-bit hash: 8-byte little-endian words mixed into the state as in
   * MurmurHash3's x64 body, the 0-7 byte tail as one more word, then the length and the fmix64
   * finalizer. Stable: it is part of the file format.
   */
  static long hash(byte[] key) {
    int n = key.length;
    long h = SEED;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      h ^= mixWord(Format.getLongLE(key, i));
      h = Long.rotateLeft(h, 27) * 5 + 0x52DCE729L;
    }
    long tail = 0;
    for (int shift = 0; i < n; i++, shift += 8) tail |= (key[i] & 0xFFL) << shift;
    h ^= mixWord(tail);
    h ^= n;
    return fmix64(h);
  }

  private static long mixWord(long k) {
    k *= C1;
    k = Long.rotateLeft(k, 31);
    return k * C2;
  }

  private static long fmix64(long h) {
    h ^= h >>> 33;
    h *= 0xFF51AFD7ED558CCDL;
    h ^= h >>> 33;
    h *= 0xC4CEB9FE1A85EC53L;
    return h ^ (h >>> 33);
  }

  /** Probes per key for {@code bitsPerKey} bits per key: round(bitsPerKey * ln 2), within 1..30. */
  static int probes(int bitsPerKey) {
    return (int) Math.max(1, Math.min(MAX_PROBES, Math.round(bitsPerKey * Math.log(2))));
  }

  /** Encodes the filter block for the first {@code count} of {@code hashes}. */
  static byte[] build(long[] hashes, int count, int bitsPerKey) {
    long wantBits = Math.max(MIN_BITS, (long) count * bitsPerKey);
    long numBytes = (wantBits + 7) / 8;
    if (numBytes > Integer.MAX_VALUE - 64)
      throw new IllegalStateException("bloom filter too large: " + numBytes);
    byte[] block = new byte[(int) numBytes + 1];
    long m = numBytes * 8;
    int k = probes(bitsPerKey);
    for (int i = 0; i < count; i++) {
      long h1 = hashes[i];
      long h2 = fmix64(h1 + GOLDEN);
      long x = h1;
      for (int j = 0; j < k; j++) {
        long bit = (x & Long.MAX_VALUE) % m;
        block[(int) (bit >>> 3)] |= (byte) (1 << (bit & 7));
        x += h2;
      }
    }
    block[(int) numBytes] = (byte) k;
    return block;
  }

  /**
   * Reads verified filter block contents {@code block[0, len)} found at {@code fileOffset}; bytes
   * after {@code len} (the trailer) are ignored. Keeps {@code block}, not a copy.
   */
  static BloomFilter parse(byte[] block, int len, long fileOffset, String file) {
    if (len < MIN_BITS / 8 + 1) {
      throw new CorruptionException(
          file, fileOffset, "filter block of " + len + " bytes is too short");
    }
    int k = block[len - 1] & 0xFF;
    if (k < 1 || k > MAX_PROBES) {
      throw new CorruptionException(file, fileOffset + len - 1, "filter has " + k + " probes");
    }
    return new BloomFilter(block, (long) (len - 1) * 8, k);
  }

  /** False only if no key with this {@link #hash} was added. */
  boolean mayContain(long h1) {
    return mayContain(
        bits, io.basaltdb.internal.memory.Mem.ARRAY_BASE, (int) (numBits / 8) + 1, h1);
  }

  /**
   * As {@link #mayContain(long)} for filter block contents (bit array, then k) of {@code len} bytes
   * at {@code (base, a)} in {@link io.basaltdb.internal.memory.Mem}'s addressing: the block cache's
   * copy. The contents must have been checked by {@link #parse}.
   */
  static boolean mayContain(Object base, long a, int len, long h1) {
    long m = (long) (len - 1) * 8;
    int k = io.basaltdb.internal.memory.Mem.lpUnsignedByte(base, a + len - 1);
    long h2 = fmix64(h1 + GOLDEN);
    long x = h1;
    for (int j = 0; j < k; j++) {
      long bit = (x & Long.MAX_VALUE) % m;
      if ((io.basaltdb.internal.memory.Mem.lpUnsignedByte(base, a + (bit >>> 3)) & (1 << (bit & 7)))
          == 0) {
        return false;
      }
      x += h2;
    }
    return true;
  }

  int probes() {
    return probes;
  }

  long numBits() {
    return numBits;
  }
}
