package io.basaltdb;

import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.Storage;
import java.nio.file.Path;
import java.util.List;

/**
 * A Basalt store: Magma's disk engine (an LSM key index over a segmented log of values, with a
 * write-ahead log and a Nitro skiplist as write cache) opened on a directory, or Nitro's in-memory
 * engine opened with {@link #openInMemory}. Data lives in named {@link Keyspace}s that share the
 * WAL, the write cache and the background threads; a new store has the keyspace {@code "default"}.
 *
 * <pre>{@code
 * try (Basalt db = Basalt.open(Path.of("data"), Options.defaults())) {
 *   Keyspace ks = db.keyspace("default");
 *   ks.put(key, value);
 *   byte[] v = ks.get(key);
 *   try (Snapshot s = db.snapshot(); Cursor c = s.scan(ks, from, to)) {
 *     while (c.next()) { ... c.key() ... c.value() ... }
 *   }
 * }
 * }</pre>
 *
 * <p>Thread-safety: every method may be called from any thread. {@link #close()} waits for writes
 * in progress; afterwards every call on the store, its keyspaces, snapshots and cursors throws
 * {@link ClosedException}.
 */
public final class Basalt implements AutoCloseable {
  final Engine engine;
  private final Options options;

  /** Copied from the options for the hot path's value check. */
  final int maxValueSize;

  private Basalt(Engine engine, Options options) {
    this.engine = engine;
    this.options = options;
    this.maxValueSize = options.maxValueSize();
  }

  /**
   * Opens the store in {@code directory}, creating it if needed, and recovers every acknowledged
   * write (docs/operations.md). Throws {@link CorruptionException} if the files are damaged, {@link
   * StorageException} if they cannot be read.
   */
  public static Basalt open(Path directory, Options options) {
    if (directory == null)
      throw new InvalidArgumentException(
          "directory must not be null (use openInMemory for a store without one)");
    if (options == null)
      throw new InvalidArgumentException("options must not be null (use Options.defaults())");
    return open(
        new FileStorage(
            directory, options.directReads(), options.mappedReads(), options.directWrites()),
        options);
  }

  /** Opens a store on any storage implementation (tests use an in-memory file system). */
  static Basalt open(Storage storage, Options options) {
    refuseBackup(storage);
    Options o = options.copy();
    return new Basalt(Engine.open(storage, o), o);
  }

  /**
   * Opens an in-memory store (Nitro): everything lives in the off-heap skiplist, up to {@link
   * Options#memoryQuota}; writes past it throw {@link MemoryLimitException} and change nothing.
   * Nothing survives {@link #close()}.
   */
  public static Basalt openInMemory(Options options) {
    if (options == null)
      throw new InvalidArgumentException("options must not be null (use Options.defaults())");
    Options o = options.copy();
    return new Basalt(Engine.open(null, o), o);
  }

  /**
   * Opens an in-memory store restored from the backup of an in-memory store in {@code
   * backupDirectory} (made by {@link #backup(Path)} of a store opened with {@link
   * #openInMemory(Options)}): the shards are built into the skiplist bottom-up on up to {@link
   * Options#backupThreads} threads, then the delta files of a non-intrusive backup are replayed
   * (Nitro, seed 001 section 5.2). The store holds exactly the writes of the backup, with its
   * keyspaces, and new writes continue after its seqno. The backup is only read; it can be opened
   * again.
   *
   * @throws CorruptionException naming the file, if the backup is incomplete, damaged or truncated;
   *     nothing is opened then
   * @throws InvalidArgumentException if the directory holds no backup, or a disk store's (restore
   *     that with {@link #restore})
   * @throws MemoryLimitException if the backup does not fit {@link Options#memoryQuota}
   */
  public static Basalt openInMemory(Options options, Path backupDirectory) {
    if (options == null)
      throw new InvalidArgumentException("options must not be null (use Options.defaults())");
    Storage backup = new FileStorage(existingDirectory(backupDirectory, "backup"));
    Options o = options.copy();
    return new Basalt(Engine.openInMemory(o, backup), o);
  }

  /** The keyspace named {@code name}; {@link InvalidArgumentException} if there is none. */
  public Keyspace keyspace(String name) {
    if (name == null) throw new InvalidArgumentException("keyspace name must not be null");
    int id = engine.keyspaceId(name);
    if (id < 0) {
      throw new InvalidArgumentException(
          "no keyspace named '" + name + "'; create it with createKeyspace");
    }
    return new Keyspace(this, id, name);
  }

