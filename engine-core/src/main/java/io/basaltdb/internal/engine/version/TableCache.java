package io.basaltdb.internal.engine.version;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The files a disk store holds open: key index table readers and log segment files (a segment's
 * file is shared by its writer and its readers). Opens tables (their index and filter blocks go to
 * the block cache), and closes every file at the store's close; a deleted table's reader is closed
 * on its own.
 *
 * <p>Thread-safety: any thread; the set of open files is guarded by this object's monitor.
 */
public final class TableCache {
  private final Storage storage;
  private final BlockCache blockCache;

  /** Guarded by this. */
  private final Set<AutoCloseable> open = new LinkedHashSet<>();

  public TableCache(Storage storage, BlockCache blockCache) {
    this.storage = storage;
    this.blockCache = blockCache;
  }

  public BlockCache blockCache() {
    return blockCache;
  }

  /**
   * Opens table {@code fileNumber} of keyspace {@code ks}; it stays open until closed here or at
   * close.
   */
  public TableReader openTable(int ks, long fileNumber) {
    return openTable(FileNames.table(ks, fileNumber));
  }

  /** Opens a file a manifest names, failing with a corruption message if it is missing. */
  StorageFile openExisting(String name) {
    if (!storage.exists(name)) {
      throw new CorruptionException(
          "the manifest names "
              + storage.describe(name)
              + ", which is missing; restore the store from a backup");
    }
    return storage.open(name);
  }

  public synchronized void track(AutoCloseable file) {
    open.add(file);
  }

  /**
   * Opens a table by its path (a delete list table); it stays open until closed here or at close.
   */
  public TableReader openTable(String name) {
    StorageFile f = openExisting(name);
    TableReader reader;
    try {
      reader = TableReader.open(f, storage.describe(name), blockCache);
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
    track(reader);
    return reader;
  }

  /** Closes a table reader or segment file (its file was deleted or never committed). */
  public void close(AutoCloseable file) {
    synchronized (this) {
      open.remove(file);
    }
    try {
      file.close();
    } catch (Exception e) {
      throw e instanceof RuntimeException r
          ? r
          : new io.basaltdb.BasaltException("close failed: " + e, e);
    }
  }

  /**
   * Closes every file still open; errors are swallowed (the store's first error is the one
   * reported).
   */
  public void closeAll() {
    java.util.List<AutoCloseable> all;
    synchronized (this) {
      all = new ArrayList<>(open);
      open.clear();
    }
    for (AutoCloseable c : all) {
      try {
        c.close();
      } catch (Exception ignored) {
        // closing after a failure may fail again; the first error was already reported
      }
    }
  }
}
