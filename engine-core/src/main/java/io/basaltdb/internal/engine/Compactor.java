package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.sstable.TableInfo;
import io.basaltdb.internal.sstable.TableIterator;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Leveled compaction of each keyspace's key index (Magma section 3.2; LevelDB's and RocksDB's leveled
 * scheme). Level 0 holds the flushed tables, which overlap; levels 1 to {@link
 * KeyspaceFiles#MAX_LEVELS}{@code - 1} hold tables that do not, each level aiming at a target size
 * ({@link LevelTargets}). A keyspace needs compaction when its level 0 reaches {@code
 * l0CompactionTrigger} tables or a level outgrows its target; the neediest job runs first.
 *
 * <p>Targets follow the data by default (RocksDB's {@code level_compaction_dynamic_level_bytes}): the
 * last level aims at the size of the largest level, each level above at a {@code levelMultiplier}th of
 * the one below, and the levels whose target would fall below {@code level1Bytes / levelMultiplier} are
 * kept empty. Level 0 compacts into the shallowest level that is not (the base level), so a small store
 * writes straight into the last level and a big one keeps most of its data there. A level that should
 * be empty but holds tables (a store written with static targets, or one that shrank) gets target 0 and
 * is drained before anything but a stalled level 0. With {@code dynamicLevelTargets(false)} level n aims
 * at {@code level1Bytes * levelMultiplier^(n-1)} and level 0 compacts into level 1.
 *
 * <p>A job merges its input tables (all of level 0, or one table of level n taken round-robin by key)
 * with the tables of its output level (the base level for level 0, n+1 otherwise) that overlap them,
 * keeps the newest record of each key, and writes the output level's tables cut at {@code
 * tableTargetBytes}. Every record it drops (an older version of a key, or a tombstone that reaches the
 * bottom of the tree) goes to the engine's {@link Engine.DiscardListener} before the manifest that drops
 * it is committed. A table of level n >= 1 that overlaps nothing below moves down by a manifest change
 * alone. Only key index records move: the documents stay in the log segments, whose garbage the
 * discarded versions describe.
 *
 * <p>Invariants:
 * <ol>
 *   <li>Of two tables holding a key, the shallower holds the newer version (in level 0, the newer
 *       table), which reads rely on. A job out of level n >= 1 writes level n+1 only. A level-0 job
 *       skips levels 1 to base-1 only because they are empty: the base level is never deeper than the
 *       shallowest non-empty level, and nothing fills the levels above it while the job runs (a job out
 *       of them would need tables there; level-0 jobs never run two at once, each taking all of level 0).
 *   <li>The tables of a level >= 1 never overlap: a job takes every table of its output level that its
 *       key range touches.
 *   <li>A tombstone is dropped only when no level below the output holds anything in the job's range.
 * </ol>
 *
 * <p>Concurrency: {@code compactionThreads} threads run jobs. Picking happens under {@link #signal},
 * which also guards the set of tables in use, so two jobs never share a table, and a job takes every
 * table of the next level its key range touches, so jobs running at once never overlap in key range
 * on a level they write. Committing happens under the engine's manifest lock, against the version
 * current at that moment (a flush may have added level-0 tables meanwhile). The version a job read is
 * pinned until it is done, so its input tables stay open.
 */
final class Compactor {
  private final Engine engine;
  private final Thread[] threads;
  private final Object signal = new Object();
  /** Guarded by signal. */
  private boolean stopping;
  /** Tables taken by running jobs, by file number. Guarded by signal. */
  private final Set<Long> busy = new HashSet<>();
  /** Per keyspace, per level: the largest key of the table last compacted out of it. Guarded by signal. */
  private final Map<Integer, byte[][]> pointers = new HashMap<>();
  /** Set when a version was freed: some tables may now be deletable. */
  private final AtomicBoolean cleanup = new AtomicBoolean();

  /** What a job reads and where it writes: {@code next} are the tables of {@code outputLevel} it merges. */
  record Job(int keyspace, int level, int outputLevel, List<KeyspaceFiles.Table> inputs,
      List<KeyspaceFiles.Table> next, boolean bottom, double score) {
    List<KeyspaceFiles.Table> all() {
      List<KeyspaceFiles.Table> out = new ArrayList<>(inputs);
      out.addAll(next);
      return out;
    }
  }

  Compactor(Engine engine) {
    this.engine = engine;
    this.threads = new Thread[engine.options.compactionThreads()];
    for (int i = 0; i < threads.length; i++) {
      threads[i] = new Thread(this::run, "basalt-compactor-" + i);
      threads[i].setDaemon(true);
    }
  }

  void start() {
    for (Thread t : threads) t.start();
  }

  /** Asks the threads to look for work (after a flush or a compaction). */
  void wake() {
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  /** A version was freed; the tables only it named can go. */
  void tablesMayBeObsolete() {
    cleanup.set(true);
    wake();
  }

  /** Stops the threads; a running job stops at its next table boundary and leaves no trace. */
  void stop() {
    synchronized (signal) {
      stopping = true;
      signal.notifyAll();
    }
    for (Thread t : threads) {
      if (t.isAlive() && t != Thread.currentThread()) {
        try {
          t.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /**
   * Waits until no job runs and none is needed (or the store failed or is stopping); true if idle.
   * For tests and tools that want the tree settled.
   */
  boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    synchronized (signal) {
      while (true) {
        if (stopping || engine.failure() != null) return false;
        if (busy.isEmpty()) {
          Version v = engine.acquire();
          try {
            if (pick(v) == null) return true;
          } finally {
            v.release();
          }
        }
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) return false;
        signal.wait(Math.min(left, 50));
      }
    }
  }

  private boolean stopping() {
    synchronized (signal) {
      return stopping;
    }
  }

  private void run() {
    try {
      loop();
    } catch (BasaltException e) {
      engine.fail(e);
    } catch (RuntimeException | Error e) {
      engine.fail(new BasaltException("compaction thread failed: " + e, e));
    } finally {
      engine.pipeline.wakeStalled(); // writers stalled on level 0 see the failure instead of waiting
    }
  }

  private void loop() {
    while (true) {
      if (cleanup.getAndSet(false)) {
        synchronized (engine.manifestLock) {
          if (engine.failure() == null && !stopping()) engine.deleteObsolete(); // expired checkpoints too
        }
      }
      Job job = null;
      Version v = null;
      synchronized (signal) {
        while (true) {
          if (stopping) return;
          if (engine.failure() == null) {
            Version picked = engine.acquire();
            try {
              job = pick(picked);
              // The job needs the tables, not the write caches: a version of tables only keeps them on
              // disk without pinning flushed write caches for the length of the job.
              if (job != null) v = engine.newVersion(null, null, picked.files);
            } finally {
              picked.release();
            }
            if (job != null) break;
          }
          if (cleanup.get()) break;
          try {
            signal.wait(200);
          } catch (InterruptedException e) {
            return;
          }
        }
        if (job != null) {
          for (KeyspaceFiles.Table t : job.all()) busy.add(t.fileNumber());
        }
      }
      if (job == null) continue; // cleanup first
      try {
        runJob(job);
      } catch (BasaltException e) {
        engine.fail(e);
      } catch (RuntimeException | Error e) {
        engine.fail(new BasaltException("compaction failed: " + e, e));
      } finally {
        v.release();
        synchronized (signal) {
          for (KeyspaceFiles.Table t : job.all()) busy.remove(t.fileNumber());
          signal.notifyAll();
        }
        engine.pipeline.wakeStalled();
      }
    }
  }

  // ---- picking -------------------------------------------------------------------------------------------

  /** The neediest job whose tables are free, or null. Caller holds signal. */
  private Job pick(Version v) {
    Job best = null;
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      if (!engine.isLive(e.getKey())) continue;
      Job j = pick(e.getKey(), e.getValue());
      if (j != null && (best == null || j.score > best.score)) best = j;
    }
    return best;
  }

  private Job pick(int ks, KeyspaceFiles f) {
    Job best = null;
    LevelTargets targets = LevelTargets.of(f, engine.options);
    List<KeyspaceFiles.Table> l0 = f.level(0);
    double l0Score = (double) l0.size() / engine.options.l0CompactionTrigger();
    if (l0.size() >= engine.options.l0StopWritesTrigger()) {
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

  /**
   * The size targets of one keyspace's levels 1 to {@link KeyspaceFiles#MAX_LEVELS}{@code - 1}, and its
   * base level, the one level 0 compacts into. Derived from the levels' sizes at every pick, so the base
   * level moves as the keyspace grows or shrinks. Immutable.
   *
   * <p>Dynamic targets follow RocksDB's {@code level_compaction_dynamic_level_bytes}: the last level aims
   * at the size of the largest level (usually itself; after a shrink or a switch from static targets a
   * level above may be larger), each level above at a {@code levelMultiplier}th of the one below. The
   * levels whose target falls below {@code level1Bytes / levelMultiplier} get target 0: they should be
   * empty, and any tables they hold are drained down first. The base level is the shallowest level with a
   * nonzero target (so its target is below about {@code level1Bytes}), or the shallowest non-empty level
   * if that is shallower, since level 0 must not skip over data (invariant 1 of {@link Compactor}); an
   * empty keyspace's base level is the last. A keyspace so big that even level 1's target would exceed
   * {@code level1Bytes} gets the static targets.
   */
  static final class LevelTargets {
    /** The score of a non-empty level whose target is 0: above any size-based score, below a stalled level 0. */
    static final double DRAIN_SCORE = 1e12;
    /** The level level-0 jobs write. */
    final int base;
    /** Target bytes by level; 0 for a level that should be empty. Index 0 is unused. */
    private final long[] bytes;

    private LevelTargets(int base, long[] bytes) {
      this.base = base;
      this.bytes = bytes;
    }

    static LevelTargets of(KeyspaceFiles f, Options o) {
      long[] sizes = new long[KeyspaceFiles.MAX_LEVELS];
      for (int l = 1; l < sizes.length; l++) sizes[l] = f.levelBytes(l);
      return of(sizes, o.level1Bytes(), o.levelMultiplier(), o.dynamicLevelTargets());
    }

    /** The targets for levels of {@code sizes} bytes (index 0, level 0, is ignored). */
    static LevelTargets of(long[] sizes, long level1Bytes, int multiplier, boolean dynamic) {
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
    long target(int l) {
      return bytes[l];
    }

    /**
     * How badly level {@code l} of {@code size} bytes needs a job out of it; 1 or more means it does.
     * Draining a level that should be empty comes first, shallowest first, so level 0 gets to write
     * deeper soon.
     */
    double score(int l, long size) {
      if (size == 0) return 0;
      return bytes[l] == 0 ? DRAIN_SCORE + (KeyspaceFiles.MAX_LEVELS - l) : (double) size / bytes[l];
    }
  }

  // ---- running -------------------------------------------------------------------------------------------

  private void runJob(Job job) {
    List<KeyspaceFiles.Table> outputs;
    long[] discards; // (seqno, size) pairs
    int discardCount;
    long read = 0;
    if (job.level >= 1 && job.next.isEmpty()) {
      // Nothing below overlaps: move the table down unchanged (its tombstones go in a later merge).
      KeyspaceFiles.Table t = job.inputs.get(0);
      outputs = List.of(new KeyspaceFiles.Table(t.fileNumber(), job.outputLevel(), t.reader()));
      discards = new long[0];
      discardCount = 0;
    } else {
      Merge m = new Merge(job);
      try {
        m.run();
      } catch (RuntimeException | Error e) {
        m.abandon();
        throw e;
      }
      if (m.aborted) {
        m.abandon();
        return;
      }
      outputs = m.outputs;
      discards = m.discards;
      discardCount = m.discardCount;
      for (KeyspaceFiles.Table t : job.all()) read += t.bytes();
      engine.stats.compactionBytesRead.add(read);
    }
    commit(job, outputs, discards, discardCount);
  }

  private void commit(Job job, List<KeyspaceFiles.Table> outputs, long[] discards, int discardCount) {
    boolean moved = outputs.size() == 1 && outputs.get(0).fileNumber() == job.inputs.get(0).fileNumber();
    synchronized (engine.manifestLock) {
      if (!engine.isLive(job.keyspace) || engine.failure() != null) { // dropped, or the store failed meanwhile
        if (!moved) discardOutputs(job.keyspace, outputs);
        return;
      }
      // The listener hears of each dropped version before the commit; the counters go in the commit
      // itself, so a crash in between leaves neither the drop nor its count (see DiscardListener).
      Engine.DiscardListener listener = engine.discardListener();
      long discardedBytes = 0;
      for (int i = 0; i < discardCount; i++) {
        listener.discarded(job.keyspace, discards[2 * i], (int) discards[2 * i + 1]);
        discardedBytes += discards[2 * i + 1];
      }
      Set<Long> removed = new HashSet<>();
      for (KeyspaceFiles.Table t : job.all()) removed.add(t.fileNumber());
      Map<Integer, KeyspaceFiles> now = new HashMap<>(engine.current().files);
      now.put(job.keyspace, now.get(job.keyspace).withCompaction(removed, outputs));
      Manifest cur = engine.manifest;
      Map<Integer, Manifest.Counters> delta =
          Map.of(job.keyspace, Manifest.Counters.discarded(discardCount, discardedBytes));
      engine.commitManifest(engine.nextManifest(now, delta, cur.flushedSeqno(), cur.walStart()));
      engine.applyLock.lock();
      try {
        Version v = engine.current();
        engine.install(engine.newVersion(v.active, v.immutable, now));
      } finally {
        engine.applyLock.unlock();
      }
      for (KeyspaceFiles.Table t : outputs) {
        engine.openTables.put(t.fileNumber(), new Engine.OpenTable(job.keyspace, t));
      }
      engine.stats.compactions.increment();
      if (moved) engine.stats.trivialMoves.increment();
      engine.deleteObsolete();
    }
    synchronized (signal) {
      byte[] last = null;
      for (KeyspaceFiles.Table t : job.inputs) {
        if (last == null || Arrays.compareUnsigned(t.largest(), last) > 0) last = t.largest();
      }
      pointers.computeIfAbsent(job.keyspace, k -> new byte[KeyspaceFiles.MAX_LEVELS][])[job.level] = last;
    }
  }

  private void discardOutputs(int ks, List<KeyspaceFiles.Table> outputs) {
    for (KeyspaceFiles.Table t : outputs) {
      engine.flusher.forget(t.reader());
      t.reader().close();
      engine.storage.delete(KeyspaceFiles.tableName(ks, t.fileNumber()));
    }
  }

  /** One merge: reads the job's tables in key order, writes the kept records, collects the discarded. */
  private final class Merge {
    final Job job;
    final List<KeyspaceFiles.Table> outputs = new ArrayList<>();
    long[] discards = new long[64];
    int discardCount;
    boolean aborted;
    private TableWriter writer;
    private StorageFile file;
    private long fileNumber;

    Merge(Job job) {
      this.job = job;
    }

    void run() {
      List<TableIterator> its = new ArrayList<>();
      try {
        for (KeyspaceFiles.Table t : job.all()) {
          TableIterator it = t.reader().iterator();
          its.add(it);
          it.seekFirst();
        }
        KeyRecord best = new KeyRecord();
        long records = 0;
        while (true) {
          byte[] min = null;
          for (TableIterator it : its) {
            if (it.valid() && (min == null || Arrays.compareUnsigned(it.key(), min) < 0)) min = it.key();
          }
          if (min == null) break;
          best.seqno = -1;
          for (TableIterator it : its) {
            if (!it.valid() || !Arrays.equals(it.key(), min)) continue;
            if (it.seqno() > best.seqno) {
              if (best.seqno >= 0) discard(best.seqno, best.docSize);
              best.set(min, it.seqno(), it.docSize(), it.tombstone(), it.hint());
            } else {
              discard(it.seqno(), it.docSize());
            }
            it.next();
          }
          if (best.tombstone && job.bottom) {
            discard(best.seqno, best.docSize); // nothing older below it to hide
          } else {
            write(best);
          }
          if (++records % 1024 == 0 && stopping()) {
            aborted = true;
            return;
          }
        }
        finishOutput();
      } finally {
        for (TableIterator it : its) it.close();
      }
    }

    private void discard(long seqno, int size) {
      if (2 * discardCount + 2 > discards.length) discards = Arrays.copyOf(discards, discards.length * 2);
      discards[2 * discardCount] = seqno;
      discards[2 * discardCount + 1] = size;
      discardCount++;
    }

    private void write(KeyRecord r) {
      if (writer == null) {
        fileNumber = engine.nextFileNumber.getAndIncrement();
        String name = KeyspaceFiles.tableName(job.keyspace, fileNumber);
        engine.storage.mkdirs("keyspaces/" + job.keyspace + "/index");
        file = engine.storage.create(name);
        writer = new TableWriter(file, TableOptions.defaults().withBlockSize(engine.options.blockSize())
            .withBloomBitsPerKey(engine.options.bloomBitsPerKey()));
      }
      writer.add(r.key, r.seqno, r.docSize, r.tombstone, r.hint);
      if (writer.dataSize() >= engine.options.tableTargetBytes()) finishOutput();
    }

    private void finishOutput() {
      if (writer == null) return;
      TableInfo info = writer.finish();
      file.close();
      writer = null;
      file = null;
      engine.stats.compactionBytesWritten.add(info.fileSize());
      TableReader reader = engine.flusher.openTable(KeyspaceFiles.tableName(job.keyspace, fileNumber));
      outputs.add(new KeyspaceFiles.Table(fileNumber, job.outputLevel(), reader));
    }

    /** Closes and deletes what this merge wrote (a failure or a stop before the commit). */
    void abandon() {
      try {
        if (file != null) {
          file.close();
          engine.storage.delete(KeyspaceFiles.tableName(job.keyspace, fileNumber));
        }
        discardOutputs(job.keyspace, outputs);
      } catch (RuntimeException ignored) {
        // the files are orphans then, deleted at the next open; the first error is the one reported
      }
    }
  }
}
