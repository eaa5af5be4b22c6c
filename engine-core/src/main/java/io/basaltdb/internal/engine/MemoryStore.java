package io.basaltdb.internal.engine;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.engine.backup.MemoryBackups;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.write.CommitPipeline;
import io.basaltdb.internal.engine.write.CommitTarget;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.List;

/**
 * Nitro's in-memory engine (seed 001) behind the engine's API: every write lives in the one
 * skiplist, nothing is logged or flushed, and a dropped keyspace's keys go at once.
 *
 * <p><b>Deletions and the change feed.</b> The skiplist holds each key's newest version, which is
 * what a change feed returns ({@link io.basaltdb.internal.engine.read.EngineFeed}'s write cache
 * part, read in seqno windows). A delete leaves its tombstone in the skiplist for {@link
 * io.basaltdb.Options#deletionRetentionMillis}, so feeds report it; a background pass then removes
 * tombstones older than that (found by a scan of a snapshot; each removal checked under the apply
 * lock against the key's current entry) and raises the keyspace's purge seqno past each one first,
 * so a snapshot either sees the tombstone or sees the purge seqno that covers it. A store short of
 * memory drops its checkpoints, and forgets every retained deletion at once if they are enough to
 * be worth the scan that finds them ({@code RELIEF_SHARE}), before it refuses a write.
 *
 * <p><b>Checkpoints and rollback.</b> A checkpoint is a skiplist snapshot taken under the apply
 * lock, with the catalog and the item counts of that instant, held for {@link
 * io.basaltdb.Options#checkpointRetentionMillis}. A rollback (between commit groups, under the
 * apply lock) walks the current state and the checkpoint's side by side, allocates every version to
 * put back first (so a store short of memory refuses it unchanged), then rewrites the differing
 * keys while gets wait ({@link WriteCache#beginRewrite}). It spends one seqno of its own and makes
 * it every keyspace's purge seqno before it rewrites anything, so a change feed consumer that read
 * past the rolled-back writes is told to start again. A rewrite that stops part way (only a bug or
 * a closed skiplist gets there) fails the store: it refuses writes from then on.
 *
 * <p>Thread-safety: the commit-target methods run on the commit leader; the rest on any thread. The
 * background pass runs on a thread of its own, started once the open succeeded and stopped by
 * {@link #close}.
 */
final class MemoryStore implements Store, CommitTarget {
  private final Versions versions;
  private final KeyspaceCatalog catalog;

  /** The next keyspace id ("default" is 1). */
  private final java.util.concurrent.atomic.AtomicInteger nextKeyspaceId =
      new java.util.concurrent.atomic.AtomicInteger(2);

  /** The write cache allocator's chunk size: part of the room kept for deletes. */
  private final long chunkSize;

  private final io.basaltdb.Options options;

  /** Failed by a rollback that stopped part way, which leaves the store holding part of it. */
  private final StoreState state;

  /** Test hooks of the backup ({@link MemoryBackups.Hooks}); set before a backup starts. */
  volatile MemoryBackups.Hooks backupHooks = MemoryBackups.Hooks.NONE;

  /** Test hooks of a rollback ({@link RollbackHooks}); set before a rollback starts. */
  volatile RollbackHooks rollbackHooks = RollbackHooks.NONE;

  /**
   * Code a rollback runs, for tests (under the apply lock): {@code found} once it has found its
   * checkpoint, before it reads it, to expire the checkpoint meanwhile; {@code applied} after it
   * has put back its i-th version, inside the rewrite, to make it fail part way.
   */
  record RollbackHooks(Runnable found, java.util.function.IntConsumer applied) {
    static final RollbackHooks NONE = new RollbackHooks(() -> {}, i -> {});
  }

  MemoryStore(
      Versions versions,
      KeyspaceCatalog catalog,
      StoreState state,
      long chunkSize,
      io.basaltdb.Options options) {
    this.versions = versions;
    this.catalog = catalog;
    this.state = state;
    this.chunkSize = chunkSize;
    this.options = options;
    this.retentionMillis = options.deletionRetentionMillis();
    this.clock = options.clock();
    this.purgeEveryMillis = retentionMillis > 0 ? period(retentionMillis) : 0;
    this.expireEveryMillis = period(options.checkpointRetentionMillis());
    this.worker = new Thread(this::work, "basalt-memory-store-maintenance");
    worker.setDaemon(true);
  }

