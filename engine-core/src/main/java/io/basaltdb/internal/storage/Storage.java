package io.basaltdb.internal.storage;

import java.util.List;

/**
 * The one seam every file operation of the engine goes through (DESIGN.md, I/O), so tests can swap
 * in {@link MemStorage}, which loses unsynced data at a simulated crash and fails chosen
 * operations.
 *
 * <p>Names are relative to the storage's root and use {@code /} as separator ("wal/000001.log").
 * Metadata operations ({@link #create}, {@link #rename}, {@link #delete}, {@link #mkdirs}) are
 * durable when they return: the real implementation fsyncs the parent directory ({@link
 * #createTemporary} and {@link #deleteGarbage} excepted: their callers can take a name that comes
 * back or vanishes). File contents are durable only up to the last {@link StorageFile#sync()}.
 *
 * <p>Every failure is an unchecked {@link io.basaltdb.StorageException} naming the operation and
 * file, except the use of a closed file, an {@link io.basaltdb.ClosedException}.
 *
 * <p>Thread-safety: implementations are safe for concurrent use.
 */
public interface Storage {
  /** Creates a new empty file for reading and writing; fails if it exists. */
  StorageFile create(String name);

  /**
   * Creates an empty file for reading and writing, replacing any file of that name: a temporary
   * file that is written, synced and then {@link #rename renamed}. Unlike {@link #create} its name
   * need not be durable when this returns (the rename's directory sync makes the new name durable),
   * so a crash before the rename may leave the file or not, with any contents, and the caller must
   * treat a file of that name found later as garbage. Saves the real implementation two directory
   * syncs per commit.
   */
  default StorageFile createTemporary(String name) {
    delete(name);
    return create(name);
  }

  /**
   * As {@link #create}, except that the new name need not be durable when this returns: {@link
   * #syncDirectory} of its directory makes it so. For many files written at once (a backup), whose
   * names one directory sync makes durable together instead of one sync per file.
   */
  default StorageFile createUnsynced(String name) {
    return create(name);
  }

  /**
   * As {@link #createUnsynced}, for a file written front to back in large writes: where the storage
   * can, a write of whole aligned blocks from a direct buffer aligned to {@link #DIRECT_ALIGNMENT}
   * bypasses the page cache (O_DIRECT), so the disk takes it without a copy into memory and without
   * the page cache's write-back; other writes (a file's unaligned tail) go through the page cache.
   * Syncs and reads are as for any file. A storage without direct I/O gives a plain file.
   */
  default StorageFile createUnsyncedDirect(String name) {
    return createUnsynced(name);
  }

  /**
   * The alignment of buffers, offsets and lengths that a direct write needs on common file systems.
   */
  int DIRECT_ALIGNMENT = 4096;

  /**
   * As {@link #open}, for the WAL: its small writes always go through the page cache, never around
   * it as {@code Options.directWrites} sends large writes (a commit would wait for the device);
   * with {@code synchronous} (the WAL under {@code SyncMode.SYNC} with {@code directWrites}), where
   * the storage can, the file is opened with O_DSYNC, so a write and its sync are one system call
   * and {@link StorageFile#sync} has nothing left to do.
   */
  default StorageFile openLog(String name, boolean synchronous) {
    return open(name);
  }

  /** Makes durable the names {@link #createUnsynced} made in {@code dir}. */
  default void syncDirectory(String dir) {}

  /**
   * The aligned buffers this storage's direct reads stage through from now on: the store's pool,
   * counted in its memory quota. A storage without direct reads ignores it.
   */
  default void useReadBuffers(io.basaltdb.spi.ReadBuffers buffers) {}

  /**
   * The aligned buffers this storage's direct writes ({@code Options.directWrites}) stage through
   * from now on: the store's pool, counted in its memory quota. A storage without direct writes
   * ignores it.
   */
  default void useWriteBuffers(io.basaltdb.spi.ReadBuffers buffers) {}

  /**
   * Under {@code Options.directWrites}: {bytes written around the page cache, bytes of the same
   * files' writes that went through it}; {0, 0} for a storage without direct writes.
   */
  default long[] directWriteBytes() {
    return new long[2];
  }

  /**
   * Opens an existing file for reading only (a backup on a read-only mount); writes through it
   * fail.
   */
  default StorageFile openForReading(String name) {
    return open(name);
  }

  /** Opens an existing file for reading and writing. */
  StorageFile open(String name);

  boolean exists(String name);

  /**
   * Bytes in file {@code name}; the default opens it, a storage that can ask the file system
   * overrides it.
   */
  default long size(String name) {
    try (StorageFile f = open(name)) {
      return f.size();
    }
  }

  /**
   * Names of the files directly inside directory {@code dir} ("" is the root), sorted; empty if
   * none.
   */
  List<String> list(String dir);

  /** Deletes a file; a missing file is not an error. */
  void delete(String name);

  /**
   * Deletes a file whose deletion need not be durable when this returns: a crash may bring it back,
   * and the caller must treat it as garbage then (an obsolete data file no manifest names, which
   * the next open's orphan sweep deletes). Saves the real implementation a directory sync per file;
   * a missing file is not an error.
   */
  default void deleteGarbage(String name) {
    delete(name);
  }

  /**
   * Makes {@code name} here a hard link to {@code sourceName} in {@code source}, durably, if both
   * are directories of one file system that supports links; returns false (changing nothing)
   * otherwise, and the caller copies. Only for files never written again: the two names share their
   * bytes.
   */
  default boolean link(Storage source, String sourceName, String name) {
    return false;
  }

  /** Renames {@code from} to {@code to} atomically, replacing {@code to} if it exists. */
  void rename(String from, String to);

  /** Creates a directory and its parents if missing. */
  void mkdirs(String dir);

  /**
   * Takes the exclusive lock {@code name} for this process, so two stores never open the same
   * files; throws {@link io.basaltdb.StorageException} if another holder has it. Closing the result
   * releases it.
   */
  AutoCloseable lock(String name);

  /** A human-readable location for messages (the root directory's path, or "memory:..."). */
  String describe(String name);

  /**
   * Bytes the storage can still take (the file system's usable space for this process), or {@link
   * Long#MAX_VALUE} if it cannot tell. Read per commit group: it must be cheap (one statfs).
   */
  default long usableSpace() {
    return Long.MAX_VALUE;
  }
}