  /** Creates a keyspace; durable when it returns. {@link InvalidArgumentException} if it exists. */
  public Keyspace createKeyspace(String name) {
    return new Keyspace(this, engine.createKeyspace(name, 0), name);
  }

  /**
   * Creates a keyspace laid out as {@code options} say ({@link KeyspaceOptions}; fixed for the
   * keyspace's life); durable when it returns. {@link InvalidArgumentException} if it exists, or if
   * the in-memory store is asked for a key index format other than the default.
   */
  public Keyspace createKeyspace(String name, KeyspaceOptions options) {
    if (options == null)
      throw new InvalidArgumentException(
          "options must not be null (use KeyspaceOptions.defaults())");
    options.validate();
    return new Keyspace(this, engine.createKeyspace(name, options.manifestChunk()), name);
  }

  /** The options keyspace {@code name} was created with. */
  public KeyspaceOptions keyspaceOptions(String name) {
    if (name == null) throw new InvalidArgumentException("keyspace name must not be null");
    return KeyspaceOptions.ofManifestChunk(engine.trieChunkBytes(name));
  }

  /** Drops a keyspace and all its data; durable when it returns. Its handles throw afterwards. */
  public void dropKeyspace(String name) {
    engine.dropKeyspace(name);
  }

  /** Names of the keyspaces, sorted. */
  public List<String> keyspaceNames() {
    return engine.keyspaceNames();
  }

  /**
   * Applies a batch atomically; when it returns, it is durable as {@link Options#syncMode} says. A
   * batch with a value over {@link Options#maxValueSize} or a keyspace of another store is refused
   * whole.
   */
  public void write(WriteBatch batch) {
    if (batch == null) throw new InvalidArgumentException("batch must not be null");
    if (batch.size() == 0) {
      engine.stats(); // still throws on a closed store
      return;
    }
    Batch b = batch.batch;
    for (int i = 0, n = batch.size(); i < n; i++) {
      Keyspace ks = batch.keyspaces[i];
      if (ks.db != this) {
        throw new InvalidArgumentException(
            "keyspace '" + ks.name() + "' belongs to another store; nothing was written");
      }
      Keys.checkValueLength(b.valueLength(i), maxValueSize);
    }
    engine.write(b);
  }

  /** A {@link BulkLoad} in chunks of {@link BulkLoad#DEFAULT_CHUNK_BYTES}. */
  public BulkLoad bulkLoad() {
    return bulkLoad(BulkLoad.DEFAULT_CHUNK_BYTES);
  }

  /**
   * A {@link BulkLoad} into this store that writes its puts and deletes in chunks of {@code
   * chunkBytes} of keys and values (from {@link BulkLoad#MIN_CHUNK_BYTES} to {@link
   * BulkLoad#MAX_CHUNK_BYTES}): larger chunks make fewer, larger level-0 tables and take more heap.
   *
   * @throws InvalidArgumentException for a chunk size out of range
   * @throws ClosedException if the store is closed
   */
  public BulkLoad bulkLoad(long chunkBytes) {
    engine.stats(); // throws on a closed store
    return new BulkLoad(this, chunkBytes);
  }

  /**
   * A batched get across keyspaces: the value of {@code keys.get(i)} in {@code keyspaces.get(i)}
   * for each {@code i}, in order, null where absent. As {@link Keyspace#getAll}, every key's key
   * index block and document reads are in flight together, whatever their keyspaces. Each value is
   * what {@link Keyspace#get} would return; for one consistent view of all keys, use a snapshot.
   *
   * @throws InvalidArgumentException if a list, a keyspace or a key is null, the lists differ in
   *     length, a key is too long, or a keyspace belongs to another store; nothing is read
   */
  public List<byte[]> getAll(List<Keyspace> keyspaces, List<byte[]> keys) {
    if (keyspaces == null || keys == null)
      throw new InvalidArgumentException("keyspaces and keys must not be null");
    if (keyspaces.size() != keys.size()) {
      throw new InvalidArgumentException(
          "getAll takes a keyspace per key: "
              + keyspaces.size()
              + " keyspaces for "
              + keys.size()
              + " keys");
    }
    int[] ids = new int[keys.size()];
    for (int i = 0; i < ids.length; i++) {
      Keyspace ks = keyspaces.get(i);
      if (ks == null) throw new InvalidArgumentException("keyspace " + i + " must not be null");
      if (ks.db != this)
        throw new InvalidArgumentException("keyspace '" + ks.name() + "' belongs to another store");
      Keys.checkKey(keys.get(i));
      ids[i] = ks.id;
    }
    return engine.getAll(ids, keys);
  }

