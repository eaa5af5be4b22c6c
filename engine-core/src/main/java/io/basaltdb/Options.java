package io.basaltdb;

/**
 * Every knob of a store, each with its default. Mutable and fluent ({@code
 * Options.defaults().memoryQuota(x)}); {@link Basalt#open} validates and copies it, so later
 * changes do not affect an open store.
 *
 * <p>Thread-safety: not thread-safe; configure it on one thread, then hand it to {@code open}.
 */
public final class Options {
  private long memoryQuota = 256L << 20;
  private long writeCacheSize;
  private int maxValueSize = 20 << 20;
  private SyncMode syncMode = SyncMode.SYNC;
  private long syncIntervalMillis = 100;
  private long segmentSize = 64L << 20;
  private double segmentSizeRatio = 1.0 / 16;
  private int blockSize = 4096;
  private int bloomBitsPerKey = 10;
  private long checkpointRetentionMillis = 10 * 60_000L;
  private long checkpointIntervalMillis = 60_000L;
  private double checkpointSpaceRatio = 0.1;
  private int maxGroupCommitBytes = 1 << 20;
  private long walSkipBytes = 4L << 20;
  private long trieCheckpointBytes = 64L << 20;
  private long walBufferBytes = 0;
  private java.util.function.LongSupplier clock = System::currentTimeMillis;
  private long expiryCheckMillis = 60_000L;
  private long deletionRetentionMillis = 10 * 60_000L;
  private double expiryCompactionRatio = 0.25;
  private EventListener eventListener = EventListener.NONE;
  private boolean jmx = false;
  private int l0CompactionTrigger = 8;
  private int l0StopWritesTrigger = 36;
  private double l0BaseRatio = 0.5;
  private long level1Bytes = 256L << 20;
  private int levelMultiplier = 10;
  private boolean dynamicLevelTargets = true;
  private long tableTargetBytes = 8L << 20;
  private int compactionThreads = 2;
  private int gcThreads = 1;
  private int readQueueDepth = 32;
  private boolean directReads;
  private boolean directWrites;
  private boolean mappedReads = true;
  private boolean keyOrderedRuns = true;
  private long blockCacheSize = -1;
  private double fragmentationThreshold = 0.5;
  private boolean flushLookups = false;
  private boolean exactItemCounts = false;
  private long coldSegmentMillis = 60 * 60_000L;
  private int coldZstdLevel = 3;
  private long coldPassBytesPerSecond = 16L << 20;
  private int l0RevealRatio = 128;
  private long diskReserveBytes = 128L << 20;
  private boolean keyIndexGuards = false;
  private int guardLastLevelBits = 15;
  private int guardBitsStep = 2;
  private int guardMaxTables = 8;
  private int backupThreads = Math.max(1, Math.min(64, Runtime.getRuntime().availableProcessors()));
  private boolean backupCompression = false;
  private boolean nonIntrusiveBackup = true;

  /** The maximum size of a key, in bytes (64 KiB). */
  public static final int MAX_KEY_SIZE = 64 * 1024;

  /** The largest {@link #maxValueSize} accepted (256 MiB). */
  public static final int MAX_VALUE_SIZE_LIMIT = 256 << 20;

  public static Options defaults() {
    return new Options();
  }

  /** A copy of these options. */
  public Options copy() {
    Options o = new Options();
    o.memoryQuota = memoryQuota;
    o.writeCacheSize = writeCacheSize;
    o.maxValueSize = maxValueSize;
    o.syncMode = syncMode;
    o.syncIntervalMillis = syncIntervalMillis;
    o.segmentSize = segmentSize;
    o.segmentSizeRatio = segmentSizeRatio;
    o.blockSize = blockSize;
    o.bloomBitsPerKey = bloomBitsPerKey;
    o.checkpointRetentionMillis = checkpointRetentionMillis;
    o.checkpointIntervalMillis = checkpointIntervalMillis;
    o.checkpointSpaceRatio = checkpointSpaceRatio;
    o.maxGroupCommitBytes = maxGroupCommitBytes;
    o.walSkipBytes = walSkipBytes;
    o.trieCheckpointBytes = trieCheckpointBytes;
    o.walBufferBytes = walBufferBytes;
    o.clock = clock;
    o.expiryCheckMillis = expiryCheckMillis;
    o.deletionRetentionMillis = deletionRetentionMillis;
    o.expiryCompactionRatio = expiryCompactionRatio;
    o.eventListener = eventListener;
    o.jmx = jmx;
    o.l0CompactionTrigger = l0CompactionTrigger;
    o.l0StopWritesTrigger = l0StopWritesTrigger;
    o.l0BaseRatio = l0BaseRatio;
    o.level1Bytes = level1Bytes;
    o.levelMultiplier = levelMultiplier;
    o.dynamicLevelTargets = dynamicLevelTargets;
    o.tableTargetBytes = tableTargetBytes;
    o.compactionThreads = compactionThreads;
    o.gcThreads = gcThreads;
    o.readQueueDepth = readQueueDepth;
    o.directReads = directReads;
    o.directWrites = directWrites;
    o.mappedReads = mappedReads;
    o.keyOrderedRuns = keyOrderedRuns;
    o.blockCacheSize = blockCacheSize;
    o.fragmentationThreshold = fragmentationThreshold;
    o.flushLookups = flushLookups;
    o.exactItemCounts = exactItemCounts;
    o.coldSegmentMillis = coldSegmentMillis;
    o.coldZstdLevel = coldZstdLevel;
    o.coldPassBytesPerSecond = coldPassBytesPerSecond;
    o.l0RevealRatio = l0RevealRatio;
    o.diskReserveBytes = diskReserveBytes;
    o.keyIndexGuards = keyIndexGuards;
    o.guardLastLevelBits = guardLastLevelBits;
    o.guardBitsStep = guardBitsStep;
    o.guardMaxTables = guardMaxTables;
    o.backupThreads = backupThreads;
    o.backupCompression = backupCompression;
    o.nonIntrusiveBackup = nonIntrusiveBackup;
    return o;
  }

  /**
   * Off-heap bytes the store may use: write cache (and, later, block cache and filters). Default
   * 256 MiB. An in-memory store holds all its data in it and refuses writes past it.
   */
  public Options memoryQuota(long bytes) {
    this.memoryQuota = bytes;
    return this;
  }

  public long memoryQuota() {
    return memoryQuota;
  }

  /**
   * Bytes of the memory quota for the write cache: the active and the immutable skiplist together.
   * The active one turns immutable and is flushed when it reaches three quarters of this (the
   * allocator has twice this of the quota, see {@link #blockCacheSize}). Default (0): a quarter of
   * the memory quota, at most 64 MiB; when set, between 64 KiB and the memory quota. Ignored by an
   * in-memory store, whose skiplist may use the whole quota.
   */
  public Options writeCacheSize(long bytes) {
    this.writeCacheSize = bytes;
    return this;
  }

