package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.backup.MemoryBackups;
import io.basaltdb.internal.engine.base.DiscardListener;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.read.EngineCursor;
import io.basaltdb.internal.engine.read.EngineFeed;
import io.basaltdb.internal.engine.read.EngineSnapshot;
import io.basaltdb.internal.engine.read.ReadPath;
import io.basaltdb.internal.engine.version.Checkpoints;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.ItemCounter;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.write.CommitPipeline;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.sstable.TableInfo;
import io.basaltdb.internal.storage.Storage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The store behind the public API: Magma's durable engine (seed 000), or Nitro's in-memory engine
 * (seed 001), as one {@link Store} among components both share. docs/architecture.md ("Engine
 * structure") draws them and the write, read and flush paths:
 *
 * <ul>
 *   <li>writes: {@link CommitPipeline} (group commit) into the store's {@link
 *       io.basaltdb.internal.engine.write.CommitTarget} (WAL and write cache admission on disk),
 *       applied to the active {@link io.basaltdb.internal.engine.writecache.WriteCache};
 *   <li>reads: {@link ReadPath} over the current {@link Version} of {@link Versions}; snapshots and
 *       cursors ({@link EngineSnapshot}, {@link EngineCursor} over the {@link
 *       io.basaltdb.internal.engine.read.MergingIterator});
 *   <li>keyspaces: {@link KeyspaceCatalog}; file-set changes: the disk store's {@link VersionSet};
 *   <li>opening: {@link StoreOpener}; stats: {@link StatsReport}.
 * </ul>
 *
 * <p>Thread-safety: every public method may be called concurrently; keyspace creation and drop are
 * serialized on {@link #keyspaceLock}; {@link #close()} makes later calls throw {@link
 * io.basaltdb.ClosedException}.
 */
public final class Engine implements AutoCloseable {
  private final Options options;

  /** What the write caches reserve together. */
  private final MemoryQuota writeMemory;

  /** Null in memory. */
  private final BlockCache blockCache;

  /** The aligned buffers reads stage through (null for the in-memory store). */
  private final io.basaltdb.internal.memory.AlignedBuffers readBuffers;

  /** The staging buffers of direct writes; null without {@link Options#directWrites}. */
  private final io.basaltdb.internal.memory.AlignedBuffers writeBuffers;

  private final KeyspaceCatalog catalog;
  private final Versions versions;
  private final StoreState state;
  private final EngineStats stats;
  private final CommitPipeline pipeline;
  private final ReadPath reads;
  private final Store store;
  private final Object keyspaceLock = new Object();

  /** Guards {@link #backupsRunning}; close waits on it for running backups to stop. */
  private final Object backupMonitor = new Object();

  /** Backups copying the store's files; guarded by {@link #backupMonitor}. */
  private int backupsRunning;

  /** The store's JMX bean ({@link Options#jmx}), or null; unregistered by close. */
  private volatile StoreMBean mbean;

  private Engine(StoreOpener.Parts p) {
    options = p.options();
    writeMemory = p.writeMemory();
    blockCache = p.blockCache();
    readBuffers = p.readBuffers();
    writeBuffers = p.writeBuffers();
    catalog = p.catalog();
    versions = p.versions();
    state = p.state();
    stats = p.stats();
    pipeline = p.pipeline();
    reads = p.reads();
    store = p.store();
  }

  /**
   * Opens (creating or recovering) a store on {@code storage}; null storage opens an in-memory
   * store.
   */
  public static Engine open(Storage storage, Options options) {
    Options o = options.copy();
    o.validate();
    Engine e =
        new Engine(storage == null ? StoreOpener.inMemory(o) : StoreOpener.onDisk(storage, o));
    return withBean(e, o, storage == null ? null : storage.describe(""));
  }

  /**
   * Opens a store on {@code storage} whose batched reads go through the transport {@code
   * transports} makes rather than the one found on the class path (tests that hold reads back).
   */
  static Engine open(
      Storage storage, Options options, io.basaltdb.spi.ReadTransport.Provider transports) {
    Options o = options.copy();
    o.validate();
    return withBean(
        new Engine(StoreOpener.onDisk(storage, o, transports)), o, storage.describe(""));
  }

  /** Registers {@code e}'s JMX bean if the options ask for one; closes {@code e} if that fails. */
  private static Engine withBean(Engine e, Options o, String directory) {
    if (o.jmx()) {
      try {
        e.mbean = StoreMBean.register(e, directory);
      } catch (RuntimeException | Error failed) { // an Error too: a runtime without java.management
        try {
          e.close();
        } catch (RuntimeException | Error closing) {
          failed.addSuppressed(closing);
        }
        throw failed;
      }
    }
    return e;
  }

