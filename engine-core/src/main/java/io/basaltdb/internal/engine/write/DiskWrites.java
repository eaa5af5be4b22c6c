package io.basaltdb.internal.engine.write;

import io.basaltdb.BasaltException;
import io.basaltdb.EventListener;
import io.basaltdb.MemoryLimitException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.base.WorkerEvents;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.storage.Storage;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * The disk store's side of a commit (Magma section 3.1): the WAL, and room in the write cache. When
 * the active write cache reaches {@link #switchBytes} (3/4 of {@link Options#writeCacheSize}) it is
 * switched (it turns immutable, the WAL rotates, the flusher starts); while the previous one is
 * still being flushed the writer is slowed (the active cache 3/4 full) or stalled (full), and it
 * stalls while a keyspace has {@code l0StopWritesTrigger} level-0 tables, and is slowed or stalled
 * while garbage collection falls behind ({@link SegmentCompactor#pressure}). In PERIODIC sync mode
 * a thread fsyncs the WAL every {@code syncIntervalMillis}.
 *
 * <p>Thread-safety: {@link #makeRoom}, {@link #freeMemory}, {@link #log} and {@link
 * #switchWriteCache} run on the commit leader (one at a time); the WAL's own monitor orders its
 * file operations with the syncer thread's.
 */
public final class DiskWrites implements CommitTarget, CommitTarget.WalSkip {

  /**
   * The size at which the active write cache is switched and flushed: 3/4 of {@code
   * writeCacheSize}. The write cache's allocator has twice {@code writeCacheSize} of the quota
   * (Options#blockCacheSize), so an active and a flushing cache of 3/4 each, with the allocator's
   * per-thread slack, fit it; at half (before) a quarter of the quota sat unused while flushes came
   * twice as often as RocksDB's memtables of the same budget, and level 0 filled twice as fast.
   */
  static long switchBytes(Options options) {
    return options.writeCacheSize() / 4 * 3;
  }

  private final Options options;
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final StoreState state;
  private final EngineStats stats;
  private final VersionSet versionSet;
  private final CommitLog wal;
  private final WorkerEvents events;
  private final SegmentCompactor gc;

  /** For the free space check ({@link Options#diskReserveBytes}). */
  private final Storage storage;

  /**
   * The last usable space read and when; commit leader only (one at a time, ordered by its lock).
   */
  private long freeSeen = Long.MAX_VALUE;

  private long freeSeenNanos = System.nanoTime() - 20_000_000L;

  /** The PERIODIC mode's fsync thread, or null. */
  private final Thread syncer;

  /** The writers' wait under way and since when ({@link #stall}); commit leader only. */
  private EventListener.Stall stalling;

  private long stallSince;

  /** Writes the batches that skip the WAL ({@link #write}). */
  private final Flusher flusher;

  public DiskWrites(
      Options options,
      Versions versions,
      KeyspaceCatalog catalog,
      StoreState state,
      EngineStats stats,
      VersionSet versionSet,
      CommitLog wal,
      WorkerEvents events,
      SegmentCompactor gc,
      Storage storage,
      Flusher flusher) {
    this.options = options;
    this.versions = versions;
    this.catalog = catalog;
    this.state = state;
    this.stats = stats;
    this.versionSet = versionSet;
    this.wal = wal;
    wal.countWritesIn(stats.walBytesWritten);
    this.events = events;
    this.gc = gc;
    this.storage = storage;
    this.flusher = flusher;
    if (options.syncMode() == SyncMode.PERIODIC) {
      syncer = new Thread(this::syncPeriodically, "basalt-wal-sync");
      syncer.setDaemon(true);
      syncer.start();
    } else {
      syncer = null;
    }
  }

  @Override
  public boolean makeRoom(Batch head) {
    try {
      return makeRoomOrStall(head);
    } finally {
      endStall();
    }
  }

  private boolean makeRoomOrStall(Batch head) {
    boolean deletesOnly = checkSpace(head.deletesOnly());
    long switchAt = switchBytes(options);
    boolean slowed = false;
    while (true) {
      state.checkWritable();
      Version v = versions.current();
      if (stalled(v)) continue;
      if (gc.pressure(v) == SegmentCompactor.PRESSURE_SLOW && !slowed) {
        long t0 = System.nanoTime();
        LockSupport.parkNanos(1_000_000L);
        stats.gcSlowdownNanos.add(System.nanoTime() - t0);
        stats.gcSlowdowns.increment();
        slowed = true;
        continue;
      }
      long active = v.active.bytes();
      if (active < switchAt) {
        if (v.immutable != null && !slowed && active >= switchAt * 3 / 4) {
          long t0 = System.nanoTime();
          LockSupport.parkNanos(1_000_000L);
          stats.slowdownNanos.add(System.nanoTime() - t0);
          stats.slowdowns.increment();
          slowed = true;
          continue;
        }
        return deletesOnly;
      }
      if (v.immutable == null) {
        try {
          switchWriteCache();
        } catch (MemoryLimitException e) {
          // no chunk for a fresh cache yet: keep the full one; admission waits for memory or
          // refuses
        }
        return deletesOnly;
      }
      stall(EventListener.Stall.WRITE_CACHE);
      long t0 = System.nanoTime();
      state.awaitProgress(
          50, () -> versions.current().immutable != null, "the write cache to flush");
      stats.stallNanos.add(System.nanoTime() - t0);
      stats.stalls.increment();
    }
  }

  /**
   * Writers wait for {@code cause}: tells of it once per episode (an episode of another cause
   * ends). Leader only.
   */
  private void stall(EventListener.Stall cause) {
    if (stalling == cause) return;
    endStall();
    stalling = cause;
    stallSince = System.nanoTime();
    state.notifier().stallBegan(cause);
  }

  @Override
  public void groupDone() {
    endStall();
  }

  /** The writers' wait, if any, is over. Leader only. */
  private void endStall() {
    if (stalling == null) return;
    EventListener.Stall cause = stalling;
    stalling = null;
    state.notifier().stallEnded(cause, System.nanoTime() - stallSince);
  }

  /**
   * Waits a while (and returns true, to look again) if writers must stop: a keyspace's level 0 is
   * full, or garbage collection has fallen too far behind.
   */
  private boolean stalled(Version v) {
    if (l0Full(v)) {
      waitFor(EventListener.Stall.LEVEL_0, "compaction", stats.l0StallNanos, stats.l0Stalls);
      return true;
    }
    if (gc.pressure(v) == SegmentCompactor.PRESSURE_STOP) {
      waitFor(
          EventListener.Stall.GARBAGE_COLLECTION,
          "garbage collection",
          stats.gcStallNanos,
          stats.gcStalls);
      return true;
    }
    return false;
  }

  /**
   * One wait of up to 20 ms for a background worker's progress, counted as a stall of {@code
   * cause}.
   */
  private void waitFor(
      EventListener.Stall cause,
      String what,
      java.util.concurrent.atomic.LongAdder nanos,
      java.util.concurrent.atomic.LongAdder count) {
    stall(cause);
    long t0 = System.nanoTime();
    state.awaitProgress(20, () -> true, what);
    nanos.add(System.nanoTime() - t0);
    count.increment();
  }

  @Override
  public WalSkip walSkip(Batch b) {
    if (b.skipsWal) return this;
    long threshold = options.walSkipBytes();
    if (threshold <= 0 || b.encodedSize() < threshold) return null;
    return this;
  }

  /**
   * The disk space check and the stalls of {@link #makeRoom}, then a flush of whatever the write
   * caches hold, so the batch's seqnos follow every flushed one. The flush's wait is not counted as
   * a stall: it is the price of skipping the WAL.
   */
  @Override
  public void prepare(Batch b) {
    try {
      prepareDirectOrStall(b);
    } finally {
      endStall();
    }
  }

  private void prepareDirectOrStall(Batch b) {
    // Its segment and table bytes come on top of the reserve (a WAL batch's are bounded by the
    // write cache).
    checkSpace(b.deletesOnly(), 2L * b.encodedSize());
    long pinnedSince = 0;
    while (true) {
      state.checkWritable();
      if (stalled(versions.current())) continue;
      awaitFlushed();
      if (versions.current().active.isEmpty()) {
        // The flush just waited for may have filled level 0: look again before adding a table to
        // it.
        if (stalled(versions.current())) continue;
        return;
      }
      try {
        switchWriteCache();
      } catch (MemoryLimitException e) {
        // No chunk for a fresh cache: snapshots pin older ones. Wait for them as admission does,
        // then refuse.
        long now = System.nanoTime();
        if (pinnedSince == 0) pinnedSince = now;
        if (now - pinnedSince >= pinnedWaitNanos()) throw e;
        LockSupport.parkNanos(10_000_000L);
      }
    }
  }

  @Override
  public void write(
      Batch b, WriteCache.Below[] below, Map<Integer, Long> itemsAfter, Runnable publish) {
    // On the heap first: a batch too big for it is refused here, with nothing written and the store
    // writable.
    List<byte[][]> sorted = Flusher.sortedEntries(b, below, catalog);
    try {
      flusher.flushBatch(sorted, b.firstSeqno + b.count - 1, itemsAfter, publish);
    } catch (BasaltException e) {
      state.fail(e);
      throw e;
    } catch (RuntimeException | Error e) {
      BasaltException f = new BasaltException("a batch that skipped the WAL failed: " + e, e);
      state.fail(f);
      throw f;
    }
    wal.skipped(b.firstSeqno + b.count - 1);
    stats.walSkippedBatches.increment();
    stats.walSkippedBytes.add(b.encodedSize());
  }

  /**
   * Refuses the leader's batch, before anything is written, while the disk has less usable space
   * than {@link Options#diskReserveBytes}: that room is kept for flushes, compaction and garbage
   * collection. A batch of deletes only may still use the reserve's upper half (its tombstones are
   * small, and deletes are how a user frees space); returns true then: the group takes deletes
   * only.
   */
  private boolean checkSpace(boolean deletes) {
    return checkSpace(deletes, 0);
  }

  /**
   * As {@link #checkSpace(boolean)}, for a write that needs {@code extra} bytes beyond the reserve
   * (read afresh).
   */
  private boolean checkSpace(boolean deletes, long extra) {
    long reserve = options.diskReserveBytes();
    if (reserve <= 0) return false;
    long now = System.nanoTime();
    // One statfs per 10 ms while space is plentiful (small unsynced groups can run at 100k/s);
    // every
    // group near the reserve.
    if (extra > 0 || freeSeen < 2 * reserve || now - freeSeenNanos >= 10_000_000L) {
      freeSeen = storage.usableSpace();
      freeSeenNanos = now;
    }
    long free = freeSeen - extra;
    if (free >= reserve) return false;
    if (deletes && free >= reserve / 2) return true;
    stats.diskFullRefusals.increment();
    throw new StorageException(
        "write refused: the disk holding "
            + storage.describe("")
            + " has "
            + free
            + " bytes free, less than the "
            + reserve
            + " bytes the store keeps for flushes and garbage collection"
            + " (diskReserveBytes); nothing was written. Free disk space or wait for garbage collection, then retry");
  }

  /** Whether a keyspace has so many level-0 tables that writers must wait for compaction. */
  private boolean l0Full(Version v) {
    if (v.maxLevel0Tables() < options.l0StopWritesTrigger())
      return false; // every group asks: no iteration
    for (Map.Entry<Integer, KeyspaceFiles> e :
        v.files.entrySet()) { // a dropped keyspace stalls nobody
      if (e.getValue().levelCount(0) >= options.l0StopWritesTrigger() && catalog.isLive(e.getKey()))
        return true;
    }
    return false;
  }

  @Override
  public void precheck(List<Batch> group, long estimate) {}

  /** A flushed write cache gives its memory back: wait for the flush in progress, or start one. */
  @Override
  public boolean freeMemory() {
    Version v = versions.current();
    if (v.immutable != null) {
      stall(
          EventListener.Stall
              .WRITE_CACHE); // ended with the group ({@link #groupDone}): admission retries
      long t0 = System.nanoTime();
      state.awaitProgress(
          50, () -> versions.current().immutable != null, "the write cache to flush");
      stats.stallNanos.add(System.nanoTime() - t0);
      stats.stalls.increment();
      return true;
    }
    if (v.active.isEmpty()) return false;
    try {
      switchWriteCache();
      return true;
    } catch (MemoryLimitException e) {
      return false; // not even a fresh cache's first chunk fits: what is left is pinned
    }
  }

  /** Snapshots pin flushed write caches; give them a second to close before refusing a write. */
  @Override
  public long pinnedWaitNanos() {
    return 1_000_000_000L;
  }

  @Override
  public String whenFull() {
    return "the write cache is full; open snapshots pin flushed write caches, close them or raise Options.memoryQuota";
  }

  @Override
  public void log(List<Batch> group) {
    boolean sync = options.syncMode() == SyncMode.SYNC;
    try {
      wal.append(group, sync, options.walBufferBytes()); // counts its bytes in walBytesWritten
      if (sync) stats.walSyncs.increment();
    } catch (BasaltException e) {
      state.fail(e);
      throw e;
    }
  }

  @Override
  public void applied(WriteCache cache, List<Batch> group) {}

  /**
   * Writes what the WAL buffer holds ({@link Options#walBufferBytes}); any thread (the WAL's
   * monitor orders it with the leader's appends). A failure fails the store.
   */
  public void flushWal() {
    state.checkWritable();
    try {
      wal.writeBuffered();
    } catch (BasaltException e) {
      state.fail(e);
      throw e;
    } catch (RuntimeException e) {
      io.basaltdb.StorageException f =
          new io.basaltdb.StorageException("writing the write-ahead log's buffer failed: " + e, e);
      state.fail(f);
      throw f;
    }
  }

  /**
   * Rotates the WAL, then turns the active write cache immutable and starts a new one (under the
   * apply lock, so no write is half in either); the flusher picks it up. Commit leader only,
   * between groups, so no group is logged between the rotation and the switch.
   */
  void switchWriteCache() {
    // First the fresh cache, whose skiplist head needs a chunk: if the quota has none, this throws
    // MemoryLimitException before anything changed, and the store stays writable.
    WriteCache fresh = versions.newWriteCache();
    try {
      // The rotation's fsyncs happen outside the apply lock, so readers waiting on a publication
      // and new
      // snapshots do not wait for them: only this leader appends to the WAL, and it is between
      // groups.
      long walNumber = versionSet.nextFileNumber.getAndIncrement();
      wal.rotate(walNumber);
      versions.applyLock.lock();
      try {
        versions.switchWriteCache(walNumber, fresh);
      } finally {
        versions.applyLock.unlock();
      }
    } catch (BasaltException e) {
      state.fail(e);
      throw e;
    } finally {
      fresh.release(); // the new version holds it; without one (a failed rotation) this frees it
    }
    events.writeCacheSwitched();
  }

  /**
   * Between commit groups: waits out a flush in progress, then switches the active cache if it
   * holds anything.
   */
  public void switchForFlush() {
    state.checkOpen();
    state.checkWritable();
    awaitFlushed();
    if (!versions.current().active.isEmpty()) switchWriteCache();
  }

  /** Waits until no write cache is being flushed. */
  public void awaitFlushed() {
    while (versions.current().immutable != null) {
      state.checkOpen(); // close stops the flusher: a flush pending then never finishes
      state.checkWritable();
      state.awaitProgress(20, () -> versions.current().immutable != null, "a flush");
    }
  }

  /**
   * PERIODIC mode: fsyncs the WAL every syncIntervalMillis until close; a failure fails the store.
   */
  private void syncPeriodically() {
    while (!state.isClosed()) {
      // Parked, not sleeping: close unparks it; an interrupt would close the WAL's FileChannel.
      LockSupport.parkNanos(options.syncIntervalMillis() * 1_000_000L);
      if (state.isClosed() || state.failure() != null) return;
      try {
        wal.sync();
        stats.walSyncs.increment();
      } catch (BasaltException e) {
        state.fail(e);
        return;
      }
    }
  }

  /** Stops the syncer, then syncs and closes the WAL (or abandons it after a failure). */
  public void close() {
    if (syncer != null) {
      LockSupport.unpark(syncer);
      try {
        syncer.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (state.failure() == null && !wal.failed()) {
      wal.close(versions.lastSeqno());
      return;
    }
    // A failure elsewhere (a flush, a compaction) leaves the log intact: the acknowledged writes
    // its
    // buffer holds (Options.walBufferBytes) are written, so the reopen the failure asks for replays
    // them. After a failure of the log itself nothing more is written to it.
    if (!wal.failed()) {
      try {
        wal.writeBuffered();
      } catch (RuntimeException logFailedToo) {
        // the writes the buffer held are lost, as in a crash; the store already failed
      }
    }
    wal.abandon();
  }
}
