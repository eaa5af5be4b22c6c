package io.basaltdb.internal.engine;

import io.basaltdb.Options;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Chooses leveled compaction jobs (Magma section 3.2; LevelDB's and RocksDB's leveled scheme). Level 0
 * holds the flushed tables, which overlap; levels 1 to {@link KeyspaceFiles#MAX_LEVELS}{@code - 1} hold
 * tables that do not, each level aiming at a target size ({@link LevelTargets}). A keyspace needs
 * compaction when its level 0 reaches {@code l0CompactionTrigger} tables or a level outgrows its
 * target; the neediest job runs first. A job takes all of level 0 into the base level, or one table of
 * level n (round-robin by key) into level n+1, with every table of the output level its range touches.
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li>Of two tables holding a key, the shallower holds the newer version (in level 0, the newer
 *       table), which reads rely on. A job out of level n >= 1 writes level n+1 only. A level-0 job
 *       skips levels 1 to base-1 only because they are empty: the base level is never deeper than the
 *       shallowest non-empty level, and nothing fills the levels above it while the job runs (a job out
 *       of them would need tables there; level-0 jobs never run two at once, each taking all of level 0).
 *   <li>The tables of a level >= 1 never overlap: a job takes every table of its output level that its
 *       key range touches.
 *   <li>A tombstone is dropped only when no level below the output holds anything in the job's range.
 *   <li>Two running jobs never share a table ({@link #busy}), so jobs running at once never overlap in
 *       key range on a level they write.
 * </ol>
 *
 * <p>Thread-safety: every method is synchronized on the picker; compaction threads call it.
 */
final class CompactionPicker {
  private final Options options;
  private final KeyspaceCatalog catalog;
  /** Tables taken by running jobs, by file number. Guarded by this. */
  private final Set<Long> busy = new HashSet<>();
  /** Per keyspace, per level: the largest key of the table last compacted out of it. Guarded by this. */
  private final Map<Integer, byte[][]> pointers = new HashMap<>();

  /** What a job reads and where it writes: {@code next} are the tables of {@code outputLevel} it merges. */
  record Job(int keyspace, int level, int outputLevel, List<KeyspaceFiles.Table> inputs,
      List<KeyspaceFiles.Table> next, boolean bottom, double score) {
    List<KeyspaceFiles.Table> all() {
      List<KeyspaceFiles.Table> out = new ArrayList<>(inputs);
      out.addAll(next);
      return out;
    }

    /** A table of level n >= 1 that overlaps nothing below moves down by a manifest change alone. */
    boolean trivialMove() {
      return level >= 1 && next.isEmpty();
    }
  }

  CompactionPicker(Options options, KeyspaceCatalog catalog) {
    this.options = options;
    this.catalog = catalog;
  }

  /** The neediest job whose tables are free, its tables marked busy; or null. */
  synchronized Job take(Version v) {
    Job j = pick(v);
    if (j != null) {
      for (KeyspaceFiles.Table t : j.all()) busy.add(t.fileNumber());
    }
    return j;
  }

  /** A job is over (committed or not): its tables are free; a committed one moves its level's pointer. */
  synchronized void done(Job job, boolean committed) {
    for (KeyspaceFiles.Table t : job.all()) busy.remove(t.fileNumber());
    if (!committed) return;
    byte[] last = null;
    for (KeyspaceFiles.Table t : job.inputs) {
      if (last == null || Arrays.compareUnsigned(t.largest(), last) > 0) last = t.largest();
    }
    pointers.computeIfAbsent(job.keyspace, k -> new byte[KeyspaceFiles.MAX_LEVELS][])[job.level] = last;
  }

  /** Whether no job runs and none is needed in {@code v}. */
  synchronized boolean idle(Version v) {
    return busy.isEmpty() && pick(v) == null;
  }

  private Job pick(Version v) {
    Job best = null;
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      if (!catalog.isLive(e.getKey())) continue;
      Job j = pick(e.getKey(), e.getValue());
      if (j != null && (best == null || j.score > best.score)) best = j;
    }
    return best;
  }

  private Job pick(int ks, KeyspaceFiles f) {
    Job best = null;
    LevelTargets targets = LevelTargets.of(f, options);
    List<KeyspaceFiles.Table> l0 = f.level(0);
    double l0Score = (double) l0.size() / options.l0CompactionTrigger();
    if (l0.size() >= options.l0StopWritesTrigger()) {
      // Writers are stalled on this keyspace: its level-0 job goes first, and no job out of the base
      // level may take the tables it needs meanwhile.
      return noneBusy(l0) ? job(ks, f, 0, targets.base, l0, Double.MAX_VALUE) : null;
    }
    if (l0Score >= 1 && noneBusy(l0)) {
      best = job(ks, f, 0, targets.base, l0, l0Score);
    }
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS - 1; l++) {
      double score = targets.score(l, f.levelBytes(l));
      if (score < 1 || (best != null && score <= best.score)) continue;
      Job j = pickInLevel(ks, f, l, score);
      if (j != null) best = j;
    }
    return best;
  }

  /** One table of level {@code l}, round-robin by key from where the last job left off. */
  private Job pickInLevel(int ks, KeyspaceFiles f, int l, double score) {
    List<KeyspaceFiles.Table> level = f.level(l);
    byte[] after = pointers.computeIfAbsent(ks, k -> new byte[KeyspaceFiles.MAX_LEVELS][])[l];
    int start = 0;
    if (after != null) {
      while (start < level.size() && Arrays.compareUnsigned(level.get(start).smallest(), after) <= 0) start++;
    }
    for (int i = 0; i < level.size(); i++) {
      KeyspaceFiles.Table t = level.get((start + i) % level.size());
      if (busy.contains(t.fileNumber())) continue;
      Job j = job(ks, f, l, l + 1, List.of(t), score);
      if (j != null) return j;
    }
    return null;
  }

  /** The job merging {@code inputs} of level {@code l} into level {@code out}, or null if a table it needs is busy. */
  private Job job(int ks, KeyspaceFiles f, int l, int out, List<KeyspaceFiles.Table> inputs, double score) {
    byte[] lo = null, hi = null;
    for (KeyspaceFiles.Table t : inputs) {
      if (lo == null || Arrays.compareUnsigned(t.smallest(), lo) < 0) lo = t.smallest();
      if (hi == null || Arrays.compareUnsigned(t.largest(), hi) > 0) hi = t.largest();
    }
    List<KeyspaceFiles.Table> next = overlapping(f.level(out), lo, hi);
    if (!noneBusy(next)) return null;
    for (KeyspaceFiles.Table t : next) { // the output covers the next level's tables whole
      if (Arrays.compareUnsigned(t.smallest(), lo) < 0) lo = t.smallest();
      if (Arrays.compareUnsigned(t.largest(), hi) > 0) hi = t.largest();
    }
    // Tombstones can go only if no deeper level holds anything in the output's key range.
    boolean bottom = true;
    for (int d = out + 1; d < KeyspaceFiles.MAX_LEVELS && bottom; d++) {
      bottom = overlapping(f.level(d), lo, hi).isEmpty();
    }
    return new Job(ks, l, out, List.copyOf(inputs), next, bottom, score);
  }

  private static List<KeyspaceFiles.Table> overlapping(List<KeyspaceFiles.Table> level, byte[] lo, byte[] hi) {
    List<KeyspaceFiles.Table> out = new ArrayList<>();
    for (KeyspaceFiles.Table t : level) {
      if (Arrays.compareUnsigned(t.largest(), lo) >= 0 && Arrays.compareUnsigned(t.smallest(), hi) <= 0) out.add(t);
    }
    return out;
  }

  private boolean noneBusy(List<KeyspaceFiles.Table> tables) {
    for (KeyspaceFiles.Table t : tables) {
      if (busy.contains(t.fileNumber())) return false;
    }
    return true;
  }
}
