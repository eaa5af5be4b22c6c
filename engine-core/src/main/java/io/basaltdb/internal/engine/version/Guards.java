package io.basaltdb.internal.engine.version;

import io.basaltdb.internal.sstable.TableReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The guard keys of one keyspace's key index levels 1 to {@link KeyspaceFiles#MAX_LEVELS}{@code -
 * 1} under {@link io.basaltdb.Options#keyIndexGuards} (GravelDB/PebblesDB's fragmented LSM, seed
 * 002 section III). A level's guard keys, ascending, split its key space into disjoint guards:
 * guard 0, the sentinel, holds the keys below the first guard key; guard {@code i >= 1} the keys
 * from guard key {@code i - 1} up to the next. Every table of a level lies inside one guard; the
 * tables inside a guard may overlap (see {@link KeyspaceFiles}).
 *
 * <p>Which keys become guards: a key is a candidate of level {@code l} when the low {@code lastBits
 * + (MAX_LEVELS - 1 - l) * step} bits of a mix of its hash are 0 (section VII.B), so deeper levels
 * have more, smaller guards and a candidate of a level is one of every deeper level. Compaction
 * commits candidates as guards (see {@link io.basaltdb.internal.engine.index.GuardCutter}); the
 * hash is not part of the format, because the committed keys are stored in the manifest.
 *
 * <p>Thread-safety: immutable.
 */
public final class Guards {
  static final Guards EMPTY = new Guards(emptyLevels());

  /**
   * Guard keys by level (index 0, level 0, is always empty), each ascending, distinct and
   * non-empty.
   */
  private final byte[][][] keys;

  private Guards(byte[][][] keys) {
    this.keys = keys;
  }

  private static byte[][][] emptyLevels() {
    byte[][][] k = new byte[KeyspaceFiles.MAX_LEVELS][][];
    Arrays.fill(k, new byte[0][]);
    return k;
  }

  /**
   * Guards with {@code keys} by level (index 0 must be empty); throws {@link
   * IllegalArgumentException} unless each level's keys are non-empty, distinct and ascending (a
   * decoder reports that as corruption).
   */
  static Guards of(List<List<byte[]>> keys) {
    if (keys.size() != KeyspaceFiles.MAX_LEVELS)
      throw new IllegalArgumentException("guard levels: " + keys.size());
    byte[][][] k = new byte[KeyspaceFiles.MAX_LEVELS][][];
    for (int l = 0; l < k.length; l++) {
      k[l] = keys.get(l).toArray(new byte[0][]);
      if (l == 0 && k[l].length > 0) throw new IllegalArgumentException("level 0 has no guards");
      for (int i = 0; i < k[l].length; i++) {
        if (k[l][i].length == 0)
          throw new IllegalArgumentException("an empty guard key at level " + l);
        if (i > 0 && Arrays.compareUnsigned(k[l][i - 1], k[l][i]) >= 0) {
          throw new IllegalArgumentException("guard keys of level " + l + " out of order");
        }
      }
    }
    return new Guards(k);
  }

  /** The number of guard keys of level {@code l}; the level has one more guard (the sentinel). */
  int count(int l) {
    return keys[l].length;
  }

  /** The guard keys of level {@code l}, ascending. */
  public List<byte[]> keys(int l) {
    return List.of(keys[l]);
  }

  /** The guard key starting guard {@code g >= 1} of level {@code l}. */
  public byte[] key(int l, int g) {
    return keys[l][g - 1];
  }

  /** The guard of level {@code l} holding {@code key}: the number of guard keys not above it. */
  public int guardOf(int l, byte[] key) {
    byte[][] k = keys[l];
    int lo = 0, hi = k.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(k[mid], key) <= 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * These guards with {@code added} keys at level {@code l} (duplicates of existing keys ignored).
   */
  Guards withAdded(int l, List<byte[]> added) {
    if (added.isEmpty()) return this;
    List<byte[]> merged = new ArrayList<>(List.of(keys[l]));
    for (byte[] a : added) {
      if (a.length == 0) throw new IllegalArgumentException("an empty guard key");
      int i = guardOf(l, a);
      if (i > 0 && Arrays.equals(keys[l][i - 1], a)) continue;
      merged.add(a);
    }
    merged.sort(Arrays::compareUnsigned);
    List<byte[]> distinct = new ArrayList<>();
    for (byte[] m : merged) {
      if (distinct.isEmpty() || !Arrays.equals(distinct.get(distinct.size() - 1), m))
        distinct.add(m);
    }
    byte[][][] k = keys.clone();
    k[l] = distinct.toArray(new byte[0][]);
    return new Guards(k);
  }

  /** Whether no level has a guard key. */
  boolean isEmpty() {
    for (byte[][] k : keys) {
      if (k.length > 0) return false;
    }
    return true;
  }

  /**
   * Whether {@code key} is a candidate guard key of level {@code l >= 1} with {@code lastBits} at
   * the last level and {@code step} more per level above. The empty key never is.
   */
  public static boolean isCandidate(byte[] key, int l, int lastBits, int step) {
    if (key.length == 0) return false;
    int bits = Math.min(62, lastBits + (KeyspaceFiles.MAX_LEVELS - 1 - l) * step);
    return (mix(TableReader.keyHash(key)) & ((1L << bits) - 1)) == 0;
  }

  /**
   * A 64-bit finalizer (MurmurHash3's), so guard bits do not follow the bloom filter's probe bits.
   */
  private static long mix(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Guards g && Arrays.deepEquals(keys, g.keys);
  }

  @Override
  public int hashCode() {
    return Arrays.deepHashCode(keys);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder("Guards[");
    for (int l = 1; l < keys.length; l++) b.append(l == 1 ? "" : ", ").append(keys[l].length);
    return b.append(']').toString();
  }
}
