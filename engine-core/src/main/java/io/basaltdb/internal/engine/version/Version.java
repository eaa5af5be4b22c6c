package io.basaltdb.internal.engine.version;

import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One immutable arrangement of the store's read sources: the active and immutable write caches and,
 * per keyspace, the key index tables and log segments ({@link KeyspaceFiles}). Readers pin the
 * current version for the length of a get, a snapshot or a cursor; a flush or a compaction installs
 * a new one. A table leaves the disk only when no live version (and no retained manifest) names it.
 * The write caches a version names stay alive while any reader holds it (a snapshot taken before a
 * flush keeps reading the flushed skiplist, whose versions the new table no longer holds). A
 * compaction pins a version of tables only (no write caches), so a long job does not hold flushed
 * write caches in memory.
 *
 * <p>Thread-safety: immutable apart from the reference count. {@link #tryRetain()} fails once the
 * count has reached zero, so a reader racing the installation of a newer version simply retries.
 */
public final class Version {
  /** Null only in a compaction's version of tables only, which readers never see. */
  public final WriteCache active;

  /** The write cache being flushed, or null. */
  public final WriteCache immutable;

  /** Keyspace id to its files; keyspaces without files may be absent. */
  public final Map<Integer, KeyspaceFiles> files;

  /**
   * Keyspace ids below this are looked up in {@link #byId}, without boxing the id (a get allocates
   * nothing).
   */
  private static final int DENSE_IDS = 1024;

  /** {@link #files} by keyspace id while every id is below {@link #DENSE_IDS}, else null. */
  private final KeyspaceFiles[] byId;

  private final int maxLevel0Tables;
  private final AtomicInteger refs = new AtomicInteger(1);

  /**
   * Called once when the last reference goes; the engine forgets the version and may delete tables.
   */
  private final Consumer<Version> onFree;

  /** Use {@link io.basaltdb.internal.engine.Engine#newVersion}, which registers the version. */
  Version(
      WriteCache active,
      WriteCache immutable,
      Map<Integer, KeyspaceFiles> files,
      Consumer<Version> onFree) {
    this.active = active;
    this.immutable = immutable;
    this.files = Map.copyOf(files);
    this.onFree = onFree;
    int maxId = -1, minId = 0, l0 = 0;
    for (Map.Entry<Integer, KeyspaceFiles> e : this.files.entrySet()) {
      maxId = Math.max(maxId, e.getKey());
      minId = Math.min(minId, e.getKey());
      l0 = Math.max(l0, e.getValue().levelCount(0));
    }
    maxLevel0Tables = l0;
    if (maxId < DENSE_IDS && minId >= 0) {
      byId = new KeyspaceFiles[maxId + 1];
      for (Map.Entry<Integer, KeyspaceFiles> e : this.files.entrySet())
        byId[e.getKey()] = e.getValue();
    } else {
      byId = null;
    }
    if (active != null) active.retain();
    if (immutable != null) immutable.retain();
  }

  public KeyspaceFiles files(int keyspace) {
    KeyspaceFiles f;
    if (byId != null) {
      f = keyspace >= 0 && keyspace < byId.length ? byId[keyspace] : null;
    } else {
      f = files.get(keyspace);
    }
    return f == null ? KeyspaceFiles.EMPTY : f;
  }

  /** The most level-0 tables any keyspace has (the writers' stall check asks it of every group). */
  public int maxLevel0Tables() {
    return maxLevel0Tables;
  }

  boolean tryRetain() {
    int r;
    do {
      r = refs.get();
      if (r == 0) return false;
    } while (!refs.compareAndSet(r, r + 1));
    return true;
  }

  public void release() {
    if (refs.decrementAndGet() == 0) {
      try {
        if (active != null) active.release();
      } finally {
        try {
          if (immutable != null) immutable.release();
        } finally {
          onFree.accept(this); // forgotten even if a cache's leak check threw, so its tables can go
        }
      }
    }
  }
}
