package io.basaltdb.internal.engine;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One immutable arrangement of the store's read sources: the active and immutable write caches and,
 * per keyspace, the key index tables and log segments ({@link KeyspaceFiles}). Readers pin the current
 * version for the length of a get, a snapshot or a cursor; a flush or a compaction installs a new one.
 * A table leaves the disk only when no live version (and no retained manifest) names it. The write caches
 * a version names stay alive while any reader holds it (a snapshot taken before a flush keeps reading
 * the flushed skiplist, whose versions the new table no longer holds). A compaction pins a version of
 * tables only (no write caches), so a long job does not hold flushed write caches in memory.
 *
 * <p>Thread-safety: immutable apart from the reference count. {@link #tryRetain()} fails once the count
 * has reached zero, so a reader racing the installation of a newer version simply retries.
 */
final class Version {
  /** Null only in a compaction's version of tables only, which readers never see. */
  final WriteCache active;
  /** The write cache being flushed, or null. */
  final WriteCache immutable;
  /** Keyspace id to its files; keyspaces without files may be absent. */
  final Map<Integer, KeyspaceFiles> files;
  private final AtomicInteger refs = new AtomicInteger(1);
  /** Called once when the last reference goes; the engine forgets the version and may delete tables. */
  private final Consumer<Version> onFree;

  /** Use {@link Engine#newVersion}, which registers the version. */
  Version(WriteCache active, WriteCache immutable, Map<Integer, KeyspaceFiles> files, Consumer<Version> onFree) {
    this.active = active;
    this.immutable = immutable;
    this.files = Map.copyOf(files);
    this.onFree = onFree;
    if (active != null) active.retain();
    if (immutable != null) immutable.retain();
  }

  KeyspaceFiles files(int keyspace) {
    KeyspaceFiles f = files.get(keyspace);
    return f == null ? KeyspaceFiles.EMPTY : f;
  }

  boolean tryRetain() {
    int r;
    do {
      r = refs.get();
      if (r == 0) return false;
    } while (!refs.compareAndSet(r, r + 1));
    return true;
  }

  void release() {
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
