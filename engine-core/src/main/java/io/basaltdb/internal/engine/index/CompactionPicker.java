package io.basaltdb.internal.engine.index;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Chooses the key index's compaction jobs (Magma section 3.2; LevelDB's and RocksDB's leveled
 * scheme, with a tiered level 0). Level 0 holds the flushed tables, which overlap; levels 1 to
 * {@link KeyspaceFiles#MAX_LEVELS}{@code - 1} hold tables that do not, each level aiming at a
 * target size ({@link LevelTargets}). A job out of level n >= 1 takes one table (round-robin by
 * key) into level n+1, with every table of the output level its range touches; the neediest job
 * runs first.
 *
 * <p><b>Level 0 is tiered.</b> Values live in the log, so a write cache flushes a key index table
 * of a few hundred KB, some 50 times smaller than a RocksDB memtable's; merging every few of them
 * into a base level of tens of MB rewrites the base level for each MB added (an independent race
 * measured key index compaction writing as much as the log segments). So level 0 merges {@code
 * l0CompactionTrigger} neighbouring tables of about the same size (none more than twice another)
 * into one level-0 table, newest run first, and all of level 0 merges into the base level only once
 * it holds {@code l0BaseRatio} of the base level's bytes (and at least {@code l0CompactionTrigger}
 * tables), once it holds {@link #l0ForceCount} tables whatever their sizes, or once the store is
 * quiet (no flush for a while) if it holds a quarter of that share. A key index record then waits
 * in level 0 longer, so garbage collection learns later of the versions it supersedes: {@code
 * l0BaseRatio} trades key index writes for that delay.
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>Of two tables holding a key, the shallower holds the newer version; in level 0, the table
 *       earlier in level 0's order (newest first), which reads rely on. A level-0 merge takes
 *       neighbouring tables and its output takes their place in that order ({@link
 *       io.basaltdb.internal.engine.version.VersionEdit}), so tables flushed while it ran stay in
 *       front of it. A job out of level n >= 1 writes level n+1 only. A job into the base level
 *       takes all of level 0 and skips levels 1 to base-1 only because they are empty: the base
 *       level is never deeper than the shallowest non-empty level, and nothing fills the levels
 *       above it while the job runs (a job out of them would need tables there). A job into the
 *       base level takes level 0's tables only when none is in a job; level-0 merges of tables
 *       flushed later may run beside it, their outputs staying in front of its inputs until its
 *       commit removes them.
 *   <li>The tables of a level >= 1 never overlap: a job takes every table of its output level that
 *       its key range touches.
 *   <li>A tombstone is dropped only when no level below the output holds anything in the job's
 *       range; a level-0 merge never drops one (older level-0 tables and every level below may hold
 *       the key).
 *   <li>Two running jobs never share a table ({@link #busy}), so jobs running at once never overlap
 *       in key range on a level they write.
 * </ol>
 *
 * <p>Thread-safety: every method is synchronized on the picker; compaction threads call it.
 */
final class CompactionPicker {
  /**
   * The share of its due size (l0BaseRatio of the base level) at which a quiet store merges level
   * 0.
   */
  static final double QUIET_SHARE = 0.25;

  private final Options options;
  private final KeyspaceCatalog catalog;
  private final Set<Long> tablesWithTombstones;

  /** Tables taken by running jobs, by file number. Guarded by this. */
  private final Set<Long> busy = new HashSet<>();

  /**
   * Per keyspace, per level: the largest key of the table last compacted out of it. Guarded by
   * this.
   */
  private final Map<Integer, byte[][]> pointers = new HashMap<>();

  /**
   * Guarded keyspaces: the levels >= 1 a running job writes, as {@code keyspace * MAX_LEVELS +
   * level}. Guarded by this.
   */
  private final Set<Long> writing = new HashSet<>();

  /** When the expiry check looks again ({@link System#nanoTime}); guarded by this. */
  private long nextExpiryCheck = System.nanoTime();

  /** The job the last expiry check chose, so {@link #take} can count it; guarded by this. */
  private Job expiryPick;

  /** Jobs the expiry check started (a stat), or null. */
  private final java.util.concurrent.atomic.LongAdder expiryJobs;

  /**
   * What a job reads and where it writes: {@code next} are the tables of {@code outputLevel} it
   * merges; {@code move}: its one input moves down by a manifest change alone.
   */
  record Job(
      int keyspace,
      int level,
      int outputLevel,
      List<KeyspaceFiles.Table> inputs,
      List<KeyspaceFiles.Table> next,
      boolean bottom,
      double score,
      boolean move) {
    /** A leveled job: a table of level n >= 1 that overlaps nothing below moves. */
    Job(
        int keyspace,
        int level,
        int outputLevel,
        List<KeyspaceFiles.Table> inputs,
        List<KeyspaceFiles.Table> next,
        boolean bottom,
        double score) {
      this(keyspace, level, outputLevel, inputs, next, bottom, score, level >= 1 && next.isEmpty());
    }

    List<KeyspaceFiles.Table> all() {
      List<KeyspaceFiles.Table> out = new ArrayList<>(inputs);
      out.addAll(next);
      return out;
    }

    boolean trivialMove() {
      return move;
    }
  }

  /**
   * {@code tablesWithTombstones}: tables known to hold a tombstone (for quiet guarded stores), or
   * null.
   */
  CompactionPicker(Options options, KeyspaceCatalog catalog, Set<Long> tablesWithTombstones) {
    this(options, catalog, tablesWithTombstones, null);
  }

  /** {@code expiryJobs}: counts the jobs the expiry check starts, or null. */
  CompactionPicker(
      Options options,
      KeyspaceCatalog catalog,
      Set<Long> tablesWithTombstones,
      java.util.concurrent.atomic.LongAdder expiryJobs) {
    this.expiryJobs = expiryJobs;
    this.options = options;
    this.catalog = catalog;
    this.tablesWithTombstones = tablesWithTombstones == null ? Set.of() : tablesWithTombstones;
  }

  /**
   * The neediest job whose tables are free, its tables marked busy; or null. {@code quiet}: no
   * flush has happened for a while, so level 0 merges into the base level whatever its size.
   */
  synchronized Job take(Version v, boolean quiet) {
    Job j = pick(v, quiet);
    if (j != null) {
      if (j == expiryPick && expiryJobs != null) expiryJobs.increment();
      for (KeyspaceFiles.Table t : j.all()) busy.add(t.fileNumber());
      if (writesGuarded(v, j)) writing.add(writeKey(j.keyspace, j.outputLevel));
    }
    return j;
  }

  /**
   * A job is over (committed or not): its tables are free; a committed one moves its level's
   * pointer.
   */
  synchronized void done(Job job, boolean committed) {
    for (KeyspaceFiles.Table t : job.all()) busy.remove(t.fileNumber());
    writing.remove(writeKey(job.keyspace, job.outputLevel));
    if (!committed) return;
    byte[] last = null;
    for (KeyspaceFiles.Table t : job.inputs) {
      if (last == null || Arrays.compareUnsigned(t.largest(), last) > 0) last = t.largest();
    }
    pointers.computeIfAbsent(job.keyspace, k -> new byte[KeyspaceFiles.MAX_LEVELS][])[job.level] =
        last;
  }

  /**
   * Whether no job runs and none is needed in {@code v} (with {@code quiet} as in {@link #take}).
   */
  synchronized boolean idle(Version v, boolean quiet) {
    return busy.isEmpty() && writing.isEmpty() && pick(v, quiet) == null;
  }

  private static boolean writesGuarded(Version v, Job j) {
    KeyspaceFiles f = v.files.get(j.keyspace);
    return f != null && f.guarded() && j.outputLevel >= 1;
  }

  private static long writeKey(int ks, int level) {
    return (long) ks * KeyspaceFiles.MAX_LEVELS + level;
  }

  private Job pick(Version v, boolean quiet) {
    for (RangeRequest r : ranges) { // callers wait for these: first
      KeyspaceFiles f = v.files.get(r.keyspace);
      if (f == null || !catalog.isLive(r.keyspace)) continue;
      Job j = pickRange(f, r);
      if (j != null) return j;
    }
    Job best = null;
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      if (!catalog.isLive(e.getKey())) continue;
      Job j = pick(e.getKey(), e.getValue(), quiet);
      if (j != null && (best == null || j.score > best.score)) best = j;
    }
    Job expired = pickExpired(v);
    if (expired != null && (best == null || expired.score > best.score)) best = expired;
    return best;
  }

  // ---- the expiry check (Magma section 7.1; Options.expiryCheckMillis)
  // ----------------------------------

  /**
   * The periodic expiry check: the table of a level >= 1 whose histogram ({@link
   * io.basaltdb.internal.sstable.ExpiryHistogram}) says the largest share of its document bytes has
   * expired, if that share reaches {@code expiryCompactionRatio}, as a job scored {@code 1 +
   * share}, so it competes with the jobs the levels' sizes ask for. While candidates remain it
   * looks at every pick; once none does, again after {@code expiryCheckMillis}. Level 0 is left
   * out: its tables move down soon anyway, and a level-0 merge drops nothing. Returns null when no
   * table qualifies or its tables are busy.
   */
  private Job pickExpired(Version v) {
    long interval = options.expiryCheckMillis();
    long t0 = System.nanoTime();
    if (interval == 0 || t0 - nextExpiryCheck < 0) return null;
    long now = options.clock().getAsLong();
    Job best = null;
    boolean due = false; // a table passed the ratio (its job may have to wait for busy tables)
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      if (!catalog.isLive(e.getKey())) continue;
      KeyspaceFiles f = e.getValue();
      // Writers stalled on level 0: its job needs the base level's tables; expiry waits.
      if (f.level(0).size() >= options.l0StopWritesTrigger()) continue;
      for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
        for (KeyspaceFiles.Table t : f.level(l)) {
          var h = t.reader().expiry();
          if (h.isEmpty() || h.tableBytes() <= 0) continue;
          double share = (double) h.expiredBytes(now) / h.tableBytes();
          if (share < options.expiryCompactionRatio()) continue;
          due = true;
          if (busy.contains(t.fileNumber()) || (best != null && 1 + share <= best.score)) continue;
          Job j = expiryJob(e.getKey(), f, l, t, 1 + share);
          if (j != null) best = j;
        }
      }
    }
    if (!due) nextExpiryCheck = t0 + Math.min(interval, Long.MAX_VALUE / 4_000_000L) * 1_000_000L;
    expiryPick = best;
    return best;
  }

  /**
   * The job that reclaims the expired records of table {@code t} of level {@code l}: where nothing
   * deeper overlaps it, a rewrite of it in place at the bottom (its expired records dropped, their
   * documents reported to the delete list); else a job into the next level, which turns them into
   * tombstones on their way down. Under guards, the same with {@code t}'s whole guard ({@link
   * #push}).
   */
  private Job expiryJob(int ks, KeyspaceFiles f, int l, KeyspaceFiles.Table t, double score) {
    int last = KeyspaceFiles.MAX_LEVELS - 1;
    List<KeyspaceFiles.Table> inputs =
        f.guarded() ? f.guardTables(l, f.guards.guardOf(l, t.smallest())) : List.of(t);
    byte[][] range = range(inputs);
    boolean deeper = false;
    for (int d = l + 1; d <= last && !deeper; d++)
      deeper = !overlapping(f.level(d), range[0], range[1]).isEmpty();
    if (f.guarded()) {
      if (!noneBusy(inputs) || writing.contains(writeKey(ks, deeper ? l + 1 : l))) return null;
      // In place when nothing deeper overlaps (a guard merge, as the last level's), so nothing
      // moves down
      // level by level without dropping anything; else a push, which turns them into tombstones.
      return deeper
          ? push(ks, f, l, l + 1, inputs, score)
          : new Job(ks, l, l, List.copyOf(inputs), List.of(), true, score, false);
    }
    if (!deeper) return new Job(ks, l, l, inputs, List.of(), true, score, false);
    return job(ks, f, l, l + 1, inputs, score);
  }

  /** The neediest job of keyspace {@code ks}, or null; package-private for tests. */
  Job pick(int ks, KeyspaceFiles f, boolean quiet) {
    if (f.guarded()) return pickGuarded(ks, f, quiet);
    Job best = null;
    LevelTargets targets = LevelTargets.of(f, options);
    List<KeyspaceFiles.Table> l0 = f.level(0);
    if (l0.size() >= options.l0StopWritesTrigger()) {
      // Writers are stalled on this keyspace: its level-0 jobs go first, and no job out of the base
      // level may take the tables it needs meanwhile. While a level-0 job runs, the tables flushed
      // since merge among themselves, which brings the count down soonest.
      if (noneBusy(l0)) return job(ks, f, 0, targets.base, l0, Double.MAX_VALUE);
      Job j = tierMerge(ks, l0);
      return j == null ? null : new Job(ks, 0, 0, j.inputs(), j.next(), false, Double.MAX_VALUE);
    }
    double baseScore = baseScore(l0, f.levelBytes(targets.base), quiet);
    if (baseScore >= 1 && noneBusy(l0)) best = job(ks, f, 0, targets.base, l0, baseScore);
    // Not due, or level-0 or base level tables are in a job: the tables flushed meanwhile may still
    // merge.
    if (best == null) best = tierMerge(ks, l0);
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS - 1; l++) {
      double score = targets.score(l, f.levelBytes(l));
      if (score < 1 || (best != null && score <= best.score)) continue;
      Job j = pickInLevel(ks, f, l, score);
      if (j != null) best = j;
    }
    return best;
  }

  /** Level-0 tables at which all of level 0 merges into the base level, whatever their sizes. */
  int l0ForceCount() {
    return Math.max(
        options.l0CompactionTrigger(),
        options.l0StopWritesTrigger() - options.l0CompactionTrigger());
  }

  /**
   * How badly level 0 needs to merge into a base level of {@code baseBytes}; 1 or more means it
   * does. A quiet store merges a level 0 of at least a quarter of its due size (so a writer that
   * flushes every few seconds does not rewrite the base level at each flush).
   */
  private double baseScore(List<KeyspaceFiles.Table> l0, long baseBytes, boolean quiet) {
    if (l0.isEmpty()) return 0;
    double byCount = (double) l0.size() / l0ForceCount();
    long bytes = 0;
    for (KeyspaceFiles.Table t : l0) bytes += t.bytes();
    double bySize =
        baseBytes == 0 ? 1e6 : Math.min(1e6, bytes / (options.l0BaseRatio() * baseBytes));
    if (quiet && bySize >= QUIET_SHARE) return Math.max(1, byCount);
    if (l0.size() < options.l0CompactionTrigger()) return byCount;
    return Math.max(byCount, bySize);
  }

  /**
   * The newest run of at least {@code l0CompactionTrigger} neighbouring, free level-0 tables of
   * about the same size (the largest at most twice the smallest), at most twice that many, as a
   * level-0 merge; or null.
   */
  private Job tierMerge(int ks, List<KeyspaceFiles.Table> l0) {
    int want = options.l0CompactionTrigger();
    for (int i = 0; i + want <= l0.size(); i++) {
      long min = Long.MAX_VALUE, max = 0;
      int j = i;
      while (j < l0.size() && j - i < 2 * want && !busy.contains(l0.get(j).fileNumber())) {
        long b = l0.get(j).bytes();
        if (Math.max(max, b) > 2 * Math.min(min, b)) break;
        min = Math.min(min, b);
        max = Math.max(max, b);
        j++;
      }
      if (j - i >= want) {
        return new Job(
            ks, 0, 0, List.copyOf(l0.subList(i, j)), List.of(), false, (double) (j - i) / want);
      }
    }
    return null;
  }

  /** One table of level {@code l}, round-robin by key from where the last job left off. */
  private Job pickInLevel(int ks, KeyspaceFiles f, int l, double score) {
    List<KeyspaceFiles.Table> level = f.level(l);
    byte[] after = pointers.computeIfAbsent(ks, k -> new byte[KeyspaceFiles.MAX_LEVELS][])[l];
    int start = 0;
    if (after != null) {
      while (start < level.size()
          && Arrays.compareUnsigned(level.get(start).smallest(), after) <= 0) start++;
    }
    for (int i = 0; i < level.size(); i++) {
      KeyspaceFiles.Table t = level.get((start + i) % level.size());
      if (busy.contains(t.fileNumber())) continue;
      Job j = job(ks, f, l, l + 1, List.of(t), score);
      if (j != null) return j;
    }
    return null;
  }

  /**
   * The job merging {@code inputs} of level {@code l} into level {@code out}, or null if a table it
   * needs is busy.
   */
  private Job job(
      int ks, KeyspaceFiles f, int l, int out, List<KeyspaceFiles.Table> inputs, double score) {
    byte[][] range = range(inputs);
    byte[] lo = range[0], hi = range[1];
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

  /** The smallest and the largest key of {@code tables}. */
  static byte[][] range(List<KeyspaceFiles.Table> tables) {
    byte[] lo = null, hi = null;
    for (KeyspaceFiles.Table t : tables) {
      if (lo == null || Arrays.compareUnsigned(t.smallest(), lo) < 0) lo = t.smallest();
      if (hi == null || Arrays.compareUnsigned(t.largest(), hi) > 0) hi = t.largest();
    }
    return new byte[][] {lo, hi};
  }

  private static List<KeyspaceFiles.Table> overlapping(
      List<KeyspaceFiles.Table> level, byte[] lo, byte[] hi) {
    List<KeyspaceFiles.Table> out = new ArrayList<>();
    for (KeyspaceFiles.Table t : level) {
      if (Arrays.compareUnsigned(t.largest(), lo) >= 0
          && Arrays.compareUnsigned(t.smallest(), hi) <= 0) out.add(t);
    }
    return out;
  }

  // ---- the guarded layout (Options.keyIndexGuards; seed 002 sections III and VIII)
  // -----------------

  /**
   * The neediest job of a guarded keyspace. Level 0 is as in the leveled layout, except that its
   * merge into the base level reads no base table: its records are cut at the base level's guards
   * and added to them as new tables ({@link #push}). A guard of levels 1 to 5 is pushed whole into
   * the next level when it holds more than its share of the level's target bytes ({@link
   * #guardScore}) or {@code guardMaxTables} tables; a guard of the last level is merged in place at
   * {@code guardMaxTables} tables. Jobs writing one level of a keyspace run one at a time ({@link
   * #writing}), so a job choosing guards sees every table of its output level that will be there at
   * its commit ({@link GuardCutter}).
   *
   * <p>Invariants 1 and 3 hold as in the leveled layout: a guard job takes every table of its guard
   * (the guard's versions of a key are then all in the job, and the tables left in or pushed into
   * the guard meanwhile are newer than anything it moves down); its output goes in front of the
   * output level's order, or in place of its newest input for an in-place merge ({@link
   * io.basaltdb.internal.engine.version.VersionEdit}). Invariant 2 becomes: every table of a level
   * >= 1 lies inside one guard ({@link KeyspaceFiles}).
   */
  private Job pickGuarded(int ks, KeyspaceFiles f, boolean quiet) {
    LevelTargets targets = LevelTargets.of(f, options);
    List<KeyspaceFiles.Table> l0 = f.level(0);
    boolean baseFree = !writing.contains(writeKey(ks, targets.base));
    if (l0.size() >= options.l0StopWritesTrigger()) { // writers stalled: as in pick
      if (noneBusy(l0) && baseFree) return push(ks, f, 0, targets.base, l0, Double.MAX_VALUE);
      Job j = tierMerge(ks, l0);
      return j == null ? null : new Job(ks, 0, 0, j.inputs(), j.next(), false, Double.MAX_VALUE);
    }
    Job best = null;
    double baseScore = baseScore(l0, f.levelBytes(targets.base), quiet);
    if (baseScore >= 1 && noneBusy(l0) && baseFree)
      best = push(ks, f, 0, targets.base, l0, baseScore);
    if (best == null) best = tierMerge(ks, l0);
    int last = KeyspaceFiles.MAX_LEVELS - 1;
    for (int l = 1; l <= last; l++) {
      if (writing.contains(writeKey(ks, l == last ? l : l + 1))) continue;
      for (int g = 0; g < f.guardCount(l); g++) {
        List<KeyspaceFiles.Table> tables = f.guardTables(l, g);
        if (tables.isEmpty()) continue;
        double score = guardScore(f, targets, l, tables, quiet);
        if (score < 1 || (best != null && score <= best.score) || !noneBusy(tables)) continue;
        best =
            l == last
                ? new Job(ks, l, l, List.copyOf(tables), List.of(), true, score, false)
                : push(ks, f, l, l + 1, tables, score);
      }
    }
    return best;
  }

  /**
   * How badly a guard of level {@code l} holding {@code tables} needs a job; 1 or more means it
   * does. Levels 1 to 5: its bytes over its share of the level's target (the target over the
   * level's guards; section VIII.B), or its tables over {@code guardMaxTables}, whichever is
   * higher; a level that should be empty drains first, as in the leveled layout. The last level:
   * its tables over {@code guardMaxTables}, and only with two or more (merging one table drops
   * nothing); on a quiet store also a guard of half that many, or of two whose newer tables hold
   * tombstones, so deletes and the versions they hide reach the bottom (and garbage collection
   * learns of them) once writes stop, without a rewrite of the whole last level at every pause.
   * Tables count beyond those the guard's bytes fill at {@code tableTargetBytes}.
   */
  private double guardScore(
      KeyspaceFiles f,
      LevelTargets targets,
      int l,
      List<KeyspaceFiles.Table> tables,
      boolean quiet) {
    long bytes = 0;
    for (KeyspaceFiles.Table t : tables) bytes += t.bytes();
    // Tables beyond those its bytes need at tableTargetBytes, plus one: a guard merged into tables
    // cut at
    // that size counts as one, or a guard bigger than guardMaxTables of them would merge again and
    // again.
    long needed =
        Math.max(1, (bytes + options.tableTargetBytes() - 1) / options.tableTargetBytes());
    long runs = Math.max(1, tables.size() - needed + 1);
    double byCount = (double) runs / options.guardMaxTables();
    if (l == KeyspaceFiles.MAX_LEVELS - 1) {
      if (tables.size() < 2) return 0;
      boolean settle =
          quiet
              && runs >= 2
              && (runs >= options.guardMaxTables() / 2 || newerHoldTombstones(tables));
      return settle ? Math.max(1, byCount) : byCount;
    }
    long target = targets.target(l);
    if (target == 0) return LevelTargets.DRAIN_SCORE + (KeyspaceFiles.MAX_LEVELS - l);
    double expected = Math.max(1.0, (double) target / f.guardCount(l));
    return Math.max(byCount, bytes / expected);
  }

  /**
   * Whether a table of a guard other than its oldest (the last, newest first) is known to hold a
   * tombstone.
   */
  private boolean newerHoldTombstones(List<KeyspaceFiles.Table> guard) {
    for (int i = 0; i < guard.size() - 1; i++) {
      if (tablesWithTombstones.contains(guard.get(i).fileNumber())) return true;
    }
    return false;
  }

  /**
   * A push of {@code inputs} (all of level 0, or all of a guard) of level {@code l} into level
   * {@code out}: no table of {@code out} is read. One table that fits inside one guard of {@code
   * out} moves there by a manifest change (section VIII.A). Tombstones go only if nothing at {@code
   * out} or below overlaps the inputs' range, since the output does not merge the tables already at
   * {@code out}.
   */
  private Job push(
      int ks, KeyspaceFiles f, int l, int out, List<KeyspaceFiles.Table> inputs, double score) {
    byte[][] range = range(inputs);
    byte[] lo = range[0], hi = range[1];
    if (l >= 1 && inputs.size() == 1 && f.guards.guardOf(out, lo) == f.guards.guardOf(out, hi)) {
      return new Job(ks, l, out, List.copyOf(inputs), List.of(), false, score, true);
    }
    boolean bottom = true;
    for (int d = out; d < KeyspaceFiles.MAX_LEVELS && bottom; d++) {
      bottom = overlapping(f.level(d), lo, hi).isEmpty();
    }
    return new Job(ks, l, out, List.copyOf(inputs), List.of(), bottom, score, false);
  }

  // ---- range compactions (Basalt.compactRange)
  // ---------------------------------------------------------------

  /**
   * A range compaction a caller waits for: every version at or below {@code seqno} of keyspace
   * {@code keyspace} with a key in {@code [from, to]} ({@code to} null: no upper bound) reaches the
   * deepest level that holds its keys, its table rewritten since the request (tables numbered below
   * {@code fileCeiling} were written before it), so the tombstones and expired records there are
   * dropped and the versions they hide reported to the delete list.
   */
  record RangeRequest(int keyspace, byte[] from, byte[] to, long seqno, long fileCeiling) {}

  /** The range compactions callers wait for; guarded by this. */
  private final List<RangeRequest> ranges = new ArrayList<>();

  synchronized void addRange(RangeRequest r) {
    ranges.add(r);
  }

  synchronized void removeRange(RangeRequest r) {
    ranges.remove(r);
  }

  /** Whether {@code r} is complete in {@code v}: no table of its range needs a job any more. */
  synchronized boolean rangeDone(Version v, RangeRequest r) {
    KeyspaceFiles f = v.files.get(r.keyspace);
    return f == null || rangeWork(f, r) < 0;
  }

  /**
   * The level of the shallowest table of {@code r}'s range that still needs a job, or -1: one in
   * level 0, one above a deeper table its keys overlap, or one written before the request. Tables
   * holding only versions newer than the request are left alone.
   */
  private int rangeWork(KeyspaceFiles f, RangeRequest r) {
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      for (KeyspaceFiles.Table t : f.level(l)) {
        if (needsRangeJob(f, r, l, t)) return l;
      }
    }
    return -1;
  }

  /** Whether table {@code t} of level {@code l} still needs a job of range compaction {@code r}. */
  private static boolean needsRangeJob(
      KeyspaceFiles f, RangeRequest r, int l, KeyspaceFiles.Table t) {
    if (!overlaps(t, r.from, r.to) || t.reader().info().minSeqno() > r.seqno) return false;
    if (l == 0 || t.fileNumber() < r.fileCeiling) return true;
    for (int d = l + 1; d < KeyspaceFiles.MAX_LEVELS; d++) {
      if (!overlapping(f.level(d), t.smallest(), t.largest()).isEmpty()) return true;
    }
    return false;
  }

  private static boolean overlaps(KeyspaceFiles.Table t, byte[] from, byte[] to) {
    return Arrays.compareUnsigned(t.largest(), from) >= 0
        && (to == null || Arrays.compareUnsigned(t.smallest(), to) <= 0);
  }

  /**
   * The next job of range compaction {@code r}, or null if none is needed or the tables it needs
   * are busy: level 0 goes whole into the base level; a table of a deeper level moves into the
   * next, or, where nothing deeper overlaps it, is rewritten in place (as the expiry check's jobs:
   * under guards, its whole guard).
   */
  private Job pickRange(KeyspaceFiles f, RangeRequest r) {
    int l = rangeWork(f, r);
    if (l < 0) return null;
    int ks = r.keyspace;
    if (l == 0) {
      List<KeyspaceFiles.Table> l0 = f.level(0);
      int base = LevelTargets.of(f, options).base;
      if (!noneBusy(l0)) return null;
      if (!f.guarded()) return job(ks, f, 0, base, l0, Double.MAX_VALUE);
      return writing.contains(writeKey(ks, base))
          ? null
          : push(ks, f, 0, base, l0, Double.MAX_VALUE);
    }
    for (KeyspaceFiles.Table t : f.level(l)) {
      if (!needsRangeJob(f, r, l, t) || busy.contains(t.fileNumber())) continue;
      Job j = expiryJob(ks, f, l, t, Double.MAX_VALUE);
      if (j != null) return j;
    }
    return null;
  }

  private boolean noneBusy(List<KeyspaceFiles.Table> tables) {
    for (KeyspaceFiles.Table t : tables) {
      if (busy.contains(t.fileNumber())) return false;
    }
    return true;
  }
}
