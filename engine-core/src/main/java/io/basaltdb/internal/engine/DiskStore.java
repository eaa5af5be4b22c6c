package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.gc.SegmentCompactor;
import io.basaltdb.internal.engine.hashed.HashedIndex;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.index.Compactor;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.write.CommitLog;
import io.basaltdb.internal.engine.write.CommitPipeline;
import io.basaltdb.internal.engine.write.DiskWrites;
import io.basaltdb.internal.engine.write.Flusher;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.spi.ReadTransport;
import java.util.ArrayList;
import java.util.List;

/**
 * Magma's durable store (seed 000 sections 3 to 5) behind the engine's API: the WAL and write cache
 * admission ({@link DiskWrites}), the {@link Flusher}, the {@link Compactor}, the {@link
 * SegmentCompactor} (garbage collection), and the {@link VersionSet} every file-set change goes
 * through. {@link StoreOpener} builds it; this class runs and closes it.
 *
 * <p>Thread-safety: any thread; keyspace changes are serialized by the engine.
 */
final class DiskStore implements Store {
  private final Storage storage;
  private final VersionSet versionSet;
  private final DiskWrites writes;
  private final Flusher flusher;
  private final Compactor compactor;
  private final SegmentCompactor gc;
  private final TableCache tables;
  private final ReadTransport transport;

  /** The store directory's process lock; released by close. */
  private final AutoCloseable dirLock;

  /** The hashed keyspaces' key indexes; closed by close, after the workers stop. */
  private final HashedIndexes hashed;

  DiskStore(
      Storage storage,
      VersionSet versionSet,
      DiskWrites writes,
      Flusher flusher,
      Compactor compactor,
      SegmentCompactor gc,
      TableCache tables,
      ReadTransport transport,
      AutoCloseable dirLock,
      HashedIndexes hashed) {
    this.hashed = hashed;
    this.storage = storage;
    this.versionSet = versionSet;
    this.writes = writes;
    this.flusher = flusher;
    this.compactor = compactor;
    this.gc = gc;
    this.tables = tables;
    this.transport = transport;
    this.dirLock = dirLock;
  }

  @Override
  public long purgeSeqno(int ks) {
    return versionSet.purgeSeqno(ks);
  }

  VersionSet versionSet() {
    return versionSet;
  }

  Flusher flusher() {
    return flusher;
  }

  Compactor compactor() {
    return compactor;
  }

  @Override
  public int createKeyspace(String name, KeyspaceCatalog catalog, int trieChunkBytes) {
    int id = versionSet.manifest().nextKeyspaceId();
    versionSet.logAndApply(new VersionEdit().createKeyspace(id, name, trieChunkBytes));
    if (KeyspaceLayout.isHashed(trieChunkBytes)) hashed.create(id, trieChunkBytes);
    return id;
  }

  @Override
  public int trieChunkBytes(int id) {
    return versionSet.layoutCode(id);
  }

  /**
   * Commits the drop, then forgets the keyspace (writers stalled on its level 0 go on). Not between
   * commit groups: a leader stalled on the keyspace's level 0 holds the queue until the drop lands.
   * Its tables go once no version or retained checkpoint names them; its segments at the next open.
   */
  @Override
  public void dropKeyspace(int id, KeyspaceCatalog catalog, CommitPipeline pipeline) {
    versionSet.logAndApply(new VersionEdit().dropKeyspace(id));
    catalog.remove(id);
    hashed.drop(id);
    gc.forgetDroppedEstimates(); // else a dropped keyspace's tables kept their entries for the
    // store's life
  }

  @Override
  public void flush(CommitPipeline pipeline) {
    pipeline.runBetweenGroups(writes::switchForFlush);
    writes.awaitFlushed();
  }

  @Override
  public void flushWal() {
    writes.flushWal();
  }

  /**
   * Flushes (so the range's writes are in the key index), compacts the range's key index to its
   * deepest level (an ordered keyspace) or checkpoints the trie (a hashed one, whose flushes report
   * garbage at once but whose tombstones wait for a checkpoint), then collects the keyspace's
   * segments whatever its fragmentation.
   */
  @Override
  public void compactRange(int ks, byte[] from, byte[] to, CommitPipeline pipeline)
      throws InterruptedException {
    flush(pipeline);
    if (hashed.of(ks) != null) {
      // Not while a flush is between its trie change and its commit, nor during a backup; and the
      // checkpoint of records the expiry sweep alone removed waits for a flush (HashedIndex): those
      // stay pending garbage, not lost.
      if (!flusher.writeTrieCheckpoint(ks, 2_000))
        Notifier.LOG.info(
            "compactRange: hashed keyspace {}: no trie checkpoint could be written now;"
                + " its pending tombstones become garbage at the next one",
            ks);
    } else {
      compactor.compactRange(ks, from, to, versionSet.manifest().flushedSeqno());
    }
    gc.collect(ks);
  }