  /** A consistent, read-only view of every keyspace as of now. Close it to release what it pins. */
  public Snapshot snapshot() {
    return new Snapshot(this, engine.snapshot());
  }

  public Stats stats() {
    return new Stats(engine.stats());
  }

  /**
   * Writes the WAL records {@link Options#walBufferBytes} holds back (one write call), so every
   * write acknowledged before the call survives a process crash (and, under {@link SyncMode#NONE},
   * not a power loss). Without a WAL buffer, and on an in-memory store, it does nothing.
   *
   * @throws StorageException if the write fails; the store then fails, as after any WAL error
   */
  public void flushWal() {
    engine.flushWal();
  }

  /** Flushes the write cache to the log segments and key index now and waits (disk stores only). */
  public void flush() {
    engine.flush();
  }

  /**
   * Compacts {@code keyspace}'s keys in {@code [from, to]} now and waits until it is done, as
   * RocksDB's {@code CompactRange}: after a bulk delete, say, so its space comes back now rather
   * than when compaction and garbage collection would get to it. Flushes first; then every version
   * in the range written before the call reaches the deepest level of the key index that holds its
   * keys, in a table rewritten since the call, so the tombstones and expired records there are
   * dropped and the versions they hid are reported to the delete list (a hashed keyspace, which has
   * no levels, writes a trie checkpoint instead, which makes its tombstones garbage); then garbage
   * collection rewrites the keyspace's segments with any garbage worth it, whatever {@link
   * Options#fragmentationThreshold} says (each segment at least a fifth garbage). Writes may go on
   * meanwhile; what they write is not waited for. An in-memory store has nothing to do (its
   * collector frees deleted versions once no reader needs them).
   *
   * @param from the first key, or null: from the first
   * @param to the last key, or null: to the last
   * @throws InvalidArgumentException if {@code keyspace} is null or of another store, or {@code
   *     from} sorts after {@code to}
   * @throws ClosedException if the store is closed or closes meanwhile, or the keyspace was dropped
   *     (one dropped meanwhile ends the call early, normally)
   * @throws StorageException if the store failed, or collection cannot write (a full disk: the key
   *     index part is done by then)
   */
  public void compactRange(Keyspace keyspace, byte[] from, byte[] to) {
    if (keyspace == null) throw new InvalidArgumentException("keyspace must not be null");
    if (keyspace.db != this)
      throw new InvalidArgumentException(
          "keyspace '" + keyspace.name() + "' belongs to another store");
    if (from != null && to != null && java.util.Arrays.compareUnsigned(from, to) > 0)
      throw new InvalidArgumentException("compactRange: from sorts after to");
    engine.compactRange(
        keyspace.id, from == null ? new byte[0] : from.clone(), to == null ? null : to.clone());
  }

  /** {@link #compactRange(Keyspace, byte[], byte[])} over every key of every keyspace. */
  public void compactRange() {
    for (String name : keyspaceNames()) compactRange(keyspace(name), null, null);
  }

  /**
   * Waits until no key index compaction runs or is needed, for tools and benchmarks that measure a
   * settled store; true if it settled within {@code timeoutMillis} (an in-memory store always is).
   */
  public boolean waitForCompactions(long timeoutMillis) {
    if (timeoutMillis < 0)
      throw new InvalidArgumentException("timeout must not be negative, was " + timeoutMillis);
    return engine.waitForCompactions(timeoutMillis);
  }

  /**
   * The store's checkpoints, oldest first. On disk the last one is the current state of the files;
   * writes acknowledged since the last flush are in the WAL, in no checkpoint yet ({@link
   * #checkpoint()}). In memory, the checkpoints {@link #checkpoint()} took that are still held.
   */
  public List<Checkpoint> checkpoints() {
    return engine.checkpoints().stream().map(Basalt::checkpoint).toList();
  }