  /** The write cache size in effect: the one set, or the default derived from the memory quota. */
  public long writeCacheSize() {
    if (writeCacheSize != 0) return writeCacheSize;
    return Math.max(64L << 10, Math.min(64L << 20, memoryQuota / 4));
  }

  /**
   * Largest value accepted, in bytes. Default 20 MiB; at most 256 MiB. Empty values are allowed.
   */
  public Options maxValueSize(int bytes) {
    this.maxValueSize = bytes;
    return this;
  }

  public int maxValueSize() {
    return maxValueSize;
  }

  /** When writes are fsynced; default {@link SyncMode#SYNC} (before each write is acknowledged). */
  public Options syncMode(SyncMode mode) {
    if (mode == null)
      throw new InvalidArgumentException("syncMode must not be null: SYNC, PERIODIC or NONE");
    this.syncMode = mode;
    return this;
  }

  public SyncMode syncMode() {
    return syncMode;
  }

  /** Period of the fsync in {@link SyncMode#PERIODIC}; default 100 ms. */
  public Options syncIntervalMillis(long ms) {
    this.syncIntervalMillis = ms;
    return this;
  }

  public long syncIntervalMillis() {
    return syncIntervalMillis;
  }

  /**
   * The largest log segment: a keyspace's tail segment is closed and a new one started at most at
   * this size (and earlier on a small keyspace, see {@link #segmentSizeRatio}). Default 64 MiB;
   * between 64 KiB and 1 GiB.
   */
  public Options segmentSize(long bytes) {
    this.segmentSize = bytes;
    return this;
  }

  public long segmentSize() {
    return segmentSize;
  }

  /**
   * A keyspace's tail segment is closed at this share of its log's bytes, at least 2 MiB and at
   * most {@link #segmentSize} (Magma section 3.5: the segment size limit follows the database
   * size). A segment is the unit garbage collection rewrites: a store of a few segments can only
   * rewrite large parts of itself, recent and still live data with the stale, where many segments
   * let it pick the most fragmented. Default 1/16 (a 64 MiB segment from 1 GiB of log on); 0 closes
   * every segment at {@link #segmentSize}; at most 1.
   */
  public Options segmentSizeRatio(double ratio) {
    this.segmentSizeRatio = ratio;
    return this;
  }

  public double segmentSizeRatio() {
    return segmentSizeRatio;
  }

  /**
   * Uncompressed size of log segment and key index blocks; default 4 KiB; between 512 B and 1 MiB.
   */
  public Options blockSize(int bytes) {
    this.blockSize = bytes;
    return this;
  }

  public int blockSize() {
    return blockSize;
  }

  /**
   * Bloom filter bits per key in the key index; default 10 (about 1% false positives); 0 disables.
   */
  public Options bloomBitsPerKey(int bits) {
    this.bloomBitsPerKey = bits;
    return this;
  }

  public int bloomBitsPerKey() {
    return bloomBitsPerKey;
  }

  /**
   * How long an in-memory store ({@link Basalt#openInMemory}) remembers a deletion, so that its
   * change feeds ({@link Keyspace#changes}) report it: the deleted key's tombstone stays in the
   * skiplist (about 80 bytes plus the key, counted in {@link #memoryQuota}) until it is this old,
   * then a background pass removes it and raises the keyspace's purge seqno past it. A consumer
   * that resumes from below the purge seqno gets {@link ChangesPurgedException} and starts again
   * from 0, as on disk. When the store is full, deletions are forgotten at once to make room
   * (before a write is refused), if they are at least a 32nd of the store's entries (fewer are not
   * worth the walk of the whole store that finds them). Default 10 minutes (as {@link
   * #checkpointRetentionMillis}); 0 forgets each deletion when it is applied, so feeds report none.
   * Stores on disk keep their deletions in the key index until compaction drops them, and ignore
   * this.
   */
  public Options deletionRetentionMillis(long ms) {
    this.deletionRetentionMillis = ms;
    return this;
  }

  public long deletionRetentionMillis() {
    return deletionRetentionMillis;
  }

  /**
   * How long checkpoints (superseded manifests kept, see {@link #checkpointIntervalMillis}), and
   * the files they name, are kept; default 10 minutes. Recovery falls back to the newest intact one
   * when the newest manifest is damaged.
   */
  public Options checkpointRetentionMillis(long ms) {
    this.checkpointRetentionMillis = ms;
    return this;
  }

  public long checkpointRetentionMillis() {
    return checkpointRetentionMillis;
  }

  /**
   * How often a committed manifest is kept as a checkpoint once superseded (Magma's periodic
   * checkpoints); default 1 minute. The others are deleted when the next manifest commits, so the
   * tables only they named can go at once. {@code Basalt.checkpoint()} always keeps one. 0 keeps
   * every manifest (each flush and compaction) as a checkpoint for {@link
   * #checkpointRetentionMillis}.
   */
  public Options checkpointIntervalMillis(long ms) {
    this.checkpointIntervalMillis = ms;
    return this;
  }

  public long checkpointIntervalMillis() {
    return checkpointIntervalMillis;
  }

  /**
   * The most disk space periodic checkpoints may hold, as a fraction of the log segments' bytes:
   * the segments and tables garbage collection and compaction replaced stay on disk while a
   * retained checkpoint names them, and under a heavy update load that can be several copies of the
   * data. When the bytes only checkpoints hold pass this, the oldest periodic checkpoints are
   * dropped before their {@link #checkpointRetentionMillis} (stat {@code
   * checkpointsDroppedForSpace}); checkpoints asked for with {@code Basalt.checkpoint()}, and every
   * checkpoint found when the store opens, are kept their full time. Default 0.1 (0.25 let round 2
   * of the update race peak at space amplification 2.52 against 2.24); between 0 (keep no periodic
   * checkpoint that holds space) and 100 (effectively no limit).
   */
  public Options checkpointSpaceRatio(double ratio) {
    this.checkpointSpaceRatio = ratio;
    return this;
  }

  public double checkpointSpaceRatio() {
    return checkpointSpaceRatio;
  }

  /** Most bytes of batches one group commit writes at once; default 1 MiB. */
  public Options maxGroupCommitBytes(int bytes) {
    this.maxGroupCommitBytes = bytes;
    return this;
  }

  public int maxGroupCommitBytes() {
    return maxGroupCommitBytes;
  }

  /**
   * A batch whose WAL record would take at least this many bytes skips the WAL (Magma section 8.1):
   * it leads a commit of its own, which flushes what the write caches hold, then writes the batch
   * straight to its keyspaces' log segments and a level-0 key index table, syncs them and commits a
   * manifest, and only then makes the batch visible and returns. Its bytes are written once instead
   * of twice (WAL, then segment), and it needs no room in the write cache, so it may be larger than
   * the write cache. It is durable when it returns, whatever the {@link #syncMode}; a crash before
   * then leaves none of it. The price: the batch waits for the flush of everything written before
   * it, and each one makes a small level-0 table. Default 4 MiB; 0 turns it off (every batch goes
   * through the WAL). Disk stores only; docs/benchmarks.md, "WAL skip", measures it.
   */
  public Options walSkipBytes(long bytes) {
    this.walSkipBytes = bytes;
    return this;
  }

