package io.basaltdb.internal.engine.gc;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.base.WorkerEvents;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.SegmentTail;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.DocumentIterator;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Magma's garbage collection (section 4), on {@link Options#gcThreads} background threads: it
 * compacts each keyspace's delete list and rewrites its most fragmented log segments, never looking
 * at the key index.
 *
 * <p><b>Fragmentation.</b> A segment's garbage is the document bytes of its versions the key index
 * dropped ({@link Manifest.SegmentGarbage}, counted in the manifest that drops them). Its stale
 * bytes are its superseded index pages plus that share of the rest of its file; its fragmentation
 * is stale bytes over file bytes, and a keyspace's is the sum of its segments' stale bytes over
 * theirs.
 *
 * <p><b>Segment compaction.</b> When a keyspace's fragmentation passes {@link
 * Options#fragmentationThreshold}, the most fragmented segment (never the tail, which the flusher
 * appends to) is picked, with fragmented neighbours while their live bytes fit one segment, so
 * small segments merge instead of producing smaller ones. Their documents stream, in seqno order,
 * against the delete list's records in their seqno range: a document whose seqno the delete list
 * holds is dropped, every other one is copied with its seqno into one new segment with its own
 * seqno index. With {@link Options#keyOrderedRuns} (the default) an ordered keyspace's copies are
 * written as key-ordered runs of up to {@link SegmentWriter#RUN_BYTES}: each run's documents sorted
 * by key, so a scan finds neighbouring keys' documents, gathered from all the inputs, in a few
 * blocks. This writes the same bytes as seqno order (Titan's level merge, without its extra
 * rewrites). The edit replaces the inputs by the output, which inherits their garbage less what was
 * dropped (so versions discarded while the job ran stay counted), and removes the delete list
 * tables wholly inside the range. Key index records keep their seqnos; a location hint naming a
 * replaced segment misses and the read falls back to the new segment's seqno index. Replaced
 * segments are deleted once no version or checkpoint names them, so snapshots and cursors keep
 * reading them.
 *
 * <p><b>Quiet collection.</b> Once no flush has happened for two seconds, segments are collected
 * down to half the threshold (at least 0.1): the store settles lower when writes stop, and the
 * rewriting that costs is not spent while they flow. {@link #awaitIdle} waits for that pass too.
 *
 * <p><b>Delete list compaction.</b> Level 0 (one table per key index compaction, or per flush with
 * flush lookups) is tiered: 8 tables of about one size merge into one level-0 table ({@link
 * #deleteListJob}). It is merged into level 1 (one sorted run, cut into tables) when it holds half
 * of level 1's logical size (the document bytes its records describe, the unit of the log it sits
 * on); at 20 tables of sizes too far apart to tier, its smaller half merges into one level-0 table.
 * The merge drops records a segment compaction consumed: those in the range of a segment whose
 * {@code gcBase} is at or after the record's table's {@code addedIn}, and those outside every
 * segment's range (segments dropped whole because every document was garbage; those are dropped
 * without being read).
 *
 * <p><b>Flow control.</b> {@link #pressure} tells the commit leader to slow or stop writers while
 * collection falls behind (Magma stalls writers on the delete list's level 0). A job that fails to
 * write its output (a full disk) commits nothing and is tried again a second later; the store goes
 * on, and writers are not held meanwhile (they would wait for nothing: a write then succeeds or is
 * refused by the full disk itself, having written nothing).
 *
 * <p>Concurrency: each thread looks for a job under {@code signal} in a version pinned after the
 * last job ended (so it sees every committed job's effect), and reserves what the job changes until
 * it commits or is abandoned: a segment job its input segments, which no other job picks; a delete
 * list merge its whole keyspace, where no segment job starts while it runs or is due (a merge and a
 * segment job could both remove one delete list table, and a segment job could consume records the
 * merge is copying); the cold pass one job at a time. So segment jobs of disjoint segments run at
 * once, and no two jobs remove the same segment or delete list table. Key index compactions only
 * add delete list tables and garbage, and the flusher only appends to the tail, which no job takes.
 * A job pins the version it read (its inputs stay on disk) and commits through the {@link
 * VersionSet}, whose edits replace only the job's own inputs; a stop abandons a job and deletes its
 * output.
 */
public final class SegmentCompactor {
  /** Level-0 delete list tables that trigger their merge into level 1 regardless of size. */
  static final int DELETE_L0_TRIGGER = 16;

  /**
   * Level-0 delete list tables at which the smaller half merge into one level-0 table whatever
   * their sizes: below the 24 at which {@link #pressure} slows writers, so tables of mixed sizes (a
   * key index compaction's discards vary from a few to millions) that never make a tier do not slow
   * them.
   */
  static final int DELETE_L0_FULL = 20;

  /**
   * Level-0 delete list tables within 4x the records of the smallest that merge into one level-0
   * table. Eight, so the tiers a stream of flushes' tables makes (8, 64, 512 flushes' worth) stay
   * well below {@link #DELETE_L0_FULL} tables.
   */
  static final int DELETE_TIER_FANIN = 8;

  /** Delete list tables of level 1 are cut at this size. */
  static final long DELETE_TABLE_BYTES = 4L << 20;

  /**
   * No flush for this long (2 s): the store is quiet, and collection goes down to half the
   * threshold. Tests that wait for collection hundreds of times shorten it.
   */
  public static volatile long quietNanos = 2_000_000_000L;

  /** A segment below this fragmentation is never worth rewriting. */
  static final double MIN_SEGMENT_FRAGMENTATION = 0.2;

  private final Options options;
  private final Storage storage;
  private final Versions versions;
  private final VersionSet versionSet;
  private final TableCache tables;
  private final KeyspaceCatalog catalog;
  private final EngineStats stats;
  private final StoreState state;
  private final WorkerEvents events;
  private final Thread[] threads;
  private final Object signal = new Object();

  /** Guarded by signal. */
  private boolean stopping;

  /**
   * Guarded by signal: work may be due (set by {@link #wake} and by every job taken; cleared by a
   * look that found nothing while no job ran).
   */
  private boolean busy = true;

  /** Guarded by signal: jobs running. */
  private int running;

  /**
   * Guarded by signal: jobs ended (committed or not); a look in a version pinned before is stale.
   */
  private long jobsEnded;

  /** Guarded by signal: calls of {@link #wake}; a thread that missed one looks again. */
  private long wakes;

  /** Guarded by signal: the input segments of running segment jobs, by id. */
  private final java.util.Set<Long> reservedSegments = new java.util.HashSet<>();

  /** Guarded by signal: running segment jobs (cold ones included) by keyspace. */
  private final Map<Integer, Integer> segmentJobs = new java.util.HashMap<>();

  /** Guarded by signal: keyspaces whose delete list a job is merging. */
  private final java.util.Set<Integer> deleteJobs = new java.util.HashSet<>();

  /**
   * Guarded by signal: keyspaces whose delete list merge is due but waits for their segment jobs to
   * end; no segment job starts there meanwhile, so the merge is not put off while they follow each
   * other.
   */
  private final java.util.Set<Integer> deletesWanted = new java.util.HashSet<>();

  /** Guarded by signal: a cold pass job runs. */
  private boolean coldRunning;

  public SegmentCompactor(
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
    this.threads = new Thread[options.gcThreads()];
    for (int i = 0; i < threads.length; i++) {
      threads[i] = new Thread(this::run, threads.length == 1 ? "basalt-gc" : "basalt-gc-" + i);
      threads[i].setDaemon(true);
    }
  }

  public void start() {
    for (Thread t : threads) t.start();
  }

  /** Asks the threads to look for work (after a key index compaction added garbage). */
  public void wake() {
    synchronized (signal) {
      busy = true;
      wakes++;
      signal.notifyAll();
    }
  }

  /** Stops the threads; a running job stops within 1,024 documents and leaves no trace. */
  public void stop() {
    synchronized (signal) {
      stopping = true;
      signal.notifyAll();
    }
    boolean interrupted = false;
    for (Thread t : threads) {
      while (t.isAlive() && t != Thread.currentThread()) {
        try {
          t.join();
        } catch (InterruptedException e) {
          interrupted = true; // the threads are joined all the same: none may outlive the store
        }
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }

  /**
   * A collection a caller waits for ({@link #collect}): keyspace {@code ks}'s segments numbered
   * below {@code segmentCeiling} (those that existed at the call), looked at in versions at or
   * after manifest {@code manifest} (the one that made the garbage it is for).
   */
  private record Forced(long segmentCeiling, long manifest) {}

  /** Keyspaces a caller asked to collect whatever their fragmentation, by id. */
  private final Map<Integer, Forced> forced = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Collects keyspace {@code ks}'s segments whatever the keyspace's fragmentation (as if {@link
   * io.basaltdb.Options#fragmentationThreshold} were 0: every segment but the tail at least {@link
   * #MIN_SEGMENT_FRAGMENTATION} garbage), on the collection thread, and waits until none is left
   * (Basalt.compactRange). Only segments that exist at the call: the outputs of its jobs, and
   * segments written meanwhile, are not waited for.
   *
   * @throws io.basaltdb.ClosedException if the store closes meanwhile
   * @throws io.basaltdb.StorageException if the store failed, or collection cannot write its output
   *     (a full disk)
   */
  public void collect(int ks) throws InterruptedException {
    VersionSet.Pinned now = versionSet.pinFiles();
    now.version().release();
    forced.put(ks, new Forced(versionSet.nextFileNumber.get(), now.manifestNumber()));
    try {
      wake();
      synchronized (signal) {
        while (forced.containsKey(ks)) {
          state.checkWritable();
          if (stopping)
            throw new io.basaltdb.ClosedException("the store closed during compactRange");
          if (failing)
            throw new io.basaltdb.StorageException(
                "garbage collection cannot write its output (a full disk?): compactRange stops;"
                    + " the key index part is done");
          signal.wait(50);
        }
      }
    } finally {
      forced.remove(ks);
    }
  }

  /**
   * The most fragmented segment of {@code f} numbered below {@code ceiling}, but the tail, if it is
   * at least {@link #MIN_SEGMENT_FRAGMENTATION} garbage; null if none. One segment a job: each
   * job's output is numbered above the ceiling, so the forced pass ends.
   */
  static List<KeyspaceFiles.Segment> pickForced(
      KeyspaceFiles f, long ceiling, java.util.Set<Long> reserved) {
    KeyspaceFiles.Segment best = null;
    double bestFrag = MIN_SEGMENT_FRAGMENTATION;
    for (int i = 0; i < f.segments.size() - 1; i++) {
      KeyspaceFiles.Segment s = f.segments.get(i);
      if (s.state().segmentId() >= ceiling || reserved.contains(s.state().segmentId())) continue;
      double frag = fragmentation(s.state(), f.garbage.get(s.state().segmentId()));
      if (frag >= bestFrag) {
        best = s;
        bestFrag = frag;
      }
    }
    return best == null ? null : List.of(best);
  }

  /** Waits until no job runs and none is due; true if idle, false at the timeout or a failure. */
  public boolean awaitIdle(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    synchronized (signal) {
      while (busy || running > 0) {
        if (stopping || state.failure() != null) return false;
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) return false;
        signal.wait(Math.min(left, 50));
      }
      return true;
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
    } catch (InterruptedException e) {
      // stop
    } catch (BasaltException e) {
      state.fail(e);
    } catch (RuntimeException | Error e) {
      state.fail(new BasaltException("garbage collection failed: " + e, e));
    } finally {
      synchronized (signal) {
        signal.notifyAll(); // awaitIdle and collect see the failure or the stop
      }
      state.progressed(); // writers waiting on garbage collection see the failure
    }
  }

  private void loop() throws InterruptedException {
    while (true) {
      long ended, woken;
      synchronized (signal) {
        if (stopping) return;
        ended = jobsEnded;
        woken = wakes;
      }
      Look look = Look.NOTHING;
      if (state.failure() == null) {
        VersionSet.Pinned pinned = versionSet.pinFiles();
        Job job = null;
        try {
          synchronized (signal) {
            if (stopping) return;
            if (jobsEnded != ended) continue; // pinned before a job ended: look in a newer version
            Object found = find(pinned);
            if (found instanceof Job j) {
              reserve(j);
              job = j;
            } else {
              look = (Look) found;
            }
          }
        } finally {
          if (job == null) pinned.version().release();
        }
        if (job != null) {
          try {
            runJob(job, pinned);
          } finally {
            pinned.version().release();
            release(job);
          }
          continue;
        }
      }
      synchronized (signal) {
        if (stopping) return;
        if (jobsEnded != ended || wakes != woken) continue; // something changed since the look
        if (look == Look.LATER) busy = true; // the quiet pass is work to wait for, too
        else if (running == 0) busy = false;
        signal.notifyAll();
        signal.wait(look == Look.LATER ? 100 : 500);
      }
    }
  }

  /** What a look for work found, when it found no job to run now. */
  private enum Look {
    NOTHING,
    LATER
  }

  /** What a job does. */
  private enum Kind {
    DELETE_LIST,
    SEGMENTS,
    COLD
  }

  /**
   * A job a thread took, with what it reserved: a delete list merge of {@code deletes} into {@code
   * level}, or a (cold) segment compaction of {@code segments}; {@code paceNanos}: how long the
   * cold pass waits after it.
   */
  private record Job(
      Kind kind,
      int ks,
      KeyspaceFiles f,
      List<KeyspaceFiles.Segment> segments,
      List<KeyspaceFiles.DeleteTable> deletes,
      int level,
      long paceNanos) {
    static Job segments(Kind kind, int ks, KeyspaceFiles f, List<KeyspaceFiles.Segment> s, long p) {
      return new Job(kind, ks, f, s, null, 0, p);
    }
  }

  /** Reserves what {@code job} changes. Under signal. */
  private void reserve(Job job) {
    running++;
    busy = true;
    if (job.kind == Kind.DELETE_LIST) {
      deleteJobs.add(job.ks);
      deletesWanted.remove(job.ks);
      return;
    }
    segmentJobs.merge(job.ks, 1, Integer::sum);
    for (KeyspaceFiles.Segment s : job.segments) reservedSegments.add(s.state().segmentId());
    if (job.kind == Kind.COLD) coldRunning = true;
  }

  /** Frees what {@code job} reserved, after its commit or abandonment, and wakes the others. */
  private void release(Job job) {
    synchronized (signal) {
      running--;
      jobsEnded++;
      if (job.kind == Kind.DELETE_LIST) {
        deleteJobs.remove(job.ks);
      } else {
        segmentJobs.merge(job.ks, -1, (a, b) -> a + b == 0 ? null : a + b);
        for (KeyspaceFiles.Segment s : job.segments) reservedSegments.remove(s.state().segmentId());
      }
      if (job.kind == Kind.COLD) {
        coldRunning = false;
        coldNextNanos = System.nanoTime() + job.paceNanos;
      }
      signal.notifyAll();
    }
  }

  private void runJob(Job job, VersionSet.Pinned pinned) {
    switch (job.kind) {
      case DELETE_LIST -> compactDeleteList(job.ks, job.f, job.deletes, job.level);
      case SEGMENTS -> compactSegments(job.ks, job.f, job.segments, pinned.manifestNumber());
      case COLD -> {
        compactSegments(job.ks, job.f, job.segments, pinned.manifestNumber());
        stats.coldPassSegments.increment();
      }
    }
  }

  /**
   * The job to run now, not overlapping any running one, as a {@link Job}; else a {@link Look}. At
   * the threshold while writes flow; once no flush has happened for {@link #quietNanos}, down to
   * half of it (the store settles lower when it is quiet). LATER: only the quiet pass or the paced
   * cold pass has work, and it is not due yet. Under signal, in {@code pinned}, a version pinned
   * after the last job ended.
   */
  private Object find(VersionSet.Pinned pinned) {
    boolean quiet = stats.quietFor(quietNanos);
    double threshold = options.fragmentationThreshold();
    double quietThreshold = Math.max(0.1, threshold / 2);
    boolean later = false;
    deletesWanted.removeIf(ks -> !catalog.isLive(ks));
    // Delete list merges first, in every keyspace: they are short, and a keyspace whose segments
    // keep the threads busy must not hold another's delete list level 0 until flow control slows
    // writers.
    for (Map.Entry<Integer, KeyspaceFiles> e : pinned.version().files.entrySet()) {
      int ks = e.getKey();
      KeyspaceFiles f = e.getValue();
      if (!catalog.isLive(ks) || deleteJobs.contains(ks)) continue;
      List<KeyspaceFiles.DeleteTable> deleteJob = deleteListJob(f);
      if (deleteJob == null) {
        deletesWanted.remove(ks);
      } else if (segmentJobs.containsKey(ks)) {
        deletesWanted.add(ks); // after the segment jobs running there
      } else {
        return new Job(Kind.DELETE_LIST, ks, f, null, deleteJob, deleteJob == f.deletes ? 1 : 0, 0);
      }
    }
    for (Map.Entry<Integer, KeyspaceFiles> e : pinned.version().files.entrySet()) {
      int ks = e.getKey();
      KeyspaceFiles f = e.getValue();
      if (!catalog.isLive(ks) || deleteJobs.contains(ks) || deletesWanted.contains(ks)) continue;
      long pending = pendingGarbage(f);
      long limit = f.segmentLimit(options);
      List<KeyspaceFiles.Segment> pick = pick(f, threshold, limit, pending, reservedSegments);
      Forced force = forced.get(ks);
      if (pick == null && force != null) {
        pick = pickForced(f, force.segmentCeiling(), reservedSegments);
        // collect() waits for this; a version older than the garbage it is for does not count, nor
        // one whose segment jobs there have not ended
        if (pick == null
            && pinned.manifestNumber() >= force.manifest()
            && !segmentJobs.containsKey(ks)) forced.remove(ks, force);
      }
      if (pick == null && threshold < 1.0) {
        List<KeyspaceFiles.Segment> quietPick =
            pick(f, quietThreshold, limit, pending, reservedSegments);
        if (quiet) pick = quietPick;
        else later |= quietPick != null;
      }
      if (pick != null) return Job.segments(Kind.SEGMENTS, ks, f, pick, 0);
    }
    // Nothing else to do: the cold pass recompresses one segment untouched for coldSegmentMillis.
    Object cold = coldPass(pinned);
    if (cold instanceof Job) return cold;
    later |= cold == Look.LATER;
    // a forced keyspace with no segments, or dropped: nothing to collect
    forced.keySet().removeIf(ks -> !pinned.version().files.containsKey(ks) || !catalog.isLive(ks));
    return later ? Look.LATER : Look.NOTHING;
  }

  // ---- the cold pass
  // -----------------------------------------------------------------------------------

  /**
   * When the cold pass may start its next job ({@link System#nanoTime}): each job moves it on by
   * its input's bytes at {@link Options#coldPassBytesPerSecond}. Guarded by signal.
   */
  private long coldNextNanos = System.nanoTime();

  /**
   * Magma's background recompression of cold log segments (section 3.5): when collection has
   * nothing else to do, rewrites one LZ4 segment (never the tail) that no flush or collection has
   * written, and no get or scan has read, for {@link Options#coldSegmentMillis}, the oldest first,
   * into a zstd segment, dropping its garbage on the way as any segment compaction does. One job at
   * a time, paced at {@link Options#coldPassBytesPerSecond} of input: LATER while a job waits for
   * its turn. Under signal.
   */
  private Object coldPass(VersionSet.Pinned pinned) {
    long coldMillis = options.coldSegmentMillis();
    if (coldMillis <= 0) return Look.NOTHING;
    long now = System.currentTimeMillis();
    int segments = 0;
    for (KeyspaceFiles f : pinned.version().files.values()) { // which segments were read since
      segments += f.segments.size();
      for (KeyspaceFiles.Segment s : f.segments)
        if (s.reader().takeRead()) stats.segmentReadMillis.put(s.state().segmentId(), now);
    }
    if (stats.segmentReadMillis.size() > 2 * segments + 64) { // forget segments that are gone
      java.util.Set<Long> live = new java.util.HashSet<>();
      for (KeyspaceFiles f : pinned.version().files.values())
        for (KeyspaceFiles.Segment s : f.segments) live.add(s.state().segmentId());
      stats.segmentReadMillis.keySet().retainAll(live);
    }
    if (coldRunning) return Look.NOTHING; // its end looks again
    for (Map.Entry<Integer, KeyspaceFiles> e : pinned.version().files.entrySet()) {
      int ks = e.getKey();
      if (!catalog.isLive(ks) || deleteJobs.contains(ks) || deletesWanted.contains(ks)) continue;
      KeyspaceFiles.Segment s = pickCold(e.getValue(), now, coldMillis, stats, reservedSegments);
      if (s == null) continue;
      if (System.nanoTime() - coldNextNanos < 0) return Look.LATER;
      long nanos =
          (long) (s.state().tailOffset() * 1e9 / Math.max(1, options.coldPassBytesPerSecond()));
      return Job.segments(Kind.COLD, ks, e.getValue(), List.of(s), nanos);
    }
    return Look.NOTHING;
  }

  /**
   * The oldest segment of {@code f} but the tail that is still LZ4 and that nothing has written or
   * read for {@code coldMillis} by {@code now}; null if none. Reads count from the pass's samples
   * ({@link SegmentReader#takeRead}), so a segment that gets and scans keep reading is never cold,
   * however old its writes.
   */
  static KeyspaceFiles.Segment pickCold(
      KeyspaceFiles f, long now, long coldMillis, EngineStats stats, java.util.Set<Long> reserved) {
    for (int i = 0; i < f.segments.size() - 1; i++) {
      KeyspaceFiles.Segment s = f.segments.get(i);
      if (s.state().zstd() || s.state().isEmpty() || reserved.contains(s.state().segmentId()))
        continue;
      long id = s.state().segmentId();
      long touched =
          Math.max(stats.segmentWrittenMillis(id), stats.segmentReadMillis.getOrDefault(id, 0L));
      if (now - touched >= coldMillis) return s;
    }
    return null;
  }

  /**
   * After a keyspace drop: forgets the shadowed-garbage estimates of tables no keyspace has any
   * more.
   */
  public void forgetDroppedEstimates() {
    VersionSet.Pinned pinned = versionSet.pinFiles();
    try {
      java.util.Set<Long> live = new java.util.HashSet<>();
      for (KeyspaceFiles f : pinned.version().files.values()) {
        for (KeyspaceFiles.Table t : f.tables) live.add(t.fileNumber());
      }
      stats.shadowed.retainOnly(live);
      stats.tablesWithTombstones.retainAll(live);
    } finally {
      pinned.version().release();
    }
  }

  // ---- flow control
  // ----------------------------------------------------------------------------------

  /** No pressure: writers go on. */
  static final int PRESSURE_NONE = 0;

  /** Collection is falling behind: writers are slowed. */
  public static final int PRESSURE_SLOW = 1;

  /** Collection fell far behind: writers wait for it. */
  public static final int PRESSURE_STOP = 2;

  /** The last job could not write its output (a full disk); cleared by the next commit. */
  private volatile boolean failing;

  /** The files the last {@link #pressure} answer was computed for, and the answer. */
  private volatile Object pressureOf;

  private volatile int pressure;

  /**
   * How far behind garbage collection is in {@code v}, for the commit leader: writers are slowed
   * when a live keyspace's delete list has 1.5x {@link #DELETE_L0_TRIGGER} level-0 tables, or its
   * fragmentation is a quarter of the way from the threshold to 1, and stopped at 2x the tables, or
   * half way (space amplification 2.7 and 4 at the default threshold); fragmentation counts only
   * while a segment compaction is possible, so a keyspace whose garbage sits in its tail never
   * stops writers.
   */
  public int pressure(Version v) {
    if (failing)
      return PRESSURE_NONE; // waiting would not help: writes go on, or fail on the full disk
    // themselves
    if (pressureOf == v.files) return pressure;
    int p = PRESSURE_NONE;
    double t = options.fragmentationThreshold();
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) {
      KeyspaceFiles f = e.getValue();
      if (!catalog.isLive(e.getKey())) continue;
      int l0 = 0;
      for (KeyspaceFiles.DeleteTable d : f.deletes) if (d.meta().level() == 0) l0++;
      if (l0 >= 2 * DELETE_L0_TRIGGER) p = Math.max(p, PRESSURE_STOP);
      else if (l0 >= DELETE_L0_TRIGGER * 3 / 2) p = Math.max(p, PRESSURE_SLOW);
      if (t < 1.0 && pick(f, t, f.segmentLimit(options), 0) != null) { // known garbage only
        long[] st = staleAndTotal(f);
        double frag = (double) st[0] / st[1];
        if (frag > t + (1 - t) / 2) p = Math.max(p, PRESSURE_STOP);
        else if (frag > t + (1 - t) / 4) p = Math.max(p, PRESSURE_SLOW);
      }
    }
    pressure = p;
    pressureOf = v.files;
    return p;
  }

  // ---- fragmentation
  // ---------------------------------------------------------------------------------

  /**
   * Estimated stale bytes of {@code s}: superseded index pages, and its garbage's share of the
   * rest.
   */
  static long staleBytes(SegmentState s, Manifest.SegmentGarbage g) {
    long index = s.staleBytes();
    if (g == null || g.bytes() <= 0 || s.documentBytes() <= 0) return index;
    double share = Math.min(1.0, (double) g.bytes() / s.documentBytes());
    return index + (long) ((s.tailOffset() - index) * share);
  }

  static double fragmentation(SegmentState s, Manifest.SegmentGarbage g) {
    return s.tailOffset() == 0 ? 0 : (double) staleBytes(s, g) / s.tailOffset();
  }

  /**
   * Garbage level 0 still hides from the delete list, estimated ({@link
   * io.basaltdb.internal.engine.version.ShadowedBytes}).
   */
  private long pendingGarbage(KeyspaceFiles f) {
    long[] st = staleAndTotal(f);
    return stats.shadowed.pending(f, st[1] - st[0]);
  }

  /** Stale bytes and file bytes of a keyspace's segments: {stale, total}. */
  public static long[] staleAndTotal(KeyspaceFiles f) {
    long stale = 0, total = 0;
    for (KeyspaceFiles.Segment s : f.segments) {
      stale += staleBytes(s.state(), f.garbage.get(s.state().segmentId()));
      total += s.state().tailOffset();
    }
    return new long[] {stale, total};
  }

  /**
   * As {@link #pick(KeyspaceFiles, double, long, long, java.util.Set)} with no segment reserved.
   */
  public static List<KeyspaceFiles.Segment> pick(
      KeyspaceFiles f, double threshold, long segmentSize, long pending) {
    return pick(f, threshold, segmentSize, pending, java.util.Set.of());
  }

  /**
   * The segments to rewrite, adjacent and in seqno order, or null: none while the keyspace's
   * fragmentation is at or below {@code threshold}; else the most fragmented segment but the tail,
   * grown by the more fragmented neighbour while that is fragmented too, the live bytes fit {@code
   * segmentSize} and the bytes read stay within two of it. Segments in {@code reserved} (running
   * jobs' inputs) are never picked, and their stale bytes count as gone, as they soon are: a second
   * thread does not rewrite a segment only because the first one's garbage is still counted.
   */
  public static List<KeyspaceFiles.Segment> pick(
      KeyspaceFiles f,
      double threshold,
      long segmentSize,
      long pending,
      java.util.Set<Long> reserved) {
    int n = f.segments.size() - 1; // the last one is the tail
    if (n <= 0 || threshold >= 1.0) return null;
    long[] st = staleAndTotal(f);
    if (!reserved.isEmpty()) {
      for (KeyspaceFiles.Segment s : f.segments) {
        if (!reserved.contains(s.state().segmentId())) continue;
        long stale = staleBytes(s.state(), f.garbage.get(s.state().segmentId()));
        st[0] -= stale;
        st[1] -= stale;
      }
    }
    if (st[1] <= 0 || (double) (st[0] + pending) / st[1] <= threshold) return null;
    double[] frag = new double[n];
    long[] live = new long[n];
    int best = -1;
    for (int i = 0; i < n; i++) {
      SegmentState s = f.segments.get(i).state();
      Manifest.SegmentGarbage g = f.garbage.get(s.segmentId());
      frag[i] = reserved.contains(s.segmentId()) ? -1 : fragmentation(s, g);
      live[i] = s.tailOffset() - staleBytes(s, g);
      if (best < 0 || frag[i] > frag[best]) best = i;
    }
    if (frag[best] < MIN_SEGMENT_FRAGMENTATION) return null; // reserved ones are below, at -1
    long limit = Math.max(segmentSize, f.segments.get(best).state().tailOffset()) * 2;
    int lo = best, hi = best;
    long liveBytes = live[best], bytes = f.segments.get(best).state().tailOffset();
    while (true) {
      int left = lo - 1, right = hi + 1;
      boolean canLeft = left >= 0 && frag[left] >= MIN_SEGMENT_FRAGMENTATION;
      boolean canRight = right < n && frag[right] >= MIN_SEGMENT_FRAGMENTATION;
      int next = canLeft && (!canRight || frag[left] >= frag[right]) ? left : canRight ? right : -1;
      if (next < 0) break;
      long tail = f.segments.get(next).state().tailOffset();
      if (liveBytes + live[next] > segmentSize || bytes + tail > limit) break;
      liveBytes += live[next];
      bytes += tail;
      if (next == left) lo = left;
      else hi = right;
    }
    return new ArrayList<>(f.segments.subList(lo, hi + 1));
  }

  // ---- segment compaction
  // ----------------------------------------------------------------------------

  private void compactSegments(
      int ks, KeyspaceFiles f, List<KeyspaceFiles.Segment> inputs, long gcBase) {
    long t0 = System.nanoTime();
    long start = inputs.get(0).state().startSeqno();
    long end = inputs.get(inputs.size() - 1).state().lastSeqno();
    long inputBytes = 0, liveEstimate = 0;
    for (KeyspaceFiles.Segment s : inputs) {
      inputBytes += s.state().tailOffset();
      liveEstimate +=
          s.state().tailOffset() - staleBytes(s.state(), f.garbage.get(s.state().segmentId()));
    }
    if (allGarbage(f, inputs)) { // every document is stale: drop the segments without reading them
      long bytes = 0, count = 0;
      for (KeyspaceFiles.Segment s : inputs) {
        Manifest.SegmentGarbage g = f.garbage.get(s.state().segmentId());
        bytes += g.bytes();
        count += g.count();
      }
      commitReplacement(ks, f, inputs, null, bytes, count, gcBase, 0, start, end, t0, false);
      return;
    }
    long number = versionSet.nextFileNumber.getAndIncrement();
    if (number > Integer.MAX_VALUE) throw new BasaltException("file numbers exhausted");
    String name = FileNames.segment(ks, number);
    StorageFile file = null;
    long removedBytes = 0, removedCount = 0, copied = 0;
    SegmentWriter w = null;
    KeyspaceFiles.Segment output = null;
    try {
      storage.mkdirs(FileNames.logDir(ks));
      file = storage.create(name);
      tables.track(file);
      long prealloc = Math.min(options.segmentSize(), Math.max(0, liveEstimate));
      // Cold inputs (none written or read for coldSegmentMillis) make a zstd output; it keeps
      // their newest ages.
      long written = 0, read = 0;
      for (KeyspaceFiles.Segment s : inputs) {
        long id = s.state().segmentId();
        written = Math.max(written, stats.segmentWrittenMillis(id));
        read = Math.max(read, stats.segmentReadMillis.getOrDefault(id, 0L));
        if (s.reader().takeRead()) read = System.currentTimeMillis();
      }
      boolean cold =
          options.coldSegmentMillis() > 0
              && System.currentTimeMillis() - Math.max(written, read)
                  >= options.coldSegmentMillis();
      w =
          SegmentWriter.create(
              file,
              number,
              start,
              SegmentTail.segmentOptions(options)
                  .withPreallocateBytes(prealloc)
                  .withZstdLevel(cold ? options.coldZstdLevel() : 0));
      // With key-ordered runs, an ordered keyspace's live documents gather into runs written in
      // key order (a scan then finds neighbouring keys' documents together, where seqno order
      // scatters them); else, and in hashed keyspaces (as their flushes), they are copied one by
      // one.
      boolean runs = options.keyOrderedRuns() && !catalog.isHashed(ks);
      List<Document> run = new ArrayList<>();
      long runBytes = 0;
      try (DeleteList.Cursor stale = new DeleteList.Cursor(f.deletes, start, end)) {
        boolean more = stale.next();
        for (KeyspaceFiles.Segment s : inputs) {
          DocumentIterator it = s.reader().iterator(s.state().startSeqno());
          while (it.hasNext()) {
            Document d = it.next();
            while (more && stale.seqno() < d.seqno()) more = stale.next();
            if (more && stale.seqno() == d.seqno()) { // a version the key index dropped
              removedBytes += stale.docSize();
              removedCount++;
              more = stale.next();
              continue;
            }
            if (runs) {
              long bytes = d.key().length + d.value().length;
              if (!run.isEmpty() && runBytes + bytes > SegmentWriter.RUN_BYTES) {
                w.appendKeyOrdered(run);
                run.clear();
                runBytes = 0;
              }
              run.add(d);
              runBytes += bytes;
            } else {
              w.append(d.seqno(), d.key(), d.value(), d.tombstone(), d.expiry());
            }
            if (++copied % 1024 == 0 && stopping()) {
              abandon(file, name);
              return;
            }
          }
        }
      }
      w.appendKeyOrdered(run);
      if (copied > 0) {
        SegmentState st = w.checkpoint();
        w.sync();
        stats.segmentWrittenMillis.put(number, written);
        if (read > 0) stats.segmentReadMillis.put(number, read);
        output =
            new KeyspaceFiles.Segment(
                st,
                new SegmentReader(file, st, tables.blockCache(), tables.blockCache().newOwners(2)));
      }
    } catch (StorageException e) {
      // The disk is full, or refused the new segment: nothing was committed, the inputs stay as
      // they
      // are; the job runs again later (stats gcFailures).
      abandon(file, name);
      stats.gcFailures.increment();
      failing = true;
      backOff();
      return;
    } catch (RuntimeException | Error e) {
      abandon(file, name);
      throw e;
    }
    if (output == null)
      abandon(file, name); // every document was garbage: nothing replaces the inputs
    if (!commitReplacement(
        ks,
        f,
        inputs,
        output,
        removedBytes,
        removedCount,
        gcBase,
        inputBytes,
        start,
        end,
        t0,
        w.zstdLevel() > 0)) {
      if (output != null) abandon(file, name);
    } else if (output != null && w.zstdLevel() > 0) {
      stats.gcColdSegments.increment();
      stats.gcColdBytesWritten.add(output.state().tailOffset());
    }
  }

  /** Whether the garbage of every input covers all its documents. */
  private static boolean allGarbage(KeyspaceFiles f, List<KeyspaceFiles.Segment> inputs) {
    for (KeyspaceFiles.Segment s : inputs) {
      Manifest.SegmentGarbage g = f.garbage.get(s.state().segmentId());
      if (g == null || g.count() < s.state().documentCount()) return false;
    }
    return true;
  }

  /**
   * Commits {@code inputs} replaced by {@code output} (null: nothing), with the garbage the job
   * removed, and the delete list tables wholly inside {@code [start, end]}; false if the job was
   * abandoned (keyspace dropped, store failed, stopping).
   */
  private boolean commitReplacement(
      int ks,
      KeyspaceFiles f,
      List<KeyspaceFiles.Segment> inputs,
      KeyspaceFiles.Segment output,
      long removedBytes,
      long removedCount,
      long gcBase,
      long bytesRead,
      long start,
      long end,
      long startNanos,
      boolean cold) {
    VersionEdit edit = new VersionEdit();
    List<Long> ids = new ArrayList<>();
    long inputBytes = 0;
    for (KeyspaceFiles.Segment s : inputs) {
      ids.add(s.state().segmentId());
      inputBytes += s.state().tailOffset();
    }
    edit.replaceSegments(
        ks,
        new VersionEdit.SegmentReplacement(
            ids,
            output == null ? -1 : output.state().segmentId(),
            removedBytes,
            removedCount,
            gcBase));
    if (output != null) edit.putSegment(ks, output);
    edit.addCounters(ks, Manifest.Counters.collected(removedCount, removedBytes));
    for (KeyspaceFiles.DeleteTable d :
        f.deletes) { // every record inside the range was merged (or all stale)
      if (d.meta().minSeqno() >= start && d.meta().maxSeqno() <= end)
        edit.removeDeleteTable(ks, d.meta().fileNumber());
    }
    if (!catalog.isLive(ks) || state.failure() != null || stopping()) return false;
    versionSet.logAndApply(edit);
    failing = false;
    long written = output == null ? 0 : output.state().tailOffset();
    stats.gcRuns.increment();
    stats.gcBytesRead.add(bytesRead);
    stats.gcBytesWritten.add(written);
    stats.gcBytesReclaimed.add(Math.max(0, inputBytes - written));
    stats.gcDocumentsDropped.add(removedCount);
    long inputs0 = 0;
    for (KeyspaceFiles.Segment s : inputs) inputs0 += s.state().tailOffset();
    state
        .notifier()
        .collected(
            new io.basaltdb.EventListener.CollectionInfo(
                catalog.describe(ks),
                inputs.size(),
                bytesRead,
                written,
                Math.max(0, inputs0 - written),
                removedCount,
                cold,
                System.nanoTime() - startNanos));
    events.compacted();
    return true;
  }

  /** Waits a second (or until stopped) before the next job, after a storage failure. */
  private void backOff() {
    synchronized (signal) {
      if (stopping) return;
      try {
        signal.wait(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void abandon(StorageFile file, String name) {
    try {
      if (file == null) return; // never created
      tables.close(file);
      storage.delete(name);
    } catch (RuntimeException ignored) {
      // an orphan then, deleted at the next open; the first error is the one reported
    }
  }

  // ---- delete list compaction
  // ------------------------------------------------------------------------

  /**
   * The delete list tables to merge now, or null: every table, into level 1, once level 0's logical
   * bytes reach half of level 1's (and an eighth of the log's); else the smaller half of level 0
   * into one level-0 table once it holds {@link #DELETE_L0_FULL} tables; else, once {@link
   * #DELETE_TIER_FANIN} level-0 tables are within 4x the records of the smallest, those, into one
   * level-0 table. Level 0 is tiered as the key index's is: a flush writes a small table of the
   * versions it superseded, and merging each batch of them into level 1 would rewrite level 1 every
   * few flushes.
   */
  static List<KeyspaceFiles.DeleteTable> deleteListJob(KeyspaceFiles f) {
    List<KeyspaceFiles.DeleteTable> l0 = new ArrayList<>();
    long l0Bytes = 0, l1Bytes = 0;
    for (KeyspaceFiles.DeleteTable d : f.deletes) {
      if (d.meta().level() == 0) {
        l0.add(d);
        l0Bytes += d.meta().logicalBytes();
      } else {
        l1Bytes += d.meta().logicalBytes();
      }
    }
    if (l0.isEmpty()) return null;
    long logBytes = 0;
    for (KeyspaceFiles.Segment s : f.segments) logBytes += s.state().documentBytes();
    if (l0.size() >= 2 && l0Bytes >= Math.max(l1Bytes / 2, logBytes / 8)) return f.deletes;
    if (l0.size() < DELETE_TIER_FANIN) return null;
    l0.sort((a, b) -> Long.compare(a.meta().records(), b.meta().records()));
    if (l0.size() >= DELETE_L0_FULL) {
      // Too many tables of sizes too far apart to tier (key index compactions' discards vary from a
      // few
      // versions to millions): the smaller half merge into one level-0 table. Rewriting level 1
      // here
      // instead, whatever level 0's share of it, rewrote a delete list of hundreds of MiB every few
      // dozen compactions at 10M keys.
      return l0.subList(0, l0.size() / 2);
    }
    // The smallest run of sorted sizes that has DELETE_TIER_FANIN tables within 4x of its first:
    // one odd
    // small table (a compaction that dropped a few versions) must not keep the flushes' tables from
    // tiering.
    for (int start = 0; start + DELETE_TIER_FANIN <= l0.size(); start++) {
      long limit = 4 * Math.max(1, l0.get(start).meta().records());
      int end = start;
      while (end < l0.size() && l0.get(end).meta().records() <= limit) end++;
      if (end - start >= DELETE_TIER_FANIN) return l0.subList(start, end);
    }
    return null;
  }

  /**
   * Merges {@code inputs} (all of {@code f}'s delete list tables for level 1, some of level 0's for
   * 0).
   */
  private void compactDeleteList(
      int ks, KeyspaceFiles f, List<KeyspaceFiles.DeleteTable> inputs, int level) {
    long addedIn = 0, read = 0;
    for (KeyspaceFiles.DeleteTable d : inputs) {
      addedIn = Math.max(addedIn, d.meta().addedIn());
      read += d.reader().info().fileSize();
    }
    DeleteList.Output out =
        new DeleteList.Output(
            storage,
            tables,
            versionSet.nextFileNumber,
            options,
            ks,
            level,
            addedIn,
            level == 0 ? Long.MAX_VALUE : DELETE_TABLE_BYTES,
            stats.deleteListBytesWritten);
    List<KeyspaceFiles.DeleteTable> written;
    long[] starts = new long[f.segments.size()];
    for (int i = 0; i < starts.length; i++) starts[i] = f.segments.get(i).state().startSeqno();
    try (DeleteList.Cursor c = new DeleteList.Cursor(inputs, 0, Long.MAX_VALUE - 1)) {
      int at = -1;
      long records = 0;
      while (c.next()) {
        long q = c.seqno();
        while (at + 1 < starts.length && starts[at + 1] <= q) at++;
        if (at < 0) continue; // below every segment: its segment was rewritten away
        SegmentState seg = f.segments.get(at).state();
        // Past the segment's last document, before the next segment: a dropped segment's range,
        // whose
        // documents are gone (a record is committed after its segment state holds its seqno).
        if (q > seg.lastSeqno()) continue;
        Manifest.SegmentGarbage g = f.garbage.get(seg.segmentId());
        if (g != null && g.gcBase() >= c.table().addedIn())
          continue; // consumed by a segment compaction
        out.add(q, c.docSize());
        if (++records % 4096 == 0 && stopping()) {
          out.abandon();
          return;
        }
      }
      written = out.finish();
    } catch (StorageException e) { // as in compactSegments: nothing committed, tried again later
      out.abandon();
      stats.gcFailures.increment();
      failing = true;
      backOff();
      return;
    } catch (RuntimeException | Error e) {
      out.abandon();
      throw e;
    }
    VersionEdit edit = new VersionEdit();
    for (KeyspaceFiles.DeleteTable d : inputs) edit.removeDeleteTable(ks, d.meta().fileNumber());
    for (KeyspaceFiles.DeleteTable d : written) edit.addDeleteTable(ks, d);
    if (!catalog.isLive(ks) || state.failure() != null || stopping()) {
      DeleteList.Output.discard(storage, tables, ks, written);
      return;
    }
    versionSet.logAndApply(edit);
    failing = false;
    stats.deleteListCompactions.increment();
    stats.deleteListBytesRead.add(read);
    events.compacted();
  }
}
