package io.basaltdb.internal.engine.hashed;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.DocumentIterator;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.storage.Storage;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * The store's hashed keyspaces' key indexes, by keyspace id, over one memory quota. The block cache
 * gives up the room the tries take ({@link #onGrow}): their bytes come out of the store's memory
 * quota, not on top of it.
 *
 * <p>Thread-safety: lookups ({@link #of}) take no lock; keyspaces are added and dropped by the
 * thread that creates or drops them (the store serializes those), and at open.
 */
public final class HashedIndexes implements AutoCloseable {
  private final MemoryQuota quota;

  /**
   * The indexes by keyspace id (null: not hashed), for {@link #of} on every get of every keyspace
   * (no boxing, no hashing); replaced whole under this object's monitor, read racily.
   */
  private volatile HashedIndex[] byId = new HashedIndex[0];

  private final LongConsumer onGrow;

  /** The most bytes the tries' allocators have reserved so far; under this object's monitor. */
  private long reservedHigh;

  /**
   * @param limit bytes the tries may hold together
   * @param onGrow told of each rise in the bytes they reserve (the block cache shrinks by it)
   */
  public HashedIndexes(long limit, LongConsumer onGrow) {
    this.quota = new MemoryQuota(limit);
    this.onGrow = onGrow;
  }

  /** The index of keyspace {@code ks}, or null if it is not hashed (or gone). */
  public HashedIndex of(int ks) {
    HashedIndex[] a = byId;
    return ks >= 0 && ks < a.length ? a[ks] : null;
  }

  /** Puts {@code idx} (null: none) at {@code ks} in a copy of {@link #byId}. Under the monitor. */
  private void publish(int ks, HashedIndex idx) {
    HashedIndex[] a = java.util.Arrays.copyOf(byId, Math.max(byId.length, ks + 1));
    a[ks] = idx;
    byId = a; // volatile publish
  }

  /** The indexes, for a pass over every hashed keyspace (checkpoints at close, stats). */
  public List<HashedIndex> all() {
    List<HashedIndex> out = new java.util.ArrayList<>();
    for (HashedIndex idx : byId) if (idx != null) out.add(idx);
    return out;
  }

  public boolean isEmpty() {
    for (HashedIndex idx : byId) if (idx != null) return false;
    return true;
  }

  /** Snapshot seqnos registered with every index, and how many snapshots hold each. */
  private final java.util.TreeMap<Long, Integer> snapshots = new java.util.TreeMap<>();

  /**
   * Creates keyspace {@code ks}'s empty index, holding the open snapshots (which see it empty);
   * {@code layoutCode} must be a hashed one.
   */
  public synchronized HashedIndex create(int ks, int layoutCode) {
    if (!KeyspaceLayout.isHashed(layoutCode))
      throw new IllegalArgumentException("not a hashed layout: " + layoutCode);
    HashedIndex idx = new HashedIndex(ks, layoutCode, quota);
    for (Map.Entry<Long, Integer> e : snapshots.entrySet()) {
      for (int i = 0; i < e.getValue(); i++) idx.register(e.getKey());
    }
    publish(ks, idx);
    return idx;
  }

  /**
   * Registers a snapshot at {@code seqno} with every index; false, with none registered, if one of
   * them no longer holds the versions it would need.
   */
  public synchronized boolean register(long seqno) {
    java.util.List<HashedIndex> done = new java.util.ArrayList<>();
    for (HashedIndex idx : all()) {
      if (!idx.register(seqno)) {
        for (HashedIndex d : done) d.unregister(seqno);
        return false;
      }
      done.add(idx);
    }
    snapshots.merge(seqno, 1, Integer::sum);
    return true;
  }

  public synchronized void unregister(long seqno) {
    snapshots.computeIfPresent(seqno, (s, n) -> n == 1 ? null : n - 1);
    for (HashedIndex idx : all()) idx.unregister(seqno);
  }

  /** Forgets a dropped keyspace's index and frees it once its readers have left. */
  public synchronized void drop(int ks) {
    HashedIndex idx = of(ks);
    if (idx != null) publish(ks, null);
    if (idx != null) idx.close();
  }

  /** Backups running: checkpoints after flushes wait for them ({@link #backingUp}). */
  private final java.util.concurrent.atomic.AtomicInteger backups =
      new java.util.concurrent.atomic.AtomicInteger();

  /**
   * Runs a backup ({@code backup}), with no checkpoint after a flush from before it pins its
   * manifest until it ends: a checkpoint in progress finishes first, and none starts meanwhile, so
   * the checkpoint files the backup copies are at or below its manifest's flushed seqno and their
   * tombstones are garbage in it: the restored store can use them.
   */
  public <T> T backingUp(java.util.function.Supplier<T> backup) {
    backups.incrementAndGet();
    try {
      for (HashedIndex idx : all()) idx.whileStill(() -> {}); // one in progress finishes
      return backup.get();
    } finally {
      backups.decrementAndGet();
    }
  }

  /** Whether a backup is running ({@link #backingUp}): checkpoints after flushes wait. */
  public boolean backupRunning() {
    return backups.get() > 0;
  }

  /** Bytes the tries' records and nodes take. */
  public long bytes() {
    long b = 0;
    for (HashedIndex idx : all()) b += idx.trie().bytes();
    return b;
  }

  /** Bytes of the tries' nodes alone (their child tables). */
  public long nodeBytes() {
    long b = 0;
    for (HashedIndex idx : all()) b += idx.trie().nodeBytes();
    return b;
  }

  /** Bytes the tries' allocators hold from the quota. */
  public long reservedBytes() {
    return quota.reservedBytes();
  }

  /** Passes any rise in reserved bytes to the block cache; after each flush and rebuild. */
  public synchronized void settle() {
    long r = quota.reservedBytes();
    if (r > reservedHigh) {
      onGrow.accept(r - reservedHigh);
      reservedHigh = r;
    }
  }

  /** What an open's recovery of one hashed keyspace did. */
  public record Recovered(
      long checkpointSeqno, long checkpointRecords, long logBytesReplayed, String note) {
    /** Whether the open completed a checkpoint from its double-write file. */
    public boolean doubleWriteApplied() {
      return note.contains(TrieCheckpoint.APPLIED);
    }
  }

  /**
   * Recovers keyspace {@code ks}'s index at open: loads its checkpoint ({@link
   * TrieCheckpoint#load}, which first applies a whole, committed double-write file) if it is at or
   * below the manifest's flushed seqno and at or above the keyspace's purge seqno (below it, it may
   * miss deletions whose tombstones are already garbage), then replays the log after it. With no
   * usable checkpoint (or a damaged one, which is reported and set aside), it replays the whole
   * log, skipping what the delete list names: every version a flush replaced is listed in that
   * flush's commit, so each key's one unlisted document is its newest; the next checkpoint then
   * writes every page.
   */
  public Recovered recover(
      Storage storage,
      int ks,
      int layout,
      long purgeSeqno,
      KeyspaceFiles files,
      long flushedSeqno) {
    HashedIndex idx = create(ks, layout);
    long t0 = System.nanoTime();
    TrieCheckpoint.Loaded loaded;
    try {
      loaded = TrieCheckpoint.load(storage, idx, layout, flushedSeqno, purgeSeqno);
    } catch (CorruptionException e) {
      Notifier.LOG.warn(
          "hashed keyspace {}: trie checkpoint set aside, replaying the log: {}",
          ks,
          e.getMessage());
      drop(ks);
      idx = create(ks, layout);
      TrieCheckpoint.discard(storage, ks);
      loaded = new TrieCheckpoint.Loaded(-1, 0, false, "checkpoint damaged: " + e.getMessage());
    }
    if (!loaded.usable() && idx.trie().size() != 0) {
      throw new IllegalStateException("an unusable checkpoint left records behind");
    }
    long from = loaded.usable() ? loaded.seqno() : 0;
    long t1 = System.nanoTime();
    long replayed = replay(idx, files, from);
    long t2 = System.nanoTime();
    idx.loaded(replayed);
    idx.trie().publishRetired();
    settle();
    String timing =
        "loaded in " + (t1 - t0) / 1_000_000 + " ms, replayed in " + (t2 - t1) / 1_000_000 + " ms";
    return new Recovered(
        loaded.usable() ? loaded.seqno() : -1,
        loaded.records(),
        replayed,
        loaded.note().isEmpty() ? timing : loaded.note() + timing);
  }

  /**
   * Applies the log's documents after {@code fromSeqno} to {@code idx}, in seqno order (segments
   * are in seqno order): a put newer than the key's record replaces it, a tombstone newer than it
   * removes it and waits for the next checkpoint. Skips what the delete list names. Returns the
   * bytes replayed.
   */
  private static long replay(HashedIndex idx, KeyspaceFiles files, long fromSeqno) {
    long bytes = 0;
    KeyRecord have = new KeyRecord();
    try (DeleteList.Cursor stale =
        new DeleteList.Cursor(files.deletes, fromSeqno + 1, Long.MAX_VALUE - 1)) {
      boolean more = stale.next();
      for (KeyspaceFiles.Segment s : files.segments) {
        if (s.state().isEmpty() || s.state().lastSeqno() <= fromSeqno) continue;
        DocumentIterator it = s.reader().iterator(Math.max(fromSeqno + 1, s.state().startSeqno()));
        while (it.hasNext()) {
          Document d = it.nextWithoutValue();
          while (more && stale.seqno() < d.seqno()) more = stale.next();
          if (more && stale.seqno() == d.seqno()) continue; // replaced: garbage already
          bytes += it.lastSize();
          boolean had = idx.trie().get(d.key(), have);
          if (had && have.seqno > d.seqno()) continue; // an older version
          if (d.tombstone()) {
            if (had) idx.unload(d.key());
            idx.loadPending(d.seqno(), it.lastSize());
          } else {
            idx.load(d.key(), d.seqno(), it.lastSize(), it.lastHint(), d.expiry());
          }
        }
      }
    }
    return bytes;
  }

  @Override
  public void close() {
    for (HashedIndex idx : all()) drop(idx.keyspace());
  }
}