  public long walSkipBytes() {
    return walSkipBytes;
  }

  /**
   * A hashed keyspace ({@link KeyspaceOptions.Kind#HASHED}) checkpoints its lazy-trie once this
   * many bytes of documents were flushed to it since its last checkpoint, and at close: the pages
   * of the trie changed since go to a double-write file, then in place. An open loads the
   * checkpoint and replays only the log after it (without one, it reads the whole log). A
   * checkpoint also makes the deletions flushed before it garbage: until then their tombstones stay
   * in the log. A checkpoint writes most changed pages twice, so it also waits until at least a
   * quarter as many bytes were flushed as its changed pages hold: larger values write less and make
   * opens replay more. Default 64 MiB; at least 64 KiB.
   */
  public Options trieCheckpointBytes(long bytes) {
    this.trieCheckpointBytes = bytes;
    return this;
  }

  public long trieCheckpointBytes() {
    return trieCheckpointBytes;
  }

  /**
   * Most bytes {@link #walBufferBytes} allows: with a group of up to {@link #maxGroupCommitBytes}
   * on top, the WAL writer's buffer stays within the 4 MiB it keeps between writes.
   */
  public static final long MAX_WAL_BUFFER_BYTES = 2L << 20;

  /**
   * Lets acknowledged writes wait in memory for their WAL write (RocksDB's {@code
   * manual_wal_flush}): with N > 0, a commit group's records are framed into the WAL's buffer and
   * written, with one write call, only once the buffer holds N bytes, at {@link Basalt#flushWal},
   * at a write cache switch, at each periodic sync ({@link SyncMode#PERIODIC}) and at close. It
   * saves a system call per commit (a third of a small put's time in the Kafka Streams benchmark).
   * The price: a process crash loses the acknowledged writes still buffered, those after the last
   * {@code flushWal}, as a power loss loses the unsynced ones under {@link SyncMode#NONE}. What a
   * crash leaves is always every write up to some seqno, none after it. For an application that
   * marks its own durable points (a stream processor's commit calls {@code flushWal}). Default 0:
   * every group is written before its writes return. At most {@link #MAX_WAL_BUFFER_BYTES}; not
   * with {@link SyncMode#SYNC}. Disk stores only (the in-memory store has no WAL).
   */
  public Options walBufferBytes(long bytes) {
    this.walBufferBytes = bytes;
    return this;
  }

  public long walBufferBytes() {
    return walBufferBytes;
  }

  /**
   * The wall clock document expiry is judged by ({@link Keyspace#put(byte[], byte[], long)}), in ms
   * since the epoch; default {@code System::currentTimeMillis}. Tests and simulations inject their
   * own. Reads ask it when they meet a version with an expiry (a snapshot once, when it is taken,
   * and judges every read by that instant, so it stays stable); key index compaction asks it once
   * per job. It is called from inside reads and must not call into the store itself.
   */
  public Options clock(java.util.function.LongSupplier millis) {
    if (millis == null)
      throw new InvalidArgumentException(
          "clock must not be null (System::currentTimeMillis is the default)");
    this.clock = millis;
    return this;
  }

  public java.util.function.LongSupplier clock() {
    return clock;
  }

  /**
   * How often key index compaction looks for tables whose expired documents pass {@link
   * #expiryCompactionRatio} of their document bytes (Magma section 7.1's periodic expiry check,
   * from each table's histogram of expiry times), and compacts the most expired one of each
   * keyspace, so expired data that no other compaction would reach is reclaimed: the records
   * dropped, and their documents through the delete list and garbage collection. A hashed keyspace
   * ({@link KeyspaceOptions.Kind#HASHED}), whose index no compaction rewrites, is swept instead: a
   * round over its trie at most this often, once a record may have expired, removes the expired
   * records, and the next trie checkpoint makes their documents garbage. Default 60,000 (a minute);
   * 0 turns the check and the sweep off (expired data is then dropped only by compactions that run
   * anyway, or by overwrites and deletes). Disk stores only.
   */
  public Options expiryCheckMillis(long millis) {
    this.expiryCheckMillis = millis;
    return this;
  }

  public long expiryCheckMillis() {
    return expiryCheckMillis;
  }

  /**
   * Hears of flushes, compactions, collection runs, stalls and the store's failure ({@link
   * EventListener}); default {@link EventListener#NONE}. The same work is logged through SLF4J
   * (logger {@code io.basaltdb}): put a binding on the class path to see it (docs/operations.md,
   * "Monitoring").
   */
  public Options eventListener(EventListener listener) {
    if (listener == null)
      throw new InvalidArgumentException(
          "eventListener must not be null (EventListener.NONE hears nothing)");
    this.eventListener = listener;
    return this;
  }

  public EventListener eventListener() {
    return eventListener;
  }

  /**
   * Whether the store registers a JMX bean with its statistics while it is open, as {@code
   * io.basaltdb:type=Store,name=<its directory>} (an in-memory store: {@code in-memory-<n>}): every
   * stat of {@link Basalt#stats} as a read-only attribute, with {@code Health} and {@code Failure};
   * default false. docs/operations.md, "Monitoring", shows how to read it with jconsole or jcmd. An
   * open fails if the name is taken (the same directory open in another store of this JVM cannot
   * happen: its lock refuses it).
   */
  public Options jmx(boolean on) {
    this.jmx = on;
    return this;
  }

  public boolean jmx() {
    return jmx;
  }

  /**
   * The expired share of a table's document bytes that makes the expiry check compact it ({@link
   * #expiryCheckMillis}); default 0.25, 0.01 to 1.
   */
  public Options expiryCompactionRatio(double ratio) {
    this.expiryCompactionRatio = ratio;
    return this;
  }

  public double expiryCompactionRatio() {
    return expiryCompactionRatio;
  }

  /**
   * Level 0's fan-in; default 8 (4 cost a third more key index compaction in the update race; 8
   * lets level 0 hold up to about 7 tables per tier, each a bloom probe for a point read). Flushed
   * key index tables are small (values live in the log, so a write cache flushes a table of a few
   * hundred KB), so level 0 is tiered: this many level-0 tables of about the same size are merged
   * into one level-0 table, which later merges with its own kind, until level 0 holds {@link
   * #l0BaseRatio} of the base level and all of it merges into the base level. A level 0 of at least
   * this many tables also merges into an empty or tiny base level.
   */
  public Options l0CompactionTrigger(int tables) {
    this.l0CompactionTrigger = tables;
    return this;
  }

  public int l0CompactionTrigger() {
    return l0CompactionTrigger;
  }

