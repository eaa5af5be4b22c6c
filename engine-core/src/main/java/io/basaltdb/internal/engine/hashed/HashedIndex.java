package io.basaltdb.internal.engine.hashed;

import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.hashindex.KeyHasher;
import io.basaltdb.internal.hashindex.LazyTrie;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.sstable.KeyRecord;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The key index of one hashed keyspace (seed 004): a {@link LazyTrie} that flushes update in place,
 * plus, while snapshots are open, the records each flush replaced, so a snapshot still reads the
 * versions it saw.
 *
 * <h2>Concurrency</h2>
 *
 * Updates come from one thread at a time ({@link #apply} holds this object's write lock: the
 * flusher, or a WAL-skip batch's commit, which runs only when no flush is pending). Reads take no
 * lock. A WAL-skip batch changes the trie before its seqnos are published: its layer is held (never
 * pruned) until {@link #published}, and reads at the published seqno ({@link #get(byte[],
 * KeyRecord, long)}) see the records from before it. Snapshot registration and the list of undo
 * layers are guarded by this object's monitor; readers see the layers through the volatile array
 * {@link #layers}.
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>A flush that runs while a snapshot is registered publishes its layer before it changes the
 *       trie, and records each key's pre-image in it before it changes that key.
 *   <li>A layer is dropped only when every registered snapshot's seqno is at or above the highest
 *       seqno the layer's flush wrote; a flush that keeps no layer raises {@link #uncoveredBelow}
 *       first, and a snapshot whose seqno is below it is refused ({@link #register}), so no
 *       registered snapshot ever needs a layer that is gone.
 * </ol>
 */
public final class HashedIndex implements AutoCloseable {
  /** The seed of every hashed keyspace's key hash (persisted tries depend on it). */
  static final long HASH_SEED = 0x6261_7361_6c74_4c54L;

  /** A pre-image: the record a flush replaced, or none; and the seqno of the write that did. */
  record Change(long newSeqno, KeyRecord before) {}

  /** The changes of one flush, by key. */
  static final class Layer {
    final Map<ByteBuffer, Change> changes = new ConcurrentHashMap<>();
  }

  private final int ks;
  private final LazyTrie trie;

  /** The undo layers, oldest first; replaced under this object's monitor, read racily. */
  private volatile Layer[] layers = new Layer[0];

  /**
   * Highest seqno of each kept layer, parallel to {@link #layers}; under the monitor. A held
   * layer's is {@code Long.MAX_VALUE} until its batch is published.
   */
  private final List<Long> layerMax = new ArrayList<>();

  /** Registered snapshot seqnos and how many snapshots hold each; under the monitor. */
  private final TreeMap<Long, Integer> snapshots = new TreeMap<>();

  /** A snapshot below this seqno may need a change no layer holds; under the monitor. */
  private long uncoveredBelow;

  private final Object writeLock = new Object();

  /** Set by close(), under {@link #writeLock}. */
  private boolean closed;

  public HashedIndex(int ks, int layoutCode, MemoryQuota quota) {
    this.ks = ks;
    this.trie =
        new LazyTrie(
            KeyspaceLayout.branching(layoutCode),
            KeyspaceLayout.sluggishness(layoutCode),
            KeyHasher.xxh64(HASH_SEED),
            quota,
            "hashed-keyspace-" + ks);
  }

  public int keyspace() {
    return ks;
  }

  public LazyTrie trie() {
    return trie;
  }

  /** The newest record of {@code key} (its key is {@code key}); lock-free. */
  public boolean get(byte[] key, KeyRecord rec) {
    return trie.get(key, rec);
  }

  /**
   * The record of {@code key} a snapshot at {@code seqno} sees (registered with {@link #register}):
   * the trie's, walked back through the layers of the flushes that changed the key after it.
   */
  public boolean get(byte[] key, KeyRecord rec, long seqno) {
    boolean found = trie.get(key, rec);
    Layer[] ls = layers;
    if (ls.length == 0) return found;
    ByteBuffer k = ByteBuffer.wrap(key);
    for (int i = ls.length - 1; i >= 0; i--) {
      Change c = ls[i].changes.get(k);
      if (c == null) continue;
      if (c.newSeqno <= seqno) break; // this change, and every older one, is visible
      found = c.before != null;
      if (found) copy(c.before, key, rec);
    }
    return found;
  }

  private static void copy(KeyRecord from, byte[] key, KeyRecord to) {
    to.set(key, from.seqno, from.docSize, false, from.hint, false, from.expiry);
  }

  /** Registers a snapshot at {@code seqno}; false if the layers no longer reach back to it. */
  public synchronized boolean register(long seqno) {
    if (seqno < uncoveredBelow) return false;
    snapshots.merge(seqno, 1, Integer::sum);
    return true;
  }

  public synchronized void unregister(long seqno) {
    snapshots.computeIfPresent(seqno, (s, n) -> n == 1 ? null : n - 1);
    prune();
  }

  /** Drops the oldest layers no registered snapshot needs. */
  private synchronized void prune() {
    long oldest = snapshots.isEmpty() ? Long.MAX_VALUE : snapshots.firstKey();
    int drop = 0;
    while (drop < layerMax.size() && layerMax.get(drop) <= oldest) drop++;
    if (drop == 0) return;
    for (int i = 0; i < drop; i++) uncoveredBelow = Math.max(uncoveredBelow, layerMax.get(i));
    layerMax.subList(0, drop).clear();
    Layer[] next = new Layer[layers.length - drop];
    System.arraycopy(layers, drop, next, 0, next.length);
    layers = next; // volatile publish
  }

  /** One write a flush applies: a put (with its document) or a delete. */
  public record Entry(
      byte[] key, long seqno, int docSize, long hint, long expiry, boolean tombstone) {}

  /**
   * Applies a flush's entries (the newest version of each key, any order) and reports to {@code
   * stale} each version it replaced or removed, as (seqno, size) pairs: garbage from now on.
   * Returns the number of pairs. A tombstone's own document is not garbage yet: it waits in {@link
   * #pendingTombstones} for the next checkpoint, which lets an open that loads the checkpoint skip
   * it (a replay from an older checkpoint must still see it).
   */
  public int apply(List<Entry> entries, long[] stale) {
    return apply(entries, stale, false);
  }

  /**
   * As {@link #apply(List, long[])}; with {@code unpublished} (a WAL-skip batch, whose seqnos are
   * published only when its commit installs its version) the changes are recorded in a layer that
   * is held until {@link #published}, so no reader sees them before.
   */
  public int apply(List<Entry> entries, long[] stale, boolean unpublished) {
    synchronized (writeLock) {
      if (closed) return 0; // the keyspace was dropped: its entries are discarded with it
      long max = 0;
      for (Entry e : entries) max = Math.max(max, e.seqno);
      appliedSeqno = Math.max(appliedSeqno, max);
      Layer layer = openLayer(max, unpublished);
      KeyRecord old = new KeyRecord();
      int n = 0;
      for (Entry e : entries) {
        if (layer != null) {
          KeyRecord before = trie.get(e.key, old) ? copyOf(old) : null;
          layer.changes.put(ByteBuffer.wrap(e.key), new Change(e.seqno, before));
        }
        boolean replaced;
        if (e.tombstone) {
          replaced = trie.delete(e.key, old);
          addPending(e.seqno, e.docSize);
        } else {
          replaced = trie.put(e.key, e.seqno, e.docSize, e.hint, e.expiry, 0, old);
          if (e.expiry != 0) nextExpiry = Math.min(nextExpiry, e.expiry);
        }
        flushedSinceCheckpoint += e.docSize;
        if (replaced) {
          stale[2 * n] = old.seqno;
          stale[2 * n + 1] = old.docSize;
          n++;
        } else if (!sweptPending.isEmpty()) {
          // The key's expired record was swept: garbage now, in this flush's commit. An open that
          // loads the checkpoint still holding it replaces it with this write, silently.
          long[] gone = sweptPending.remove(ByteBuffer.wrap(e.key));
          if (gone != null) {
            stale[2 * n] = gone[0];
            stale[2 * n + 1] = gone[1];
            n++;
          }
        }
      }
      trie.publishRetired();
      if (layer != null && !unpublished) prune();
      return n;
    }
  }

  // ---- location hints garbage collection left stale

  /** Fixes queued at most: a bound on their memory; past it, misses are not queued. */
  static final int MAX_HINT_FIXES = 1 << 16;

  /** A get's stale hint: the key and the seqno its record had. */
  private record HintFix(byte[] key, long seqno) {}

  private final java.util.concurrent.ConcurrentLinkedQueue<HintFix> hintFixes =
      new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final java.util.concurrent.atomic.AtomicInteger hintFixCount =
      new java.util.concurrent.atomic.AtomicInteger();

  /**
   * A get found {@code key}'s record at {@code seqno} with a location hint naming a segment that no
   * longer holds it (garbage collection moved the document). Any thread; the next flush refreshes
   * the hint ({@link #refreshHints}). Dropped when {@link #MAX_HINT_FIXES} wait already.
   */
  public void hintMissed(byte[] key, long seqno) {
    if (hintFixCount.incrementAndGet() > MAX_HINT_FIXES) {
      hintFixCount.decrementAndGet();
      return;
    }
    hintFixes.offer(new HintFix(key.clone(), seqno));
  }

  /** Whether gets queued stale hints for {@link #refreshHints}; any thread. */
  public boolean hasHintFixes() {
    return hintFixCount.get() > 0;
  }

  /**
   * Refreshes the hints gets found stale: each record still at the seqno it had gets the hint
   * {@code freshHint} gives for that seqno (negative: none known, left alone). The trie's writer,
   * before a flush applies its entries. Returns the hints refreshed.
   */
  public int refreshHints(java.util.function.LongUnaryOperator freshHint) {
    if (hintFixes.isEmpty()) return 0;
    synchronized (writeLock) {
      if (closed) return 0;
      KeyRecord rec = new KeyRecord();
      int n = 0;
      for (HintFix f; (f = hintFixes.poll()) != null; ) {
        hintFixCount.decrementAndGet();
        if (!trie.get(f.key, rec) || rec.seqno != f.seqno) continue; // replaced or deleted since
        long hint = freshHint.applyAsLong(f.seqno);
        if (hint < 0 || hint == rec.hint) continue; // unknown, or refreshed already
        // the same version with its new place: no layer change, nothing stale
        trie.put(f.key, rec.seqno, rec.docSize, hint, rec.expiry, 0, null);
        n++;
      }
      trie.publishRetired();
      return n;
    }
  }

  /** The newest seqno applied to the trie; under writeLock. */
  private long appliedSeqno;

  /**
   * The newest seqno applied to the trie: a checkpoint taken while it is above the manifest's
   * flushed seqno would hold writes not yet committed (a WAL-skip batch's), and must wait.
   */
  public long appliedSeqno() {
    synchronized (writeLock) {
      return appliedSeqno;
    }
  }

  /**
   * A WAL-skip batch that {@link #apply applied} up to {@code max} unpublished is published (its
   * version installed): its held layer becomes an ordinary one, dropped once no snapshot needs it.
   */
  public synchronized void published(long max) {
    for (int i = 0; i < layerMax.size(); i++) {
      if (layerMax.get(i) == Long.MAX_VALUE) layerMax.set(i, max);
    }
    prune();
  }

  // ---- the expiry sweep (Options.expiryCheckMillis), under writeLock

  /**
   * No record expires before this instant (ms, the store's clock): a sweep round waits for it.
   * {@code Long.MAX_VALUE}: none expires. 1 at first, so the first round after an open (whose
   * checkpoint may hold expiring records) looks at the whole trie.
   */
  private long nextExpiry = 1;

  /** The root slot the running round sweeps next; 0 between rounds. */
  private int sweepSlot;

  /** When the last round started (the store's clock), or none yet. */
  private long lastRound;

  private boolean swept;

  /**
   * One step of the expiry sweep, Magma's expiry (seed 000 section 7.1) for a key index that no
   * compaction rewrites: removes the expired records under the next {@code slots} root slots, and
   * raises the purge seqno to the newest of them ({@code purge}: a change feed from below it could
   * not tell of their expiry). Their documents become garbage in the commit that makes a checkpoint
   * without them usable ({@link #writeCheckpoint}), or of the next flush of their key ({@code
   * sweptPending}). A round starts once a record may have expired ({@link #nextExpiry}) and {@code
   * intervalMillis} after the last round started, and passes over the trie {@code slots} root slots
   * per step, so a step holds the writer's lock briefly. A step does nothing while a snapshot is
   * registered or a layer held: a snapshot judges expiry at the instant it was taken, so a record
   * expired now may still be live to it. Returns the records removed.
   */
  public int sweepExpired(
      long now, long intervalMillis, int slots, java.util.function.LongConsumer purge) {
    synchronized (writeLock) {
      if (closed) return 0;
      if (sweepSlot == 0) {
        if (now < nextExpiry || swept && now - lastRound < intervalMillis) return 0;
      }
      List<KeyRecord> expired = new ArrayList<>();
      synchronized (this) {
        // No snapshot registers while this monitor is held, and one registered later reads the
        // clock after it registered: at or after now, so what this step removes is expired to it.
        if (!snapshots.isEmpty() || layers.length > 0) return 0;
        if (sweepSlot == 0) {
          swept = true;
          lastRound = now;
          nextExpiry = Long.MAX_VALUE; // this round's records and later flushes' lower it again
        }
        int to = Math.min(trie.branching(), sweepSlot + Math.max(1, slots));
        trie.forEachUnder(
            sweepSlot,
            to,
            true,
            r -> {
              if (r.expiredAt(now)) expired.add(r);
              else nextExpiry = Math.min(nextExpiry, r.expiry);
            });
        KeyRecord old = new KeyRecord();
        for (KeyRecord r : expired) {
          if (!trie.delete(r.key, old))
            throw new IllegalStateException("an expired record vanished");
          sweptPending.put(ByteBuffer.wrap(r.key), new long[] {old.seqno, old.docSize});
          flushedSinceCheckpoint += old.docSize; // garbage waiting for a checkpoint
        }
        trie.publishRetired();
        sweepSlot = to == trie.branching() ? 0 : to;
      }
      long newest = 0;
      for (KeyRecord r : expired) newest = Math.max(newest, r.seqno);
      // Under the writer lock, as a checkpoint's commit (whose marker lies above the purge seqno:
      // this must not raise the purge seqno between a checkpoint's write and its commit); not under
      // this monitor, which a version's install takes.
      if (newest > 0) purge.accept(newest);
      return expired.size();
    }
  }

  // ---- checkpoints: the writer's state, under writeLock

  /** Tombstones flushed since the last checkpoint, as (seqno, size) pairs; under writeLock. */
  private long[] pendingTombstones = new long[16];

  private int pendingCount;

  /**
   * Records the expiry sweep removed since the last checkpoint, by key: (seqno, size). Garbage in
   * the commit of the next checkpoint, or of the next flush that writes the key (whichever comes
   * first: a checkpoint from before the sweep still holds the record, and an open that loads it
   * replaces it with that write without reporting it); under writeLock.
   */
  private final Map<ByteBuffer, long[]> sweptPending = new java.util.LinkedHashMap<>();

  /** Document bytes flushed since the last checkpoint; under writeLock. */
  private long flushedSinceCheckpoint;

  private void addPending(long seqno, long size) {
    if (2 * pendingCount + 2 > pendingTombstones.length) {
      pendingTombstones = java.util.Arrays.copyOf(pendingTombstones, 2 * pendingTombstones.length);
    }
    pendingTombstones[2 * pendingCount] = seqno;
    pendingTombstones[2 * pendingCount + 1] = size;
    pendingCount++;
  }

  /**
   * Whether a checkpoint is due: {@code bytes} flushed since the last one, and at least a quarter
   * as many bytes as its dirty pages. A checkpoint writes most of them twice, so it costs at most
   * about eight bytes per byte flushed (the pages of a random-hash trie all turn dirty under
   * updates), and an open replays at most about the larger of {@code bytes} and a quarter of the
   * trie.
   */
  public boolean checkpointDue(long bytes) {
    synchronized (writeLock) {
      long dirty = trie.space().dirtyCount() * TrieCheckpoint.SLOT;
      return flushedSinceCheckpoint >= Math.max(bytes, dirty / 4);
    }
  }

  /** Pages of the space the checkpoint on disk holds (0: none); under writeLock. */
  private long checkpointPages;

  long checkpointPages() {
    synchronized (writeLock) {
      return checkpointPages;
    }
  }

  void checkpointPages(long pages) {
    synchronized (writeLock) {
      checkpointPages = pages;
    }
  }

  /** Whether tombstones or swept records wait for a checkpoint to become garbage. */
  public boolean hasPendingGarbage() {
    synchronized (writeLock) {
      return pendingCount > 0 || !sweptPending.isEmpty();
    }
  }

  /** Whether anything changed since the last checkpoint (or there is none). */
  public boolean changedSinceCheckpoint() {
    synchronized (writeLock) {
      return flushedSinceCheckpoint > 0
          || pendingCount > 0
          || !sweptPending.isEmpty()
          || trie.space().dirtyCount() > 0;
    }
  }

  /**
   * Runs {@code writer} with the trie still (the writer lock held) and, if it succeeds (true),
   * forgets the pending tombstones it was given: {@code writer} gets them as (seqno, size) pairs
   * and their count, and must make them garbage in the same step that makes the checkpoint usable.
   */
  public boolean writeCheckpoint(CheckpointWriter writer) {
    synchronized (writeLock) {
      if (closed) return false;
      long[] pending =
          java.util.Arrays.copyOf(pendingTombstones, 2 * (pendingCount + sweptPending.size()));
      int count = pendingCount;
      for (long[] r : sweptPending.values()) {
        pending[2 * count] = r[0];
        pending[2 * count + 1] = r[1];
        count++;
      }
      if (!writer.write(pending, count)) return false;
      pendingCount = 0; // (already, if the writer committed them: see tombstonesCommitted)
      sweptPending.clear();
      flushedSinceCheckpoint = 0;
      return true;
    }
  }

  /**
   * The commit that makes the pending tombstones {@link #writeCheckpoint} handed out garbage is
   * durable: they are no longer pending, even if the rest of the checkpoint then fails (reported
   * twice, their bytes would count twice as garbage, and a segment could be taken for all garbage
   * while it still holds live documents). The checkpoint writer's thread, inside it.
   */
  public void tombstonesCommitted() {
    synchronized (writeLock) {
      pendingCount = 0;
      sweptPending.clear();
    }
  }

  /** Runs {@code action} with the trie still: no flush changes it meanwhile (backups). */
  public void whileStill(Runnable action) {
    synchronized (writeLock) {
      if (!closed) action.run();
    }
  }

  /**
   * What {@link #writeCheckpoint} runs: true if it wrote the checkpoint, false if it may not yet.
   */
  @FunctionalInterface
  public interface CheckpointWriter {
    boolean write(long[] pendingTombstones, int count);
  }

  /** Records a tombstone replay found in the log after the checkpoint it loaded (at open). */
  void loadPending(long seqno, long size) {
    synchronized (writeLock) {
      addPending(seqno, size);
    }
  }

  /** After an open's recovery: it replayed this many bytes of log past the checkpoint. */
  void loaded(long replayedBytes) {
    synchronized (writeLock) {
      flushedSinceCheckpoint = replayedBytes;
    }
  }

  private static KeyRecord copyOf(KeyRecord r) {
    return new KeyRecord().set(null, r.seqno, r.docSize, false, r.hint, false, r.expiry);
  }

  /**
   * The layer for a flush writing seqnos up to {@code max}, published before the flush changes the
   * trie; null when no registered snapshot is below {@code max}, in which case none below it may
   * register from now on.
   */
  private synchronized Layer openLayer(long max, boolean unpublished) {
    // No snapshot open, or every open one sees all of this flush's writes (a snapshot registered
    // later has a seqno at or above every published one, so at or above max: refused only below).
    // Not so for unpublished seqnos: their layer is held for the reads at the published seqno.
    if (!unpublished && (snapshots.isEmpty() || snapshots.firstKey() >= max)) {
      uncoveredBelow = Math.max(uncoveredBelow, max);
      return null;
    }
    Layer l = new Layer();
    Layer[] next = java.util.Arrays.copyOf(layers, layers.length + 1);
    next[next.length - 1] = l;
    layerMax.add(unpublished ? Long.MAX_VALUE : max);
    layers = next; // volatile publish: before the first change to the trie
    return l;
  }

  /** Puts a record while the index is loaded at open; no layer, no garbage reported. */
  void load(byte[] key, long seqno, int docSize, long hint, long expiry) {
    synchronized (writeLock) {
      trie.put(key, seqno, docSize, hint, expiry, 0, null);
      if (expiry != 0) nextExpiry = Math.min(nextExpiry, expiry);
    }
  }

  /** Removes a key while the log is replayed at open. */
  void unload(byte[] key) {
    synchronized (writeLock) {
      trie.delete(key, null);
    }
  }

  @Override
  public void close() {
    synchronized (writeLock) {
      closed = true;
      trie.close();
    }
  }
}