  /**
   * Returns a checkpoint that holds every write acknowledged before the call: the state a rollback
   * can bring the store back to for the next {@link Options#checkpointRetentionMillis}. A store on
   * disk flushes its write cache first, and rolls back while closed ({@link #rollback(Path,
   * long)}). An in-memory store holds a snapshot (Nitro's, O(1) to take) and rolls back while open
   * ({@link #rollback(long)}); the snapshot keeps every version it sees in memory until the
   * checkpoint expires, so under updates a checkpoint costs memory as a long-lived {@link Snapshot}
   * does. A full in-memory store drops its checkpoints before it refuses a write.
   */
  public Checkpoint checkpoint() {
    return checkpoint(engine.checkpoint());
  }

  /**
   * Rolls this open in-memory store back to its checkpoint {@code checkpointId} ({@link
   * #checkpoint()}): once this returns, every keyspace holds exactly what it held at the checkpoint
   * (a keyspace created since is gone, one dropped since is back), later checkpoints are gone, and
   * earlier ones remain. Writes wait while it runs (between commit groups), and gets see the store
   * before or after the whole rollback, never part of it; snapshots, cursors and change feeds taken
   * before keep their view. It walks every key of the store and the checkpoint, so it takes time in
   * proportion to the store's size. Unlike a rollback on disk it hands out no seqno twice: it takes
   * one seqno of its own, and every keyspace's change feed purge seqno moves to it, so a consumer
   * that read changes the rollback undid gets {@link ChangesPurgedException} and starts again from
   * 0. Returns the checkpoint the store now stands at (a new id, that seqno).
   *
   * @throws InvalidArgumentException if the store has no such checkpoint (it expired, or a full
   *     store dropped it), or the store is on disk (close it and use {@link #rollback(Path, long)})
   * @throws MemoryLimitException if the versions to put back do not fit the memory quota; nothing
   *     changes then
   * @throws ClosedException if the store is closed
   */
  public Checkpoint rollback(long checkpointId) {
    return checkpoint(engine.rollback(checkpointId));
  }

  /**
   * The checkpoints of the closed store in {@code directory}, oldest first. {@link
   * StorageException} if the store is open (in this or another process).
   */
  public static List<Checkpoint> checkpoints(Path directory) {
    return Engine.checkpoints(existingStore(directory)).stream().map(Basalt::checkpoint).toList();
  }

  /**
   * Rolls the closed store in {@code directory} back to the checkpoint {@code checkpointId} (Magma
   * section 5): once this returns, the store holds exactly the writes that checkpoint holds (up to
   * its {@link Checkpoint#seqno()}); every later write, and every later checkpoint, is gone for
   * good, and the seqnos after the checkpoint's are handed out again. Earlier checkpoints remain. A
   * crash during the call leaves the store either as it was or rolled back. Returns the checkpoint
   * the store now stands at (a new id, the target's seqno and keyspaces).
   *
   * <p>Throws {@link InvalidArgumentException} if the store has no such checkpoint (or expired it),
   * {@link CorruptionException} if the checkpoint or a file it names is damaged or missing, {@link
   * StorageException} if the store is open or its files cannot be written; the store is unchanged
   * then.
   */
  public static Checkpoint rollback(Path directory, long checkpointId) {
    return checkpoint(Engine.rollback(existingStore(directory), checkpointId));
  }

  /**
   * Rolls back a closed store on any storage implementation (tests use an in-memory file system).
   */
  static Checkpoint rollback(Storage storage, long checkpointId) {
    return checkpoint(Engine.rollback(storage, checkpointId));
  }

  /**
   * Backs the open store up into {@code target} while it serves reads and writes: flushes, then
   * copies a checkpoint that holds every write acknowledged before the call (the key index tables
   * hard-linked where the file system allows, since they are never written again; the log segments
   * copied up to the checkpoint's offsets), and writes last a marker listing every file with its
   * size and CRC-32C. {@code target} must not exist or be empty; the backup opens as a store only
   * through {@link #restore}, which checks it first. docs/operations.md ("Backup") describes
   * backing up, verifying and restoring.
   *
   * <p>An in-memory store is backed up as Nitro does (seed 001 section 5): a snapshot of every
   * write published before the call, cut into key ranges written by {@link Options#backupThreads}
   * threads into shard files, in blocks with their own checksums (LZ4 with {@link
   * Options#backupCompression}); by default without holding the snapshot against the garbage
   * collector ({@link Options#nonIntrusiveBackup}). {@link #openInMemory(Options, Path)} opens it.
   *
   * <p>If the call throws, no complete backup is left (what it wrote is deleted; a crash leaves a
   * directory without its marker, which restore refuses). Throws {@link InvalidArgumentException}
   * if {@code target} is not empty, {@link StorageException} if a file cannot be read or written.
   */
  public Backup backup(Path target) {
    return backup(target, null);
  }