  /**
   * Starts the background pass: the last step of an open that succeeded, so an open that fails
   * leaves no thread behind ({@link #close} stops it, and does nothing to one never started).
   */
  void start() {
    worker.start();
  }

  // ---- deletions kept for change feeds
  // -----------------------------------------------------------------

  /** {@link io.basaltdb.Options#deletionRetentionMillis}. */
  private final long retentionMillis;

  /** Judges the age of deletions and checkpoints ({@link io.basaltdb.Options#clock}). */
  private final java.util.function.LongSupplier clock;

  /**
   * How often the background pass looks for deletions to forget ({@link #purgeOld}): timed by the
   * deletion retention alone; 0, never, with a retention of 0 (each deletion is forgotten as it is
   * applied).
   */
  final long purgeEveryMillis;

  /** How often the background pass looks for checkpoints to drop: timed by their retention. */
  final long expireEveryMillis;

  /** A background task's period for a retention: an eighth of it, from 10 ms to 10 s. */
  private static long period(long retentionMillis) {
    return Math.max(10, Math.min(10_000, retentionMillis / 8));
  }

  private final Thread worker;
  private volatile boolean stopping;

  /** Keyspace id to its purge seqno: the highest seqno of a deletion it has forgotten. */
  private final java.util.concurrent.ConcurrentHashMap<Integer, Long> purged =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** A purge seqno every keyspace has at least (a restore from a backup, a rollback). */
  private volatile long purgedAll;

  /** Deletions applied since a purge pass last counted (the leader adds, the pass subtracts). */
  private final java.util.concurrent.atomic.AtomicLong newDeletions =
      new java.util.concurrent.atomic.AtomicLong();

  /** Tombstones the last pass left because they were too young; guarded by {@link #purgeLock}. */
  private long youngDeletions;

  /**
   * (clock millis, published seqno) pairs the pass takes at each of its purge ticks where the seqno
   * moved since the last pair (an unmoved seqno's earlier pair comes due first), oldest first: the
   * seqno below which every deletion is older than the retention; guarded by {@link #purgeLock}. So
   * it holds at most the retention over {@link #purgeEveryMillis} pairs and one.
   */
  private final java.util.ArrayDeque<long[]> marks = new java.util.ArrayDeque<>();

  /** The cutoff of the last purge; guarded by {@link #purgeLock}. */
  private long purgedTo;

  /** How many (time, seqno) marks the pass holds, for tests. */
  int marks() {
    synchronized (purgeLock) {
      return marks.size();
    }
  }

  private final Object purgeLock = new Object();

  /** Tombstones a purge looks at per range of the scan, and removes per hold of the apply lock. */
  private static final int PURGE_BATCH = 4096;

  /**
   * A full store's relief scans the whole list for tombstones only when the deletions not yet
   * forgotten are at least 1/RELIEF_SHARE of its nodes: the scans cost at most this many nodes
   * visited per deletion, however many groups a full store refuses while deletes trickle in (a scan
   * per refused group made every put in a full store cost a walk of all of it). Fewer hold little
   * memory, and the background pass forgets them after the retention.
   */
  private static final long RELIEF_SHARE = 32;

  /** A restored store forgot its deletions up to the backup's seqno (backups hold none). */
  void restoredSeqno(long seqno) {
    purgedAll = seqno;
  }

  private void raisePurge(int ks, long seqno) {
    Long p = purged.get(ks);
    if (p == null || p < seqno) purged.merge(ks, seqno, Math::max);
  }

  /** The background pass: each of its two tasks when its period is up, until {@link #close}. */
  private void work() {
    long purgeAt = System.nanoTime() + purgeEveryMillis * 1_000_000L;
    long expireAt = System.nanoTime() + expireEveryMillis * 1_000_000L;
    while (!stopping) {
      long wake = purgeEveryMillis > 0 && purgeAt - expireAt < 0 ? purgeAt : expireAt;
      java.util.concurrent.locks.LockSupport.parkNanos(wake - System.nanoTime());
      if (stopping) return;
      long t = System.nanoTime();
      boolean purge = purgeEveryMillis > 0 && t - purgeAt >= 0;
      boolean expire = t - expireAt >= 0;
      if (purge) purgeAt = t + purgeEveryMillis * 1_000_000L; // a failed task waits its period too
      if (expire) expireAt = t + expireEveryMillis * 1_000_000L;
      try {
        long now = clock.getAsLong();
        if (purge) purgeOld(now);
        if (expire) expireCheckpoints(now);
      } catch (io.basaltdb.ClosedException e) {
        return; // the store closed under the pass
      } catch (RuntimeException e) {
        // a failed pass leaves everything as it was; the next tick tries again
        org.slf4j.LoggerFactory.getLogger(MemoryStore.class)
            .warn("in-memory store maintenance failed; retrying", e);
      }
    }
  }