  /**
   * Opens an in-memory store restored from the in-memory store's backup in {@code backup} (see
   * {@link MemoryBackups}); it serves exactly the backup's writes, and new writes continue from its
   * seqno.
   */
  public static Engine openInMemory(Options options, Storage backup) {
    return openInMemory(options, backup, true);
  }

  /**
   * As {@link #openInMemory(Options, Storage)}; with {@code bottomUp} false the shards are restored
   * by putting each item into the skiplist (concurrently per shard) instead of building it
   * bottom-up: the baseline of seed 001 section 5.2, for the benchmark that compares the two. Not
   * for other use.
   */
  public static Engine openInMemory(Options options, Storage backup, boolean bottomUp) {
    Options o = options.copy();
    o.validate();
    return withBean(new Engine(StoreOpener.inMemory(o, backup, bottomUp)), o, null);
  }

  /**
   * Whether {@code backup} holds an in-memory store's backup, which {@link #openInMemory} restores.
   */
  public static boolean isMemoryBackup(Storage backup) {
    return MemoryBackups.isMemoryBackup(backup);
  }

  // ---- reads and writes
  // ------------------------------------------------------------------------------

  /** The value of {@code key} in keyspace {@code ks}, or null. */
  public byte[] get(int ks, byte[] key) {
    state.checkOpen();
    catalog.checkLive(ks);
    return reads.get(ks, key);
  }

  /**
   * As {@link #get(int, byte[])} into a caller's buffer (see {@link ReadPath#get(int,
   * java.nio.ByteBuffer, java.nio.ByteBuffer)}).
   */
  public int get(int ks, java.nio.ByteBuffer key, java.nio.ByteBuffer out) {
    state.checkOpen();
    catalog.checkLive(ks);
    return reads.get(ks, key, out);
  }

  /**
   * The values of {@code keys}, key {@code i} in keyspace {@code ks[i]}, null where absent, the
   * reads of all of them in flight together (see {@link ReadPath#getAll}).
   */
  public List<byte[]> getAll(int[] ks, List<byte[]> keys) {
    state.checkOpen();
    for (int k : ks) catalog.checkLive(k);
    return reads.getAll(ks, keys);
  }

  public void write(Batch batch) {
    state.checkOpen();
    for (int i = 0; i < batch.count; i++) catalog.checkLive(batch.keyspaces[i]);
    if (!batch.beginWrite()) {
      throw new io.basaltdb.InvalidArgumentException(
          "the batch is being written by another thread; a batch is in"
              + " one write at a time. Nothing was written");
    }
    try {
      pipeline.write(batch);
    } finally {
      batch.endWrite();
    }
  }

  /** The engine's counters and estimates, for tests. */
  EngineStats engineStats() {
    return stats;
  }

  /** A consistent snapshot of the whole store at the last applied seqno. */
  public EngineSnapshot snapshot() {
    state.checkOpen();
    versions.applyLock.lock();
    try {
      Version v = versions.acquire();
      long seqno = versions.lastSeqno();
      // Under the apply lock every flushed seqno is published, so a hashed keyspace's flushes so
      // far are all at or below this one: registration cannot be refused.
      if (!reads.registerSnapshot(seqno)) {
        v.release();
        throw new IllegalStateException("a hashed keyspace has flushed seqnos above " + seqno);
      }
      try {
        return new EngineSnapshot(reads, catalog, state, v, seqno);
      } catch (RuntimeException e) {
        reads.unregisterSnapshot(seqno);
        v.release();
        throw e;
      }
    } finally {
      versions.applyLock.unlock();
    }
  }

  /** A scan with a snapshot of its own, released when the cursor closes. */
  public EngineCursor scan(int ks, byte[] from, byte[] to) {
    return scan(ks, from, to, 0);
  }

  /**
   * As {@link #scan(int, byte[], byte[])} reading {@code readAhead} keys' documents together (0:
   * growing, the default).
   */
  public EngineCursor scan(int ks, byte[] from, byte[] to, int readAhead) {
    return scan(ks, from, to, readAhead, false);
  }

  /**
   * As {@link #scan(int, byte[], byte[], int)} in descending key order: the keys of {@code [from,
   * to)} from the last before {@code to} down.
   */
  public EngineCursor reverseScan(int ks, byte[] from, byte[] to, int readAhead) {
    return scan(ks, from, to, readAhead, true);
  }

