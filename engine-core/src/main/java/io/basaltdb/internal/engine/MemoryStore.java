package io.basaltdb.internal.engine;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.MemoryLimitException;
import io.basaltdb.internal.memory.SlabAllocator;
import java.util.List;

/**
 * Nitro's in-memory engine (seed 001) behind the engine's API: every write lives in the one skiplist,
 * nothing is logged or flushed. A delete removes the key outright once its group is published (no older
 * versions on disk for a tombstone to shadow), and a dropped keyspace's keys go at once.
 *
 * <p>Thread-safety: the commit-target methods run on the commit leader; the rest on any thread.
 */
final class MemoryStore implements Store, CommitTarget {
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final SlabAllocator allocator;
  /** The allocator's chunk size: the headroom a write needs beyond its own bytes. */
  private final long chunkSize;

  MemoryStore(Versions versions, KeyspaceCatalog catalog, SlabAllocator allocator, long chunkSize) {
    this.versions = versions;
    this.catalog = catalog;
    this.allocator = allocator;
    this.chunkSize = chunkSize;
  }

  @Override public void makeRoom() {}

  @Override
  public void admit(long estimate) {
    long quota = allocator.quota();
    long used = allocator.usedBytes();
    if (used + 2 * estimate + 2 * chunkSize > quota) {
      throw new MemoryLimitException("the in-memory store is full: " + used + " of " + quota
          + " bytes in use, a write needs about " + estimate
          + "; delete data or reopen with a larger Options.memoryQuota. Nothing was written");
    }
  }

  @Override public void log(List<Batch> group) {}

  /** Removes the group's tombstones outright; still under the apply lock, so no snapshot sees them. */
  @Override
  public void applied(WriteCache cache, List<Batch> group) {
    for (Batch b : group) {
      for (int i = 0; i < b.count; i++) {
        if (b.types[i] != Batch.PUT && catalog.isLive(b.keyspaces[i])) {
          cache.removeTombstone(b.keyspaces[i], b.keys[i], b.firstSeqno + i);
        }
      }
    }
  }

  @Override
  public int createKeyspace(String name, KeyspaceCatalog catalog) {
    return catalog.maxId() + 1;
  }

  @Override
  public void dropKeyspace(int id) {
    versions.applyLock.lock();
    try {
      versions.current().active.removeKeyspace(id);
    } finally {
      versions.applyLock.unlock();
    }
  }

  @Override public void flush(CommitPipeline pipeline) {}

  @Override public boolean waitForCompactions(long timeoutMillis) {
    return true;
  }

  @Override public List<Manifest> checkpoints() {
    return List.of();
  }

  @Override public Manifest checkpoint(CommitPipeline pipeline) {
    throw new InvalidArgumentException("an in-memory store has no checkpoints");
  }

  @Override public FileStats fileStats() {
    return new FileStats(Manifest.Counters.ZERO, 0);
  }

  @Override public void close() {}
}