  /** Forgets the deletions older than the retention (a tick of the background pass). */
  void purgeOld(long now) {
    synchronized (purgeLock) {
      long seqno = versions.lastSeqno();
      long[] last = marks.peekLast();
      if (seqno > (last == null ? purgedTo : last[1])) marks.addLast(new long[] {now, seqno});
      long cutoff = purgedTo;
      while (!marks.isEmpty() && marks.peekFirst()[0] <= now - retentionMillis)
        cutoff = Math.max(cutoff, marks.pollFirst()[1]);
      if (cutoff > purgedTo) {
        purge(cutoff, false);
        purgedTo = cutoff;
      }
    }
  }

  /**
   * Removes every tombstone with a seqno at or below {@code cutoff} (at most the published seqno),
   * raising each one's keyspace purge seqno first; returns how many went. Scans a snapshot of the
   * list range by range, so it holds at most {@link #PURGE_BATCH} keys or so at a time, and removes
   * each range's under the apply lock, where {@link WriteCache#removeTombstone(byte[], long)}
   * checks that the tombstone is still the key's entry. Skips the scan when no deletion can be
   * left, and for a {@code relief} when the deletions that may be left are fewer than {@link
   * #RELIEF_SHARE} of the list's nodes.
   */
  private long purge(long cutoff, boolean relief) {
    synchronized (purgeLock) {
      long counted = newDeletions.get();
      long pending = counted + youngDeletions;
      if (pending == 0) return 0;
      WriteCache cache = versions.current().active;
      if (relief && pending * RELIEF_SHARE < cache.list.stats().nodes()) return 0;
      io.basaltdb.internal.skiplist.Snapshot snap;
      versions.applyLock.lock();
      try {
        snap = cache.list.snapshot();
      } finally {
        versions.applyLock.unlock();
      }
      long young = 0, removed = 0;
      try {
        long nodes = cache.list.stats().nodesPerLevel()[0];
        List<byte[]> cuts = cache.list.splitKeys((int) Math.min(1 << 16, nodes / PURGE_BATCH + 1));
        List<byte[]> keys = new java.util.ArrayList<>();
        long[] seqnos = new long[64];
        long[] youngHere = {0};
        for (int r = 0; r <= cuts.size(); r++) {
          keys.clear();
          long[][] sq = {seqnos};
          snap.scan(
              r == 0 ? null : cuts.get(r - 1),
              r == cuts.size() ? null : cuts.get(r),
              (keyAddr, keyLen, valueAddr, valueLen) -> {
                if ((io.basaltdb.internal.memory.Mem.lpUnsignedByte(null, valueAddr + 8)
                        & WriteCache.TOMBSTONE)
                    == 0) return;
                long s = io.basaltdb.internal.memory.Mem.lpLongBE(null, valueAddr);
                if (s > cutoff) {
                  youngHere[0]++;
                  return;
                }
                byte[] k = new byte[keyLen];
                io.basaltdb.internal.memory.Mem.copyToArray(keyAddr, k, 0, keyLen);
                if (keys.size() == sq[0].length)
                  sq[0] = java.util.Arrays.copyOf(sq[0], 2 * keys.size());
                sq[0][keys.size()] = s;
                keys.add(k);
              });
          seqnos = sq[0];
          if (!keys.isEmpty()) removed += removeTombstones(cache, keys, seqnos);
        }
        young = youngHere[0];
      } finally {
        snap.close();
      }
      youngDeletions = young;
      newDeletions.addAndGet(-counted);
      return removed;
    }
  }