  /**
   * An incremental backup: as {@link #backup(Path)}, sharing every file that is unchanged since the
   * complete backup in {@code previous} (hard links to its copies, on one file system): the sealed
   * log segments it already holds are not copied again. Each backup stays complete on its own;
   * deleting one does not damage the other.
   */
  public Backup backup(Path target, Path previous) {
    if (target == null) throw new InvalidArgumentException("target directory must not be null");
    Storage prior = null;
    if (previous != null) {
      if (!java.nio.file.Files.exists(
          existingDirectory(previous, "previous backup").resolve(Backups.MARKER))) {
        throw new InvalidArgumentException(
            previous + " holds no complete backup to build an incremental backup on");
      }
      prior = new FileStorage(previous);
      Backups.verify(prior); // a damaged earlier backup is not built on
    }
    checkEmpty(target, "backup");
    try {
      Backups.Result r = engine.backup(new FileStorage(target), prior);
      return backup(r.marker(), r.bytesCopied(), r.bytesLinked());
    } catch (RuntimeException | Error e) {
      deleteQuietly(target, e);
      throw e;
    }
  }

  /**
   * Restores the backup in {@code backupDirectory} into {@code target}, which must not exist or be
   * empty: checks every file of the backup (present, its size, its CRC-32C) before writing
   * anything, then copies them into a new directory beside {@code target} and renames it into
   * place, so {@code target} appears whole or not at all. The restored store opens with {@link
   * #open} and holds exactly the backup's writes.
   *
   * @throws CorruptionException naming the file, if the backup is incomplete, damaged or truncated;
   *     nothing is written then
   * @throws InvalidArgumentException if {@code target} is not empty
   */
  public static Backup restore(Path backupDirectory, Path target) {
    if (target == null) throw new InvalidArgumentException("target directory must not be null");
    Storage backup = new FileStorage(existingDirectory(backupDirectory, "backup"));
    Path absolute = target.toAbsolutePath().normalize();
    if (absolute.getParent() == null)
      throw new InvalidArgumentException("cannot restore into the root directory " + absolute);
    checkEmpty(
        absolute,
        "restore"); // refuses a store or any other content before anything is read or written
    // A directory of its own beside the target, renamed over it (an empty one is replaced) once
    // complete:
    // the target appears whole or not at all. A crash leaves it behind, named as such.
    Path staging =
        absolute.resolveSibling(
            absolute.getFileName() + ".restoring-" + Long.toHexString(System.nanoTime()));
    try {
      Backups.Marker m =
          Backups.restore(backup, new FileStorage(staging)); // verifies every file first
      java.nio.file.Files.move(staging, absolute, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      io.basaltdb.internal.storage.FileStorage.syncDirectoryOf(absolute);
      return backup(m, 0, 0);
    } catch (java.io.IOException e) {
      deleteQuietly(staging, e);
      throw new StorageException("restore into " + target + " failed: " + e, e);
    } catch (RuntimeException | Error e) {
      deleteQuietly(staging, e);
      throw e;
    }
  }

  /**
   * Checks the backup in {@code backupDirectory} as {@link #restore} does, writing nothing: every
   * file present, of its recorded size and CRC-32C.
   *
   * @throws CorruptionException naming the file, if the backup is incomplete, damaged or truncated
   */
  public static Backup verifyBackup(Path backupDirectory) {
    return backup(
        Backups.verify(new FileStorage(existingDirectory(backupDirectory, "backup"))), 0, 0);
  }

  /** Opens an in-memory store from a backup on any storage implementation (tests). */
  static Basalt openInMemory(Options options, Storage backup) {
    Options o = options.copy();
    return new Basalt(Engine.openInMemory(o, backup), o);
  }

  /** Backs up into any storage implementation (tests use an in-memory file system). */
  Backup backup(Storage target, Storage previous) {
    Backups.Result r = engine.backup(target, previous);
    return backup(r.marker(), r.bytesCopied(), r.bytesLinked());
  }

  private static Backup backup(Backups.Marker m, long copied, long linked) {
    return new Backup(m.seqno(), m.createdMillis(), m.files().size(), m.bytes(), copied, linked);
  }

  private static Path existingDirectory(Path dir, String what) {
    if (dir == null) throw new InvalidArgumentException(what + " directory must not be null");
    if (!java.nio.file.Files.isDirectory(dir))
      throw new InvalidArgumentException("there is no " + what + " in " + dir);
    return dir;
  }

  /**
   * Refuses a {@code dir} that is not a directory or holds anything; a missing one is fine (the
   * storage opened on it creates it, durably).
   */
  private static void checkEmpty(Path dir, String what) {
    if (!java.nio.file.Files.exists(dir)) return;
    if (!java.nio.file.Files.isDirectory(dir)) {
      throw new InvalidArgumentException(
          "cannot " + what + " into " + dir + ": it is not a directory");
    }
    try {
      try (java.util.stream.Stream<Path> entries = java.nio.file.Files.list(dir)) {
        if (entries.findAny().isPresent()) {
          throw new InvalidArgumentException(
              "cannot "
                  + what
                  + " into "
                  + dir
                  + ": the directory is not empty; give an"
                  + " empty or new one");
        }
      }
    } catch (java.io.IOException e) {
      throw new StorageException(what + " into " + dir + " failed: " + e, e);
    }
  }

  /**
   * Deletes {@code dir} and everything in it, adding a failure to {@code cause} (if any) instead of
   * throwing.
   */
  private static void deleteQuietly(Path dir, Throwable cause) {
    try (java.util.stream.Stream<Path> all = java.nio.file.Files.walk(dir)) {
      for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList())
        java.nio.file.Files.deleteIfExists(p);
    } catch (java.io.IOException | RuntimeException e) {
      if (cause != null) cause.addSuppressed(e);
    }
  }

