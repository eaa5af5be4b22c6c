package io.basaltdb.internal.engine.index;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.Guards;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Where a compaction writing a guarded level cuts its output into tables, and which of the keys it
 * writes become new guards of that level (see {@link Guards}). Fed the output's keys in ascending
 * order, {@link #startsTable} says whether a key must start a new table: it reaches the level's
 * next committed guard key, or it is a candidate guard key ({@link Guards#isCandidate}) that
 * becomes a guard now.
 *
 * <p>A candidate becomes a guard only where no table of the level that the job leaves in place
 * spans it (its smallest key below the candidate, its largest not): committing it would otherwise
 * leave that table across a guard boundary. PebblesDB commits the guard anyway and rewrites such
 * tables in the guard's next compaction; choosing guards where the level is empty (a push into an
 * emptied range, the first push into a level) or rewritten whole (an in-place merge of the last
 * level's guard) needs no extra writes. No other job writes the level while this one runs ({@link
 * CompactionPicker}), so the tables checked are all the level will hold at the commit, less those a
 * push out of it removes.
 *
 * <p>Thread-safety: one compaction thread.
 */
final class GuardCutter {
  private final KeyspaceFiles files;
  private final int level;
  private final Set<Long> inputs = new HashSet<>();
  private final int lastBits;
  private final int step;
  private final List<byte[]> committed;
  private final List<byte[]> added = new ArrayList<>();

  /** The index in {@code committed} of the first guard key above the last key seen. */
  private int next;

  /**
   * For a job writing {@code level >= 1} of guarded {@code files} (its version), removing {@code
   * inputs}.
   */
  GuardCutter(KeyspaceFiles files, int level, List<KeyspaceFiles.Table> inputs, Options options) {
    this.files = files;
    this.level = level;
    for (KeyspaceFiles.Table t : inputs) this.inputs.add(t.fileNumber());
    this.lastBits = options.guardLastLevelBits();
    this.step = options.guardBitsStep();
    this.committed = files.guards.keys(level);
  }

  /** Whether {@code key} (above every key passed before) must start a new output table. */
  boolean startsTable(byte[] key) {
    boolean crossed = false;
    while (next < committed.size() && Arrays.compareUnsigned(committed.get(next), key) <= 0) {
      next++;
      crossed = true;
    }
    if (crossed) return true;
    if (!Guards.isCandidate(key, level, lastBits, step) || spanned(key)) return false;
    added.add(key);
    return true;
  }

  /** The guard keys chosen, ascending: they go in the job's commit with the tables cut at them. */
  List<byte[]> added() {
    return added;
  }

  private boolean spanned(byte[] key) {
    for (KeyspaceFiles.Table t : files.candidates(level, key)) {
      if (inputs.contains(t.fileNumber())) continue;
      if (Arrays.compareUnsigned(t.smallest(), key) < 0
          && Arrays.compareUnsigned(t.largest(), key) >= 0) return true;
    }
    return false;
  }
}