  private long removeTombstones(WriteCache cache, List<byte[]> keys, long[] seqnos) {
    long removed = 0;
    versions.applyLock.lock();
    try {
      for (int i = 0; i < keys.size(); i++) {
        byte[] sk = keys.get(i);
        int ks = WriteCache.keyspaceOf(sk);
        if (!catalog.isLive(ks)) continue; // a dropped keyspace's keys go with it
        raisePurge(ks, seqnos[i]); // before the removal: a snapshot sees one or the other
        if (cache.removeTombstone(sk, seqnos[i])) removed++;
      }
    } finally {
      versions.applyLock.unlock();
    }
    return removed;
  }

  /**
   * Frees what memory the store holds for change feeds and rollbacks (leader, before it refuses a
   * group): forgets every retained deletion if they are worth the scan ({@link #RELIEF_SHARE}),
   * drops every checkpoint, and collects the versions that freed. True if it freed anything, so the
   * group is tried again.
   */
  private boolean relieve() {
    boolean freed = purge(versions.lastSeqno(), true) > 0;
    synchronized (this) {
      freed |= !held.isEmpty();
      for (Held h : held) h.snap.close();
      if (!held.isEmpty()) {
        org.slf4j.LoggerFactory.getLogger(MemoryStore.class)
            .warn(
                "the in-memory store is full: dropped its {} checkpoints to make room",
                held.size());
      }
      held.clear();
    }
    if (freed) versions.current().active.list.quiesce();
    return freed;
  }

  // ---- checkpoints
  // ---------------------------------------------------------------------------------

  /** A checkpoint: its snapshot and what the store's catalog and counts were at it. */
  private record Held(
      long id,
      long createdMillis,
      long seqno,
      java.util.Map<Integer, String> keyspaces,
      java.util.Map<Integer, Integer> layouts,
      java.util.Map<Integer, Long> netKeys,
      java.util.Map<Integer, Long> items,
      io.basaltdb.internal.skiplist.Snapshot snap) {
    Engine.CheckpointInfo info() {
      List<String> names = new java.util.ArrayList<>(keyspaces.values());
      java.util.Collections.sort(names);
      return new Engine.CheckpointInfo(id, createdMillis, seqno, List.copyOf(names));
    }
  }

  /**
   * Retained checkpoints, oldest first; guarded by this. A checkpoint's snapshot is closed under
   * this as it leaves the list, so a reader that uses it outside the monitor takes a reference of
   * its own ({@link io.basaltdb.internal.skiplist.Snapshot#duplicate}) under it.
   */
  private final java.util.ArrayList<Held> held = new java.util.ArrayList<>();

  /** The next checkpoint's id; guarded by this. */
  private long nextCheckpointId = 1;

  /** Takes a checkpoint of the state now; the caller holds the apply lock. */
  private Held takeCheckpoint(WriteCache cache) {
    java.util.Map<Integer, String> keyspaces = catalog.byId();
    java.util.Map<Integer, Long> net = new java.util.HashMap<>();
    for (int id : keyspaces.keySet()) net.put(id, cache.netKeys(id));
    java.util.Map<Integer, Long> items =
        versions.items() == null ? null : java.util.Map.copyOf(versions.items().copy());
    io.basaltdb.internal.skiplist.Snapshot snap = cache.list.snapshot();
    synchronized (this) {
      Held h =
          new Held(
              nextCheckpointId++,
              clock.getAsLong(),
              versions.lastSeqno(),
              java.util.Map.copyOf(keyspaces),
              java.util.Map.copyOf(layouts),
              java.util.Map.copyOf(net),
              items,
              snap);
      held.add(h);
      return h;
    }
  }

  /** Drops the checkpoints older than their retention at {@code now} (the background pass). */
  void expireCheckpoints(long now) {
    synchronized (this) {
      java.util.Iterator<Held> it = held.iterator();
      while (it.hasNext()) {
        Held h = it.next();
        if (now - h.createdMillis < options.checkpointRetentionMillis()) continue;
        it.remove();
        h.snap.close();
      }
    }
  }

  @Override
  public synchronized List<Engine.CheckpointInfo> checkpoints() {
    List<Engine.CheckpointInfo> out = new java.util.ArrayList<>();
    for (Held h : held) out.add(h.info());
    return out;
  }

