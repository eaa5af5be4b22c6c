package io.basaltdb.internal.engine.version;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.memory.MemoryQuota;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The read sources readers see: the current {@link Version}, the last published seqno, and every
 * version and write cache still alive. Both stores have one; the disk store's {@link VersionSet}
 * installs file-set changes through it.
 *
 * <h2>Concurrency</h2>
 *
 * {@link #applyLock} orders what readers must see atomically: the commit leader applying a group
 * and publishing {@link #lastSeqno}, a write cache switch, installing a version, taking a snapshot.
 * Readers take no lock: they pin {@link #current} by its reference count ({@link #acquire}).
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>Every write with a seqno at or below {@link #lastSeqno} is in the current version's
 *       sources, applied as a whole group.
 *   <li>The immutable write cache, if any, holds exactly the writes in (flushed seqno, its
 *       switchSeqno].
 *   <li>A version is freed only when its last reader lets go; the tables it names stay on disk till
 *       then.
 * </ol>
 */
public final class Versions {
  public final ReentrantLock applyLock = new ReentrantLock();

  /**
   * The read sources; replaced under applyLock, read by anyone (volatile: a reader sees a complete
   * version).
   */
  private volatile Version current;

  /**
   * Highest published seqno: every write up to it is applied and visible as a whole group. Written
   * under applyLock (by the commit leader, or by recovery before the store is shared); read without
   * locking.
   */
  private volatile long lastSeqno;

  /** The highest published seqno ({@link #lastSeqno}). */
  public long lastSeqno() {
    return lastSeqno;
  }

  /**
   * Publishes {@code seqno} as the highest whose writes are all applied: the commit leader after it
   * applies a group, replay after each batch, the opening thread at recovery. Caller holds
   * applyLock (or has the store to itself); seqnos only grow.
   */
  public void publish(long seqno) {
    lastSeqno = seqno;
  }

  /** Versions not yet freed; concurrent set, read by the obsolete-table sweep. */
  private final Set<Version> live = ConcurrentHashMap.newKeySet();

  /** Write caches not yet freed, so close can free those still pinned by open snapshots. */
  private final Set<WriteCache> liveWriteCaches = ConcurrentHashMap.newKeySet();

  private final AtomicLong writeCacheIds = new AtomicLong();

  /** What the write caches' allocators (one per write cache) reserve together. */
  private final MemoryQuota quota;

  private final String name;
  private final long chunkSize;
  private final int maxValueSize;

  /**
   * Told when a version is freed (its tables may be obsolete); set once at open, before sharing.
   */
  private Runnable onVersionFreed = () -> {};

  /**
   * The exact item counts, or null ({@link io.basaltdb.Options#exactItemCounts}); set once at open,
   * before sharing.
   */
  private ItemCounter items;

  /** The exact item counts, or null when the store does not keep them. */
  public ItemCounter items() {
    return items;
  }

  /** Keeps exact item counts with {@code counter} (set at open, before the store is shared). */
  public void countItems(ItemCounter counter) {
    this.items = counter;
  }

  /** Set by close; volatile: a reader that cannot retain the current version checks it. */
  private volatile boolean closed;

  /** Whether versions lie below the write caches (the disk store; {@link WriteCache#netKeys}). */
  private final boolean layered;

  public Versions(
      String name,
      MemoryQuota quota,
      long chunkSize,
      int maxValueSize,
      boolean layered,
      Map<Integer, KeyspaceFiles> files) {
    this.name = name;
    this.layered = layered;
    this.quota = quota;
    this.chunkSize = chunkSize;
    this.maxValueSize = maxValueSize;
    WriteCache active = newWriteCache();
    current = newVersion(active, null, files);
    active.release();
  }

  public void onVersionFreed(Runnable r) {
    onVersionFreed = r;
  }

  /** The current version, retained; the caller releases it. */
  public Version acquire() {
    while (true) {
      Version v = current;
      if (v.tryRetain()) return v;
      if (closed) throw new ClosedException("the store is closed; open it again");
    }
  }

  /**
   * The current version, not retained: for fields that are the same in every version a caller may
   * race with.
   */
  public Version current() {
    return current;
  }

  /**
   * A new write cache with its own allocator over the write quota.
   *
   * @throws io.basaltdb.MemoryLimitException if the quota has no chunk for its skiplist; nothing
   *     changes then
   */
  public WriteCache newWriteCache() {
    WriteCache[] self = new WriteCache[1];
    self[0] =
        new WriteCache(
            writeCacheIds.incrementAndGet(),
            name,
            quota,
            chunkSize,
            maxValueSize,
            layered,
            () -> liveWriteCaches.remove(self[0]));
    liveWriteCaches.add(self[0]);
    return self[0];
  }

  /** A new version, registered so its tables stay on disk until it is freed. */
  Version newVersion(WriteCache active, WriteCache immutable, Map<Integer, KeyspaceFiles> files) {
    Version v = new Version(active, immutable, files, this::freed);
    live.add(v);
    return v;
  }

  private void freed(Version v) {
    live.remove(v);
    onVersionFreed.run();
  }

  /** Makes {@code v} current and drops the reference to the old one. Caller holds applyLock. */
  void install(Version v) {
    Version old = current;
    current = v;
    old.release();
  }

  /**
   * Turns the active write cache immutable at the last published seqno, noting the WAL file that
   * starts after it, and makes {@code fresh} (from {@link #newWriteCache}, made first so a lack of
   * memory changes nothing) the active one. Caller holds applyLock; there is no immutable cache.
   */
  public void switchWriteCache(long walAfter, WriteCache fresh) {
    Version v = current;
    if (v.immutable != null) throw new IllegalStateException("a flush is already pending");
    v.active.switched(lastSeqno, walAfter, items == null ? null : items.copy());
    install(newVersion(fresh, v.active, v.files));
  }

  public MemoryQuota quota() {
    return quota;
  }

  /**
   * Waits for the commit group being applied to be published. A get that meets an entry above
   * {@link #lastSeqno} calls this before answering, so that once it has seen one write of a batch,
   * every later read sees the whole batch: the leader holds the apply lock from the group's first
   * entry until it publishes.
   */
  public void awaitPublished() {
    applyLock.lock();
    applyLock.unlock();
  }

  /** Names of the data files (tables, delete list tables, segments) some live version names. */
  Set<String> namedFiles() {
    Set<String> named = new java.util.HashSet<>();
    for (Version v : live) {
      v.files.forEach((ks, f) -> f.addFileNames(ks, named));
    }
    return named;
  }

  /**
   * Write caches not yet freed: the active one, one being flushed, and those readers still hold.
   */
  public int liveWriteCaches() {
    return liveWriteCaches.size();
  }

  /** Drops the current version and frees every write cache, even those open snapshots still pin. */
  public void close() {
    closed = true;
    RuntimeException first = null;
    applyLock.lock();
    try {
      current.release();
    } catch (RuntimeException e) {
      first = e;
    } finally {
      applyLock.unlock();
    }
    for (WriteCache m : liveWriteCaches) { // each freed even if another's leak check throws
      try {
        m.free();
      } catch (RuntimeException e) {
        if (first == null) first = e;
        else first.addSuppressed(e);
      }
    }
    liveWriteCaches.clear();
    if (first != null) throw first;
  }
}