  /**
   * Level-0 tables of a keyspace at which writers stall until compaction catches up; default 36.
   * The stall time shows in {@code stats()} as {@code l0Stalls} and {@code l0StallNanos}.
   */
  public Options l0StopWritesTrigger(int tables) {
    this.l0StopWritesTrigger = tables;
    return this;
  }

  public int l0StopWritesTrigger() {
    return l0StopWritesTrigger;
  }

  /**
   * Level 0 merges into the base level (the level it compacts into) once its bytes reach this share
   * of the base level's bytes; default 0.5 (0.25 wrote a third more key index compaction in the
   * update race; the garbage level 0 hides is estimated either way). The trade: each merge rewrites
   * the base level, so the key index's compaction writes about {@code 1 / l0BaseRatio} times what
   * level 0 brings, plus one write per level-0 tier; and a version superseded by a record still in
   * level 0 is not yet known to be garbage (the delete list learns of it at that merge). Garbage
   * collection counts an estimate of that hidden garbage toward {@link #fragmentationThreshold}
   * (stat {@code pendingGarbageBytes}), so the log stays within the threshold either way; a lower
   * ratio means more key index compaction and garbage known sooner. Level 0 also merges into the
   * base level, whatever its size, once no flush has happened for two seconds (the store is quiet).
   */
  public Options l0BaseRatio(double ratio) {
    this.l0BaseRatio = ratio;
    return this;
  }

  public double l0BaseRatio() {
    return l0BaseRatio;
  }

  /**
   * Size of the shallowest key index level below level 0 that a keyspace fills, the level its
   * level-0 tables compact into. With {@link #dynamicLevelTargets} (the default) that level's
   * target lies between {@code level1Bytes / levelMultiplier} and {@code level1Bytes}; with static
   * targets it is level 1's target, and level n holds {@code levelMultiplier} times level n-1.
   * Default 256 MiB (RocksDB's {@code max_bytes_for_level_base}): key index records are small
   * (about 30 bytes for a 40-byte key), so one level holds the index of some 8 million keys, and
   * level 0's merges into it cost about {@code 1 / l0BaseRatio} rewrites each, where a level more
   * would add about {@code levelMultiplier} (64 MiB, the default before, put a second level under a
   * 2-million-key store and cost it 40% more key index compaction in the update race).
   */
  public Options level1Bytes(long bytes) {
    this.level1Bytes = bytes;
    return this;
  }

  public long level1Bytes() {
    return level1Bytes;
  }

  /** Growth factor between key index levels; default 10. */
  public Options levelMultiplier(int factor) {
    this.levelMultiplier = factor;
    return this;
  }

  public int levelMultiplier() {
    return levelMultiplier;
  }

  /**
   * Whether each keyspace derives its key index level targets from its data size (RocksDB's {@code
   * level_compaction_dynamic_level_bytes}); default true. The deepest level (6) aims at the size of
   * the largest level, each level above at the one below divided by {@code levelMultiplier}, and
   * the levels whose target would fall below {@code level1Bytes / levelMultiplier} stay empty:
   * level 0 compacts straight into the shallowest level that is not, so a small store writes its
   * tables into level 6 and about {@code (levelMultiplier - 1) / levelMultiplier} of a big one sits
   * in level 6. Tables found in a level that should be empty (a store written with static targets,
   * or one that shrank) are compacted down first. False: static targets, level n aiming at {@code
   * level1Bytes * levelMultiplier^(n-1)} and level 0 compacting into level 1. Either can open a
   * store the other wrote.
   */
  public Options dynamicLevelTargets(boolean dynamic) {
    this.dynamicLevelTargets = dynamic;
    return this;
  }

  public boolean dynamicLevelTargets() {
    return dynamicLevelTargets;
  }

  /** Size at which compaction cuts its output tables; default 8 MiB. */
  public Options tableTargetBytes(long bytes) {
    this.tableTargetBytes = bytes;
    return this;
  }

  public long tableTargetBytes() {
    return tableTargetBytes;
  }

  /**
   * Background threads that run key index compactions; compactions whose key ranges do not overlap
   * run at once. Default 2.
   */
  public Options compactionThreads(int threads) {
    this.compactionThreads = threads;
    return this;
  }

  public int compactionThreads() {
    return compactionThreads;
  }

  /**
   * Background threads that run garbage collection (Magma section 3.1): segment compactions of
   * disjoint segments run at once, in one keyspace or several, while a keyspace's delete list
   * merges run alone in it (a merge and a segment compaction could both remove one delete list
   * table), and the cold pass runs one job at a time. Default 1 (docs/benchmarks.md, "Concurrent
   * garbage collection", measures 1 against 2 on the update race).
   */
  public Options gcThreads(int threads) {
    this.gcThreads = threads;
    return this;
  }

  public int gcThreads() {
    return gcThreads;
  }

  /**
   * Reads a batched get ({@code Keyspace.getAll}, {@code Basalt.getAll}) or a scan's read-ahead
   * keeps in flight at once (Magma's queue depth: each key's next read goes out as soon as its last
   * completes, up to this many at a time). Default 32, as Magma's. The built-in read transport runs
   * this many threads for all the store's batches (pooled {@code FileChannel} reads, started on
   * demand and ended after a second idle); engine-io's io_uring transport has room in its ring for
   * eight batches' worth. With direct reads or a transport that stages reads (io_uring), the store
   * keeps an aligned buffer (a block read at any offset: 12 KiB at the default {@link #blockSize})
   * per read in flight of four batches and 8 more (1.6 MiB at the defaults), at most a quarter of
   * the block cache's part of the quota ({@code readBufferQuota} in the stats); the pool grows as
   * reads need buffers and takes each one's room from the block cache.
   */
  public Options readQueueDepth(int reads) {
    this.readQueueDepth = reads;
    return this;
  }

  public int readQueueDepth() {
    return readQueueDepth;
  }

  /**
   * Reads of the store's files (segments, key index tables, the rest) bypass the operating system's
   * page cache (O_DIRECT): each is widened to whole 4 KiB blocks and goes to the disk, so the store
   * serves from its own caches and a benchmark's disk reads are real ones. Writes stay buffered
   * unless {@link #directWrites} is set. The io_uring transport in engine-io reads such files with
   * O_DIRECT too. {@code Basalt.open} refuses it on a file system without direct I/O (tmpfs).
   * Default false.
   */
  public Options directReads(boolean direct) {
    this.directReads = direct;
    return this;
  }

  public boolean directReads() {
    return directReads;
  }