  /**
   * A checkpoint of every write published before the call: a snapshot of the skiplist taken under
   * the apply lock, held for {@link io.basaltdb.Options#checkpointRetentionMillis} (its old
   * versions with it).
   */
  @Override
  public Engine.CheckpointInfo checkpoint(CommitPipeline pipeline) {
    versions.applyLock.lock();
    try {
      return takeCheckpoint(versions.current().active).info();
    } finally {
      versions.applyLock.unlock();
    }
  }

  /**
   * Rolls the live store back to checkpoint {@code id}: see the class comment. Returns the
   * checkpoint the store then stands at (a new one, at the rollback's own seqno).
   */
  @Override
  public Engine.CheckpointInfo rollback(long id, CommitPipeline pipeline) {
    Engine.CheckpointInfo[] out = new Engine.CheckpointInfo[1];
    pipeline.runBetweenGroups(
        () -> {
          versions.applyLock.lock();
          try {
            out[0] = rollbackLocked(id);
          } finally {
            versions.applyLock.unlock();
          }
        });
    return out[0];
  }

  private Engine.CheckpointInfo rollbackLocked(long id) {
    Held cp;
    io.basaltdb.internal.skiplist.Snapshot snap;
    synchronized (this) {
      cp = held.stream().filter(h -> h.id == id).findFirst().orElse(null);
      if (cp == null) {
        throw new InvalidArgumentException(
            "the in-memory store has no checkpoint "
                + id
                + " (it holds "
                + held.stream().map(h -> Long.toString(h.id)).toList()
                + "; a checkpoint is kept for Options.checkpointRetentionMillis, or until the"
                + " store runs short of memory)");
      }
      // A reference of the rollback's own, taken under the monitor the checkpoint would be closed
      // under: it may expire, or be dropped, while the rollback reads it.
      snap = cp.snap.duplicate();
    }
    RollbackHooks hooks = rollbackHooks;
    WriteCache cache = versions.current().active;
    Rewrite rw = new Rewrite();
    try {
      hooks.found().run();
      diff(cache, cp, snap, rw);
    } catch (RuntimeException | Error e) {
      for (int i = 0; i < rw.count; i++) cache.discardPrepared(rw.nodes[i]);
      if (e instanceof io.basaltdb.MemoryLimitException) {
        throw new io.basaltdb.MemoryLimitException(
            "the rollback to checkpoint "
                + id
                + " needs memory for the versions it puts back, and the store is full ("
                + e.getMessage()
                + "); nothing was changed");
      }
      throw e;
    } finally {
      snap.close(); // the versions to put back are copied into nodes of their own
    }
    cache.beginRewrite();
    try {
      // The rollback's own seqno, published and made every keyspace's purge seqno before the
      // rewrite, so that a rewrite stopping part way still tells every feed past it to start over.
      long r = versions.lastSeqno() + 1;
      purgedAll = r;
      versions.publish(r);
      int applied = 0;
      try {
        for (; applied < rw.count; applied++) {
          cache.applyPrepared(
              rw.nodes[applied],
              rw.keyspaces[applied],
              rw.keyLengths[applied],
              rw.seqnos[applied],
              rw.valueLengths[applied]);
          hooks.applied().accept(applied);
        }
        for (byte[] sk : rw.deletes) cache.list.delete(sk);
        // Layouts before the catalog names a keyspace and after it forgets one, and never cleared:
        // a reader of a live keyspace's layout (a backup, trieChunkBytes) never finds it missing.
        layouts.putAll(cp.layouts);
        for (int ks : catalog.byId().keySet()) {
          if (!cp.keyspaces.containsKey(ks)) {
            catalog.remove(ks);
            cache.setNetKeys(ks, 0);
          }
        }
        for (java.util.Map.Entry<Integer, String> k : cp.keyspaces.entrySet()) {
          if (!catalog.isLive(k.getKey()))
            catalog.add(k.getKey(), k.getValue(), cp.layouts.getOrDefault(k.getKey(), 0));
          cache.setNetKeys(k.getKey(), cp.netKeys.getOrDefault(k.getKey(), 0L));
        }
        layouts.keySet().retainAll(cp.layouts.keySet());
        if (versions.items() != null && cp.items != null) {
          for (int ks : cp.keyspaces.keySet())
            versions.items().set(ks, cp.items.getOrDefault(ks, 0L));
        }
      } catch (RuntimeException | Error e) {
        // Only a closed skiplist or a bug gets here: the nodes never handed to the list go back
        // (not the one whose apply threw: it may be linked). The store holds part of the rollback,
        // so it fails: it refuses writes (and further rollbacks) from now on.
        for (int i = applied + 1; i < rw.count; i++) cache.discardPrepared(rw.nodes[i]);
        io.basaltdb.StorageException f =
            new io.basaltdb.StorageException(
                "the rollback to checkpoint "
                    + id
                    + " failed part way ("
                    + e
                    + "): the store holds part of it and refuses writes from now on; close it"
                    + " and restore from a backup",
                e);
        state.fail(f);
        throw f;
      }
      if (rw.tombstones > 0) newDeletions.addAndGet(rw.tombstones);
      synchronized (this) {
        java.util.Iterator<Held> it = held.iterator();
        while (it.hasNext()) {
          Held h = it.next();
          if (h.id <= id) continue;
          it.remove();
          h.snap.close();
        }
      }
      return takeCheckpoint(cache).info();
    } finally {
      cache.endRewrite();
    }
  }