  @Override
  public boolean waitForCompactions(long timeoutMillis) throws InterruptedException {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (true) { // garbage collection follows key index compaction, whose discards feed it
      if (!compactor.awaitIdle(Math.max(0, deadline - System.currentTimeMillis()))) return false;
      gc.wake();
      if (!gc.awaitIdle(Math.max(0, deadline - System.currentTimeMillis()))) return false;
      if (compactor.awaitIdle(0)) return true;
    }
  }

  @Override
  public List<Engine.CheckpointInfo> checkpoints() {
    return versionSet.checkpoints().stream().map(Engine.CheckpointInfo::of).toList();
  }

  @Override
  public Engine.CheckpointInfo checkpoint(CommitPipeline pipeline) {
    flush(pipeline);
    return Engine.CheckpointInfo.of(versionSet.markCheckpoint());
  }

  /** A store on disk rolls back only while closed ({@code Basalt.rollback(directory, id)}). */
  @Override
  public Engine.CheckpointInfo rollback(long id, CommitPipeline pipeline) {
    throw new InvalidArgumentException(
        "a store on disk rolls back only while closed: close it, then call"
            + " Basalt.rollback(directory, "
            + id
            + ")");
  }

  @Override
  public Backups.Result backup(
      CommitPipeline pipeline,
      Storage target,
      Storage previous,
      java.util.function.BooleanSupplier stopped) {
    // no trie checkpoint from here to the end: the ones the backup copies match its manifest
    return hashed.backingUp(
        () -> {
          flush(pipeline);
          Manifest t = versionSet.pinCheckpoint(); // it and its files stay while they are copied
          try {
            return Backups.backup(
                storage,
                t,
                target,
                previous,
                stopped,
                (ks, action) -> {
                  HashedIndex index = hashed.of(ks);
                  if (index != null) index.whileStill(action);
                });
          } finally {
            versionSet.unpin(t.number());
          }
        });
  }

  @Override
  public FileStats fileStats() {
    Manifest committed = versionSet.manifest();
    Manifest.Counters total = Manifest.Counters.ZERO;
    for (Manifest.KeyspaceMeta k : committed.keyspaces()) total = total.plus(k.counters());
    long preallocated = 0;
    for (Manifest.KeyspaceMeta k : committed.keyspaces()) {
      for (io.basaltdb.internal.segment.SegmentState s : k.segments()) {
        try {
          preallocated +=
              Math.max(0, storage.size(FileNames.segment(k.id(), s.segmentId())) - s.tailOffset());
        } catch (BasaltException e) {
          // replaced and deleted since the manifest was read: nothing preallocated
        }
      }
    }
    try {
      for (String pooled :
          CommitLog.pooled(storage)) { // WAL files kept for reuse: space held, not data
        try {
          preallocated += storage.size(pooled);
        } catch (BasaltException e) {
          // taken by a rotation since it was listed: counted as the WAL file it became
        }
      }
    } catch (BasaltException e) {
      // a failing disk: the store reports its failure elsewhere
    }
    long[] direct = storage.directWriteBytes();
    return new FileStats(
        total,
        diskBytes(storage, committed),
        versionSet.checkpointOnlyBytes(),
        preallocated,
        direct[0],
        direct[1]);
  }

  /**
   * The bytes of the store's files as {@code storage} lists them now: manifests, WAL files, and
   * every table and segment file of each keyspace id {@code current} has handed out (dropped
   * keyspaces' files until the orphan sweep deletes them). The root's empty LOCK file is not
   * opened: closing any channel of it would release the process lock. Best effort, for stats: a
   * file deleted while it is measured (an obsolete table, a covered WAL file) or that cannot be
   * listed or opened counts 0.
   */
  static long diskBytes(Storage storage, Manifest current) {
    List<String> dirs = new ArrayList<>(List.of(FileNames.MANIFEST_DIR, FileNames.WAL_DIR));
    for (int ks = 1; ks < current.nextKeyspaceId(); ks++) {
      dirs.addAll(FileNames.dataDirs(ks));
      dirs.add(FileNames.trieDir(ks));
    }
    long total = 0;
    for (String dir : dirs) {
      List<String> names;
      try {
        names = storage.list(dir);
      } catch (BasaltException e) {
        continue; // a failing disk: the store reports its failure elsewhere, the gauge undercounts
      }
      for (String name : names) {
        try {
          total += storage.size(dir + "/" + name);
        } catch (BasaltException e) {
          // gone since the listing, or unreadable: as above
        }
      }
    }
    return total;
  }

  /**
   * Stops the workers (the write cache stays in the WAL, replayed at the next open), syncs and
   * closes the WAL and every file, releases the directory lock. Throws the WAL's close error, if
   * any, after closing everything else.
   */
  @Override
  public void close() {
    BasaltException error = null;
    try {
      gc.stop();
      compactor.stop();
      flusher.stop();
      writes.close();
      flusher.writeTrieCheckpoints(); // an open then replays nothing: it loads the checkpoints
    } catch (BasaltException e) {
      error = e;
    } finally {
      hashed.close();
      transport.close();
      tables.closeAll();
      StoreOpener.unlock(dirLock);
    }
    if (error != null) throw error;
  }
}
