package io.basaltdb.internal.engine;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.backup.MemoryBackups;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.write.CommitPipeline;
import io.basaltdb.internal.engine.write.CommitTarget;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.List;

/**
 * Nitro's in-memory engine (seed 001) behind the engine's API: every write lives in the one
 * skiplist, nothing is logged or flushed. A delete removes the key outright once its group is
 * published (no older versions on disk for a tombstone to shadow), and a dropped keyspace's keys go
 * at once.
 *
 * <p>Thread-safety: the commit-target methods run on the commit leader; the rest on any thread.
 */
final class MemoryStore implements Store, CommitTarget {
  private final Versions versions;
  private final KeyspaceCatalog catalog;

  /** The next keyspace id ("default" is 1). */
  private final java.util.concurrent.atomic.AtomicInteger nextKeyspaceId =
      new java.util.concurrent.atomic.AtomicInteger(2);

  /** The write cache allocator's chunk size: part of the room kept for deletes. */
  private final long chunkSize;

  private final io.basaltdb.Options options;

  /** Test hooks of the backup ({@link MemoryBackups.Hooks}); set before a backup starts. */
  volatile MemoryBackups.Hooks backupHooks = MemoryBackups.Hooks.NONE;

  MemoryStore(
      Versions versions, KeyspaceCatalog catalog, long chunkSize, io.basaltdb.Options options) {
    this.versions = versions;
    this.catalog = catalog;
    this.chunkSize = chunkSize;
    this.options = options;
  }

  /** A restored keyspace's layout code (a hashed one's; 0 for ordered). */
  void restoredLayout(int id, int layout) {
    if (layout != 0) layouts.put(id, layout);
  }

  /** A restored store's next keyspace id: above every id its backup held. */
  void restoredKeyspaceIds(int next) {
    nextKeyspaceId.set(Math.max(next, nextKeyspaceId.get()));
  }

  /**
   * Backs the store up as of every write published before the call (seed 001 section 5, {@link
   * MemoryBackups}): a snapshot, its seqno and the keyspaces are taken together under the apply
   * lock.
   */
  @Override
  public Backups.Result backup(
      CommitPipeline pipeline,
      io.basaltdb.internal.storage.Storage target,
      io.basaltdb.internal.storage.Storage previous,
      java.util.function.BooleanSupplier stopped) {
    if (previous != null) {
      throw new InvalidArgumentException(
          "an in-memory store's backups are always full: there is no earlier backup to"
              + " share files with (incremental backups are for stores on disk)");
    }
    Version v;
    io.basaltdb.internal.skiplist.Snapshot snap;
    long seqno;
    java.util.Map<Integer, String> keyspaces;
    versions.applyLock.lock();
    try {
      seqno = versions.lastSeqno();
      keyspaces = catalog.byId();
      v = versions.acquire();
      try {
        snap = v.active.list.snapshot();
      } catch (RuntimeException e) {
        v.release();
        throw e;
      }
    } finally {
      versions.applyLock.unlock();
    }
    try {
      java.util.Map<Integer, Integer> kinds = new java.util.HashMap<>();
      for (int id : keyspaces.keySet())
        if (trieChunkBytes(id) != 0) kinds.put(id, trieChunkBytes(id));
      return MemoryBackups.backup(
          v.active.list,
          snap,
          seqno,
          keyspaces,
          java.util.Map.copyOf(kinds),
          nextKeyspaceId.get(),
          target,
          options.backupThreads(),
          options.backupCompression(),
          options.nonIntrusiveBackup(),
          stopped,
          backupHooks);
    } finally {
      v.release();
    }
  }

  @Override
  public boolean makeRoom(Batch head) {
    return false;
  }

