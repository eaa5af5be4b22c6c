package io.basaltdb.internal.engine.write;

import io.basaltdb.BasaltException;
import io.basaltdb.Options;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.engine.base.DiscardListener;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.base.WorkerEvents;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.hashed.HashedIndex;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.index.TableOutput;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.SegmentTail;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.segment.SegmentOptions;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.skiplist.Snapshot;
import io.basaltdb.internal.skiplist.SnapshotIterator;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes an immutable write cache out (Magma section 3.2): for each keyspace, its documents in
 * seqno order to the keyspace's tail log segment (rolling to a new segment at {@link
 * io.basaltdb.Options#segmentSize}), then its key index records, in key order, to a new level-0
 * table; then the segments' checkpoints are synced and one {@link VersionEdit} naming the new
 * files, the flushed seqno and the records and document bytes each new table adds to its keyspace's
 * {@link Manifest.Counters} goes to the {@link VersionSet}, which commits it and deletes the WAL
 * files it covers.
 *
 * <p>Thread-safety: one background thread runs flushes; {@link #flush} is called by the commit
 * leader (or the opening thread during recovery); {@link #flushBatch} runs on the commit leader
 * while no cache is pending (see there). The segment writers and the list of open files belong to
 * the flushing thread, except that {@code closeFiles} runs after {@link #stop}.
 */
public final class Flusher {
  private final Options options;
  private final Storage storage;
  private final BlockCache blockCache;
  private final Versions versions;
  private final VersionSet versionSet;
  private final TableCache tables;
  private final KeyspaceCatalog catalog;
  private final EngineStats stats;
  private final StoreState state;
  private final WorkerEvents events;

  /** SegmentTail segment writer of each keyspace; flushing thread only. */
  private final Map<Integer, SegmentTail> writers;

  /** The keyspaces {@link #writers} holds a writer for, readable by any thread. */
  private final java.util.Set<Integer> held = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * Run a flush's key lookups ({@link #startLookups}); shut down by {@link #stop}. Its two threads
   * exit after a second idle, so a store whose open failed after a recovery flush leaves none.
   */
  private final java.util.concurrent.ThreadPoolExecutor lookupThreads = newLookupThreads();

  private static java.util.concurrent.ThreadPoolExecutor newLookupThreads() {
    java.util.concurrent.ThreadPoolExecutor e =
        new java.util.concurrent.ThreadPoolExecutor(
            2,
            2,
            1,
            java.util.concurrent.TimeUnit.SECONDS,
            new java.util.concurrent.LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "basalt-flush-lookups");
              t.setDaemon(true);
              return t;
            });
    e.allowCoreThreadTimeOut(true);
    return e;
  }

  /** Hears of each version a flush reports stale (tests); volatile: set while the flusher runs. */
  private volatile DiscardListener listener = DiscardListener.NONE;

  /** The hashed keyspaces' indexes; set once at open, before the flusher starts or replay runs. */
  private HashedIndexes hashed;

  private final Thread thread;
  private final Object signal = new Object();

  /** Guarded by signal. */
  private boolean stopping;

  public Flusher(
      Options options,
      Storage storage,
      Versions versions,
      VersionSet versionSet,
      TableCache tables,
      KeyspaceCatalog catalog,
      EngineStats stats,
      StoreState state,
      WorkerEvents events,
      Map<Integer, SegmentTail> writers) {
    this.options = options;
    this.storage = storage;
    this.blockCache = tables.blockCache();
    this.versions = versions;
    this.versionSet = versionSet;
    this.tables = tables;
    this.catalog = catalog;
    this.stats = stats;
    this.state = state;
    this.events = events;
    this.writers = new HashMap<>(writers);
    this.held.addAll(writers.keySet());
    this.thread = new Thread(this::run, "basalt-flusher");
    thread.setDaemon(true);
  }

  public void start() {
    thread.start();
  }

  public void setDiscardListener(DiscardListener l) {
    listener = l == null ? DiscardListener.NONE : l;
  }

  /** A write cache was switched: flush it. */
  public void wake() {
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  private void run() {
    while (true) {
      boolean idle;
      synchronized (signal) {
        if (!stopping && versions.current().immutable == null) {
          try {
            signal.wait(100);
          } catch (InterruptedException e) {
            return;
          }
        }
        if (stopping) return;
        idle = versions.current().immutable == null;
      }
      if (idle) {
        if (!idle()) return;
        continue;
      }
      Version v = versions.acquire();
      try {
        flush(v);
      } catch (BasaltException e) {
        state.fail(e);
        return;
      } catch (RuntimeException | Error e) {
        state.fail(new BasaltException("flush failed: " + e, e));
        return;
      } finally {
        v.release();
      }
    }
  }

  /**
   * What the flusher does between flushes, every 100 ms, for hashed keyspaces, which a store that
   * takes no writes would otherwise never do: it refreshes the stale hints gets queued (else only
   * the keyspace's next flush would), and runs the expiry sweeps and the checkpoints they make due.
   * Returns false if that failed the store.
   */
  private boolean idle() {
    if (trieCheckpoints == null || hashed.isEmpty() || state.failure() != null) return true;
    try {
      for (HashedIndex index : hashed.all()) {
        if (!index.hasHintFixes()) continue;
        Version v = versions.acquire();
        try {
          KeyspaceFiles files = v.files(index.keyspace());
          stats.hintsRefreshed.add(index.refreshHints(seqno -> freshHint(files, seqno)));
        } finally {
          v.release();
        }
      }
      trieCheckpoints.maintain();
      return true;
    } catch (BasaltException e) {
      state.fail(e);
      return false;
    } catch (RuntimeException | Error e) {
      state.fail(new BasaltException("expiry sweep failed: " + e, e));
      return false;
    }
  }

  /**
   * Whether a tail segment writer of keyspace {@code ks} is held: the files of a dropped keyspace
   * are deleted only once it is not ({@link VersionSet#setTailHeld}). Any thread.
   */
  public boolean holdsTail(int ks) {
    return held.contains(ks);
  }

  /**
   * Lets go of the tail writers of dropped keyspaces: no flush appends to a keyspace once it is
   * dropped (the drop is committed before this flush began, and ids are never reused), so their
   * segments can be deleted with the rest of the keyspace's files.
   */
  private void releaseDropped() {
    for (var i = writers.keySet().iterator(); i.hasNext(); ) {
      int ks = i.next();
      if (catalog.isLive(ks)) continue;
      i.remove();
      held.remove(ks);
    }
  }

  /** Flushes {@code v.immutable} and commits the files, which installs the version without it. */
  void flush(Version v) {
    releaseDropped();
    long t0 = System.nanoTime(), segmentBytes0 = stats.segmentBytesWritten.sum();
    WriteCache imm = v.immutable;
    VersionEdit edit = new VersionEdit();
    List<Integer> touched = new ArrayList<>();
    List<Reported> reported = new ArrayList<>();
    long records;
    try (Snapshot snap = imm.list.snapshot();
        SnapshotIterator it = snap.iterator()) {
      it.seekFirst();
      records =
          flushEntries(
              new Entries() {
                @Override
                public boolean valid() {
                  return it.valid();
                }

                @Override
                public byte[] key() {
                  return it.key();
                }

                @Override
                public byte[] value() {
                  return it.value();
                }

                @Override
                public void next() {
                  it.next();
                }
              },
              v,
              edit,
              touched,
              reported);
    }
    // The WAL file started at the switch is the current one: replay starts there, and it is the
    // head.
    edit.flushedSeqno(imm.switchSeqno())
        .walStart(imm.walAfter())
        .walHead(imm.walAfter())
        .writeCacheFlushed();
    commit(edit, touched, reported, imm.itemsAtSwitch());
    if (trieCheckpoints != null && !hashed.isEmpty()) trieCheckpoints.maintain();
    state
        .notifier()
        .flushed(
            new io.basaltdb.EventListener.FlushInfo(
                imm.switchSeqno(),
                touched.size(),
                records,
                stats.segmentBytesWritten.sum() - segmentBytes0,
                System.nanoTime() - t0,
                false));
  }

  /**
   * Writes a batch that skips the WAL (Magma section 8.1, {@link Options#walSkipBytes}) as a flush
   * of its own: each keyspace's newest write of every key ({@link #sortedEntries}) to the
   * keyspace's tail segments in seqno order and to a level-0 table, then one commit with the
   * batch's last seqno as the flushed seqno and, with exact item counts, {@code itemsAfter} (the
   * counts once the batch is applied; null without). {@code publish} runs under the apply lock as
   * the version with the batch's files is installed: no reader sees the batch before it is durable,
   * and a snapshot sees all of it or none. An earlier write of a key the batch writes again gets no
   * document (its seqno stays spent, as a write to a dropped keyspace's does).
   *
   * <p>The caller (the commit leader) has waited until both write caches are empty and no flush is
   * pending, so the batch's seqnos follow every flushed one and the flusher thread, which flushes
   * only a pending cache, leaves the segment writers alone until a later switch (the version
   * installs order the writers' use between the two threads: a volatile write of the current
   * version, then a read of it).
   */
  void flushBatch(
      List<byte[][]> sorted, long lastSeqno, Map<Integer, Long> itemsAfter, Runnable publish) {
    long t0 = System.nanoTime(), segmentBytes0 = stats.segmentBytesWritten.sum();
    var it = sorted.iterator();
    Version v = versions.acquire();
    List<HashedIndex> held = new ArrayList<>();
    unpublished = held; // flushHashed applies the batch to tries as not yet published
    try {
      VersionEdit edit = new VersionEdit();
      List<Integer> touched = new ArrayList<>();
      List<Reported> reported = new ArrayList<>();
      long records =
          flushEntries(
              new Entries() {
                private byte[][] at = it.hasNext() ? it.next() : null;

                @Override
                public boolean valid() {
                  return at != null;
                }

                @Override
                public byte[] key() {
                  return at[0];
                }

                @Override
                public byte[] value() {
                  return at[1];
                }

                @Override
                public void next() {
                  at = it.hasNext() ? it.next() : null;
                }
              },
              v,
              edit,
              touched,
              reported);
      edit.flushedSeqno(lastSeqno);
      edit.onInstall =
          () -> {
            publish.run();
            for (HashedIndex index : held) index.published(lastSeqno);
          };
      commit(edit, touched, reported, itemsAfter);
      state
          .notifier()
          .flushed(
              new io.basaltdb.EventListener.FlushInfo(
                  lastSeqno,
                  touched.size(),
                  records,
                  stats.segmentBytesWritten.sum() - segmentBytes0,
                  System.nanoTime() - t0,
                  true));
    } finally {
      unpublished = null;
      v.release();
    }
  }

  /**
   * A batch's newest write of each key of a live keyspace, as {store key, write cache entry} pairs
   * in store key order (the write cache's: keyspace, then key), for {@link #flushBatch}. {@code
   * below}: what counting found below the caches for each operation, or null. Built before anything
   * is written, so a lack of heap here refuses the batch without harm.
   */
  static List<byte[][]> sortedEntries(Batch b, WriteCache.Below[] below, KeyspaceCatalog catalog) {
    int live = 0;
    int[] ops = new int[b.count];
    int last = -1;
    boolean lastLive = false;
    for (int i = 0; i < b.count; i++) {
      int ks = b.keyspaces[i];
      if (ks != last) { // a batch's operations come in runs of one keyspace: look each run up once
        last = ks;
        lastLive = catalog.isLive(ks);
      }
      if (lastLive) ops[live++] = i;
    }
    if (live < ops.length) ops = Arrays.copyOf(ops, live);
    BatchOrder.sort(b, ops);
    List<byte[][]> out = new ArrayList<>(live);
    for (int j = 0; j < live; j++) {
      int i = ops[j];
      if (j + 1 < live && BatchOrder.sameKey(b, i, ops[j + 1])) continue; // a newer write follows
      WriteCache.Below w = below == null || below[i] == null ? WriteCache.Below.UNKNOWN : below[i];
      out.add(
          new byte[][] {
            WriteCache.storeKey(b.keyspaces[i], b.key(i)),
            WriteCache.entry(
                b.firstSeqno + i, b.data(), b.valueOffset(i), b.valueLength(i), w, b.expiry(i))
          });
    }
    return out;
  }

  /**
   * Write cache entries in store key order: a skiplist snapshot's, or a batch's ({@link
   * #flushBatch}).
   */
  private interface Entries {
    boolean valid();

    byte[] key();

    byte[] value();

    void next();
  }

  /**
   * Writes each live keyspace's run of {@code it} ({@link #flushKeyspace}) into {@code edit},
   * noting the keyspaces touched and what each reported stale; {@code v} holds the keyspaces'
   * tables before them. Returns the records written.
   */
  private long flushEntries(
      Entries it, Version v, VersionEdit edit, List<Integer> touched, List<Reported> reported) {
    long records = 0;
    List<byte[]> keys = new ArrayList<>();
    List<byte[]> entries = new ArrayList<>();
    int ks = -1;
    while (true) {
      byte[] sk = it.valid() ? it.key() : null;
      int k = sk == null ? -1 : WriteCache.keyspaceOf(sk);
      if (k != ks && !keys.isEmpty()) {
        if (catalog.isLive(ks)) {
          Reported stale = flushKeyspace(ks, keys, entries, edit, v.files(ks));
          if (stale != null) reported.add(stale);
          touched.add(ks);
          records += keys.size();
        }
        keys.clear();
        entries.clear();
      }
      if (sk == null) break;
      ks = k;
      keys.add(WriteCache.userKey(sk));
      entries.add(it.value());
      it.next();
    }
    return records;
  }

  /**
   * Completes a flush's edit (the touched keyspaces' segments checkpointed and synced, the item
   * counts, the listener told of what it reported stale) and commits it.
   */
  private void commit(
      VersionEdit edit, List<Integer> touched, List<Reported> reported, Map<Integer, Long> items) {
    for (int k : touched) edit.putSegment(k, checkpoint(writers.get(k)));
    if (items != null) {
      commitItemCounts(items, edit);
    } else {
      // Not counted (counts off, or a replay before a recount): the manifest's counts are stale
      // from here,
      // even if this open fails before its first commit clears the flag.
      edit.flag(Manifest.FLAG_ITEM_COUNTS, false);
    }
    if (!reported.isEmpty()) {
      // As a compaction's discards: the listener hears of each just before the commit that counts
      // it.
      edit.beforeCommit =
          () -> {
            DiscardListener l = listener;
            for (Reported r : reported) {
              if (!catalog.isLive(r.ks)) continue;
              for (int i = 0; i < r.count; i++)
                l.discarded(r.ks, r.pairs[2 * i], (int) r.pairs[2 * i + 1]);
            }
          };
    }
    versionSet.logAndApply(edit);
    stats.flushed();
    events.flushed();
  }

  /**
   * Exact item counts: the flush commits each keyspace's live keys at the switch ({@code atSwitch},
   * absent: 0), as the change from the counts the manifest holds (those of the previous flush, or
   * stale ones before the first flush after a recount: only flushes change them, one at a time),
   * and marks them exact. A keyspace created after the switch has none yet.
   */
  private void commitItemCounts(java.util.Map<Integer, Long> atSwitch, VersionEdit edit) {
    edit.flag(
        Manifest.FLAG_ITEM_COUNTS,
        true); // exact from here (the first flush after a recount sets it)
    for (Manifest.KeyspaceMeta k : versionSet.manifest().keyspaces()) {
      long delta = atSwitch.getOrDefault(k.id(), 0L) - k.counters().items();
      if (delta != 0) edit.addCounters(k.id(), Manifest.Counters.items(delta));
    }
  }

  /**
   * Writes one keyspace's documents and its level-0 table into {@code edit}, with what the table
   * adds; {@code older} are the keyspace's tables before it. With {@link Options#flushLookups},
   * each key is looked up there ({@link #startLookups}) and the version it supersedes (unless a
   * tombstone) goes to the delete list in the same edit, its record flagged {@code olderReported}
   * so no compaction reports it again; returns those versions, or null if none. With {@link
   * Options#exactItemCounts}, the same, but each entry already says what its write found below the
   * write cache ({@link WriteCache.Below}): an entry that does not know is left to compaction to
   * report. Without either, the table gets a {@link ShadowedBytes} estimate of the versions it
   * supersedes.
   */
  private Reported flushKeyspace(
      int ks, List<byte[]> keys, List<byte[]> entries, VersionEdit edit, KeyspaceFiles older) {
    HashedIndex index = hashed == null ? null : hashed.of(ks);
    if (index != null) return flushHashed(ks, keys, entries, edit, older, index);
    int n = keys.size();
    long[] seqnos = new long[n];
    for (int i = 0; i < n; i++) seqnos[i] = WriteCache.seqnoOf(entries.get(i));
    int[] order = WriteCache.seqnoOrder(seqnos);
    long[] hints = new long[n];
    int[] sizes = new int[n];
    // With exact item counts, each entry says what was below this cache when it was written (the
    // commit leader's lookup, Magma section 7.2): no lookup here. Else, with flush lookups, the
    // lookups
    // run on their threads while this one writes the documents (they need only the keys).
    boolean counted = options.exactItemCounts();
    boolean lookups = options.flushLookups() && !counted;
    Lookups pending =
        lookups && !older.tables.isEmpty()
            ? startLookups(older, keys.toArray(new byte[0][]))
            : null;
    try {
      if (options.keyOrderedRuns()) {
        writeRuns(
            ks, keys, entries, seqnos, order, hints, sizes, edit, older.segmentLimit(options));
      } else {
        writeDocuments(
            ks, keys, entries, seqnos, order, hints, sizes, edit, older.segmentLimit(options));
      }
    } catch (RuntimeException | Error e) {
      if (pending != null) pending.await();
      throw e;
    }
    boolean[] olderReported = new boolean[n];
    long[] stale = null; // (seqno, document size) pairs
    int staleCount = 0;
    long unreported = 0;
    boolean[] known = null; // with counts: the entries whose version below is known (null: all)
    if (lookups && older.tables.isEmpty()) {
      Arrays.fill(olderReported, true); // nothing older exists
    } else if (lookups || counted) {
      Older found;
      if (counted) {
        found = new Older(n);
        known = new boolean[n];
        for (int i = 0; i < n; i++) {
          WriteCache.Below b = WriteCache.belowOf(entries.get(i));
          known[i] = b.known();
          found.found[i] = b.record();
          found.tombstone[i] = b.tombstone();
          found.seqno[i] = b.seqno();
          found.size[i] = b.size();
        }
      } else {
        found = pending.join();
      }
      stale = new long[2 * n];
      for (int i = 0; i < n; i++) {
        if (known != null && !known[i]) {
          continue; // below was the immutable cache, or a write replayed before counting:
          // compaction reports it
        } else if (!found.found[i]) {
          olderReported[i] = true; // an insert: no older version to report, now or later
        } else if (found.tombstone[i]) {
          unreported += found.size[i]; // a tombstone is reported where it is dropped, at the bottom
        } else {
          stale[2 * staleCount] = found.seqno[i];
          stale[2 * staleCount + 1] = found.size[i];
          staleCount++;
          olderReported[i] = true;
        }
      }
    }
    TableOutput out =
        new TableOutput(
            storage,
            tables,
            versionSet.nextFileNumber,
            options,
            ks,
            0,
            Long.MAX_VALUE,
            stats.indexBytesWritten,
            versionSet.trieChunkBytes(ks));
    List<KeyspaceFiles.Table> written;
    try {
      for (int i = 0; i < n; i++) {
        out.add(
            keys.get(i),
            seqnos[i],
            sizes[i],
            WriteCache.isTombstone(entries.get(i)),
            hints[i],
            olderReported[i],
            WriteCache.expiryOf(entries.get(i)));
      }
      written = out.finish();
      for (KeyspaceFiles.Table t : written) edit.addTable(ks, t);
    } catch (RuntimeException | Error e) {
      out.abandon();
      throw e;
    }
    edit.addCounters(ks, Manifest.Counters.flushed(out.records(), out.docBytes()));
    if (lookups || counted) {
      for (KeyspaceFiles.Table t : written) stats.shadowed.flushed(t.fileNumber(), unreported);
      if (staleCount == 0) return null;
      // The stale versions become their segments' garbage and a level-0 delete list table in the
      // flush's own commit, so a flush replayed after a crash reports them once.
      return reportStale(ks, stale, staleCount, edit);
    }
    if (options.bloomBitsPerKey() > 0 && !older.tables.isEmpty()) {
      // A systematic sample of the sorted records from a random start: each record is probed in one
      // flush of SHADOW_SAMPLE (a hot key too, over its flushes), and the sampled sizes are scaled
      // up.
      long shadowed = 0;
      int step = Math.max(SHADOW_SAMPLE, n / SHADOW_PROBES);
      for (int i = ThreadLocalRandom.current().nextInt(step); i < n; i += step) {
        if (mayHoldOlder(older, keys.get(i))) shadowed += sizes[i];
      }
      shadowed *= step;
      for (KeyspaceFiles.Table t : written) stats.shadowed.flushed(t.fileNumber(), shadowed);
    }
    return null;
  }

  /** Gives the flusher the hashed keyspaces' indexes; once, at open, before it starts. */
  public void useHashed(HashedIndexes indexes) {
    this.hashed = indexes;
    this.trieCheckpoints =
        new TrieCheckpoints(options, storage, tables, versionSet, stats, indexes);
  }

  /**
   * The tries a WAL-skip batch ({@link #flushBatch}) applied its entries to as not yet published;
   * null outside one. Written by the commit leader's thread while the flusher has nothing to flush;
   * volatile, so the flusher's next flush sees it null again.
   */
  private volatile List<HashedIndex> unpublished;

  /** Writes hashed keyspaces' trie checkpoints; set with {@link #hashed}. */
  private TrieCheckpoints trieCheckpoints;

  /**
   * Writes a checkpoint of every hashed keyspace changed since its last one: at close, after {@link
   * #stop}, so no flush runs beside it.
   */
  public void writeTrieCheckpoints() {
    if (trieCheckpoints != null && state.failure() == null) trieCheckpoints.atClose();
  }

  /**
   * A checkpoint of hashed keyspace {@code ks}'s trie now (Basalt.compactRange), so the tombstones
   * flushed since the last one become garbage; any thread. It waits while it may not be written
   * yet: a flush is between changing the trie and committing, or a backup runs (up to {@code
   * timeoutMillis}); false if it was not written then, or the keyspace is not hashed.
   */
  public boolean writeTrieCheckpoint(int ks, long timeoutMillis) throws InterruptedException {
    HashedIndex index = hashed == null ? null : hashed.of(ks);
    if (index == null) return false;
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (true) {
      state.checkWritable();
      if (trieCheckpoints.writeNow(index)) return true;
      if (System.nanoTime() - deadline > 0) return false;
      Thread.sleep(10);
    }
  }

  /**
   * Flushes a hashed keyspace (seed 004 over Magma's log): the documents go to the log as for any
   * keyspace; the key index is updated in place instead of gaining a level-0 table. Every version
   * the flush replaces or removes is garbage at once: a level-0 delete list table in this flush's
   * commit, so the garbage is exact with no compaction and no lookup. A tombstone's own document is
   * not: it stays live until the next trie checkpoint covers it ({@link TrieCheckpoints}), so a
   * replay from an older checkpoint still sees the deletion.
   *
   * <p>The trie changes before the commit; until the new version is installed, readers find these
   * keys in the write cache being flushed, which they read first. A WAL-skip batch's keys are in no
   * write cache: its changes are applied as unpublished ({@link HashedIndex#apply(List, long[],
   * boolean)}), and reads at the published seqno see the records from before them until the batch's
   * version is installed.
   */
  private Reported flushHashed(
      int ks,
      List<byte[]> keys,
      List<byte[]> entries,
      VersionEdit edit,
      KeyspaceFiles older,
      HashedIndex index) {
    int n = keys.size();
    long[] seqnos = new long[n];
    for (int i = 0; i < n; i++) seqnos[i] = WriteCache.seqnoOf(entries.get(i));
    int[] order = WriteCache.seqnoOrder(seqnos);
    long[] hints = new long[n];
    int[] sizes = new int[n];
    writeDocuments(
        ks, keys, entries, seqnos, order, hints, sizes, edit, older.segmentLimit(options));
    List<HashedIndex.Entry> changes = new ArrayList<>(n);
    long docBytes = 0;
    for (int i = 0; i < n; i++) {
      byte[] e = entries.get(i);
      boolean tombstone = WriteCache.isTombstone(e);
      changes.add(
          new HashedIndex.Entry(
              keys.get(i), seqnos[i], sizes[i], hints[i], WriteCache.expiryOf(e), tombstone));
      docBytes += sizes[i];
    }
    long[] stale = new long[4 * n];
    List<HashedIndex> held = unpublished;
    if (held == null) { // hints gets found stale, from the segments of this flush's version
      stats.hintsRefreshed.add(index.refreshHints(seqno -> freshHint(older, seqno)));
    }
    int staleCount = index.apply(changes, stale, held != null);
    if (held != null) held.add(index);
    hashed.settle();
    edit.addCounters(ks, Manifest.Counters.flushed(n, docBytes));
    if (staleCount == 0) return null;
    return reportStale(ks, stale, staleCount, edit);
  }

  /**
   * The location hint of {@code seqno} in the segment of {@code files} that holds it, or -1 if none
   * does or its index cannot be read (a refresh is an optimisation: the read that needs the index
   * reports damage).
   */
  private static long freshHint(KeyspaceFiles files, long seqno) {
    KeyspaceFiles.Segment seg = files.segmentFor(seqno);
    if (seg == null) return -1;
    try {
      return seg.reader().hintFor(seqno);
    } catch (BasaltException damagedOrUnreadable) {
      return -1;
    }
  }

  /**
   * Makes the {@code count} (seqno, size) pairs of {@code stale}, versions this flush found
   * superseded, garbage in its commit: a level-0 delete list table and the discarded counters.
   */
  private Reported reportStale(int ks, long[] stale, int count, VersionEdit edit) {
    DeleteList.writeDiscarded(
        storage,
        tables,
        versionSet.nextFileNumber,
        options,
        ks,
        stale,
        count,
        edit,
        stats.deleteListBytesWritten);
    stats.flushStaleReported.add(count);
    return new Reported(ks, stale, count);
  }

  /**
   * One record in this many is probed for the shadowed-garbage estimate ({@link
   * io.basaltdb.internal.engine.version.ShadowedBytes}): probing every record took 40% of the
   * flusher's time in the update race (up to 36 level-0 bloom filters per new key), for an estimate
   * that only steers when collection starts.
   */
  static final int SHADOW_SAMPLE = 4;

  /**
   * At most about this many records of a flush are probed for the estimate (a large flush samples
   * more sparsely than {@link #SHADOW_SAMPLE}): a bulk load's chunks, tens of them in level 0,
   * spent a sixth of their writing time on these probes.
   */
  static final int SHADOW_PROBES = 4096;

  /**
   * Appends the documents in seqno order ({@code order}) to the keyspace's tail segments, closing a
   * tail once it holds {@code limit} bytes ({@link KeyspaceFiles#segmentLimit}).
   */
  private void writeDocuments(
      int ks,
      List<byte[]> keys,
      List<byte[]> entries,
      long[] seqnos,
      int[] order,
      long[] hints,
      int[] sizes,
      VersionEdit edit,
      long limit) {
    int n = keys.size();
    SegmentTail tail = writers.get(ks);
    for (int j = 0; j < n; j++) {
      int i = order[j];
      tail = withRoom(ks, tail, seqnos[i], limit, edit);
      SegmentWriter w = tail.writer();
      byte[] e = entries.get(i);
      long before = w.size();
      int at = WriteCache.valueOffset(e); // appended from the entry itself: no copy of the value
      hints[i] =
          w.append(
              seqnos[i],
              keys.get(i),
              e,
              at,
              e.length - at,
              WriteCache.isTombstone(e),
              WriteCache.expiryOf(e));
      sizes[i] = w.lastDocumentSize();
      stats.segmentBytesWritten.add(w.size() - before);
    }
  }

  /**
   * {@code tail}, or a new tail segment starting at {@code firstSeqno} if there is none or it holds
   * {@code limit} bytes (the full one checkpointed into {@code edit}).
   */
  private SegmentTail withRoom(
      int ks, SegmentTail tail, long firstSeqno, long limit, VersionEdit edit) {
    if (tail != null && tail.writer().size() < limit) return tail;
    if (tail != null) edit.putSegment(ks, checkpoint(tail));
    return newSegment(ks, firstSeqno, limit);
  }

  /**
   * Appends an ordered keyspace's flushed documents to its tail segments as key-ordered runs
   * (docs/architecture.md, "Key-ordered runs"): the documents taken in seqno order ({@code order})
   * are cut into runs of at most {@link SegmentWriter#RUN_BYTES} and at most what the tail segment
   * has room for below {@code limit} (at least one document), and each run is written in key order,
   * so the documents of neighbouring keys share blocks and a scan reads a few blocks per run
   * instead of one per document. Each run's seqnos follow the previous run's, so segments keep
   * their seqno ranges.
   */
  private void writeRuns(
      int ks,
      List<byte[]> keys,
      List<byte[]> entries,
      long[] seqnos,
      int[] order,
      long[] hints,
      int[] sizes,
      VersionEdit edit,
      long limit) {
    int n = keys.size();
    int[] position = new int[n]; // where each document is in its run
    SegmentTail tail = writers.get(ks);
    for (int j = 0; j < n; ) {
      tail = withRoom(ks, tail, seqnos[order[j]], limit, edit);
      SegmentWriter w = tail.writer();
      long budget = Math.min(SegmentWriter.RUN_BYTES, limit - w.size());
      int from = j;
      long bytes = 0;
      do {
        bytes += keys.get(order[j]).length + entries.get(order[j]).length;
        j++;
      } while (j < n && bytes + keys.get(order[j]).length + entries.get(order[j]).length <= budget);
      int[] run = Arrays.copyOfRange(order, from, j);
      Arrays.sort(run); // the keys are sorted: index order is key order
      for (int k = 0; k < run.length; k++) position[run[k]] = k;
      int[] bySeqno = new int[run.length]; // order[from, j) is the run in seqno order
      for (int k = 0; k < run.length; k++) bySeqno[k] = position[order[from + k]];
      long[] runHints = new long[run.length];
      int[] runSizes = new int[run.length];
      long before = w.size();
      w.appendRun(new FlushedRun(run, bySeqno, seqnos, keys, entries), runHints, runSizes);
      for (int k = 0; k < run.length; k++) {
        hints[run[k]] = runHints[k];
        sizes[run[k]] = runSizes[k];
      }
      stats.segmentBytesWritten.add(w.size() - before);
    }
  }

  /** The entries {@code run} names (indexes into a flush's sorted lists), as a segment run. */
  private record FlushedRun(
      int[] run, int[] bySeqno, long[] seqnos, List<byte[]> keys, List<byte[]> entries)
      implements SegmentWriter.Run {
    @Override
    public int size() {
      return run.length;
    }

    @Override
    public int bySeqno(int j) {
      return bySeqno[j];
    }

    @Override
    public long seqno(int i) {
      return seqnos[run[i]];
    }

    @Override
    public byte[] key(int i) {
      return keys.get(run[i]);
    }

    @Override
    public byte[] value(int i) {
      return entries.get(run[i]);
    }

    @Override
    public int valueOffset(int i) {
      return WriteCache.valueOffset(entries.get(run[i]));
    }

    @Override
    public int valueLength(int i) {
      byte[] e = entries.get(run[i]);
      return e.length - WriteCache.valueOffset(e);
    }

    @Override
    public boolean tombstone(int i) {
      return WriteCache.isTombstone(entries.get(run[i]));
    }

    @Override
    public long expiry(int i) {
      return WriteCache.expiryOf(entries.get(run[i]));
    }
  }

  /**
   * The versions a flush reported stale in keyspace {@code ks}: {@code count} (seqno, size) pairs.
   */
  private record Reported(int ks, long[] pairs, int count) {}

  /** The newest older version of each flushed key, if any: {@link #startLookups}' answer. */
  private static final class Older {
    final boolean[] found;
    final boolean[] tombstone;
    final long[] seqno;
    final int[] size;

    Older(int n) {
      found = new boolean[n];
      tombstone = new boolean[n];
      seqno = new long[n];
      size = new int[n];
    }
  }

  /**
   * Starts looking up the newest record of each of {@code keys} (sorted, distinct) in {@code f}'s
   * tables on the lookup threads, while the flusher writes the documents: level 0 newest first,
   * then each deeper level, every table's bloom filter probed for all the keys still unresolved at
   * once ({@link TableReader#mayContainAll}), then one data block read per key it may hold (not
   * offered to the block cache: a flush's lookups must not evict what readers use). A flush of
   * {@link #parallelLookups} keys or more is split in two halves, one per thread.
   */
  private Lookups startLookups(KeyspaceFiles f, byte[][] keys) {
    int n = keys.length;
    Older o = new Older(n);
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) hashes[i] = TableReader.keyHash(keys[i]);
    boolean[] maybe = new boolean[n];
    int parts = n >= parallelLookups ? 2 : 1;
    List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
    Lookups lookups = new Lookups(o, futures);
    try {
      for (int p = 0; p < parts; p++) {
        int from = n * p / parts, to = n * (p + 1) / parts;
        Runnable part = () -> findOlder(f, keys, hashes, from, to, o, maybe);
        try {
          futures.add(lookupThreads.submit(part));
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
          part.run(); // the flusher is stopping (a flush at close or after a failure): look up here
        }
      }
    } catch (RuntimeException | Error e) {
      lookups.await(); // a part already submitted still reads the tables
      throw e;
    }
    return lookups;
  }

  /** Lookups under way ({@link #startLookups}). */
  private record Lookups(Older older, List<java.util.concurrent.Future<?>> futures) {
    /** Their answer once every part has ended, or what a part threw. */
    Older join() {
      Throwable t = awaitAll();
      if (t instanceof Error err) throw err;
      if (t instanceof BasaltException b) throw b;
      if (t != null) throw new BasaltException("flush lookups failed: " + t, t);
      return older;
    }

    /** Waits for every part to end, whatever it did (the flush is failing). */
    void await() {
      awaitAll();
    }

    /**
     * Waits, uninterruptibly (an interrupt is kept for later), until every part has ended: a part
     * reads the flush's tables, which must stay open until it is done. Returns the first part's
     * failure.
     */
    private Throwable awaitAll() {
      Throwable first = null;
      boolean interrupted = false;
      for (java.util.concurrent.Future<?> f : futures) {
        while (true) {
          try {
            f.get();
            break;
          } catch (java.util.concurrent.ExecutionException e) {
            if (first == null) first = e.getCause();
            break;
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
      return first;
    }
  }

  /**
   * Flushes of at least this many keys of a keyspace split their lookups over two threads (1,024;
   * tests lower it so their small write caches take the two-thread path).
   */
  public static volatile int parallelLookups = 1024;

  /** Looks up the keys of {@code [from, to)} (see {@link #startLookups}). */
  private static void findOlder(
      KeyspaceFiles f, byte[][] keys, long[] hashes, int from, int to, Older o, boolean[] maybe) {
    KeyRecord rec = new KeyRecord();
    for (KeyspaceFiles.Table t : f.level(0)) probe(t, keys, hashes, from, to, o, maybe, rec);
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      // Each table takes the run of the (sorted) keys in its range. A leveled level's tables are
      // disjoint;
      // a guarded level's tables of one guard overlap and come newest first, and a key found in one
      // is
      // not probed again in the next.
      for (KeyspaceFiles.Table t : f.level(l)) {
        byte[] smallest = t.smallest(), largest = t.largest();
        if (smallest == null || largest == null) continue;
        int start = firstNotBelow(keys, from, to, smallest);
        int end = start;
        while (end < to && KeyRecord.compareKeys(keys[end], largest) <= 0) end++;
        if (end > start) probe(t, keys, hashes, start, end, o, maybe, rec);
      }
    }
  }

  /** The first index of sorted {@code keys[from, to)} whose key is not below {@code key}. */
  private static int firstNotBelow(byte[][] keys, int from, int to, byte[] key) {
    int lo = from, hi = to;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (KeyRecord.compareKeys(keys[mid], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Looks up the unresolved keys of {@code [from, to)} in table {@code t} (see {@link #findOlder}).
   */
  private static void probe(
      KeyspaceFiles.Table t,
      byte[][] keys,
      long[] hashes,
      int from,
      int to,
      Older o,
      boolean[] maybe,
      KeyRecord rec) {
    TableReader r = t.reader();
    r.mayContainAll(keys, hashes, from, to, o.found, maybe);
    for (int i = from; i < to; i++) {
      if (o.found[i] || !maybe[i] || !r.getChecked(keys[i], rec, false)) continue;
      o.found[i] = true;
      o.tombstone[i] =
          rec.tombstone
              || rec.expiry != 0; // reported where dropped, as a tombstone (see OlderVersions)
      o.seqno[i] = rec.seqno;
      o.size[i] = rec.docSize;
    }
  }

  /**
   * Whether a table of {@code f} may hold {@code key}: key ranges and bloom filters only, no data
   * block. The deepest levels first: an updated key is most often there, so one probe answers.
   */
  private static boolean mayHoldOlder(KeyspaceFiles f, byte[] key) {
    long hash = TableReader.keyHash(key);
    for (int l = KeyspaceFiles.MAX_LEVELS - 1; l >= 1; l--) {
      if (f.guarded()) { // oldest first: a guard's oldest table is its merged bulk, the likeliest
        // holder
        List<KeyspaceFiles.Table> guard = f.candidates(l, key);
        for (int i = guard.size() - 1; i >= 0; i--) {
          if (guard.get(i).reader().mayContain(key, hash)) return true;
        }
        continue;
      }
      KeyspaceFiles.Table t = f.candidate(l, key);
      if (t != null && t.reader().mayContain(key, hash)) return true;
    }
    for (KeyspaceFiles.Table t : f.level(0)) {
      if (t.reader().mayContain(key, hash)) return true;
    }
    return false;
  }

  /** Starts a tail segment for keyspace {@code ks}, preallocated to {@code limit} bytes. */
  private SegmentTail newSegment(int ks, long startSeqno, long limit) {
    long number = versionSet.nextFileNumber.getAndIncrement();
    if (number > Integer.MAX_VALUE) throw new BasaltException("file numbers exhausted");
    storage.mkdirs(FileNames.logDir(ks));
    StorageFile f = storage.create(FileNames.segment(ks, number));
    tables.track(f);
    SegmentOptions o =
        SegmentTail.segmentOptions(options).withPreallocateBytes(limit); // limit <= segmentSize
    SegmentTail t =
        new SegmentTail(SegmentWriter.create(f, number, startSeqno, o), f, blockCache.newOwners(2));
    writers.put(ks, t);
    held.add(ks);
    return t;
  }

  /** Seals what the writer holds, syncs it and returns a reader of that state. */
  private KeyspaceFiles.Segment checkpoint(SegmentTail t) {
    SegmentWriter w = t.writer();
    long before = w.size();
    SegmentState st = w.checkpoint();
    stats.segmentBytesWritten.add(w.size() - before);
    stats.segmentWrittenMillis.put(
        w.segmentId(), System.currentTimeMillis()); // not cold: just written
    w.sync();
    return new KeyspaceFiles.Segment(
        st, new SegmentReader(t.file(), st, blockCache, t.cacheOwner()));
  }

  /** Stops the thread; a flush in progress completes first. */
  public void stop() {
    synchronized (signal) {
      stopping = true;
      signal.notifyAll();
    }
    if (thread.isAlive() && thread != Thread.currentThread()) {
      // Uninterruptibly: the files close after this, and a flush (and its lookups) must not read
      // them then.
      boolean interrupted = false;
      while (thread.isAlive()) {
        try {
          thread.join();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
    }
    lookupThreads.shutdown(); // a flush after this (none runs now) looks up on its own thread
  }
}
