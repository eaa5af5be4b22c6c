package io.basaltdb.internal.engine.index;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.KeyspaceFiles;

/**
 * The size targets of one keyspace's levels 1 to {@link KeyspaceFiles#MAX_LEVELS}{@code - 1}, and
 * its base level, the one level 0 compacts into. Derived from the levels' sizes at every pick, so
 * the base level moves as the keyspace grows or shrinks. Immutable.
 *
 * <p>Dynamic targets follow RocksDB's {@code level_compaction_dynamic_level_bytes}: the last level
 * aims at the size of the largest level (usually itself; after a shrink or a switch from static
 * targets a level above may be larger), each level above at a {@code levelMultiplier}th of the one
 * below. The levels whose target falls below {@code level1Bytes / levelMultiplier} get target 0:
 * they should be empty, and any tables they hold are drained down first. The base level is the
 * shallowest level with a nonzero target (so its target is below about {@code level1Bytes}), or the
 * shallowest non-empty level if that is shallower, since level 0 must not skip over data (invariant
 * 1 of {@link CompactionPicker}); an empty keyspace's base level is the last. A keyspace so big
 * that even level 1's target would exceed {@code level1Bytes} gets the static targets.
 */
public final class LevelTargets {
  /**
   * The score of a non-empty level whose target is 0: above any size-based score, below a stalled
   * level 0.
   */
  static final double DRAIN_SCORE = 1e12;

  /** The level level-0 jobs write. */
  public final int base;

  /** Target bytes by level; 0 for a level that should be empty. Index 0 is unused. */
  private final long[] bytes;

  private LevelTargets(int base, long[] bytes) {
    this.base = base;
    this.bytes = bytes;
  }

  public static LevelTargets of(KeyspaceFiles f, Options o) {
    long[] sizes = new long[KeyspaceFiles.MAX_LEVELS];
    for (int l = 1; l < sizes.length; l++) sizes[l] = f.levelBytes(l);
    return of(sizes, o.level1Bytes(), o.levelMultiplier(), o.dynamicLevelTargets());
  }

  /** The targets for levels of {@code sizes} bytes (index 0, level 0, is ignored). */
  public static LevelTargets of(long[] sizes, long level1Bytes, int multiplier, boolean dynamic) {
    int last = KeyspaceFiles.MAX_LEVELS - 1;
    long[] t = new long[KeyspaceFiles.MAX_LEVELS];
    long largest = 0;
    int shallowest = last; // the shallowest non-empty level below level 0, or the last
    for (int l = last; l >= 1; l--) {
      if (sizes[l] > 0) shallowest = l;
      largest = Math.max(largest, sizes[l]);
    }
    if (dynamic) {
      t[last] = largest;
      for (int l = last - 1; l >= 1; l--) t[l] = t[l + 1] / multiplier;
    }
    if (!dynamic || t[1] > level1Bytes) {
      t[1] = level1Bytes;
      for (int l = 2; l <= last; l++) { // saturating: a huge level1Bytes must not wrap around
        t[l] = t[l - 1] > Long.MAX_VALUE / multiplier ? Long.MAX_VALUE : t[l - 1] * multiplier;
      }
      return new LevelTargets(1, t);
    }
    long least = level1Bytes / multiplier;
    int ideal = last;
    while (ideal > 1 && t[ideal - 1] >= least) ideal--;
    for (int l = 1; l < ideal; l++) t[l] = 0;
    return new LevelTargets(Math.min(ideal, shallowest), t);
  }

  /** Target bytes of level {@code l >= 1}; 0 if it should be empty. */
  public long target(int l) {
    return bytes[l];
  }

  /**
   * How badly level {@code l} of {@code size} bytes needs a job out of it; 1 or more means it does.
   * Draining a level that should be empty comes first, shallowest first, so level 0 gets to write
   * deeper soon.
   */
  public double score(int l, long size) {
    if (size == 0) return 0;
    return bytes[l] == 0 ? DRAIN_SCORE + (KeyspaceFiles.MAX_LEVELS - l) : (double) size / bytes[l];
  }
}