  /**
   * Large writes of the store's files (log segments, key index and delete list tables) bypass the
   * operating system's page cache (O_DIRECT), as Magma's do: a write that covers at least 64 KiB of
   * whole 4 KiB blocks (a flush's or a compaction's, which gather their blocks into 128 KiB writes)
   * sends those blocks straight to the disk from an aligned buffer, re-sending the start of its
   * first block, read back from the page cache; its partial last block, and smaller writes, go
   * through the page cache. So a flush or a compaction leaves no dirty pages to be written back
   * later, and its cost is counted where it is paid. The WAL's small writes never go direct (a
   * commit would wait for the device); under {@link SyncMode#SYNC} the WAL is opened with O_DSYNC
   * instead, a write and its sync in one call. The aligned buffers (256 KiB, one per writing
   * thread: the flusher, the compaction and collection threads) come out of the block cache's part
   * of the quota ({@code writeBufferBytes} in the stats); a write that finds none free goes through
   * the page cache. {@code Basalt.open} refuses it on a file system without direct I/O. Reads are
   * as {@link #directReads} says. Default false: on the machine measured it cost a fifth of the
   * update race's throughput, as every large write waits for the device (docs/benchmarks.md,
   * "Direct writes").
   */
  public Options directWrites(boolean direct) {
    this.directWrites = direct;
    return this;
  }

  public boolean directWrites() {
    return directWrites;
  }

  /**
   * Buffered reads (without {@link #directReads}) copy from a read-only memory mapping of the file
   * where the page cache holds its pages, instead of a {@code pread} each: no system call and no
   * hand-off to the read transport, so a get or a scan over data the page cache holds costs a
   * memory copy per block. Whether it holds them cannot be asked cheaply, so each file's mapped
   * copies are timed: a file whose copies often wait for the device (more than 16 in a window of
   * 1,024) is read with {@code pread} and the transport for a second, then tried again, twice as
   * long each time it is found cold again (up to 64 s). A mapping is unmapped when its file closes
   * and the reads using it are done. Mapped pages are the page cache's, as buffered reads' pages
   * are, not the store's memory quota. Default true.
   */
  public Options mappedReads(boolean mapped) {
    this.mappedReads = mapped;
    return this;
  }

  public boolean mappedReads() {
    return mappedReads;
  }

  /**
   * A flush writes each ordered keyspace's documents as key-ordered runs (docs/format.md,
   * "Key-ordered runs"): runs of up to 16 MiB of the flush's documents, taken in seqno order, each
   * stored in key order, so a scan finds neighbouring keys' documents in shared blocks instead of
   * one block per document; the seqno index gets an entry per document of a run (12 bytes).
   * Collection writes the live documents it copies the same way, in runs gathered from all the
   * segments a job rewrites (since 2026-12-08). False writes them in seqno order, as builds before
   * 2026-12-07 did (a store holding runs stays readable either way). Hashed keyspaces are always
   * written in seqno order. Default true.
   */
  public Options keyOrderedRuns(boolean keyOrdered) {
    this.keyOrderedRuns = keyOrdered;
    return this;
  }

  public boolean keyOrderedRuns() {
    return keyOrderedRuns;
  }

  /**
   * Bytes of the memory quota for the block cache, which holds the key index's index, filter and
   * data blocks, the log segments' index pages and recently read documents off the heap; what the
   * cache does not hold is read from disk when needed. The rest of the quota goes to the write
   * cache's allocator, which needs about twice {@code writeCacheSize} (an active and a flushing
   * write cache, and the allocator's per-thread slack). Default (-1): half the memory quota, less
   * if that would leave the write cache's allocator under twice {@code writeCacheSize} plus 1 MiB,
   * and 0 if nothing is left; when set, between 0 (no cache) and the memory quota less twice {@code
   * writeCacheSize} less 512 KiB. Ignored by an in-memory store.
   */
  public Options blockCacheSize(long bytes) {
    this.blockCacheSize = bytes;
    return this;
  }

  /** The block cache size in effect: the one set, or the default derived from the memory quota. */
  public long blockCacheSize() {
    if (blockCacheSize >= 0) return blockCacheSize;
    return Math.max(0, Math.min(memoryQuota / 2, memoryQuota - 2 * writeCacheSize() - (1L << 20)));
  }

  /**
   * Garbage collection (Magma section 4): when the fragmentation of a keyspace's log segments (the
   * share of their bytes that stale document versions and superseded index pages take) passes this
   * fraction, the most fragmented segments are rewritten without their stale versions. The store's
   * size then stays near {@code 1 / (1 - threshold)} times its live data: 2x at the default 0.5;
   * once no flush has happened for two seconds, collection goes down to half the threshold. A lower
   * threshold keeps less garbage and rewrites more; 1.0 turns garbage collection off. Between 0.1
   * and 1.0.
   */
  public Options fragmentationThreshold(double fraction) {
    this.fragmentationThreshold = fraction;
    return this;
  }

  public double fragmentationThreshold() {
    return fragmentationThreshold;
  }

  /**
   * Whether the flusher looks up each key it flushes in the key index and sends the version it
   * supersedes to the delete list at once (Magma section 7.2: stale seqnos propagated in real time,
   * not left for key index compaction to find). Default false. With true, garbage collection sees
   * the log's garbage as it is made and rewrites segments only for garbage it knows of: in the
   * update race (docs/benchmarks.md, "Flush lookups") it wrote about half as much (write
   * amplification 2.57 against 2.80 in the first round, peak space amplification a little lower),
   * but each flushed key costs a key index lookup on the flusher's threads (bloom filters for a new
   * key, one data block, not admitted to the block cache, for an updated one) and the update rounds
   * ran about 20% slower on a two-core machine. With false, a superseded version becomes known
   * garbage only when a compaction meets the two versions, and collection steers by an estimate of
   * the rest (stat {@code pendingGarbageBytes}). A version superseded while it is a tombstone is
   * left to compaction either way. Stat {@code flushStaleReported} counts the versions flushes
   * reported. With {@link #exactItemCounts} on, the flushes report from what each write's lookup
   * found and make no lookups of their own, so this option then changes nothing.
   */
  public Options flushLookups(boolean on) {
    this.flushLookups = on;
    return this;
  }

  public boolean flushLookups() {
    return flushLookups;
  }

  /**
   * Which level-0 merges also report the versions their records supersede ("revealing merges",
   * docs/architecture.md): those whose input bytes times this reach the bytes of the key index
   * tables older than them; default 128, 0 for none. A key index record otherwise waits in the
   * tiered level 0 until level 0 merges into the base level (about once per {@link #l0BaseRatio} of
   * the base level's records) before the version it supersedes becomes known garbage, and
   * collection meanwhile rewrites segments whose garbage it only partly knows. A revealing merge
   * reads the older tables once, in key order (up to this many times its own input, from the page
   * cache or the disk; no bloom filter, no block cache, nothing written but a delete list table),
   * and sends the versions it finds to the delete list in its own commit. In the update race (2M
   * keys, docs/benchmarks.md) the default makes every merge of eight flushed tables reveal, and
   * collection writes about 40% less (round 1's write amplification 2.57 against 2.80) for about 4%
   * of round 1's throughput; at 10M keys only the second tier's merges reveal. Off with {@link
   * #flushLookups} (the flushes report every version). Stat {@code l0MergeStaleReported}.
   */
  public Options l0RevealRatio(int ratio) {
    this.l0RevealRatio = ratio;
    return this;
  }

