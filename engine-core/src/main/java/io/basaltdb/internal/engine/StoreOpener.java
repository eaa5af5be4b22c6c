package io.basaltdb.internal.engine;

import io.basaltdb.Options;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.engine.backup.MemoryBackupManifest;
import io.basaltdb.internal.engine.backup.MemoryBackups;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.base.WorkerEvents;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.index.Compactor;
import io.basaltdb.internal.engine.read.LazyReadTransport;
import io.basaltdb.internal.engine.read.MergeSources;
import io.basaltdb.internal.engine.read.PooledReadTransport;
import io.basaltdb.internal.engine.read.ReadPath;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.ItemCounter;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Recovery;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.write.CommitLog;
import io.basaltdb.internal.engine.write.CommitPipeline;
import io.basaltdb.internal.engine.write.DiskWrites;
import io.basaltdb.internal.engine.write.Flusher;
import io.basaltdb.internal.engine.write.WalChain;
import io.basaltdb.internal.engine.write.WalReplay;
import io.basaltdb.internal.memory.AlignedBuffers;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.memory.SlabAllocator;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.spi.ReadBuffers;
import io.basaltdb.spi.ReadTransport;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/**
 * Builds a store and its components (RocksDB's {@code db_impl_open}): splits the memory quota, and
 * for a disk store takes the directory lock, loads the manifest ({@link Recovery}), checks the WAL
 * files it needs are all there ({@link WalChain}) and replays them ({@link WalReplay}), starts a
 * WAL file named by a manifest before anything is written to it, and starts the workers, wired
 * through {@link WorkerEvents}. If any step fails, everything already built is closed again, in
 * reverse order, and the store stays unlocked.
 *
 * <p>Thread-safety: runs on the opening thread; nothing is shared until it returns.
 */
final class StoreOpener {
  private StoreOpener() {}

  /**
   * Batches whose reads in flight ({@code readQueueDepth} each) the pooled read buffers cover:
   * batched reads on several threads at once keep more reads in the kernel than one batch does (a
   * transport with a buffer for each of them lets them), and the device serves more reads per
   * second the more it has queued.
   */
  static final int READ_BUFFER_BATCHES = 4;

  /**
   * Bytes the read buffer pool may grow to: buffers for {@link #READ_BUFFER_BATCHES} batches' reads
   * in flight and 8 more, at most a quarter of the block cache's share. The pool grows only as
   * reads need buffers, taking each one's room from the cache, so a small cache serving point gets
   * keeps its room for the key index's index and filter blocks.
   */
  static long readBufferLimit(Options options, int bufferBytes) {
    return Math.min(
        (READ_BUFFER_BATCHES * (long) options.readQueueDepth() + 8L) * bufferBytes,
        options.blockCacheSize() / 4);
  }

  /** Bytes of one staging buffer of direct writes ({@link Options#directWrites}). */
  static final int WRITE_BUFFER_BYTES = 256 << 10;

  /**
   * Bytes the direct writes' staging pool may grow to: a buffer for each thread that writes files
   * at once (the flusher, the compaction and collection threads, the WAL's writer and a backup's or
   * a checkpoint's), at most a quarter of the block cache's share.
   */
  static long writeBufferLimit(Options options) {
    long threads = options.compactionThreads() + options.gcThreads() + 3L;
    return Math.max(
        WRITE_BUFFER_BYTES, Math.min(threads * WRITE_BUFFER_BYTES, options.blockCacheSize() / 4));
  }

  /** What the engine is made of. */
  record Parts(
      Options options,
      MemoryQuota writeMemory,
      BlockCache blockCache,
      AlignedBuffers readBuffers,
      AlignedBuffers writeBuffers,
      KeyspaceCatalog catalog,
      Versions versions,
      StoreState state,
      EngineStats stats,
      CommitPipeline pipeline,
      ReadPath reads,
      Store store) {}

  static Parts inMemory(Options options) {
    return inMemory(options, null);
  }

  /**
   * An in-memory store, empty, or restored from the in-memory store's backup in {@code backup}
   * (seed 001 section 5.2, {@link MemoryBackups}): its keyspaces, its items and its seqno.
   */
  static Parts inMemory(Options options, Storage backup) {
    return inMemory(options, backup, true);
  }