  /** What a rollback changes: versions to put back (allocated), and keys to delete. */
  private static final class Rewrite {
    long[] nodes = new long[64];
    int[] keyspaces = new int[64];
    int[] keyLengths = new int[64];
    int[] valueLengths = new int[64];
    long[] seqnos = new long[64];
    int count;
    long tombstones;
    final List<byte[]> deletes = new java.util.ArrayList<>();

    /**
     * Makes room for one more version: before its node is allocated, as {@link #add} takes none.
     */
    void reserve() {
      if (count < nodes.length) return;
      int n = 2 * count;
      nodes = java.util.Arrays.copyOf(nodes, n);
      keyspaces = java.util.Arrays.copyOf(keyspaces, n);
      keyLengths = java.util.Arrays.copyOf(keyLengths, n);
      valueLengths = java.util.Arrays.copyOf(valueLengths, n);
      seqnos = java.util.Arrays.copyOf(seqnos, n);
    }

    /**
     * Records an allocated version in the room {@link #reserve} made: it allocates nothing and
     * cannot throw, so a node is in {@link #nodes} (freed on failure) from the moment it exists.
     */
    void add(long node, int ks, int keyLength, long seqno, int valueLength) {
      nodes[count] = node;
      keyspaces[count] = ks;
      keyLengths[count] = keyLength;
      valueLengths[count] = valueLength;
      seqnos[count] = seqno;
      count++;
    }
  }

  /**
   * Walks the store's current state and the checkpoint's in key order: a key only the current state
   * holds is deleted, a key whose version differs (another seqno) or that only the checkpoint holds
   * gets the checkpoint's entry back, allocated here. A key of a keyspace the checkpoint's catalog
   * does not name counts as absent from it. {@code snap}: the checkpoint's snapshot (a reference
   * the caller holds).
   */
  private void diff(
      WriteCache cache, Held cp, io.basaltdb.internal.skiplist.Snapshot snap, Rewrite rw) {
    io.basaltdb.internal.skiplist.Snapshot now = cache.list.snapshot();
    try (io.basaltdb.internal.skiplist.SnapshotIterator a = now.iterator();
        io.basaltdb.internal.skiplist.SnapshotIterator b = snap.iterator()) {
      a.seekFirst();
      b.seekFirst();
      byte[] ka = a.valid() ? a.key() : null;
      byte[] kb = nextIn(b, cp, true);
      while (ka != null || kb != null) {
        int c = ka == null ? 1 : kb == null ? -1 : java.util.Arrays.compareUnsigned(ka, kb);
        if (c < 0) {
          rw.deletes.add(ka);
        } else if (c > 0 || a.valueLong() != b.valueLong()) {
          byte[] e = b.value();
          int ks = WriteCache.keyspaceOf(kb);
          boolean tomb = WriteCache.isTombstone(e);
          int keyLength = kb.length - WriteCache.prefixLength(ks);
          long seqno = WriteCache.seqnoOf(e);
          int valueLength = tomb ? -1 : e.length - WriteCache.valueOffset(e);
          // Everything that may throw (an Error too) before the allocation: the node goes straight
          // into rw, whose nodes the caller frees on any failure.
          rw.reserve();
          rw.add(cache.prepareEntry(kb, e), ks, keyLength, seqno, valueLength);
          if (tomb) rw.tombstones++;
        }
        if (c <= 0) {
          a.next();
          ka = a.valid() ? a.key() : null;
        }
        if (c >= 0) kb = nextIn(b, cp, false);
      }
    } finally {
      now.close();
    }
  }