  public int l0RevealRatio() {
    return l0RevealRatio;
  }

  /**
   * Free disk space writes leave to the store's own work; default 128 MiB. A write is refused with
   * a {@code StorageException} (nothing written, the store stays writable; stat {@code
   * diskFullRefusals}) while the file system holding the store has less usable space than this
   * (read at most every 10 ms while space is plentiful, at every commit group near the reserve), so
   * flushes, key index compaction and garbage collection, which free space by writing first, still
   * have room on a nearly full disk: about a write cache flush and two collection jobs at the
   * default sizes. A flush or key index merge that still finds the disk full fails the store as
   * before (reopen once space is back); a collection job is retried. A batch of deletes only may
   * still use the upper half of the reserve (tombstones are small, and deleting is how a user frees
   * space); such groups take no puts. Writes resume once space returns, by collection or otherwise.
   * 0 turns the check off.
   */
  public Options diskReserveBytes(long bytes) {
    this.diskReserveBytes = bytes;
    return this;
  }

  public long diskReserveBytes() {
    return diskReserveBytes;
  }

  /**
   * Whether each keyspace keeps an exact count of its live keys ({@link Keyspace#itemCount}; Magma
   * section 7.2); default false. Every write then looks its key up first, to tell an insert from an
   * update and a delete of a live key from one of an absent key: the write caches, then the key
   * index (bloom filters make a new key's lookup cheap; an existing key's costs a data block,
   * usually cached). The commit leader does the lookups before the group's WAL write, so they cost
   * writers directly: in the update race, updates ran at 0.64x-0.67x and the load at 0.87x-0.94x of
   * the speed without (docs/benchmarks.md, "Exact item counts"), which is why it is off by default.
   * The counts are committed with each flush and rebuilt by WAL replay, so they survive crashes.
   * Off, {@link Keyspace#itemCount} throws and {@link Keyspace#approximateItemCount} estimates
   * (with no lookup, as RocksDB's estimate-num-keys does). Turning it on for a store that ran
   * without it counts every keyspace's keys once, at the open (a merge of its whole key index).
   * Keys whose newest write carries an expiry ({@link Keyspace#put(byte[], byte[], long)}) are not
   * counted.
   */
  public Options exactItemCounts(boolean on) {
    this.exactItemCounts = on;
    return this;
  }

  public boolean exactItemCounts() {
    return exactItemCounts;
  }

  /**
   * Segments no flush or collection has written, and no get or scan has read, for this long are
   * cold: garbage collection writes its output with zstd ({@link #coldZstdLevel}) instead of LZ4
   * when all its inputs are, and the cold pass (Magma section 3.5) rewrites every other cold LZ4
   * segment but the tail into zstd in the background, when collection has nothing else to do, at
   * {@link #coldPassBytesPerSecond}. Cold data is stored smaller: about 0.69x the segment bytes on
   * YCSB's values, and reads of it, should it be read again, run at about 0.71x
   * (docs/benchmarks.md, "The cold pass"). Default 1 hour: data no read touched for that long is
   * worth the space, and data that is read stays LZ4 (in YCSB C and D, whose reads reach every
   * segment within seconds, no segment went cold). 0 keeps LZ4 everywhere. Reads decode either; a
   * segment's age is known in memory only (segments found at the open count as written then), a
   * collection's output keeps the age of its newest input, so cold data stays cold, and a segment's
   * state records that it is zstd, so no segment is recompressed twice. docs/benchmarks.md, "Cold
   * segments in zstd", measures the space saved and what reads pay.
   */
  public Options coldSegmentMillis(long millis) {
    this.coldSegmentMillis = millis;
    return this;
  }

  public long coldSegmentMillis() {
    return coldSegmentMillis;
  }

  /** The zstd level of cold segments ({@link #coldSegmentMillis}); default 3; 1 to 22. */
  public Options coldZstdLevel(int level) {
    this.coldZstdLevel = level;
    return this;
  }

  public int coldZstdLevel() {
    return coldZstdLevel;
  }

  /**
   * How fast the cold pass ({@link #coldSegmentMillis}) reads the segments it recompresses, in
   * bytes per second: after each segment it waits until the segment's bytes at this rate have
   * passed, so recompression takes a bounded share of the disk and of one core. Default 16 MiB/s.
   */
  public Options coldPassBytesPerSecond(long bytes) {
    this.coldPassBytesPerSecond = bytes;
    return this;
  }

  public long coldPassBytesPerSecond() {
    return coldPassBytesPerSecond;
  }

  /**
   * Whether a new store's key index keeps GravelDB's/PebblesDB's guards (fragmented LSM; seed 002)
   * in levels 1 and below, instead of the leveled layout; default false (experimental). Each such
   * level is split by guard keys into disjoint guards; the tables inside one guard may overlap, so
   * a compaction out of a guard writes its records into the next level's guards as new tables
   * without rewriting what is there, and a guard of the last level is merged in place once it holds
   * {@link #guardMaxTables} tables. Fewer key index bytes written, for more tables per level for a
   * read to probe (bloom filters first). docs/architecture.md, "Key index guards".
   *
   * <p>The layout is fixed when a store is created: opening a store with the other setting is
   * refused with an {@link InvalidArgumentException} that names the setting it was created with,
   * before the open changes any file (only a crashed commit's leftover temporary manifest may have
   * been deleted). A store with guards has manifest format 5, which releases before it refuse.
   */
  public Options keyIndexGuards(boolean on) {
    this.keyIndexGuards = on;
    return this;
  }

  public boolean keyIndexGuards() {
    return keyIndexGuards;
  }

  /**
   * With {@link #keyIndexGuards}: a key becomes a candidate guard key of the last level when that
   * many low bits of its hash are 0; default 15, so about one guard per 32,768 distinct keys (some
   * 1.6 MB of key index records with 40-byte keys). Each level above adds {@link #guardBitsStep}
   * bits, so it has fewer, larger guards, and a candidate of a level is a candidate at every deeper
   * one. Only which keys new guards are chosen from: guards already committed stay, so a store may
   * reopen with another value.
   */
  public Options guardLastLevelBits(int bits) {
    this.guardLastLevelBits = bits;
    return this;
  }

  public int guardLastLevelBits() {
    return guardLastLevelBits;
  }

  /**
   * With {@link #keyIndexGuards}: the guard bits each level adds above the last; default 2 (see
   * {@link #guardLastLevelBits}).
   */
  public Options guardBitsStep(int bits) {
    this.guardBitsStep = bits;
    return this;
  }

  public int guardBitsStep() {
    return guardBitsStep;
  }

  /**
   * With {@link #keyIndexGuards}: the tables a guard holds when it is due for compaction whatever
   * its bytes (a guard of levels 1 to 5 is pushed into the next level, one of the last level merged
   * in place); default 8. It bounds the tables a point read probes per level, and so trades key
   * index writes against read work.
   */
  public Options guardMaxTables(int tables) {
    this.guardMaxTables = tables;
    return this;
  }