  /**
   * As {@link #inMemory(Options, Storage)}; {@code bottomUp} false restores by inserts (the
   * benchmark's baseline).
   */
  static Parts inMemory(Options options, Storage backup, boolean bottomUp) {
    MemoryBackups.Opened opened =
        backup == null ? null : MemoryBackups.open(backup); // before any memory is taken
    MemoryBackupManifest m = opened == null ? null : opened.manifest();
    MemoryQuota quota = new MemoryQuota(options.memoryQuota());
    KeyspaceCatalog catalog = new KeyspaceCatalog();
    if (m == null) {
      catalog.add(1, "default");
    } else {
      for (java.util.Map.Entry<Integer, String> k : m.keyspaces().entrySet())
        catalog.add(k.getKey(), k.getValue(), m.layout(k.getKey()));
    }
    long chunk = chunkSize(options.memoryQuota());
    Versions versions =
        new Versions(
            "memory-store", quota, chunk, options.maxValueSize(), false, java.util.Map.of());
    try {
      MemoryBackups.Loaded loaded = null;
      if (m != null) {
        loaded =
            MemoryBackups.load(
                backup, opened, versions.current().active.list, options.backupThreads(), bottomUp);
        versions.current().active.loaded(loaded.bytes(), loaded.maxSeqno());
        for (java.util.Map.Entry<Integer, Long> e : loaded.items().entrySet())
          versions.current().active.setNetKeys(e.getKey(), e.getValue());
        versions.publish(Math.max(m.seqno(), loaded.maxSeqno()));
      }
      StoreState state = new StoreState(new Notifier(options.eventListener(), "in-memory store"));
      EngineStats stats = new EngineStats();
      MemoryStore store = new MemoryStore(versions, catalog, state, chunk, options);
      if (m != null) {
        store.restoredKeyspaceIds(m.nextKeyspaceId());
        store.restoredSeqno(versions.lastSeqno()); // a backup holds no deletions: all forgotten
        for (int id : m.keyspaces().keySet()) store.restoredLayout(id, m.layout(id));
      }
      ReadPath reads =
          new ReadPath(versions, catalog, stats, null, options.readQueueDepth(), options.clock());
      if (options.exactItemCounts()) {
        versions.countItems(new ItemCounter(reads::findRecord, catalog));
        if (loaded != null) {
          for (java.util.Map.Entry<Integer, Long> e : loaded.items().entrySet())
            versions.items().set(e.getKey(), e.getValue());
        }
      }
      CommitPipeline pipeline = new CommitPipeline(options, versions, catalog, state, stats, store);
      store.start(); // last: an open that fails before leaves no thread behind
      return new Parts(
          options, quota, null, null, null, catalog, versions, state, stats, pipeline, reads,
          store);
    } catch (RuntimeException | Error e) {
      try {
        versions.close(); // the write cache's memory
      } catch (RuntimeException | Error closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
  }

  static Parts onDisk(Storage storage, Options options) {
    return onDisk(storage, options, null);
  }

  /**
   * As {@link #onDisk(Storage, Options)}, with the read transport {@code transports} makes if not
   * null.
   */
  static Parts onDisk(Storage storage, Options options, ReadTransport.Provider transports) {
    Deque<AutoCloseable> undo = new ArrayDeque<>(); // closed in reverse if the open fails
    long openStart = System.nanoTime();
    Notifier notifier = new Notifier(options.eventListener(), storage.describe(""));
    try {
      // The read transport and direct reads stage reads through aligned buffers, each enough for a
      // block
      // read at any offset, pooled for the reads in flight of a few concurrent batches and a few
      // point
      // gets beside them, out of the block cache's share (readBufferLimit), or none if neither is
      // used.
      int bufferBytes = AlignedBuffers.bufferFor(options.blockSize() + 1024);
      AlignedBuffers buffers =
          new AlignedBuffers(readBufferLimit(options, bufferBytes), bufferBytes);
      ReadTransport transport =
          transports != null
              ? transports.create(options.readQueueDepth(), buffers)
              : newReadTransport(options.readQueueDepth(), buffers, notifier);
      undo.push(transport::close);
      if (!options.directReads() && transport instanceof PooledReadTransport)
        buffers = new AlignedBuffers(0, bufferBytes);
      AlignedBuffers readBuffers = buffers;
      undo.push(readBuffers::close);
      storage.useReadBuffers(readBuffers);
      // The pool grows as reads need buffers, and each buffer's room is taken from the cache as it
      // is
      // made: a store that only makes point gets keeps nearly all of its cache.
      long cacheBytes = options.blockCacheSize();
      MemoryQuota writeMemory =
          new MemoryQuota(options.memoryQuota() - options.blockCacheSize()); // never the caches'

      BlockCache blockCache = new BlockCache(cacheBytes);
      undo.push(blockCache);
      readBuffers.onGrow(blockCache::shrink);
      // Direct writes stage through aligned buffers, one per writing thread, out of the cache too.
      AlignedBuffers writeBuffers = null;
      if (options.directWrites()) {
        writeBuffers = new AlignedBuffers(writeBufferLimit(options), WRITE_BUFFER_BYTES);
        undo.push(writeBuffers::close);
        writeBuffers.onGrow(blockCache::shrink);
        storage.useWriteBuffers(writeBuffers);
      }
      blockCache.shrink(
          readBuffers
              .pooledBytes()); // any made before (none: nothing has read yet); a race counts twice,
      // never not
      AutoCloseable lock = storage.lock(FileNames.LOCK);
      undo.push(() -> unlock(lock));
      TableCache tables = new TableCache(storage, blockCache);
      undo.push(tables::closeAll);
      Recovery.State st = Recovery.load(storage, options, tables);
      KeyspaceCatalog catalog = new KeyspaceCatalog();
      for (Manifest.KeyspaceMeta k : st.manifest.keyspaces())
        catalog.add(k.id(), k.name(), k.trieChunkBytes());
      // Hashed keyspaces' tries come out of the memory quota: the block cache gives up their room.
      HashedIndexes hashed = new HashedIndexes(options.memoryQuota(), blockCache::shrink);
      undo.push(hashed);
      List<HashedIndexes.Recovered> recovered = new ArrayList<>();
      for (Manifest.KeyspaceMeta k : st.manifest.keyspaces()) {
        if (!KeyspaceLayout.isHashed(k.trieChunkBytes())) continue;
        KeyspaceFiles files = st.files.getOrDefault(k.id(), KeyspaceFiles.EMPTY);
        HashedIndexes.Recovered r =
            hashed.recover(
                storage,
                k.id(),
                k.trieChunkBytes(),
                k.purgeSeqno(),
                files,
                st.manifest.flushedSeqno());
        recovered.add(r);
        Notifier.LOG.info(
            "hashed keyspace {}: trie checkpoint at seqno {} ({} records), {} log bytes replayed{}",
            k.name(),
            r.checkpointSeqno(),
            r.checkpointRecords(),
            r.logBytesReplayed(),
            r.note().isEmpty() ? "" : "; " + r.note());
      }
      hashed.settle();
      // Each write cache has its own allocator, with a chunk in use per arena: chunks of a
      // sixteenth of a
      // write cache keep what a cache reserves close to what it holds.
      Versions versions =
          new Versions(
              "write-cache",
              writeMemory,
              chunkSize(options.writeCacheSize()),
              options.maxValueSize(),
              true,
              st.files);
      undo.push(versions::close);
      versions.publish(st.manifest.flushedSeqno());
      StoreState state = new StoreState(notifier);
      EngineStats stats = new EngineStats();
      stats.hashedIndexBytes = hashed::bytes;
      stats.hashedIndexNodeBytes = hashed::nodeBytes;
      for (HashedIndexes.Recovered r : recovered) {
        stats.trieCheckpointRecordsLoaded.add(r.checkpointRecords());
        if (r.doubleWriteApplied()) stats.trieDoubleWritesApplied.increment();
        stats.trieLogBytesReplayed.add(r.logBytesReplayed());
      }
      VersionSet versionSet =
          new VersionSet(
              storage,
              versions,
              tables,
              state,
              stats,
              options.checkpointRetentionMillis(),
              options.checkpointIntervalMillis(),
              options.checkpointSpaceRatio(),
              st,
              n -> CommitLog.retire(storage, n));
      Wiring events = new Wiring(state);
      versions.onVersionFreed(events::versionFreed);
      Flusher flusher =
          new Flusher(
              options,
              storage,
              versions,
              versionSet,
              tables,
              catalog,
              stats,
              state,
              events,
              st.segmentWriters);
      Compactor compactor =
          new Compactor(
              options, storage, versions, versionSet, tables, catalog, stats, state, events);
      SegmentCompactor gc =
          new SegmentCompactor(
              options, storage, versions, versionSet, tables, catalog, stats, state, events);
      flusher.useHashed(hashed);
      versionSet.setTailHeld(flusher::holdsTail);
      events.flusher = flusher;
      events.compactor = compactor;
      events.gc = gc;
      ReadPath reads =
          new ReadPath(
              versions, catalog, stats, transport, options.readQueueDepth(), options.clock());
      reads.useHashed(hashed);
      // Exact item counts go on from the manifest's (those at its flushed seqno) through the
      // replay;
      // a store whose counts are not exact counts its keys after the replay.
      boolean counted = options.exactItemCounts() && st.manifest.itemsCounted();
      if (counted) {
        versions.countItems(new ItemCounter(reads::findRecord, catalog));
        for (Manifest.KeyspaceMeta k : st.manifest.keyspaces())
          versions.items().set(k.id(), k.counters().items());
      }
      // A deleted WAL file fails the open here rather than losing its writes silently in the
      // replay.
      WalChain.check(storage, st.manifest.walStart(), st.manifest.walHead());
      long replayFrom = versions.lastSeqno();
      WalReplay.replay(storage, options, st.manifest, versions, catalog, stats, flusher);
      long previous =
          -1; // the newest WAL file replay still needed: the new session's file is linked from it
      for (long n : CommitLog.list(storage)) {
        if (n >= st.manifest.walStart()) previous = n;
      }
      if (options.exactItemCounts() && !counted) recountItems(versions, reads, catalog);
      CommitLog wal =
          CommitLog.startSession(
              storage,
              previous,
              versionSet.nextFileNumber.getAndIncrement(),
              versions.lastSeqno(),
              // each commit waits for its WAL write to be durable: O_DSYNC makes the write and
              // its sync one system call (docs/benchmarks.md, "Direct writes")
              options.directWrites() && options.syncMode() == io.basaltdb.SyncMode.SYNC);
      undo.push(wal::abandon);
      // The new WAL file is the head before anything is written to it, so a deleted one fails the
      // next
      // open. The WAL start moves to the first file present (a new store's, or one written before
      // WAL heads, names none); the chain check vouched for the files it needs.
      VersionEdit head = new VersionEdit().walHead(wal.number());
      // Without counting, the manifest's counts go stale from the first write: no longer exact.
      if (!options.exactItemCounts()) head.flag(Manifest.FLAG_ITEM_COUNTS, false);
      for (long n : CommitLog.list(storage)) {
        if (n >= st.manifest.walStart()) {
          if (n != st.manifest.walStart()) head.walStart(n);
          break;
        }
      }
      versionSet.logAndApply(head);
      DiskWrites writes =
          new DiskWrites(
              options,
              versions,
              catalog,
              state,
              stats,
              versionSet,
              wal,
              events,
              gc,
              storage,
              flusher);
      CommitPipeline pipeline =
          new CommitPipeline(options, versions, catalog, state, stats, writes);
      flusher.start();
      compactor.start();
      gc.start();
      DiskStore store =
          new DiskStore(
              storage, versionSet, writes, flusher, compactor, gc, tables, transport, lock, hashed);
      int tableCount = 0, segmentCount = 0;
      for (KeyspaceFiles f : st.files.values()) {
        tableCount += f.tables.size();
        segmentCount += f.segments.size();
      }
      Notifier.LOG.info(
          "{}: opened in {} ms: manifest {}, {} keyspaces, {} key index tables, {} log segments,"
              + " flushed up to seqno {}, {} writes replayed from the WAL, last seqno {}",
          notifier.store(),
          (System.nanoTime() - openStart) / 1_000_000,
          st.manifest.number(),
          catalog.size(),
          tableCount,
          segmentCount,
          replayFrom,
          versions.lastSeqno() - replayFrom,
          versions.lastSeqno());
      return new Parts(
          options,
          writeMemory,
          blockCache,
          readBuffers,
          writeBuffers,
          catalog,
          versions,
          state,
          stats,
          pipeline,
          reads,
          store);
    } catch (RuntimeException | Error e) {
      while (!undo.isEmpty()) {
        try {
          undo.pop().close();
        } catch (Exception suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
    }
  }

  /**
   * Counts every keyspace's live keys for a store whose counts are not exact (created, or last run,
   * without {@link Options#exactItemCounts}), after the replay: a merge of its write caches and key
   * index tables. The manifest's counts become exact, with its flag, at the next flush, which
   * commits the counts at its switch; a crash before it recounts at the next open.
   */
  private static void recountItems(Versions versions, ReadPath reads, KeyspaceCatalog catalog) {
    ItemCounter items = new ItemCounter(reads::findRecord, catalog);
    Version v = versions.acquire();
    try {
      for (String name : catalog.names()) {
        int ks = catalog.id(name);
        items.set(ks, MergeSources.countLive(v, ks, reads.hashedIndex(ks)));
      }
    } finally {
      v.release();
    }
    versions.countItems(items);
  }

  /**
   * A write cache allocator's chunk size: a 16th of {@code base}, 128 KiB to 4 MiB, in 128 KiB
   * regions.
   */
  private static long chunkSize(long base) {
    long chunk = Math.min(SlabAllocator.DEFAULT_CHUNK_SIZE, Math.max(128 << 10, base / 16));
    return (chunk + (128 << 10) - 1) & -(128L << 10);
  }

  /**
   * The read transport of the highest-priority {@link ReadTransport.Provider} on the class path,
   * started at the first batch of reads ({@link LazyReadTransport}), or the built-in thread pool.
   */
  private static ReadTransport newReadTransport(
      int queueDepth, ReadBuffers buffers, Notifier notifier) {
    try {
      ReadTransport.Provider best = null;
      for (ReadTransport.Provider p :
          ServiceLoader.load(ReadTransport.Provider.class, StoreOpener.class.getClassLoader())) {
        if (best == null || p.priority() > best.priority()) best = p;
      }
      if (best != null) return new LazyReadTransport(best, queueDepth, buffers, notifier);
    } catch (RuntimeException | ServiceConfigurationError | LinkageError e) {
      // a provider that cannot load: the built-in transport works everywhere
      Notifier.LOG.warn(
          "{}: the read transport on the class path could not load ({}); batched reads use the"
              + " built-in thread pool",
          notifier.store(),
          e.toString());
    }
    Notifier.LOG.debug(
        "{}: batched reads through the built-in thread pool (queue depth {})",
        notifier.store(),
        queueDepth);
    return new PooledReadTransport(queueDepth);
  }

  static void unlock(AutoCloseable dirLock) {
    try {
      dirLock.close();
    } catch (Exception e) {
      // releasing a lock only fails if the file system is gone; the process exit releases it anyway
    }
  }

  /** The workers' {@link WorkerEvents}, wired once they exist (before any of them starts). */
  private static final class Wiring implements WorkerEvents {
    private final StoreState state;

    /**
     * Set before the workers start; read by them afterwards (Thread.start orders the writes
     * before).
     */
    Flusher flusher;

    Compactor compactor;
    SegmentCompactor gc;

    Wiring(StoreState state) {
      this.state = state;
    }

    @Override
    public void writeCacheSwitched() {
      flusher.wake();
    }

    @Override
    public void flushed() {
      compactor.wake();
      state.progressed();
    }

    @Override
    public void compacted() {
      gc.wake();
      state.progressed();
    }

    @Override
    public void versionFreed() {
      Compactor c = compactor;
      if (c != null)
        c.tablesMayBeObsolete(); // deletion happens on a compaction thread, not a reader's
    }
  }
}