  /** The checkpoint iterator's next key of a keyspace the checkpoint names (first: its current). */
  private static byte[] nextIn(
      io.basaltdb.internal.skiplist.SnapshotIterator b, Held cp, boolean first) {
    if (!first && b.valid()) b.next();
    while (b.valid()) {
      byte[] k = b.key();
      if (cp.keyspaces.containsKey(WriteCache.keyspaceOf(k))) return k;
      b.next();
    }
    return null;
  }

  /** A restored keyspace's layout code (a hashed one's; 0 for ordered). */
  void restoredLayout(int id, int layout) {
    if (layout != 0) layouts.put(id, layout);
  }

  /** A restored store's next keyspace id: above every id its backup held. */
  void restoredKeyspaceIds(int next) {
    nextKeyspaceId.set(Math.max(next, nextKeyspaceId.get()));
  }

  /**
   * Backs the store up as of every write published before the call (seed 001 section 5, {@link
   * MemoryBackups}): a snapshot, its seqno, the keyspaces and their layouts are taken together
   * under the apply lock.
   */
  @Override
  public Backups.Result backup(
      CommitPipeline pipeline,
      io.basaltdb.internal.storage.Storage target,
      io.basaltdb.internal.storage.Storage previous,
      java.util.function.BooleanSupplier stopped) {
    if (previous != null) {
      throw new InvalidArgumentException(
          "an in-memory store's backups are always full: there is no earlier backup to"
              + " share files with (incremental backups are for stores on disk)");
    }
    Version v;
    io.basaltdb.internal.skiplist.Snapshot snap;
    long seqno;
    java.util.Map<Integer, String> keyspaces;
    java.util.Map<Integer, Integer> kinds = new java.util.HashMap<>();
    versions.applyLock.lock();
    try {
      seqno = versions.lastSeqno();
      keyspaces = catalog.byId();
      // The layouts too, which a rollback rewrites under this lock; read after the catalog, as a
      // layout is in place before the catalog names its keyspace.
      for (int id : keyspaces.keySet()) {
        int layout = layouts.getOrDefault(id, 0);
        if (layout != 0) kinds.put(id, layout);
      }
      v = versions.acquire();
      try {
        snap = v.active.list.snapshot();
      } catch (RuntimeException e) {
        v.release();
        throw e;
      }
    } finally {
      versions.applyLock.unlock();
    }
    try {
      return MemoryBackups.backup(
          v.active.list,
          snap,
          seqno,
          keyspaces,
          java.util.Map.copyOf(kinds),
          nextKeyspaceId.get(),
          target,
          options.backupThreads(),
          options.backupCompression(),
          options.nonIntrusiveBackup(),
          stopped,
          backupHooks);
    } finally {
      v.release();
    }
  }

  @Override
  public boolean makeRoom(Batch head) {
    return false;
  }

  /**
   * Refuses a group with puts that would leave less than two chunks and twice its size free, so a
   * full store still takes the deletes that make room again (its message says to delete data).
   */
  @Override
  public void precheck(List<Batch> group, long estimate) {
    boolean puts = false;
    for (Batch b : group) {
      for (int i = 0; i < b.count && !puts; i++) puts = b.types[i] == Batch.PUT;
    }
    var q = versions.quota();
    if (puts && q.usedBytes() + 2 * estimate + 2 * chunkSize > q.limit() && relieve()) {
      // retained deletions and checkpoints were dropped: judge the group again
    }
    if (puts && q.usedBytes() + 2 * estimate + 2 * chunkSize > q.limit()) {
      throw new io.basaltdb.MemoryLimitException(
          whenFull()
              + " ("
              + q.usedBytes()
              + " of "
              + q.limit()
              + " bytes in use, a write needs about "
              + estimate
              + "; the rest is kept for deletes). Nothing was written");
    }
  }