  public int guardMaxTables() {
    return guardMaxTables;
  }

  /**
   * Threads an in-memory store's backup and restore use (Nitro, seed 001 section 5): a backup cuts
   * the store into four key ranges of about equal size per thread, each written to a shard file of
   * its own, and a restore builds the shards on up to this many threads; default: the available
   * processors (at most 64). A disk store's backup ignores it.
   */
  public Options backupThreads(int threads) {
    this.backupThreads = threads;
    return this;
  }

  public int backupThreads() {
    return backupThreads;
  }

  /**
   * Whether an in-memory store's backup compresses its blocks with LZ4 (a block that does not
   * shrink is kept as it is); default false. Sorted keys compress well, at some CPU per byte backed
   * up.
   */
  public Options backupCompression(boolean on) {
    this.backupCompression = on;
    return this;
  }

  public boolean backupCompression() {
    return backupCompression;
  }

  /**
   * Whether an in-memory store's backup leaves the garbage collector running (Nitro's non-intrusive
   * backup, seed 001 section 5.3); default true. The backup then holds no snapshot while it scans:
   * the collector frees what writes replace, and first writes each item of the backup's snapshot it
   * frees to a delta file, replayed at restore. With false the backup holds its snapshot to the
   * end, so memory grows with the writes made during a long backup, and it has no delta files.
   */
  public Options nonIntrusiveBackup(boolean on) {
    this.nonIntrusiveBackup = on;
    return this;
  }

  public boolean nonIntrusiveBackup() {
    return nonIntrusiveBackup;
  }

  /**
   * Sets the numeric, boolean or enum option {@code name} (the name of its setter, such as {@code
   * memoryQuota} or {@code syncMode}) from its text, as configuration files and harnesses pass
   * options ({@code basalt.options} of the YCSB binding, {@code --basalt-options} of the race).
   * Values are checked by {@link #validate} when a store opens, as any other.
   *
   * @throws InvalidArgumentException if no such option exists or the text is not a value of its
   *     type
   */
  public Options set(String name, String value) {
    if (name == null || value == null)
      throw new InvalidArgumentException("option name and value must not be null");
    for (java.lang.reflect.Method m : Options.class.getMethods()) {
      if (!m.getName().equals(name)
          || m.getParameterCount() != 1
          || m.getReturnType() != Options.class
          || m.getName().equals("set")) {
        continue;
      }
      Class<?> t = m.getParameterTypes()[0];
      Object v;
      try {
        v =
            t == int.class
                ? Integer.valueOf(value.trim())
                : t == long.class
                    ? Long.valueOf(value.trim())
                    : t == double.class
                        ? Double.valueOf(value.trim())
                        : t == boolean.class
                            ? parseBoolean(value.trim())
                            : t.isEnum() ? enumValue(t, value.trim()) : null;
      } catch (IllegalArgumentException e) {
        throw new InvalidArgumentException(
            "option " + name + " wants a " + t.getSimpleName() + ", not '" + value + "'");
      }
      if (v == null) continue;
      try {
        m.invoke(this, v);
        return this;
      } catch (ReflectiveOperationException e) {
        throw new InvalidArgumentException(
            "cannot set option " + name + " to '" + value + "': " + e);
      }
    }
    throw new InvalidArgumentException("no numeric, boolean or enum option named " + name);
  }

