package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.memory.SlabAllocator;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.spi.ReadTransport;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The store: Magma's write path and read path (seed 000 sections 3 and 5) over a Nitro write cache,
 * or, without storage, Nitro's in-memory engine (seed 001) behind the same API.
 *
 * <h2>Design</h2>
 * Writes go through {@link CommitPipeline} (group commit: WAL write, fsync, apply to the active write
 * cache). When the active write cache reaches half of {@link Options#writeCacheSize} it turns immutable
 * and the {@link Flusher} writes it out: documents to each keyspace's tail log segment in seqno order,
 * key index records to a new table, then a manifest; then old WAL files go. Reads pin the current
 * {@link Version} and look in the active cache, the immutable cache, the tables newest first, then the
 * segment the seqno names. One skiplist holds every keyspace, keys prefixed by the keyspace id, so a
 * flush is one pass and every keyspace's flushed boundary is the same seqno.
 *
 * <h2>Concurrency</h2>
 * <ul>
 *   <li>{@link #applyLock} orders the changes readers must see atomically: applying a commit group and
 *       publishing {@link #lastSeqno}, installing a version, taking a snapshot.</li>
 *   <li>{@link #manifestLock} serializes manifest commits (flusher, keyspace create and drop).</li>
 *   <li>Readers never lock: they pin {@link #current} with a reference count.</li>
 * </ul>
 *
 * <h2>Invariants</h2>
 * <ol>
 *   <li>Every write with seqno at or below the manifest's flushedSeqno is in the manifest's files; every
 *       later acknowledged write is in a WAL file numbered at or above its walStart.</li>
 *   <li>The immutable write cache holds exactly the writes with seqnos in (flushedSeqno, switchSeqno].</li>
 *   <li>Seqnos are assigned by the single commit leader, gap-free, in WAL order.</li>
 * </ol>
 *
 * <p>Thread-safety: all public methods may be called concurrently; {@link #close()} makes later calls
 * throw {@link ClosedException}.
 */
public final class Engine implements AutoCloseable {
  final Storage storage;
  final Options options;
  final boolean inMemory;
  final SlabAllocator allocator;
  /** Index and filter blocks of the key index, index pages of the segments; null in memory. */
  final BlockCache blockCache;
  /** The allocator's chunk size: the headroom a write needs beyond its own bytes (a fresh chunk per arena). */
  final long chunkSize;
  final EngineStats stats = new EngineStats();

  /** Name to id and back for live keyspaces; changed under manifestLock, read without locking. */
  private final Map<String, Integer> idsByName = new ConcurrentHashMap<>();
  private final Map<Integer, String> namesById = new ConcurrentHashMap<>();

  /** The read sources; replaced under applyLock, read by anyone (volatile: a reader sees a complete version). */
  private volatile Version current;
  final ReentrantLock applyLock = new ReentrantLock();
  /**
   * Highest published seqno: every write up to it is applied and visible as a whole group. Written
   * under applyLock by the leader after applying a group; read without locking.
   */
  volatile long lastSeqno;
  final AtomicLong nextFileNumber = new AtomicLong(1);
  private final AtomicLong memtableIds = new AtomicLong();
  /** Every memtable not yet freed, so close can free those still pinned by open snapshots. */
  private final Set<Memtable> liveMemtables = ConcurrentHashMap.newKeySet();

  /** Write caches not yet freed: the active one, one being flushed, and those readers still hold. */
  int liveWriteCaches() {
    return liveMemtables.size();
  }

  final Object manifestLock = new Object();
  /** The last committed manifest; guarded by manifestLock. */
  Manifest manifest;
  /** Retained manifests (checkpoints), number to creation time; guarded by manifestLock. */
  java.util.TreeMap<Long, Long> checkpoints = new java.util.TreeMap<>();
  /** File numbers of the tables each retained manifest names; guarded by manifestLock. */
  Map<Long, Set<Long>> checkpointTables = new HashMap<>();
  /** Open key index tables by file number, until they are deleted; guarded by manifestLock. */
  final Map<Long, OpenTable> openTables = new HashMap<>();
  /**
   * Tables only older retained manifests named at open, so never opened: file number to keyspace.
   * Deleted once those checkpoints expire. Guarded by manifestLock.
   */
  final Map<Long, Integer> unopenedTables = new HashMap<>();
  /** Versions not yet freed: the tables they name stay on disk. */
  private final Set<Version> liveVersions = ConcurrentHashMap.newKeySet();

  /** A table the engine has open, and its keyspace (to name its file). */
  record OpenTable(int keyspace, KeyspaceFiles.Table table) {}

  /**
   * Receives every key index record version a compaction discards, as {@code (keyspace, seqno, doc
   * size)}: called once per discarded version, on a compaction thread under the manifest lock, just
   * before the manifest that drops the version is committed. That manifest also adds the version to the
   * keyspace's persisted {@link Manifest.Counters} ({@code discardedVersions}, {@code discardedBytes}).
   *
   * <p>At a crash (or a failed commit, which fails the store) after the calls and before the commit is
   * durable, what the calls did in memory dies with the process, and the store reopens from the manifest
   * before the compaction: the versions are still in its tables and its counters do not count them. The
   * compaction runs again after recovery and calls the listener again for the versions it discards
   * then. Once the commit is durable, no call repeats a version. So the calls of one open never name a
   * version twice, but a version named just before a crash is named again after it. A consumer that
   * persists what it learns must commit it through the manifest, atomically with the drop, as the
   * counters do (the first such consumer; the garbage collector's delete list is next): anything
   * persisted elsewhere counts a version twice or never.
   */
  public interface DiscardListener {
    void discarded(int keyspace, long seqno, int docSize);
  }

  private volatile DiscardListener discardListener = (ks, seqno, size) -> {};

  final CommitLog wal;
  /** The store directory's process lock (disk stores); released by close. */
  private AutoCloseable dirLock;
  /** The PERIODIC mode's fsync thread, or null. */
  private Thread syncer;
  final CommitPipeline pipeline;
  final Flusher flusher;
  final Compactor compactor;
  /** Reads the documents of batched gets; null in memory. */
  final ReadTransport readTransport;
  /** The first write or flush failure; once set, writes are refused. Volatile: read by every writer. */
  private volatile BasaltException failure;
  private volatile boolean closed;

  private Engine(Storage storage, Options options) {
    this.storage = storage;
    this.options = options;
    this.inMemory = storage == null;
    long cacheBytes = inMemory ? 0 : options.blockCacheSize();
    long writeQuota = options.memoryQuota() - cacheBytes; // the two never take each other's memory
    long chunk = Math.min(SlabAllocator.DEFAULT_CHUNK_SIZE, Math.max(128 << 10, writeQuota / 16));
    chunk = (chunk + (128 << 10) - 1) & -(128L << 10); // the allocator's regions are 128 KiB
    this.chunkSize = chunk;
    this.allocator = new SlabAllocator(inMemory ? "memory-store" : "write-cache", writeQuota, writeQuota, chunk);
    this.blockCache = inMemory ? null : new BlockCache(cacheBytes);
    this.pipeline = new CommitPipeline(this);
    if (inMemory) {
      this.wal = null;
      this.flusher = null;
      this.compactor = null;
      this.readTransport = null;
      idsByName.put("default", 1);
      namesById.put(1, "default");
      Memtable m = newMemtable();
      current = newVersion(m, null, Map.of());
      m.release();
      return;
    }
    Recovery.State st;
    try {
      dirLock = storage.lock("LOCK");
    } catch (RuntimeException e) {
      allocator.close();
      blockCache.close();
      throw e;
    }
    try {
      st = Recovery.load(storage, options, blockCache);
    } catch (RuntimeException e) {
      allocator.close();
      blockCache.close();
      unlock();
      throw e;
    }
    this.manifest = st.manifest;
    this.checkpoints = st.checkpoints;
    this.checkpointTables = st.checkpointTables;
    st.files.forEach((ks, f) -> f.tables.forEach(t -> openTables.put(t.fileNumber(), new OpenTable(ks, t))));
    st.tableKeyspaces.forEach((n, ks) -> {
      if (!openTables.containsKey(n)) unopenedTables.put(n, ks);
    });
    for (Manifest.KeyspaceMeta k : manifest.keyspaces()) {
      idsByName.put(k.name(), k.id());
      namesById.put(k.id(), k.name());
    }
    nextFileNumber.set(st.nextFileNumber);
    lastSeqno = manifest.flushedSeqno();
    this.flusher = new Flusher(this, st.segmentWriters, st.openFiles);
    this.compactor = new Compactor(this);
    this.readTransport = newReadTransport(options.readQueueDepth());
    Memtable active = newMemtable();
    current = newVersion(active, null, st.files);
    active.release();
    CommitLog log = null;
    try {
      Recovery.replay(this, manifest);
      log = new CommitLog(storage, nextFileNumber.getAndIncrement());
    } catch (RuntimeException e) {
      readTransport.close();
      flusher.closeFiles();
      current.release();
      for (Memtable m : liveMemtables) m.list.close();
      allocator.close();
      blockCache.close();
      unlock();
      throw e;
    }
    this.wal = log;
    flusher.start();
    compactor.start();
    if (options.syncMode() == io.basaltdb.SyncMode.PERIODIC) {
      syncer = new Thread(this::syncPeriodically, "basalt-wal-sync");
      syncer.setDaemon(true);
      syncer.start();
    }
  }

  private void unlock() {
    try {
      if (dirLock != null) dirLock.close();
    } catch (Exception e) {
      // releasing a lock only fails if the file system is gone; the process exit releases it anyway
    }
  }

  /** PERIODIC mode: fsyncs the WAL every syncIntervalMillis until close; a failure fails the store. */
  private void syncPeriodically() {
    while (!closed) {
      // Parked, not sleeping: close unparks it; an interrupt would close the WAL's FileChannel.
      java.util.concurrent.locks.LockSupport.parkNanos(options.syncIntervalMillis() * 1_000_000L);
      if (closed || failure != null) return;
      try {
        wal.sync();
        stats.walSyncs.increment();
      } catch (BasaltException e) {
        fail(e);
        return;
      }
    }
  }

  /** Opens (creating or recovering) a store on {@code storage}; null storage opens an in-memory store. */
  public static Engine open(Storage storage, Options options) {
    Options o = options.copy();
    o.validate();
    return new Engine(storage, o);
  }

  /**
   * The read transport of the highest-priority {@link ReadTransport.Provider} on the class path
   * (engine-io's io_uring), or the built-in thread pool.
   */
  private static ReadTransport newReadTransport(int queueDepth) {
    try {
      ReadTransport.Provider best = null;
      for (ReadTransport.Provider p : java.util.ServiceLoader.load(ReadTransport.Provider.class,
          Engine.class.getClassLoader())) {
        if (best == null || p.priority() > best.priority()) best = p;
      }
      if (best != null) return best.create(queueDepth);
    } catch (RuntimeException | java.util.ServiceConfigurationError | LinkageError e) {
      // a provider that cannot load or start (no io_uring here): the built-in transport works everywhere
    }
    return new PooledReadTransport(queueDepth);
  }

  /** A new version, registered so its tables stay on disk until it is freed. */
  Version newVersion(Memtable active, Memtable immutable, Map<Integer, KeyspaceFiles> files) {
    Version v = new Version(active, immutable, files, this::versionFreed);
    liveVersions.add(v);
    return v;
  }

  private void versionFreed(Version v) {
    liveVersions.remove(v);
    Compactor c = compactor;
    if (c != null) c.tablesMayBeObsolete(); // deletion happens on a compaction thread, not a reader's
  }

  /**
   * Closes and deletes the tables no live version and no retained manifest names (inputs of finished
   * compactions once the last snapshot or read using them is done). Caller holds manifestLock.
   */
  void deleteObsoleteTables() {
    Set<Long> named = new java.util.HashSet<>();
    for (Set<Long> s : checkpointTables.values()) named.addAll(s);
    for (Version v : liveVersions) {
      for (KeyspaceFiles f : v.files.values()) {
        for (KeyspaceFiles.Table t : f.tables) named.add(t.fileNumber());
      }
    }
    var it = openTables.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      if (named.contains(e.getKey()) || !deleteTable(e.getValue().keyspace(), e.getKey())) continue;
      flusher.forget(e.getValue().table().reader());
      e.getValue().table().reader().close();
      it.remove();
    }
    var closed = unopenedTables.entrySet().iterator();
    while (closed.hasNext()) {
      var e = closed.next();
      if (!named.contains(e.getKey()) && deleteTable(e.getValue(), e.getKey())) closed.remove();
    }
  }

  /**
   * Deletes an obsolete table's file; false if that failed (counted in {@code obsoleteDeleteFailures},
   * tried again at the next cleanup, and by the next open's orphan sweep). Nothing depends on it.
   */
  private boolean deleteTable(int keyspace, long fileNumber) {
    try {
      storage.delete(KeyspaceFiles.tableName(keyspace, fileNumber));
      return true;
    } catch (BasaltException e) {
      stats.obsoleteDeleteFailures.increment();
      return false;
    }
  }

  /**
   * The next manifest: the current one's keyspaces with their tables and segments from {@code files},
   * their counters plus {@code deltas} (what the change being committed flushed or discarded, by
   * keyspace), and the given flush position. Caller holds manifestLock, from reading the tables the
   * deltas describe until the result is committed, so no other change lands in between.
   */
  Manifest nextManifest(Map<Integer, KeyspaceFiles> files, Map<Integer, Manifest.Counters> deltas,
      long flushedSeqno, long walStart) {
    Manifest m = manifest;
    List<Manifest.KeyspaceMeta> ks = new ArrayList<>();
    for (Manifest.KeyspaceMeta meta : m.keyspaces()) {
      KeyspaceFiles f = files.get(meta.id());
      Manifest.Counters c = meta.counters().plus(deltas.getOrDefault(meta.id(), Manifest.Counters.ZERO));
      if (f == null) {
        ks.add(new Manifest.KeyspaceMeta(meta.id(), meta.name(), meta.tables(), meta.segments(), c));
        continue;
      }
      List<Manifest.TableMeta> tables = new ArrayList<>();
      for (KeyspaceFiles.Table t : f.tables) tables.add(new Manifest.TableMeta(t.fileNumber(), t.level()));
      List<io.basaltdb.internal.segment.SegmentState> segs = new ArrayList<>();
      for (KeyspaceFiles.Segment sg : f.segments) segs.add(sg.state());
      ks.add(new Manifest.KeyspaceMeta(meta.id(), meta.name(), tables, segs, c));
    }
    return new Manifest(m.number() + 1, System.currentTimeMillis(), flushedSeqno, nextFileNumber.get(), walStart,
        m.nextKeyspaceId(), ks);
  }

  /** WAL files, expired checkpoints and tables nothing names any more. Caller holds manifestLock. */
  void deleteObsolete() {
    Recovery.deleteObsolete(storage, manifest, checkpoints, options.checkpointRetentionMillis());
    checkpointTables.keySet().retainAll(checkpoints.keySet());
    deleteObsoleteTables();
  }

  void setDiscardListener(DiscardListener listener) {
    discardListener = listener == null ? (ks, seqno, size) -> {} : listener;
  }

  DiscardListener discardListener() {
    return discardListener;
  }

  Memtable newMemtable() {
    Memtable[] self = new Memtable[1];
    self[0] = new Memtable(memtableIds.incrementAndGet(), allocator, options.maxValueSize(),
        () -> liveMemtables.remove(self[0]));
    liveMemtables.add(self[0]);
    return self[0];
  }

  // ---- keyspaces ---------------------------------------------------------------------------------------

  /** The id of a live keyspace, or -1. */
  public int keyspaceId(String name) {
    checkOpen();
    Integer id = idsByName.get(name);
    return id == null ? -1 : id;
  }

  public String keyspaceName(int id) {
    return namesById.get(id);
  }

  public boolean isLive(int id) {
    return namesById.containsKey(id);
  }

  public List<String> keyspaceNames() {
    checkOpen();
    List<String> names = new ArrayList<>(idsByName.keySet());
    Collections.sort(names);
    return names;
  }

  /** Creates a keyspace and returns its id; durable when it returns. */
  public int createKeyspace(String name) {
    checkName(name);
    checkOpen();
    synchronized (manifestLock) {
      if (idsByName.containsKey(name)) throw new InvalidArgumentException("keyspace '" + name + "' already exists");
      int id;
      if (inMemory) {
        id = namesById.keySet().stream().mapToInt(Integer::intValue).max().orElse(0) + 1;
      } else {
        checkWritable();
        Manifest m = manifest;
        id = m.nextKeyspaceId();
        List<Manifest.KeyspaceMeta> ks = new ArrayList<>(m.keyspaces());
        ks.add(new Manifest.KeyspaceMeta(id, name, List.of(), List.of(), Manifest.Counters.ZERO));
        commitManifest(new Manifest(m.number() + 1, System.currentTimeMillis(), m.flushedSeqno(),
            nextFileNumber.get(), m.walStart(), id + 1, ks));
      }
      idsByName.put(name, id);
      namesById.put(id, name);
      return id;
    }
  }

  /**
   * Drops a keyspace: durable when it returns; its handles then throw. Its files are deleted at the
   * next open once no retained checkpoint names them.
   */
  public void dropKeyspace(String name) {
    checkOpen();
    int dropped;
    synchronized (manifestLock) {
      Integer id = idsByName.get(name);
      if (id == null) throw new InvalidArgumentException("keyspace '" + name + "' does not exist");
      if (!inMemory) {
        checkWritable();
        Manifest m = manifest;
        List<Manifest.KeyspaceMeta> ks = new ArrayList<>(m.keyspaces());
        ks.removeIf(k -> k.id() == id);
        commitManifest(new Manifest(m.number() + 1, System.currentTimeMillis(), m.flushedSeqno(),
            nextFileNumber.get(), m.walStart(), m.nextKeyspaceId(), ks));
      }
      idsByName.remove(name);
      namesById.remove(id);
      dropped = id;
    }
    if (inMemory) pipeline.dropInMemory(dropped);
  }

  private static void checkName(String name) {
    if (name == null || name.isEmpty() || name.length() > 255) {
      throw new InvalidArgumentException("keyspace name must be 1 to 255 characters, was "
          + (name == null ? "null" : "'" + name + "'"));
    }
  }

  /** Commits a manifest and makes it current; caller holds manifestLock. A failure fails the store. */
  void commitManifest(Manifest m) {
    try {
      m.commit(storage);
    } catch (BasaltException e) {
      fail(e);
      throw e;
    }
    stats.manifestBytes.add(m.encode().length);
    manifest = m;
    checkpoints.put(m.number(), m.createdMillis());
    checkpointTables.put(m.number(), Manifest.tableNumbers(m));
  }

  // ---- checkpoints -------------------------------------------------------------------------------------

  /** The store's retained checkpoints, oldest first, the current manifest last; empty in memory. */
  public List<io.basaltdb.Checkpoint> checkpoints() {
    checkOpen();
    if (inMemory) return List.of();
    List<io.basaltdb.Checkpoint> out = new ArrayList<>();
    synchronized (manifestLock) {
      for (long n : checkpoints.keySet()) {
        Manifest m = n == manifest.number() ? manifest
            : Manifest.read(storage, Manifest.fileName(n).substring(Manifest.DIR.length() + 1));
        out.add(toCheckpoint(m));
      }
    }
    return out;
  }

  /**
   * Flushes the write cache and returns the checkpoint that holds every write acknowledged before the
   * call (the current manifest once the flush is committed).
   */
  public io.basaltdb.Checkpoint checkpoint() {
    checkOpen();
    if (inMemory) throw new InvalidArgumentException("an in-memory store has no checkpoints");
    pipeline.forceFlush();
    synchronized (manifestLock) {
      return toCheckpoint(manifest);
    }
  }

  /** The checkpoints of the closed store in {@code storage}, oldest first. */
  public static List<io.basaltdb.Checkpoint> checkpoints(Storage storage) {
    try (AutoCloseable lock = storage.lock("LOCK")) {
      List<io.basaltdb.Checkpoint> out = new ArrayList<>();
      for (Manifest m : Checkpoints.list(storage)) out.add(toCheckpoint(m));
      return out;
    } catch (BasaltException e) {
      throw e;
    } catch (Exception e) {
      throw new StorageException("releasing the lock of " + storage.describe("LOCK") + " failed: " + e, e);
    }
  }

  /** Rolls the closed store in {@code storage} back to checkpoint {@code id} (see {@link Checkpoints}). */
  public static io.basaltdb.Checkpoint rollback(Storage storage, long id) {
    try (AutoCloseable lock = storage.lock("LOCK")) {
      return toCheckpoint(Checkpoints.rollback(storage, id));
    } catch (BasaltException e) {
      throw e;
    } catch (Exception e) {
      throw new StorageException("releasing the lock of " + storage.describe("LOCK") + " failed: " + e, e);
    }
  }

  private static io.basaltdb.Checkpoint toCheckpoint(Manifest m) {
    List<String> names = new ArrayList<>();
    for (Manifest.KeyspaceMeta k : m.keyspaces()) names.add(k.name());
    Collections.sort(names);
    return new io.basaltdb.Checkpoint(m.number(), m.createdMillis(), m.flushedSeqno(), names);
  }

  // ---- writes ------------------------------------------------------------------------------------------

  public void write(Batch batch) {
    checkOpen();
    for (int i = 0; i < batch.count; i++) checkKeyspace(batch.keyspaces[i]);
    pipeline.write(batch);
  }

  void checkWritable() {
    BasaltException f = failure;
    if (f != null) {
      throw new StorageException("the store refuses writes after an earlier failure (" + f.getMessage()
          + "); reads still work. Close and reopen the store to recover every acknowledged write", f);
    }
  }

  /** Records the first failure; writes are refused from then on. */
  void fail(BasaltException e) {
    if (failure == null) failure = e;
    pipeline.wakeStalled();
  }

  BasaltException failure() {
    return failure;
  }

  // ---- reads -------------------------------------------------------------------------------------------

  /** The value of {@code key} in keyspace {@code ks}, or null. */
  public byte[] get(int ks, byte[] key) {
    checkOpen();
    checkKeyspace(ks);
    stats.gets.increment();
    Version v = acquire();
    try {
      byte[] e = v.active.get(ks, key);
      if (e != null && Memtable.seqnoOf(e) > lastSeqno) awaitPublished();
      if (e == null && v.immutable != null) e = v.immutable.get(ks, key);
      if (e != null) return Memtable.isTombstone(e) ? null : Memtable.valueOf(e);
      return getFromFiles(v.files(ks), ks, key);
    } finally {
      v.release();
    }
  }

  /**
   * Waits for the commit group being applied to be published. A get that meets an entry above
   * {@link #lastSeqno} calls this before answering, so that once it has seen one write of a batch,
   * every later read sees the whole batch. The leader holds the apply lock from the group's first entry
   * until it publishes.
   */
  private void awaitPublished() {
    applyLock.lock();
    applyLock.unlock();
  }

  byte[] getFromFiles(KeyspaceFiles files, int ks, byte[] key) {
    KeyRecord rec = new KeyRecord();
    if (!findRecord(files, key, rec) || rec.tombstone) return null;
    return readDocument(files, ks, key, rec.seqno, rec.hint).value();
  }

  /** The newest key index record of {@code key} into {@code rec}; false if no table holds it. */
  private boolean findRecord(KeyspaceFiles files, byte[] key, KeyRecord rec) {
    if (files.tables.isEmpty()) return false;
    long hash = TableReader.keyHash(key); // once for every table probed
    for (KeyspaceFiles.Table t : files.level(0)) {
      if (lookup(t, key, hash, rec)) return true;
    }
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      KeyspaceFiles.Table t = files.candidate(l, key);
      if (t != null && lookup(t, key, hash, rec)) return true;
    }
    return false;
  }

  /** A document a batched get still has to read: the key's position in the batch and its record. */
  private record PendingRead(int index, byte[] key, long seqno, long hint, KeyspaceFiles.Segment segment,
      long blockOffset) {}

  /**
   * The values of {@code keys} (null where absent), in order (Magma's batched reads): every key is
   * resolved through the write caches and the key index first, then the document reads all go to the
   * read transport together, one per distinct block, so they are in flight at once. A read whose block
   * does not hold the document whole (a stale hint, a document bigger than a block) falls back to a
   * point read. Sees whole batches as {@link #get} does; a consistent view across the keys needs a
   * snapshot.
   */
  public List<byte[]> getAll(int ks, List<byte[]> keys) {
    checkOpen();
    checkKeyspace(ks);
    int n = keys.size();
    byte[][] out = new byte[n][];
    stats.gets.add(n);
    stats.batchedGets.increment();
    Version v = acquire();
    try {
      KeyspaceFiles files = v.files(ks);
      List<PendingRead> pending = new ArrayList<>();
      KeyRecord rec = new KeyRecord();
      for (int i = 0; i < n; i++) {
        byte[] key = keys.get(i);
        byte[] e = v.active.get(ks, key);
        if (e != null && Memtable.seqnoOf(e) > lastSeqno) awaitPublished();
        if (e == null && v.immutable != null) e = v.immutable.get(ks, key);
        if (e != null) {
          out[i] = Memtable.isTombstone(e) ? null : Memtable.valueOf(e);
        } else if (findRecord(files, key, rec) && !rec.tombstone) {
          KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
          io.basaltdb.internal.segment.Document cached = s == null ? null : s.reader().cached(rec.seqno);
          if (cached != null && java.util.Arrays.equals(cached.key(), key)) {
            out[i] = cached.value();
            continue;
          }
          long off = s == null ? -1 : s.reader().hintedBlock(rec.seqno, rec.hint);
          pending.add(new PendingRead(i, key, rec.seqno, rec.hint, s, off));
        }
      }
      Map<Long, ReadTransport.Read> blocks = new java.util.LinkedHashMap<>();
      for (PendingRead p : pending) {
        if (p.blockOffset < 0) continue;
        long id = p.segment.state().segmentId() << 32 | p.blockOffset;
        blocks.computeIfAbsent(id, x -> new ReadTransport.Read(p.segment.reader().file(), p.blockOffset,
            java.nio.ByteBuffer.allocate(p.segment.reader().blockReadSize(p.blockOffset))));
      }
      if (!blocks.isEmpty()) {
        readTransport.submit(new ArrayList<>(blocks.values()));
        stats.documentReads.add(blocks.size());
      }
      for (PendingRead p : pending) {
        io.basaltdb.internal.segment.Document d = null;
        if (p.blockOffset >= 0) {
          ReadTransport.Read r = blocks.get(p.segment.state().segmentId() << 32 | p.blockOffset);
          int got = awaitRead(r);
          d = p.segment.reader().findInRead(p.blockOffset, r.dst().array(), got, p.seqno);
        }
        if (d == null || !java.util.Arrays.equals(d.key(), p.key)) {
          d = readDocument(files, ks, p.key, p.seqno, p.hint); // checks and reports as a point read does
        } else {
          p.segment.reader().remember(d);
        }
        out[p.index] = d.value();
      }
      return java.util.Arrays.asList(out);
    } finally {
      v.release();
    }
  }

  private static int awaitRead(ReadTransport.Read r) {
    try {
      return r.result().join();
    } catch (java.util.concurrent.CompletionException e) {
      Throwable c = e.getCause();
      if (c instanceof BasaltException b) throw b;
      throw new StorageException("a batched read of " + r.target() + " failed: " + c, c);
    }
  }

  private boolean lookup(KeyspaceFiles.Table t, byte[] key, long hash, KeyRecord rec) {
    stats.tableLookups.increment();
    if (!t.reader().mayContain(key, hash)) return false; // key range and bloom filter: no I/O
    return t.reader().getChecked(key, rec); // a data block from the cache, or read (a TABLE_DATA miss)
  }

  /** The document a key index record names: from the block cache, or read (counted) and cached. */
  Document readDocument(KeyspaceFiles files, int ks, byte[] key, long seqno, long hint) {
    return files.document(key, seqno, hint, () -> namesById.getOrDefault(ks, "#" + ks), stats.documentReads);
  }

  /** A consistent snapshot of the whole store at the last applied seqno. */
  public EngineSnapshot snapshot() {
    checkOpen();
    applyLock.lock();
    try {
      Version v = acquire();
      try {
        return new EngineSnapshot(this, v, lastSeqno);
      } catch (RuntimeException e) {
        v.release();
        throw e;
      }
    } finally {
      applyLock.unlock();
    }
  }

  Version acquire() {
    while (true) {
      Version v = current;
      if (v.tryRetain()) return v;
      checkOpen();
    }
  }

  Version current() {
    return current;
  }

  /** Makes {@code v} current (caller holds applyLock) and drops the engine's reference to the old one. */
  void install(Version v) {
    Version old = current;
    current = v;
    old.release();
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------

  void checkOpen() {
    if (closed) throw new ClosedException("the store is closed; open it again");
  }

  void checkKeyspace(int ks) {
    if (!namesById.containsKey(ks)) {
      throw new ClosedException("keyspace #" + ks + " was dropped or never existed in this store; get a new handle");
    }
  }

  public boolean isClosed() {
    return closed;
  }

  public boolean isInMemory() {
    return inMemory;
  }

  /** Flushes the write cache now and waits for it (tests, and callers that want a short WAL). */
  public void flush() {
    checkOpen();
    if (inMemory) return;
    pipeline.forceFlush();
  }

  /** See {@code Basalt.waitForCompactions}. */
  public boolean waitForCompactions(long timeoutMillis) {
    checkOpen();
    if (inMemory) return true;
    try {
      return compactor.awaitIdle(timeoutMillis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** A scan with a snapshot of its own, released when the cursor closes. */
  public EngineCursor scan(int ks, byte[] from, byte[] to) {
    EngineSnapshot s = snapshot();
    try {
      s.engine.checkKeyspace(ks);
      return new EngineCursor(s, ks, from, to, true);
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /** Counters and gauges by name, in a stable order (see io.basaltdb.Stats for their meaning). */
  public Map<String, Long> stats() {
    checkOpen();
    Map<String, Long> m = new java.util.LinkedHashMap<>();
    EngineStats s = stats;
    m.put("puts", s.puts.sum());
    m.put("deletes", s.deletes.sum());
    m.put("gets", s.gets.sum());
    m.put("batches", s.batches.sum());
    m.put("groupCommits", s.groupCommits.sum());
    m.put("userBytesWritten", s.userBytes.sum());
    m.put("walBytesWritten", s.walBytes.sum());
    m.put("walSyncs", s.walSyncs.sum());
    m.put("segmentBytesWritten", s.segmentBytes.sum());
    m.put("indexBytesWritten", s.tableBytes.sum());
    m.put("manifestBytesWritten", s.manifestBytes.sum());
    m.put("flushes", s.flushes.sum());
    m.put("stalls", s.stalls.sum());
    m.put("stallNanos", s.stallNanos.sum());
    m.put("slowdowns", s.slowdowns.sum());
    m.put("slowdownNanos", s.slowdownNanos.sum());
    m.put("tableLookups", s.tableLookups.sum());
    m.put("documentReads", s.documentReads.sum());
    m.put("batchedGets", s.batchedGets.sum());
    m.put("indexBlockReads", blockCache == null ? 0 : blockCache.misses(BlockCache.Kind.TABLE_DATA));
    m.put("compactions", s.compactions.sum());
    m.put("trivialMoves", s.trivialMoves.sum());
    m.put("compactionBytesRead", s.compactionBytesRead.sum());
    m.put("compactionBytesWritten", s.compactionBytesWritten.sum());
    // Key index accounting as the current manifest persists it, summed over the live keyspaces (so it
    // survives reopening and never counts a version twice), and the store's size on disk.
    Manifest.Counters total = Manifest.Counters.ZERO;
    long diskBytes = 0;
    if (!inMemory) {
      Manifest committed;
      synchronized (manifestLock) {
        committed = manifest;
      }
      for (Manifest.KeyspaceMeta k : committed.keyspaces()) total = total.plus(k.counters());
      diskBytes = Recovery.diskBytes(storage, committed);
    }
    m.put("flushedRecords", total.flushedVersions());
    m.put("flushedBytes", total.flushedBytes());
    m.put("discardedVersions", total.discardedVersions());
    m.put("discardedBytes", total.discardedBytes());
    m.put("liveDataBytes", total.liveBytes());
    m.put("diskBytes", diskBytes);
    m.put("l0Stalls", s.l0Stalls.sum());
    m.put("l0StallNanos", s.l0StallNanos.sum());
    m.put("obsoleteDeleteFailures", s.obsoleteDeleteFailures.sum());
    Version v = current;
    m.put("writeCacheBytes", v.active.bytes() + (v.immutable == null ? 0 : v.immutable.bytes()));
    long cacheBytes = blockCache == null ? 0 : blockCache.bytes();
    m.put("memoryInUse", allocator.usedBytes() + cacheBytes);
    m.put("memoryQuota", options.memoryQuota());
    m.put("writeCacheMemory", allocator.usedBytes());
    m.put("writeCacheQuota", allocator.quota());
    m.put("blockCacheBytes", cacheBytes);
    m.put("blockCacheCapacity", blockCache == null ? 0 : blockCache.capacity());
    m.put("blockCacheIndexBytes", blockCache == null ? 0 : blockCache.bytes(BlockCache.Kind.TABLE_INDEX));
    m.put("blockCacheFilterBytes", blockCache == null ? 0 : blockCache.bytes(BlockCache.Kind.TABLE_FILTER));
    m.put("blockCacheDataBytes", blockCache == null ? 0 : blockCache.bytes(BlockCache.Kind.TABLE_DATA));
    m.put("blockCachePageBytes", blockCache == null ? 0 : blockCache.bytes(BlockCache.Kind.SEGMENT_PAGE));
    m.put("blockCacheDocumentBytes", blockCache == null ? 0 : blockCache.bytes(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheDocumentHits", blockCache == null ? 0 : blockCache.hits(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheDocumentMisses", blockCache == null ? 0 : blockCache.misses(BlockCache.Kind.DOCUMENT));
    m.put("blockCacheHits", blockCache == null ? 0 : blockCache.hits());
    m.put("blockCacheMisses", blockCache == null ? 0 : blockCache.misses());
    m.put("blockCacheEvictions", blockCache == null ? 0 : blockCache.evictions());
    m.put("blockCacheDeclined", blockCache == null ? 0 : blockCache.declined());
    int tables = 0, segments = 0;
    for (KeyspaceFiles f : v.files.values()) {
      tables += f.tables.size();
      segments += f.segments.size();
    }
    m.put("tables", (long) tables);
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      long n = 0;
      for (KeyspaceFiles f : v.files.values()) n += f.level(l).size();
      m.put("tablesAtLevel" + l, n);
    }
    m.put("segments", (long) segments);
    m.put("lastSeqno", lastSeqno);
    m.put("keyspaces", (long) namesById.size());
    return m;
  }

  /**
   * Closes the store: waits for writes in progress, stops the flusher (the write cache stays in the WAL,
   * replayed at the next open), syncs and closes the WAL and every file, frees all memory.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) return;
      closed = true;
    }
    pipeline.close();
    BasaltException error = null;
    try {
      if (syncer != null) {
        java.util.concurrent.locks.LockSupport.unpark(syncer);
        try {
          syncer.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (compactor != null) compactor.stop();
      if (flusher != null) flusher.stop();
      if (wal != null) {
        if (failure == null) wal.close(lastSeqno); else wal.abandon();
      }
    } catch (BasaltException e) {
      error = e;
    } finally {
      if (readTransport != null) readTransport.close();
      if (flusher != null) flusher.closeFiles();
      applyLock.lock();
      try {
        current.release();
      } finally {
        applyLock.unlock();
      }
      for (Memtable m : liveMemtables) m.list.close();
      liveMemtables.clear();
      allocator.close();
      if (blockCache != null) blockCache.close();
      unlock();
    }
    if (error != null) throw error;
  }

  Map<Integer, KeyspaceFiles> copyFiles(Version v) {
    return new HashMap<>(v.files);
  }
}