  /**
   * Refuses a group with puts that would leave less than two chunks and twice its size free, so a
   * full store still takes the deletes that make room again (its message says to delete data).
   */
  @Override
  public void precheck(List<Batch> group, long estimate) {
    boolean puts = false;
    for (Batch b : group) {
      for (int i = 0; i < b.count && !puts; i++) puts = b.types[i] == Batch.PUT;
    }
    var q = versions.quota();
    if (puts && q.usedBytes() + 2 * estimate + 2 * chunkSize > q.limit()) {
      throw new io.basaltdb.MemoryLimitException(
          whenFull()
              + " ("
              + q.usedBytes()
              + " of "
              + q.limit()
              + " bytes in use, a write needs about "
              + estimate
              + "; the rest is kept for deletes). Nothing was written");
    }
  }

  /** Nothing frees memory here but the caller's deletes: the group is refused. */
  @Override
  public boolean freeMemory() {
    return false;
  }

  @Override
  public long pinnedWaitNanos() {
    return 0;
  }

  @Override
  public String whenFull() {
    return "the in-memory store is full; delete data or reopen with a larger Options.memoryQuota";
  }

  @Override
  public void log(List<Batch> group) {}

  /**
   * Removes the group's tombstones outright; still under the apply lock, so no snapshot sees them.
   */
  @Override
  public void applied(WriteCache cache, List<Batch> group) {
    for (Batch b : group) {
      for (int i = 0; i < b.count; i++) {
        if (b.types[i] != Batch.PUT && catalog.isLive(b.keyspaces[i])) {
          cache.removeTombstone(b.keyspaces[i], b.key(i), b.firstSeqno + i);
        }
      }
    }
  }

  /**
   * Ids are never handed out twice, so a write checked before a drop cannot land in a new keyspace.
   */
  @Override
  public int createKeyspace(String name, KeyspaceCatalog catalog, int trieChunkBytes) {
    if (KeyspaceLayout.isHashed(trieChunkBytes)) {
      // The skiplist serves gets as it does for any keyspace; the catalog refuses scans, as the
      // disk store's hashed keyspaces do.
      int id = nextKeyspaceId.getAndIncrement();
      layouts.put(id, trieChunkBytes);
      return id;
    }
    if (trieChunkBytes != 0) {
      throw new InvalidArgumentException(
          "the in-memory store keeps no key index tables: keyspace '"
              + name
              + "' cannot have the HB_TRIE key index format");
    }
    return nextKeyspaceId.getAndIncrement();
  }

  @Override
  public int trieChunkBytes(int id) {
    return layouts.getOrDefault(id, 0);
  }

  /** Layout codes of the hashed keyspaces (the only ones not 0); any thread. */
  private final java.util.Map<Integer, Integer> layouts =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Forgets the keyspace (later writes to it are skipped), then removes its keys between commit
   * groups, so no group applied before the removal is left behind.
   */
  @Override
  public void dropKeyspace(int id, KeyspaceCatalog catalog, CommitPipeline pipeline) {
    catalog.remove(id);
    pipeline.runBetweenGroups(
        () -> {
          versions.applyLock.lock();
          try {
            versions.current().active.removeKeyspace(id);
          } finally {
            versions.applyLock.unlock();
          }
        });
  }

  /**
   * A delete removes its key at once and nothing is logged, so there is no history for a change
   * feed.
   */
  @Override
  public long purgeSeqno(int ks) {
    throw new UnsupportedOperationException(
        "an in-memory store keeps no log and forgets deletes at once, so it has"
            + " no change feed; open a store on disk for one");
  }

  @Override
  public void flush(CommitPipeline pipeline) {}

  @Override
  public void flushWal() {}

  @Override
  public boolean waitForCompactions(long timeoutMillis) {
    return true;
  }

  /** Nothing to do: the skiplist's collector frees a deleted or replaced version once unread. */
  @Override
  public void compactRange(int ks, byte[] from, byte[] to, CommitPipeline pipeline) {}

  @Override
  public List<Manifest> checkpoints() {
    return List.of();
  }

  @Override
  public Manifest checkpoint(CommitPipeline pipeline) {
    throw new InvalidArgumentException("an in-memory store has no checkpoints");
  }

  @Override
  public FileStats fileStats() {
    return new FileStats(Manifest.Counters.ZERO, 0, 0, 0);
  }

  @Override
  public void close() {}
}