  /**
   * Forgets retained deletions and drops checkpoints if there are any ({@link #relieve}); beyond
   * that nothing frees memory here but the caller's deletes, and the group is refused.
   */
  @Override
  public boolean freeMemory() {
    return relieve();
  }

  @Override
  public long pinnedWaitNanos() {
    return 0;
  }

  @Override
  public String whenFull() {
    return "the in-memory store is full; delete data or reopen with a larger Options.memoryQuota";
  }

  @Override
  public void log(List<Batch> group) {}

  /**
   * Counts the group's deletions for the background pass, which removes their tombstones once they
   * are {@link io.basaltdb.Options#deletionRetentionMillis} old; with a retention of 0, removes
   * them now (still under the apply lock, so no snapshot sees them) and raises the purge seqno.
   */
  @Override
  public void applied(WriteCache cache, List<Batch> group) {
    long deletions = 0;
    for (Batch b : group) {
      for (int i = 0; i < b.count; i++) {
        if (b.types[i] != Batch.PUT && catalog.isLive(b.keyspaces[i])) {
          if (retentionMillis > 0) {
            deletions++;
          } else {
            raisePurge(b.keyspaces[i], b.firstSeqno + i);
            cache.removeTombstone(b.keyspaces[i], b.key(i), b.firstSeqno + i);
          }
        }
      }
    }
    if (deletions > 0) newDeletions.addAndGet(deletions);
  }

  /**
   * Ids are never handed out twice, so a write checked before a drop cannot land in a new keyspace.
   */
  @Override
  public int createKeyspace(String name, KeyspaceCatalog catalog, int trieChunkBytes) {
    if (KeyspaceLayout.isHashed(trieChunkBytes)) {
      // The skiplist serves gets as it does for any keyspace; the catalog refuses scans, as the
      // disk store's hashed keyspaces do.
      int id = nextKeyspaceId.getAndIncrement();
      layouts.put(id, trieChunkBytes);
      return id;
    }
    if (trieChunkBytes != 0) {
      throw new InvalidArgumentException(
          "the in-memory store keeps no key index tables: keyspace '"
              + name
              + "' cannot have the HB_TRIE key index format");
    }
    return nextKeyspaceId.getAndIncrement();
  }

  @Override
  public int trieChunkBytes(int id) {
    return layouts.getOrDefault(id, 0);
  }

  /**
   * Layout codes of the hashed keyspaces (the only ones not 0); read by any thread. A keyspace's
   * code is put before the catalog names it (creation, rollback) and never changes; a rollback
   * rewrites the map under the apply lock, where a backup reads it.
   */
  private final java.util.Map<Integer, Integer> layouts =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Forgets the keyspace (later writes to it are skipped), then removes its keys between commit
   * groups, so no group applied before the removal is left behind.
   */
  @Override
  public void dropKeyspace(int id, KeyspaceCatalog catalog, CommitPipeline pipeline) {
    catalog.remove(id);
    pipeline.runBetweenGroups(
        () -> {
          versions.applyLock.lock();
          try {
            versions.current().active.removeKeyspace(id);
          } finally {
            versions.applyLock.unlock();
          }
        });
  }

  /**
   * The highest seqno of a deletion of keyspace {@code ks} the store has forgotten: the background
   * pass's, a restore's or a rollback's.
   */
  @Override
  public long purgeSeqno(int ks) {
    return Math.max(purgedAll, purged.getOrDefault(ks, 0L));
  }

  @Override
  public void flush(CommitPipeline pipeline) {}

  @Override
  public void flushWal() {}

  @Override
  public boolean waitForCompactions(long timeoutMillis) {
    return true;
  }

  /** Nothing to do: the skiplist's collector frees a deleted or replaced version once unread. */
  @Override
  public void compactRange(int ks, byte[] from, byte[] to, CommitPipeline pipeline) {}

  @Override
  public FileStats fileStats() {
    return new FileStats(Manifest.Counters.ZERO, 0, 0, 0, 0, 0);
  }

  /** Stops the background pass and lets go of the checkpoints' snapshots. */
  @Override
  public void close() {
    stopping = true;
    java.util.concurrent.locks.LockSupport.unpark(worker);
    boolean interrupted = false;
    while (worker.isAlive()) {
      try {
        worker.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
    synchronized (this) {
      for (Held h : held) h.snap.close();
      held.clear();
    }
  }
}
