package io.basaltdb.internal.engine.index;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.DiscardListener;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.base.WorkerEvents;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.read.MergeSources;
import io.basaltdb.internal.engine.read.MergingIterator;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.storage.Storage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs the key index's leveled compaction jobs that {@link CompactionPicker} chooses (Magma section
 * 3.2). A job merges its tables through the {@link MergingIterator}, which keeps the newest record
 * of each key and drops a tombstone only when the job writes the bottom of its key range; the kept
 * records go to new tables of the output level, cut at {@code tableTargetBytes} ({@link
 * TableOutput}). Every record dropped goes to the {@link DiscardListener} and into the counters of
 * the {@link VersionEdit} that commits the job, unless it was reported already (the version above
 * it carries {@code olderReported}). A table that overlaps nothing below moves down by an edit
 * alone. Only key index records move: the documents stay in the log segments, whose garbage the
 * discarded versions describe. Under key index guards ({@link Options#keyIndexGuards}) a job
 * writing a level below 0 cuts its output at that level's guards and commits the new guard keys it
 * chose ({@link GuardCutter}) with its tables.
 *
 * <p><b>Revealing merges.</b> A record in the tiered level 0 waits for the merge into the base
 * level (about once per base level's half of new records) before the version it supersedes is
 * dropped and reported; meanwhile that version is garbage the delete list does not know of, and
 * collection, steered by an estimate of it ({@link
 * io.basaltdb.internal.engine.version.ShadowedBytes}), rewrites segments at their known
 * fragmentation, copying documents that are in fact stale (in Magma's update workload, half of
 * round 1's collection writes). So a level-0 merge whose inputs are at least 1/{@link
 * Options#l0RevealRatio} of the older tables also finds, for each record it writes whose next older
 * version is not reported yet, that version in the older tables ({@link OlderVersions}: forward
 * cursors, one pass over them, no write) and reports it in its own commit, as a drop: delete list
 * level 0, segment garbage, counters; the record gets {@code olderReported}, so the later merge
 * that drops the version does so silently. Tombstones found below are left for the bottom merge, as
 * always. Magma reports superseded versions with the key index lookup each write makes for its item
 * counts (section 7.2); {@link io.basaltdb.Options#flushLookups} does that per flush, at a lookup
 * per key.
 *
 * <p>Concurrency: {@code compactionThreads} threads run jobs. The version a job read is pinned
 * until it is done (as a version of tables only, so a long job does not hold flushed write caches),
 * so its input tables stay open; the edit applies to whatever is current at commit (a flush may
 * have added level-0 tables meanwhile). The threads also delete obsolete files when a version is
 * freed, so no reader's thread does file I/O.
 */
public final class Compactor {
  private final Options options;
  private final Storage storage;
  private final Versions versions;
  private final VersionSet versionSet;
  private final TableCache tables;
  private final KeyspaceCatalog catalog;
  private final EngineStats stats;
  private final StoreState state;
  private final WorkerEvents events;
  private final CompactionPicker picker;
  private final Thread[] threads;
  private final Object signal = new Object();

  /** Guarded by signal. */
  private boolean stopping;

  /** Set when a version was freed: some tables may now be deletable. */
  private final AtomicBoolean cleanup = new AtomicBoolean();

  /** Set by tests before writes start; volatile: read by compaction threads. */
  private volatile DiscardListener listener = DiscardListener.NONE;

  public Compactor(
      Options options,
      Storage storage,
      Versions versions,
      VersionSet versionSet,
      TableCache tables,
      KeyspaceCatalog catalog,
      EngineStats stats,
      StoreState state,
      WorkerEvents events) {
    this.options = options;
    this.storage = storage;
    this.versions = versions;
    this.versionSet = versionSet;
    this.tables = tables;
    this.catalog = catalog;
    this.stats = stats;
    this.state = state;
    this.events = events;
    this.picker =
        new CompactionPicker(options, catalog, stats.tablesWithTombstones, stats.expiryCompactions);
    this.threads = new Thread[options.compactionThreads()];
    for (int i = 0; i < threads.length; i++) {
      threads[i] = new Thread(this::run, "basalt-compactor-" + i);
      threads[i].setDaemon(true);
    }
  }

  public void start() {
    for (Thread t : threads) t.start();
  }

  public void setDiscardListener(DiscardListener l) {
    listener = l == null ? DiscardListener.NONE : l;
  }

  /** Asks the threads to look for work (after a flush or a compaction). */
  public void wake() {
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  /** A version was freed; the tables only it named can go. */
  public void tablesMayBeObsolete() {
    cleanup.set(true);
    wake();
  }

  /** Stops the threads; a running job stops at its next table boundary and leaves no trace. */
  public void stop() {
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
   * Waits until no job runs and none is needed, counting the level-0 merge a quiet store makes (or
   * the store failed or is stopping); true if idle.
   */
  public boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    synchronized (signal) {
      while (true) {
        if (stopping || state.failure() != null) return false;
        Version v = versions.acquire();
        try {
          if (picker.idle(v, true))
            return true; // a level-0 merge the store will make once quiet is work too
        } finally {
          v.release();
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

  /**
   * Compacts keyspace {@code ks}'s key index over {@code [from, to]} ({@code to} null: to the end)
   * and waits until it is done: every version up to {@code seqno} in the range reaches the deepest
   * level holding its keys in a table rewritten since the call, so the tombstones and expired
   * records there are dropped and what they hid is reported to the delete list. The compaction
   * threads run the jobs, ahead of any other. Returns normally once done, or if the keyspace was
   * dropped meanwhile.
   *
   * @throws io.basaltdb.ClosedException if the store closes meanwhile
   * @throws io.basaltdb.StorageException if the store failed
   */
  public void compactRange(int ks, byte[] from, byte[] to, long seqno) throws InterruptedException {
    CompactionPicker.RangeRequest r =
        new CompactionPicker.RangeRequest(ks, from, to, seqno, versionSet.nextFileNumber.get());
    picker.addRange(r);
    try {
      wake();
      synchronized (signal) {
        while (true) {
          state.checkWritable(); // a failed store compacts nothing more
          if (stopping)
            throw new io.basaltdb.ClosedException("the store closed during compactRange");
          Version v = versions.acquire();
          try {
            if (picker.rangeDone(v, r)) return;
          } finally {
            v.release();
          }
          signal.wait(50);
        }
      }
    } finally {
      picker.removeRange(r);
    }
  }

  /**
   * Whether no flush has happened for {@link SegmentCompactor#quietNanos} (the store is quiet:
   * level 0 then merges into the base level, so garbage collection learns of the versions it
   * supersedes).
   */
  private boolean quiet() {
    return stats.quietFor(SegmentCompactor.quietNanos);
  }

  private void run() {
    try {
      loop();
    } catch (BasaltException e) {
      state.fail(e);
    } catch (RuntimeException | Error e) {
      state.fail(new BasaltException("compaction thread failed: " + e, e));
    } finally {
      state.progressed(); // writers stalled on level 0 see the failure instead of waiting
    }
  }

  private void loop() {
    while (true) {
      if (cleanup.getAndSet(false) && !stopping())
        versionSet.deleteObsoleteFiles(); // expired checkpoints too
      CompactionPicker.Job job = null;
      Version picked = null;
      synchronized (signal) {
        while (true) {
          if (stopping) return;
          if (state.failure() == null) {
            picked = versions.acquire();
            job = picker.take(picked, quiet());
            // A job committed between the acquire and the take freed its tables in the picker after
            // its
            // commit replaced them: a job picked from the older version could take them again (and
            // a
            // level-0 merge's output would then land in front of newer tables). Pick again from the
            // new one.
            if (job != null && picked != versions.current()) {
              picker.done(job, false);
              picked.release();
              picked = null;
              job = null;
              continue;
            }
            if (job != null) break;
            picked.release();
            picked = null;
          }
          if (cleanup.get()) break;
          try {
            signal.wait(200);
          } catch (InterruptedException e) {
            return;
          }
        }
      }
      if (job == null) continue; // cleanup first
      // The job needs the tables, not the write caches: a version of tables only keeps them on disk
      // without pinning flushed write caches for the length of the job. Made before the picked
      // version
      // goes (and outside this thread's signal: the VersionSet's lock comes first).
      Version v = versionSet.pinTables(picked);
      picked.release();
      boolean committed = false;
      try {
        committed = runJob(job, v.files(job.keyspace()));
      } catch (BasaltException e) {
        state.fail(e);
      } catch (RuntimeException | Error e) {
        state.fail(new BasaltException("compaction failed: " + e, e));
      } finally {
        v.release();
        picker.done(job, committed);
        wake();
        events.compacted();
      }
    }
  }

  /**
   * Runs a job and commits it; false if it was abandoned (stopping, a dropped keyspace, a failed
   * store). {@code files} are the keyspace's files in the pinned version, for refreshing location
   * hints.
   */
  private boolean runJob(CompactionPicker.Job job, KeyspaceFiles files) {
    long t0 = System.nanoTime();
    VersionEdit edit = new VersionEdit();
    for (KeyspaceFiles.Table t : job.all()) edit.removeTable(job.keyspace(), t.fileNumber());
    if (job.trivialMove()) { // its tombstones go in a later merge
      KeyspaceFiles.Table t = job.inputs().get(0);
      edit.addTable(
          job.keyspace(), new KeyspaceFiles.Table(t.fileNumber(), job.outputLevel(), t.reader()));
      return commit(job, edit, List.of(), List.of(), true, t0, 0);
    }
    // A level-0 merge writes one table: level 0's tiers are told apart by size.
    long target = job.outputLevel() == 0 ? Long.MAX_VALUE : options.tableTargetBytes();
    TableOutput out =
        new TableOutput(
            storage,
            tables,
            versionSet.nextFileNumber,
            options,
            job.keyspace(),
            job.outputLevel(),
            target,
            stats.compactionBytesWritten,
            versionSet.trieChunkBytes(job.keyspace()));
    long now = options.clock().getAsLong(); // expiries are judged once per job
    Discards discards = new Discards(now);
    List<KeyspaceFiles.Table> written;
    Set<Long> liveSegments = new HashSet<>();
    for (KeyspaceFiles.Segment seg : files.segments) liveSegments.add(seg.state().segmentId());
    OlderVersions older = olderThan(job, files);
    // A guarded level's tables lie inside its guards: the output is cut at them, and at the new
    // guards
    // the job chooses.
    GuardCutter cutter =
        files.guarded() && job.outputLevel() >= 1
            ? new GuardCutter(files, job.outputLevel(), job.all(), options)
            : null;
    try (MergingIterator merge = new MergingIterator(open(job), job.bottom(), discards, now);
        older) {
      long records = 0;
      while (merge.next()) {
        MergeSources.TableSource s = (MergeSources.TableSource) merge.current();
        if (cutter != null && cutter.startsTable(s.key())) out.cutTable();
        long hint = s.hint();
        if (hint >= 0 && !liveSegments.contains(hint >>> 32))
          hint = refreshedHint(files, s.seqno(), hint);
        boolean covered = discards.covered;
        if (!covered && older != null && !discards.revealFailed && discards.worthRevealing())
          covered = discards.reveal(older, s.key());
        // An expired version is a tombstone (Magma section 7.1): written as one above the bottom,
        // where an
        // older version may still need hiding, and dropped at the bottom like any other.
        boolean deleted = MergingIterator.deleted(s, now);
        if (deleted && !s.tombstone()) discards.expired++;
        // A tombstone made of an expired record keeps its expiry: the table's histogram then still
        // counts
        // it as expired, so the expiry check pushes it on down to the bottom, where it is dropped.
        out.add(s.key(), s.seqno(), s.docSize(), deleted, hint, covered, s.expiry());
        if (++records % 1024 == 0 && stopping()) {
          out.abandon();
          return false;
        }
      }
      written = out.finish();
      stats.expiredRecordsCompacted.add(discards.expired);
    } catch (RuntimeException | Error e) {
      out.abandon();
      throw e;
    }
    long read = 0;
    for (KeyspaceFiles.Table t : job.all()) read += t.bytes();
    stats.compactionBytesRead.add(read);
    for (KeyspaceFiles.Table t : written) edit.addTable(job.keyspace(), t);
    if (cutter != null) edit.addGuards(job.keyspace(), job.outputLevel(), cutter.added());
    if (!catalog.isLive(job.keyspace()) || state.failure() != null)
      return commit(job, edit, written, List.of(), false, t0, 0);
    // The listener hears of each dropped version just before the commit, under the VersionSet's
    // lock;
    // the counters go in the commit itself, so a crash in between leaves neither the drop nor its
    // count
    // (see DiscardListener).
    long bytes = 0;
    for (int i = 0; i < discards.count; i++) bytes += discards.pairs[2 * i + 1];
    edit.addCounters(job.keyspace(), Manifest.Counters.discarded(discards.count, bytes));
    if (discards.purged > 0) edit.purged(job.keyspace(), discards.purged);
    // The discards become the garbage of their segments and a level-0 delete list table in the same
    // commit as the drop (Magma orders the delete list's commit before the key index's; one
    // manifest
    // makes both one step), so a rerun after a crash adds them once.
    List<KeyspaceFiles.DeleteTable> deletes =
        DeleteList.writeLevel0(
            storage,
            tables,
            versionSet.nextFileNumber,
            options,
            job.keyspace(),
            discards.pairs,
            discards.count,
            edit,
            stats.deleteListBytesWritten);
    edit.beforeCommit =
        () -> {
          if (!catalog.isLive(job.keyspace()))
            return; // dropped: nothing is discarded from it any more
          DiscardListener l =
              listener; // the one installed when the commit happens, not when the merge ended
          for (int i = 0; i < discards.count; i++) {
            l.discarded(job.keyspace(), discards.pairs[2 * i], (int) discards.pairs[2 * i + 1]);
          }
        };
    boolean committed = commit(job, edit, written, deletes, false, t0, discards.count);
    if (committed && cutter != null) stats.guardsAdded.add(cutter.added().size());
    if (committed) {
      for (KeyspaceFiles.Table t : job.all()) stats.tablesWithTombstones.remove(t.fileNumber());
      stats.tablesWithTombstones.addAll(out.withTombstones());
    }
    if (committed && older != null && !discards.revealFailed) {
      stats.l0MergeStaleReported.add(discards.revealed);
      stats.shadowed.revealed(job.all(), written, discards.unreported);
    } else if (committed) {
      stats.shadowed.compacted(job.all(), written, bytes, job.bottom());
    }
    return committed;
  }

  /**
   * The older tables of level-0 merge {@code job} if it reveals, else null. It reveals (see the
   * class comment) unless {@link Options#flushLookups} reported every version already, if its
   * inputs are at least 1/{@link Options#l0RevealRatio} of the older tables' bytes, so a revealed
   * key costs a few records read. The older tables ({@code files} is the version the job was picked
   * from): level 0's tables after its inputs (which are neighbours), then every deeper level's.
   */
  private OlderVersions olderThan(CompactionPicker.Job job, KeyspaceFiles files) {
    int ratio = options.l0RevealRatio();
    if (ratio <= 0 || options.flushLookups()) return null;
    if (files.guarded() && job.outputLevel() > job.level() && !job.trivialMove() && !job.bottom()) {
      return olderThanPush(job, files, ratio);
    }
    if (job.level() != 0 || job.outputLevel() != 0) return null;
    List<KeyspaceFiles.Table> l0 = files.level(0);
    long oldest = job.inputs().get(job.inputs().size() - 1).fileNumber();
    int from = -1;
    for (int i = 0; i < l0.size(); i++) {
      if (l0.get(i).fileNumber() == oldest) from = i + 1;
    }
    if (from < 0)
      throw new IllegalStateException("level-0 merge input " + oldest + " is not in its version");
    List<KeyspaceFiles.Table> older0 = l0.subList(from, l0.size());
    List<List<List<KeyspaceFiles.Table>>> levels = new ArrayList<>();
    long olderBytes = bytes(older0);
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      List<List<KeyspaceFiles.Table>> groups = new ArrayList<>();
      if (files.guarded()) {
        for (int g = 0; g < files.guardCount(l); g++) groups.add(files.guardTables(l, g));
      } else {
        for (KeyspaceFiles.Table t : files.level(l)) groups.add(List.of(t));
      }
      levels.add(groups);
      olderBytes += files.levelBytes(l);
    }
    return bytes(job.inputs()) * ratio >= olderBytes ? new OlderVersions(older0, levels) : null;
  }

  /**
   * The older tables of a guarded push if it reveals, else null. A push adds its records to the
   * output level's guards without meeting the versions already there, so without this an update
   * would wait for its last-level guard's next in-place merge before the version it supersedes
   * became known garbage (the estimate of such garbage grew to gigabytes at 10M keys, and
   * collection, steered by it, rewrote segments at their low known fragmentation). So a push
   * reveals as a level-0 merge does: the guards of its output level and every deeper one that its
   * key range touches, when its inputs are at least 1/{@link Options#l0RevealRatio} of their bytes.
   */
  private static OlderVersions olderThanPush(
      CompactionPicker.Job job, KeyspaceFiles files, int ratio) {
    byte[][] range = CompactionPicker.range(job.inputs());
    byte[] lo = range[0], hi = range[1];
    List<List<List<KeyspaceFiles.Table>>> levels = new ArrayList<>();
    long olderBytes = 0;
    for (int l = job.outputLevel(); l < KeyspaceFiles.MAX_LEVELS; l++) {
      List<List<KeyspaceFiles.Table>> groups = new ArrayList<>();
      for (int g = files.guards.guardOf(l, lo), last = files.guards.guardOf(l, hi);
          g <= last;
          g++) {
        List<KeyspaceFiles.Table> guard = files.guardTables(l, g);
        groups.add(guard);
        olderBytes += bytes(guard);
      }
      levels.add(groups);
    }
    return bytes(job.inputs()) * ratio >= olderBytes ? new OlderVersions(List.of(), levels) : null;
  }

  private static long bytes(List<KeyspaceFiles.Table> tables) {
    long n = 0;
    for (KeyspaceFiles.Table t : tables) n += t.bytes();
    return n;
  }

  /**
   * A location hint for {@code seqno} from the segment that holds it now, its old {@code hint}
   * naming a segment garbage collection replaced (Magma section 8.2: refreshed lazily, when
   * compaction rewrites the record; a read meanwhile falls back to the seqno index). The old hint
   * if no segment holds it or its index cannot be read.
   */
  private long refreshedHint(KeyspaceFiles files, long seqno, long hint) {
    KeyspaceFiles.Segment seg = files.segmentFor(seqno);
    long fresh;
    try {
      fresh = seg == null ? -1 : seg.reader().hintFor(seqno);
    } catch (BasaltException damagedOrUnreadable) {
      // A refresh is an optimisation: a damaged or unreadable index page is reported by the reads
      // that
      // need it, not by failing the compaction (and the store) here.
      return hint;
    }
    if (fresh < 0) return hint;
    stats.hintsRefreshed.increment();
    return fresh;
  }

  /** Iterators over the job's tables, each from its first record. */
  private static List<MergeSources.TableSource> open(CompactionPicker.Job job) {
    List<MergeSources.TableSource> sources = new ArrayList<>();
    try {
      for (KeyspaceFiles.Table t : job.all())
        sources.add(new MergeSources.TableSource(t.reader().sequentialIterator(), null));
      return sources;
    } catch (RuntimeException | Error e) {
      for (MergeSources.TableSource s : sources) s.close();
      throw e;
    }
  }

  private boolean commit(
      CompactionPicker.Job job,
      VersionEdit edit,
      List<KeyspaceFiles.Table> written,
      List<KeyspaceFiles.DeleteTable> deletes,
      boolean moved,
      long startNanos,
      long dropped) {
    if (!catalog.isLive(job.keyspace())
        || state.failure() != null) { // dropped, or the store failed meanwhile
      TableOutput.discard(storage, tables, job.keyspace(), written);
      DeleteList.Output.discard(storage, tables, job.keyspace(), deletes);
      return false;
    }
    // A drop landing from here on is handled by the edit (its changes are ignored and the outputs,
    // named
    // by no manifest, are deleted as obsolete). A failure refuses or fails the commit: the outputs
    // are
    // not deleted then (a manifest whose write threw may still name them); the next open's orphan
    // sweep does.
    versionSet.logAndApply(edit);
    stats.compactions.increment();
    if (moved) stats.trivialMoves.increment();
    long read = 0, wrote = 0;
    if (!moved) for (KeyspaceFiles.Table t : job.all()) read += t.bytes();
    for (KeyspaceFiles.Table t : written) wrote += t.bytes();
    state
        .notifier()
        .compacted(
            new io.basaltdb.EventListener.CompactionInfo(
                catalog.describe(job.keyspace()),
                job.level(),
                job.outputLevel(),
                job.all().size(),
                written.size(),
                read,
                wrote,
                dropped,
                System.nanoTime() - startNanos));
    if (job.level() >= 1
        && options.keyIndexGuards()) { // the store's layout (Recovery refuses the other)
      if (job.level() == job.outputLevel()) stats.guardMerges.increment();
      else stats.guardPushes.increment();
    }
    if (job.outputLevel() == 0) stats.l0Merges.increment();
    return true;
  }

  /**
   * The (seqno, document size) pairs of the versions a merge dropped that the delete list does not
   * hold yet. A version the flusher already reported (the version above it in the merge carries
   * {@code olderReported}) is dropped silently: its garbage and counters were committed with that
   * flush.
   */
  private static final class Discards implements MergingIterator.Discards {
    long[] pairs = new long[64];
    int count;

    /**
     * The current key's newest version in the merge: its own drop (a tombstone's) is always
     * reported.
     */
    private MergingIterator.Source newest;

    /**
     * Records that could reveal per window of {@link #worthRevealing}, and probes sampled in each.
     */
    static final int REVEAL_WINDOW = 1 << 16;

    static final int REVEAL_SAMPLE = 1 << 11;

    /**
     * Whether the current key's next older version still to come is in the delete list already;
     * after the merge settles on a key, the flag of the record it writes (its next older version
     * then is the one below the oldest it dropped).
     */
    boolean covered;

    /**
     * Versions {@link #reveal} reported, and the document bytes of the tombstones it found (not
     * reported).
     */
    int revealed;

    long unreported;

    /** A probe of the older tables failed: the rest of the merge does not reveal. */
    boolean revealFailed;

    /**
     * Records that could reveal in the current window of {@link #REVEAL_WINDOW}, and of the probes
     * made for them, those that found an older version ({@link #worthRevealing}).
     */
    private int windowRecords, windowProbes, windowFound;

    /** The highest seqno of a tombstone the merge dropped (its deletion is purged), or 0. */
    long purged;

    /** The instant the job judges expiries at. */
    private final long now;

    /** Expired records the merge turned into tombstones or dropped. */
    long expired;

    Discards(long now) {
      this.now = now;
    }

    /**
     * A revealing merge's record of {@code key} covers nothing yet: the key's newest version in the
     * older tables, unless a tombstone (reported where the bottom drops it), is reported now;
     * returns whether the record is then covered (also when no older version exists).
     */
    boolean reveal(OlderVersions older, byte[] key) {
      boolean found;
      windowProbes++;
      try {
        found = older.find(key);
      } catch (BasaltException damagedOrUnreadable) {
        // An older table this merge only reads for reporting: the reads and the merge that need it
        // report it. This merge goes on without revealing (its later records report nothing early).
        revealFailed = true;
        return false;
      }
      if (!found) return true;
      windowFound++;
      if (older.tombstone) {
        unreported += older.docSize;
        return false;
      }
      add(older.seqno, older.docSize);
      revealed++;
      return true;
    }

    /**
     * Whether the next record that could reveal should probe the older tables: the first {@link
     * #REVEAL_SAMPLE} of every {@link #REVEAL_WINDOW} such records do, and the rest of the window
     * only if at least one probe in 64 of those found an older version. A merge of new keys (a bulk
     * load's, an insert workload's) then probes a few per window instead of every record's bloom
     * filters in every older table; the versions it does not reveal are reported by the merge that
     * drops them, as without revealing.
     */
    boolean worthRevealing() {
      if (++windowRecords > REVEAL_WINDOW) {
        windowRecords = 1;
        windowProbes = 0;
        windowFound = 0;
      }
      return windowProbes < REVEAL_SAMPLE || windowFound * 64 >= windowProbes;
    }

    private void add(long seqno, int docSize) {
      if (2 * count + 2 > pairs.length) pairs = Arrays.copyOf(pairs, pairs.length * 2);
      pairs[2 * count] = seqno;
      pairs[2 * count + 1] = docSize;
      count++;
    }

    @Override
    public void newest(MergingIterator.Source s) {
      newest = s;
      covered = ((MergeSources.TableSource) s).olderReported();
    }

    @Override
    public void discarded(MergingIterator.Source s) {
      if (s == newest && MergingIterator.deleted(s, now)) {
        purged = Math.max(purged, s.seqno()); // the deletion (or expiry) leaves the index
        if (!s.tombstone()) expired++;
      }
      if (s
          != newest) { // an older version: reported with the flush of the version above it, or now
        boolean reported = covered;
        covered = ((MergeSources.TableSource) s).olderReported();
        if (reported) return;
      }
      add(s.seqno(), ((MergeSources.TableSource) s).docSize());
    }
  }
}