  private static Boolean parseBoolean(String s) {
    if (s.equalsIgnoreCase("true")) return Boolean.TRUE;
    if (s.equalsIgnoreCase("false")) return Boolean.FALSE;
    throw new IllegalArgumentException("not true or false: " + s);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Object enumValue(Class<?> type, String name) {
    return Enum.valueOf((Class) type, name.toUpperCase(java.util.Locale.ROOT));
  }

  /** Throws {@link InvalidArgumentException} naming the first knob out of range. */
  public void validate() {
    check(memoryQuota >= (1L << 20), "memoryQuota must be at least 1 MiB, was " + memoryQuota);
    check(
        writeCacheSize == 0 || (writeCacheSize >= (64L << 10) && writeCacheSize <= memoryQuota),
        "writeCacheSize must be between 64 KiB and memoryQuota ("
            + memoryQuota
            + "), was "
            + writeCacheSize);
    check(
        maxValueSize >= 0 && maxValueSize <= MAX_VALUE_SIZE_LIMIT,
        "maxValueSize must be between 0 and " + MAX_VALUE_SIZE_LIMIT + ", was " + maxValueSize);
    check(
        syncIntervalMillis >= 1,
        "syncIntervalMillis must be at least 1, was " + syncIntervalMillis);
    check(
        segmentSize >= (64L << 10) && segmentSize <= (1L << 30),
        "segmentSize must be between 64 KiB and 1 GiB, was " + segmentSize);
    check(
        segmentSizeRatio >= 0 && segmentSizeRatio <= 1.0,
        "segmentSizeRatio must be between 0 and 1, was " + segmentSizeRatio);
    check(
        blockSize >= 512 && blockSize <= (1 << 20),
        "blockSize must be between 512 and 1 MiB, was " + blockSize);
    check(
        bloomBitsPerKey >= 0 && bloomBitsPerKey <= 64,
        "bloomBitsPerKey must be between 0 and 64, was " + bloomBitsPerKey);
    check(checkpointRetentionMillis >= 0, "checkpointRetentionMillis must not be negative");
    check(
        deletionRetentionMillis >= 0,
        "deletionRetentionMillis must not be negative, was " + deletionRetentionMillis);
    check(checkpointIntervalMillis >= 0, "checkpointIntervalMillis must not be negative");
    check(
        checkpointSpaceRatio >= 0 && checkpointSpaceRatio <= 100,
        "checkpointSpaceRatio must be between 0 and 100, was " + checkpointSpaceRatio);
    check(
        maxGroupCommitBytes >= 4096,
        "maxGroupCommitBytes must be at least 4096, was " + maxGroupCommitBytes);
    check(clock != null, "clock must not be null");
    check(
        expiryCheckMillis >= 0, "expiryCheckMillis must not be negative, was " + expiryCheckMillis);
    check(
        expiryCompactionRatio >= 0.01 && expiryCompactionRatio <= 1,
        "expiryCompactionRatio must be between 0.01 and 1, was " + expiryCompactionRatio);
    check(
        trieCheckpointBytes >= 64 << 10,
        "trieCheckpointBytes must be at least 64 KiB, was " + trieCheckpointBytes);
    check(
        walSkipBytes == 0 || walSkipBytes >= 4096,
        "walSkipBytes must be 0 (off) or at least 4096, was " + walSkipBytes);
    check(
        walBufferBytes >= 0 && walBufferBytes <= MAX_WAL_BUFFER_BYTES,
        "walBufferBytes must be between 0 (off) and "
            + MAX_WAL_BUFFER_BYTES
            + ", was "
            + walBufferBytes);
    check(
        walBufferBytes == 0 || syncMode != SyncMode.SYNC,
        "walBufferBytes buffers writes that SyncMode.SYNC promises durable on return: use NONE or"
            + " PERIODIC with it, or set it to 0");
    check(
        l0CompactionTrigger >= 2,
        "l0CompactionTrigger must be at least 2, was " + l0CompactionTrigger);
    check(
        l0StopWritesTrigger > l0CompactionTrigger,
        "l0StopWritesTrigger must be above l0CompactionTrigger ("
            + l0CompactionTrigger
            + "), was "
            + l0StopWritesTrigger);
    check(
        l0RevealRatio >= 0 && l0RevealRatio <= 1 << 20,
        "l0RevealRatio must be between 0 and 1048576, was " + l0RevealRatio);
    check(
        l0BaseRatio >= 0.001 && l0BaseRatio <= 10,
        "l0BaseRatio must be between 0.001 and 10, was " + l0BaseRatio);
    check(level1Bytes >= 1024, "level1Bytes must be at least 1 KiB, was " + level1Bytes);
    check(
        levelMultiplier >= 2 && levelMultiplier <= 100,
        "levelMultiplier must be between 2 and 100, was " + levelMultiplier);
    check(
        tableTargetBytes >= 1024 && tableTargetBytes <= (1L << 30),
        "tableTargetBytes must be between 1 KiB and 1 GiB, was " + tableTargetBytes);
    check(
        coldSegmentMillis >= 0, "coldSegmentMillis must not be negative, was " + coldSegmentMillis);
    check(
        coldZstdLevel >= 1 && coldZstdLevel <= 22,
        "coldZstdLevel must be between 1 and 22, was " + coldZstdLevel);
    check(
        coldPassBytesPerSecond > 0,
        "coldPassBytesPerSecond must be positive, was " + coldPassBytesPerSecond);
    check(
        readQueueDepth >= 1 && readQueueDepth <= 4096,
        "readQueueDepth must be between 1 and 4096, was " + readQueueDepth);
    long maxCache = memoryQuota - 2 * writeCacheSize() - (512L << 10);
    check(
        blockCacheSize == -1 || (blockCacheSize >= 0 && blockCacheSize <= maxCache),
        "blockCacheSize must be -1 (default) or between 0 and memoryQuota less twice writeCacheSize less 512 KiB ("
            + maxCache
            + "), was "
            + blockCacheSize);
    check(
        compactionThreads >= 1 && compactionThreads <= 64,
        "compactionThreads must be between 1 and 64, was " + compactionThreads);
    check(
        gcThreads >= 1 && gcThreads <= 64, "gcThreads must be between 1 and 64, was " + gcThreads);
    check(diskReserveBytes >= 0, "diskReserveBytes must not be negative, was " + diskReserveBytes);
    check(
        guardLastLevelBits >= 1 && guardLastLevelBits <= 40,
        "guardLastLevelBits must be between 1 and 40, was " + guardLastLevelBits);
    check(
        guardBitsStep >= 0 && guardBitsStep <= 4,
        "guardBitsStep must be between 0 and 4, was " + guardBitsStep);
    check(
        guardMaxTables >= 2 && guardMaxTables <= 64,
        "guardMaxTables must be between 2 and 64, was " + guardMaxTables);
    check(
        backupThreads >= 1 && backupThreads <= 64,
        "backupThreads must be between 1 and 64, was " + backupThreads);
    check(
        fragmentationThreshold >= 0.1 && fragmentationThreshold <= 1.0,
        "fragmentationThreshold must be between 0.1 and 1.0, was " + fragmentationThreshold);
  }

  private static void check(boolean ok, String message) {
    if (!ok) throw new InvalidArgumentException("invalid option: " + message);
  }

  @Override
  public String toString() {
    return "Options[memoryQuota="
        + memoryQuota
        + ", writeCacheSize="
        + writeCacheSize()
        + ", maxValueSize="
        + maxValueSize
        + ", syncMode="
        + syncMode
        + ", syncIntervalMillis="
        + syncIntervalMillis
        + ", segmentSize="
        + segmentSize
        + ", segmentSizeRatio="
        + segmentSizeRatio
        + ", blockSize="
        + blockSize
        + ", bloomBitsPerKey="
        + bloomBitsPerKey
        + ", checkpointRetentionMillis="
        + checkpointRetentionMillis
        + ", checkpointIntervalMillis="
        + checkpointIntervalMillis
        + ", checkpointSpaceRatio="
        + checkpointSpaceRatio
        + ", maxGroupCommitBytes="
        + maxGroupCommitBytes
        + ", walSkipBytes="
        + walSkipBytes
        + ", trieCheckpointBytes="
        + trieCheckpointBytes
        + ", walBufferBytes="
        + walBufferBytes
        + ", expiryCheckMillis="
        + expiryCheckMillis
        + ", deletionRetentionMillis="
        + deletionRetentionMillis
        + ", expiryCompactionRatio="
        + expiryCompactionRatio
        + ", jmx="
        + jmx
        + ", eventListener="
        + (eventListener == EventListener.NONE ? "none" : eventListener.getClass().getName())
        + ", l0CompactionTrigger="
        + l0CompactionTrigger
        + ", l0StopWritesTrigger="
        + l0StopWritesTrigger
        + ", l0BaseRatio="
        + l0BaseRatio
        + ", level1Bytes="
        + level1Bytes
        + ", levelMultiplier="
        + levelMultiplier
        + ", dynamicLevelTargets="
        + dynamicLevelTargets
        + ", tableTargetBytes="
        + tableTargetBytes
        + ", compactionThreads="
        + compactionThreads
        + ", readQueueDepth="
        + readQueueDepth
        + ", directReads="
        + directReads
        + ", directWrites="
        + directWrites
        + ", mappedReads="
        + mappedReads
        + ", keyOrderedRuns="
        + keyOrderedRuns
        + ", blockCacheSize="
        + blockCacheSize()
        + ", fragmentationThreshold="
        + fragmentationThreshold
        + ", flushLookups="
        + flushLookups
        + ", l0RevealRatio="
        + l0RevealRatio
        + ", keyIndexGuards="
        + keyIndexGuards
        + ", guardLastLevelBits="
        + guardLastLevelBits
        + ", guardBitsStep="
        + guardBitsStep
        + ", guardMaxTables="
        + guardMaxTables
        + ", backupThreads="
        + backupThreads
        + ", backupCompression="
        + backupCompression
        + ", nonIntrusiveBackup="
        + nonIntrusiveBackup
        + ", diskReserveBytes="
        + diskReserveBytes
        + ", exactItemCounts="
        + exactItemCounts
        + ", coldSegmentMillis="
        + coldSegmentMillis
        + ", coldZstdLevel="
        + coldZstdLevel
        + ", coldPassBytesPerSecond="
        + coldPassBytesPerSecond
        + ", gcThreads="
        + gcThreads
        + "]";
  }
}