  private static Checkpoint checkpoint(Engine.CheckpointInfo c) {
    return new Checkpoint(c.id(), c.createdMillis(), c.seqno(), c.keyspaces());
  }

  private static Storage existingStore(Path directory) {
    if (directory == null) throw new InvalidArgumentException("directory must not be null");
    if (!Engine.isStoreDirectory(directory)) {
      throw new InvalidArgumentException("there is no Basalt store in " + directory);
    }
    Storage s = new FileStorage(directory);
    refuseBackup(s);
    return s;
  }

  /**
   * Refuses a backup, complete or not, where a store is expected: opening or rolling it back would
   * change it.
   */
  private static void refuseBackup(Storage storage) {
    if (storage.exists(Backups.MARKER) || storage.exists(Backups.INCOMPLETE)) {
      throw new InvalidArgumentException(
          storage.describe("")
              + " is a backup ("
              + (storage.exists(Backups.MARKER) ? "complete" : "unfinished")
              + "); opening it would change it and the backups that share its files:"
              + " restore it with Basalt.restore into another directory and open that");
    }
  }

  /** True for a store opened with {@link #openInMemory}. */
  public boolean isInMemory() {
    return engine.isInMemory();
  }

  public Options options() {
    return options.copy();
  }

  public boolean isClosed() {
    return engine.isClosed();
  }

  /**
   * Whether the store takes writes: {@link Health.State#FAILED} once a flush, compaction,
   * collection or WAL write has failed (the store refuses writes from then on, reads still work;
   * reopen it to recover every acknowledged write), with that failure; {@link Health.State#CLOSED}
   * after close. Never throws: a monitor may ask at any time. {@link
   * EventListener#onBackgroundError} tells of the failure as it happens.
   */
  public Health health() {
    if (engine.isClosed()) return new Health(Health.State.CLOSED, engine.failure());
    BasaltException f = engine.failure();
    return f == null ? new Health(Health.State.OK, null) : new Health(Health.State.FAILED, f);
  }

  /** Waits for writes in progress, then closes every file and frees all memory. Idempotent. */
  @Override
  public void close() {
    engine.close();
  }
}
