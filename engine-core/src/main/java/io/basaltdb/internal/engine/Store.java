package io.basaltdb.internal.engine;

import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.write.CommitPipeline;
import java.util.List;

/**
 * What the disk store ({@link DiskStore}) and the in-memory store ({@link MemoryStore}) do
 * differently behind the one {@link Engine}: keyspace creation and drop, flushing, compaction,
 * checkpoints, what their files add to the stats, and closing. Reads, writes, snapshots and the
 * catalog are shared.
 *
 * <p>Thread-safety: any thread; keyspace changes are serialized by the engine.
 */
interface Store {
  /** Makes keyspace {@code name} durable and returns its id; the engine adds it to the catalog. */
  /**
   * Creates a keyspace whose key index tables are HB+-trie tables with {@code trieChunkBytes}-byte
   * chunks (0: block tables) and returns its id.
   */
  int createKeyspace(String name, KeyspaceCatalog catalog, int trieChunkBytes);

  /** The chunk size of keyspace {@code id}'s HB+-trie tables; 0 for block tables. */
  int trieChunkBytes(int id);

  /** Makes the drop of keyspace {@code id} durable and removes it from {@code catalog}. */
  void dropKeyspace(int id, KeyspaceCatalog catalog, CommitPipeline pipeline);

  /** Flushes the write cache and waits for it; a no-op without files. */
  void flush(CommitPipeline pipeline);

  /** Writes the WAL records the WAL buffer holds back; a no-op without a WAL. */
  void flushWal();

  /**
   * Compacts keyspace {@code ks} over {@code [from, to]} ({@code to} null: to its end) and collects
   * the segments that frees; see {@code Basalt.compactRange}. Returns once done.
   */
  void compactRange(int ks, byte[] from, byte[] to, CommitPipeline pipeline)
      throws InterruptedException;

  /** Waits until compaction is idle; true at once without files. */
  boolean waitForCompactions(long timeoutMillis) throws InterruptedException;

  /**
   * The highest seqno of a deletion of keyspace {@code ks} the store no longer remembers (a
   * tombstone a compaction dropped), or 0: a change feed starting at or below it may miss
   * deletions. Never falls while the store is open.
   */
  long purgeSeqno(int ks);

  /**
   * The retained checkpoints, oldest first: on disk the manifests kept, the current one last; in
   * memory the snapshots {@link #checkpoint} took.
   */
  List<Engine.CheckpointInfo> checkpoints();

  /** Returns a checkpoint holding every write acknowledged before the call (on disk: flushes). */
  Engine.CheckpointInfo checkpoint(CommitPipeline pipeline);

  /**
   * Rolls the open store back to checkpoint {@code id} and returns the checkpoint it then stands at
   * (the in-memory store); a store on disk refuses, as it rolls back only while closed.
   */
  Engine.CheckpointInfo rollback(long id, CommitPipeline pipeline);

  /**
   * Backs the store up into {@code target} as of every write acknowledged before the call: a
   * checkpoint on disk ({@link Backups#backup}), a snapshot in memory ({@link
   * io.basaltdb.internal.engine.backup.MemoryBackups#backup}); {@code previous}: an earlier backup
   * to share files with, or null (disk stores only).
   */
  Backups.Result backup(
      CommitPipeline pipeline,
      io.basaltdb.internal.storage.Storage target,
      io.basaltdb.internal.storage.Storage previous,
      java.util.function.BooleanSupplier stopped);

  /**
   * The committed key index accounting summed over keyspaces, the bytes of the store's files, and
   * the bytes of the files only retained checkpoints hold.
   */
  FileStats fileStats();

  /**
   * The manifest's counters, the bytes of every file, those only checkpoints hold, and the
   * preallocated space past the segments' tails (part of diskBytes, holding no data yet).
   */
  record FileStats(
      Manifest.Counters counters,
      long diskBytes,
      long checkpointOnlyBytes,
      long preallocatedBytes,
      long directWriteBytes,
      long directWriteBufferedBytes) {}

  /** Stops the store's workers and closes its files (after the pipeline is closed). */
  void close();
}