  private EngineCursor scan(int ks, byte[] from, byte[] to, int readAhead, boolean reverse) {
    catalog.checkOrdered(ks, "scans");
    EngineSnapshot s = snapshot();
    try {
      catalog.checkLive(ks);
      return new EngineCursor(s, ks, from, to, true, readAhead, reverse);
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /**
   * The live keys of keyspace {@code ks} as of the last published write (every write acknowledged
   * before the call is counted); see {@link io.basaltdb.Options#exactItemCounts}.
   *
   * @throws UnsupportedOperationException if the store counts no items
   */
  public long itemCount(int ks) {
    state.checkOpen();
    catalog.checkLive(ks);
    ItemCounter items = versions.items();
    if (items == null) {
      throw new UnsupportedOperationException(
          "the store was opened with Options.exactItemCounts(false), so it"
              + " keeps no item counts; reopen it with exactItemCounts(true) (the open counts every key once)");
    }
    versions.applyLock.lock(); // the count of whole published groups
    try {
      return items.count(ks);
    } finally {
      versions.applyLock.unlock();
    }
  }

  /**
   * Keyspace {@code ks}'s live keys, estimated with no key lookup: the exact count with {@link
   * io.basaltdb.Options#exactItemCounts}; else, as RocksDB's {@code rocksdb.estimate-num-keys}
   * estimates, each key index table's records less twice its tombstones (a tombstone presumably
   * deletes a put counted somewhere below), plus what the write caches add ({@link
   * io.basaltdb.internal.engine.writecache.WriteCache#netKeys}), at least 0. A put counts as a new
   * key and a tombstone as the delete of a live one until a merge meets the key's versions (or the
   * bottom level drops the tombstone); so the estimate runs high after overwrites and low after
   * deletes of absent keys, or of keys whose put a merge above the bottom already met. It is exact
   * for a keyspace only ever inserted into.
   */
  public long approximateItemCount(int ks) {
    state.checkOpen();
    catalog.checkLive(ks);
    if (versions.items() != null) return itemCount(ks);
    Version v = versions.acquire();
    try {
      long n = v.active.netKeys(ks);
      if (v.immutable != null) n += v.immutable.netKeys(ks);
      io.basaltdb.internal.engine.hashed.HashedIndex index = reads.hashedIndex(ks);
      if (index != null) n += index.trie().size(); // a hashed keyspace's trie holds live keys only
      for (KeyspaceFiles.Table t : v.files(ks).tables) {
        TableInfo info = t.reader().info();
        n += info.entryCount() - 2 * info.tombstones();
      }
      return Math.max(0, n);
    } finally {
      v.release();
    }
  }

  /**
   * The changes of keyspace {@code ks} with seqnos in {@code [from, to]} as of {@code snap}, or of
   * a snapshot of the feed's own (released when it closes) if {@code snap} is null; see {@link
   * EngineFeed}.
   *
   * @throws io.basaltdb.InvalidArgumentException if a seqno is negative, or {@code from} is past
   *     the store's last seqno plus one (the writes a consumer saw there were lost, or rolled back)
   * @throws io.basaltdb.ChangesPurgedException if deletions with seqnos from {@code from} on may
   *     have been forgotten (a start of 0 or 1, the whole history, is always allowed)
   */
  public EngineFeed changes(EngineSnapshot snap, int ks, long from, long to, boolean exact) {
    state.checkOpen();
    catalog.checkLive(ks);
    if (from < 0 || to < 0) {
      throw new io.basaltdb.InvalidArgumentException(
          "change feed seqnos must not be negative: from " + from + ", to " + to);
    }
    store.purgeSeqno(ks); // a store without a change feed refuses before anything else is checked
    long last = versions.lastSeqno();
    if (from > last + 1) {
      throw new io.basaltdb.InvalidArgumentException(
          "a change feed from seqno "
              + from
              + ", but the store's last write"
              + " has seqno "
              + last
              + ": the changes a consumer saw past it are not in this store (lost in a power"
              + " failure before they were synced, or undone by a rollback); start again from 0");
    }
    EngineSnapshot s = snap == null ? snapshot() : snap;
    try {
      s.checkUsable();
      long purge =
          store.purgeSeqno(ks); // read after the snapshot: at least the purge of its version
      if (from > 1 && from <= purge) {
        throw new io.basaltdb.ChangesPurgedException(catalog.describe(ks), from, purge);
      }
      return new EngineFeed(s, ks, from, to, exact, snap == null, purge, stats);
    } catch (RuntimeException e) {
      if (snap == null) s.close();
      throw e;
    }
  }

  // ---- keyspaces
  // -------------------------------------------------------------------------------------

  /** The id of a live keyspace, or -1. */
  public int keyspaceId(String name) {
    state.checkOpen();
    return catalog.id(name);
  }

  public List<String> keyspaceNames() {
    state.checkOpen();
    return catalog.names();
  }

  /** Creates a keyspace with block key index tables and returns its id. */
  public int createKeyspace(String name) {
    return createKeyspace(name, 0);
  }

  /**
   * Creates a keyspace and returns its id; durable when it returns. {@code trieChunkBytes}: 0 for
   * block key index tables, else the chunk size of its HB+-trie tables.
   */
  public int createKeyspace(String name, int trieChunkBytes) {
    state.checkOpen();
    synchronized (keyspaceLock) {
      catalog.checkNew(name);
      state.checkWritable();
      int id = store.createKeyspace(name, catalog, trieChunkBytes);
      catalog.add(id, name, trieChunkBytes);
      return id;
    }
  }

  /** The chunk size of keyspace {@code name}'s HB+-trie tables; 0 for block tables. */
  public int trieChunkBytes(String name) {
    state.checkOpen();
    return store.trieChunkBytes(catalog.existing(name));
  }

  /** Drops a keyspace: durable when it returns; its handles then throw. */
  public void dropKeyspace(String name) {
    state.checkOpen();
    synchronized (keyspaceLock) {
      int id = catalog.existing(name);
      state.checkWritable();
      store.dropKeyspace(id, catalog, pipeline);
    }
  }

  // ---- flushing, compaction, checkpoints
  // ----------------------------------------------------------------

  /** Flushes the write cache now and waits for it (tests, and callers that want a short WAL). */
  public void flush() {
    state.checkOpen();
    store.flush(pipeline);
  }

  /** See {@code Basalt.flushWal}. */
  public void flushWal() {
    state.checkOpen();
    store.flushWal();
  }

  /** See {@code Basalt.compactRange}. */
  public void compactRange(int ks, byte[] from, byte[] to) {
    state.checkOpen();
    catalog.checkLive(ks);
    try {
      store.compactRange(ks, from, to, pipeline);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new io.basaltdb.BasaltException("interrupted during compactRange", e);
    }
  }

  /** See {@code Basalt.waitForCompactions}. */
  public boolean waitForCompactions(long timeoutMillis) {
    state.checkOpen();
    try {
      return store.waitForCompactions(timeoutMillis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * A checkpoint as the API reports it: id, creation time, the seqno it holds, its keyspaces by
   * name.
   */
  public record CheckpointInfo(long id, long createdMillis, long seqno, List<String> keyspaces) {
    public static CheckpointInfo of(Manifest m) {
      List<String> names = new ArrayList<>();
      for (Manifest.KeyspaceMeta k : m.keyspaces()) names.add(k.name());
      Collections.sort(names);
      return new CheckpointInfo(
          m.number(), m.createdMillis(), m.flushedSeqno(), List.copyOf(names));
    }
  }

  /**
   * The store's retained checkpoints, oldest first: on disk the current manifest last, in memory
   * those {@link #checkpoint} took.
   */
  public List<CheckpointInfo> checkpoints() {
    state.checkOpen();
    return store.checkpoints();
  }

  /** Returns a checkpoint that holds every write acknowledged before the call (flushing first). */
  public CheckpointInfo checkpoint() {
    state.checkOpen();
    return store.checkpoint(pipeline);
  }

  /**
   * Rolls the open store back to checkpoint {@code id} (an in-memory store; see {@code
   * Basalt.rollback(long)}); serialized with keyspace changes.
   */
  public CheckpointInfo rollback(long id) {
    state.checkOpen();
    synchronized (keyspaceLock) {
      state.checkWritable();
      return store.rollback(id, pipeline);
    }
  }

  /**
   * Backs the store up into {@code target} (see {@link Backups}); {@code previous}: an earlier
   * complete backup whose unchanged files the new one shares, or null.
   */
  public Backups.Result backup(Storage target, Storage previous) {
    synchronized (backupMonitor) {
      state.checkOpen(); // under the monitor: a close either waits for this backup or refuses it
      backupsRunning++;
    }
    try {
      return store.backup(pipeline, target, previous, state::isClosed);
    } finally {
      synchronized (backupMonitor) {
        backupsRunning--;
        backupMonitor.notifyAll();
      }
    }
  }

  /**
   * Waits for running backups to stop (they see the store closed at their next step); called by
   * close.
   */
  private void awaitBackups() {
    boolean interrupted = false;
    synchronized (backupMonitor) {
      while (backupsRunning > 0) {
        try {
          backupMonitor.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }

  /** Whether {@code dir} holds a store (its manifest directory). */
  public static boolean isStoreDirectory(java.nio.file.Path dir) {
    return java.nio.file.Files.isDirectory(dir.resolve(FileNames.MANIFEST_DIR));
  }

  /** The checkpoints of the closed store in {@code storage}, oldest first. */
  public static List<CheckpointInfo> checkpoints(Storage storage) {
    try (AutoCloseable lock = storage.lock(FileNames.LOCK)) {
      return Checkpoints.list(storage).stream().map(CheckpointInfo::of).toList();
    } catch (BasaltException e) {
      throw e;
    } catch (Exception e) {
      throw new StorageException(
          "releasing the lock of " + storage.describe(FileNames.LOCK) + " failed: " + e, e);
    }
  }

  /**
   * Rolls the closed store in {@code storage} back to checkpoint {@code id} (see {@link
   * Checkpoints}).
   */
  public static CheckpointInfo rollback(Storage storage, long id) {
    try (AutoCloseable lock = storage.lock(FileNames.LOCK)) {
      return CheckpointInfo.of(Checkpoints.rollback(storage, id));
    } catch (BasaltException e) {
      throw e;
    } catch (Exception e) {
      throw new StorageException(
          "releasing the lock of " + storage.describe(FileNames.LOCK) + " failed: " + e, e);
    }
  }

  // ---- stats and lifecycle
  // -------------------------------------------------------------------------------

  /** Counters and gauges by name, in a stable order (see io.basaltdb.Stats for their meaning). */
  public Map<String, Long> stats() {
    state.checkOpen();
    return StatsReport.collect(
        stats,
        store.fileStats(),
        versions,
        catalog,
        writeMemory,
        blockCache,
        readBuffers,
        writeBuffers,
        options);
  }

  public boolean isClosed() {
    return state.isClosed();
  }

  /** The failure that makes the store refuse writes, or null (also on a closed store). */
  public io.basaltdb.BasaltException failure() {
    return state.failure();
  }

  /** Logs the store's close (at INFO). */
  private void logClosed() {
    Notifier.LOG.info("{}: closed at seqno {}", state.notifier().store(), versions.lastSeqno());
  }

  public boolean isInMemory() {
    return store instanceof MemoryStore;
  }

  /**
   * Closes the store: waits for writes in progress, stops the workers (the write cache stays in the
   * WAL, replayed at the next open), syncs and closes the WAL and every file, frees all memory.
   */
  @Override
  public void close() {
    synchronized (backupMonitor) {
      if (!state.markClosed()) return;
    }
    awaitBackups(); // a backup copying the files stops at its next step: nothing reads them once
    // close returns
    StoreMBean bean = mbean;
    if (bean != null) bean.unregister();
    pipeline.close();
    try {
      store.close();
    } finally {
      try {
        versions.close(); // frees every write cache and its allocator
      } finally {
        if (blockCache != null) blockCache.close();
        if (readBuffers != null) readBuffers.close();
        if (writeBuffers != null) writeBuffers.close();
        logClosed();
      }
    }
  }

  // ---- for tests in this package
  // -------------------------------------------------------------------------

  Versions versions() {
    return versions;
  }

  BlockCache blockCache() {
    return blockCache;
  }

  StoreState state() {
    return state;
  }

  /** The in-memory store; null on disk. */
  MemoryStore memoryStore() {
    return store instanceof MemoryStore m ? m : null;
  }

  /** The disk store's version set; null in memory. */
  VersionSet versionSet() {
    return store instanceof DiskStore d ? d.versionSet() : null;
  }

  /**
   * For tests: code an in-memory store's backup runs on its own thread before its scan (in the
   * non-intrusive mode, after it released its snapshot) and after it, to force writes and garbage
   * collection in between.
   */
  public void setBackupHooks(Runnable beforeScan, Runnable afterScan) {
    ((MemoryStore) store).backupHooks = new MemoryBackups.Hooks(beforeScan, afterScan);
  }

  /**
   * For tests: runs the in-memory store's garbage collection to completion ({@link
   * io.basaltdb.internal.skiplist.SkipList#quiesce}).
   */
  public void quiesceMemory() {
    state.checkOpen();
    versions.current().active.list.quiesce();
  }

  void setDiscardListener(DiscardListener listener) {
    if (store instanceof DiskStore d) {
      d.compactor().setDiscardListener(listener);
      d.flusher().setDiscardListener(listener);
    }
  }
}
