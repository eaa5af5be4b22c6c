package io.basaltdb.internal.engine.read;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.DocumentIterator;
import io.basaltdb.internal.skiplist.Snapshot;
import io.basaltdb.internal.sstable.KeyRecord;

/**
 * One keyspace's changes with seqnos in {@code [from, to]} of an {@link EngineSnapshot}, in seqno
 * order (Magma section 3.4.3, with section 4's merge against the delete list): first the log
 * segments of the snapshot's version from the one holding {@code from} on (each found by start
 * seqno, then its seqno index), every document the delete list names skipped (a version the key
 * index dropped: superseded, or a tombstone that reached the bottom); then the write caches'
 * entries in the range, sorted by seqno. The segments hold the flushed seqnos and the caches the
 * rest, so the two parts follow each other.
 *
 * <p><b>What appears.</b> Every key whose newest version in the snapshot has a seqno in the range
 * appears with that version (a deletion as a deletion): the delete list names only versions the key
 * index dropped, which a newest version is not, and collection removes only what the delete list
 * names. A put whose expiry has passed at the snapshot's instant appears as a deletion at its
 * seqno. The one exception, a tombstone (or an expired put) the key index dropped at the bottom, is
 * what the keyspace's purge seqno tells the caller about ({@link
 * io.basaltdb.ChangesPurgedException}). A version superseded by a newer one may also appear while
 * the delete list does not name it yet (until a key index compaction drops it, or a flush lookup or
 * revealing merge reports it); with {@code exact}, each document of the segments is checked against
 * the key's newest version in the snapshot (write caches, then the key index: bloom filters, one
 * data block), and only newest versions appear. The write caches' part is exact either way: a cache
 * holds one version per key for a snapshot, and a key the active cache holds hides its immutable
 * cache entry.
 *
 * <p><b>Stability.</b> The snapshot pins its version, whose segments and delete list tables stay on
 * disk and readable while flushes, compactions and collection replace them, so a feed gives the
 * same changes whatever runs beside it. The caches' part holds each entry's key and seqno in the
 * heap (a write cache at most) and reads the value from the snapshot when it gets there.
 *
 * <p>Thread-safety: one thread at a time. Use after close, or after the snapshot or store closed,
 * throws {@link ClosedException}.
 */
public final class EngineFeed implements AutoCloseable {
  private final EngineSnapshot snap;
  private final int ks;
  private final long from;
  private final long to;
  private final boolean exact;
  private final boolean ownsSnapshot;
  private final KeyspaceFiles files;
  private final EngineStats stats;

  /** The next segment to open; {@code files.segments.size()} once the segments are done. */
  private int nextSegment;

  private DocumentIterator docs;

  /**
   * The delete list over the range, read alongside the segments; null once the segments are done.
   */
  private DeleteList.Cursor stale;

  private boolean staleMore;

  /**
   * The caches' part, read in windows: the entries of the current window sorted by seqno (null
   * until the segments are done), and where the next window starts.
   */
  private SeqnoWindow window;

  private int windowPos;

  /** The lowest seqno the next window may hold; past {@link #to} once the caches are done. */
  private long windowFrom;

  /** How many entries the next window may hold: grows with what the last pass saw beyond it. */
  private int windowCapacity = MIN_WINDOW;

  /** A window's least capacity: a feed of a few changes allocates little. */
  static final int MIN_WINDOW = 1 << 12;

  /**
   * A window's greatest capacity: the heap a feed holds is at most this many keys, and a feed over
   * m changes in the caches walks them about m / this times.
   */
  static final int MAX_WINDOW = 1 << 20;

  private long seqno = -1;
  private byte[] key;
  private byte[] value;
  private boolean deletion;
  private boolean closed;
  private final KeyRecord rec = new KeyRecord();

  /** The keyspace's purge seqno when the feed was opened. */
  private final long purgeSeqno;

  /** {@code to} is capped at the snapshot's seqno; an empty range yields nothing. */
  public EngineFeed(
      EngineSnapshot snap,
      int ks,
      long from,
      long to,
      boolean exact,
      boolean ownsSnapshot,
      long purgeSeqno,
      EngineStats stats) {
    this.snap = snap;
    this.purgeSeqno = purgeSeqno;
    this.ks = ks;
    this.from = from;
    this.to = Math.min(to, snap.seqno());
    this.exact = exact;
    this.ownsSnapshot = ownsSnapshot;
    this.files = snap.version.files(ks);
    this.stats = stats;
    this.windowFrom = from;
    try {
      if (from <= this.to && !files.segments.isEmpty()) {
        stale = new DeleteList.Cursor(files.deletes, from, this.to);
        staleMore = stale.next();
      } else {
        nextSegment = files.segments.size();
      }
    } catch (RuntimeException | Error e) {
      if (stale != null) stale.close();
      if (ownsSnapshot) snap.close();
      throw e;
    }
    stats.changeFeeds.increment();
  }

  /** The last seqno this feed can return: its {@code to}, capped at its snapshot's seqno. */
  public long endSeqno() {
    return to;
  }

  /**
   * The keyspace's purge seqno when the feed was opened: deletions at or below it may not appear.
   */
  public long purgeSeqno() {
    return purgeSeqno;
  }

  /** Moves to the next change; false at the end. The first call moves to the first change. */
  public boolean next() {
    check();
    boolean found = window == null && nextFromSegments();
    if (!found) found = nextFromCaches();
    if (found) {
      stats.changesReturned.increment();
    } else {
      key = null;
      value = null;
    }
    return found;
  }

  private boolean nextFromSegments() {
    while (true) {
      if (docs == null && !openNextSegment()) return false;
      if (!docs.hasNext()) {
        docs = null;
        continue;
      }
      Document d = docs.next();
      if (d.seqno() < from) continue;
      if (d.seqno() > to) {
        nextSegment = files.segments.size();
        docs = null;
        return openNextSegment(); // none left: closes the delete list's cursor
      }
      while (staleMore && stale.seqno() < d.seqno()) staleMore = stale.next();
      if (staleMore && stale.seqno() == d.seqno()) { // a version the key index dropped
        stats.changesSkippedStale.increment();
        continue;
      }
      if (exact && !newestInSnapshot(d.key(), d.seqno(), d.tombstone())) {
        stats.changesSkippedExact.increment();
        continue;
      }
      boolean deleted =
          d.deletedAt(snap.now); // an expiry is reported as a deletion at its put's seqno
      set(d.seqno(), d.key(), deleted ? null : d.value(), deleted);
      return true;
    }
  }

  /**
   * Opens the next segment that holds seqnos of the range; false (segments done) if none is left.
   */
  private boolean openNextSegment() {
    while (nextSegment < files.segments.size()) {
      KeyspaceFiles.Segment s = files.segments.get(nextSegment++);
      if (s.state().startSeqno() > to) break;
      if (s.state().isEmpty() || s.state().lastSeqno() < from) continue;
      docs = s.reader().iterator(Math.max(from, s.state().startSeqno()));
      return true;
    }
    nextSegment = files.segments.size();
    if (stale != null) {
      stale.close();
      stale = null;
    }
    return false;
  }

  /**
   * Whether the segments' version {@code seqno} of {@code key} is its newest in the snapshot: no
   * cache holds the key (a cache's versions are newer than every flushed one), and its newest key
   * index record has that seqno (a key with no record had its deletion dropped at the bottom).
   */
  private boolean newestInSnapshot(byte[] key, long seqno, boolean tombstone) {
    byte[] sk = WriteCache.storeKey(ks, key);
    if (snap.active.get(sk) != null) return false;
    if (snap.immutable != null && snap.immutable.get(sk) != null) return false;
    boolean found = snap.reads.findRecord(ks, files, key, rec, snap.seqno());
    // A hashed keyspace's index keeps no tombstones: a deletion is the newest version unless a
    // later put of the key is indexed (a later deletion of it, too, is returned).
    if (tombstone && snap.reads.hashedIndex(ks) != null) return !found || rec.seqno < seqno;
    return found && rec.seqno == seqno;
  }

  /**
   * The caches' next change: the next entry of the current window, loading the next window once it
   * is spent. A window holds the lowest seqnos of the range from {@link #windowFrom} on (each key's
   * version in the active cache's snapshot, and in the immutable cache's where the active one does
   * not hold the key), found by a pass over the keyspace's entries in both that copies only the
   * keys that enter it ({@link SeqnoWindow}). A pass that saw no more entries in the range than the
   * window holds is the last. The in-memory store's one cache holds its whole contents, so its feed
   * is this part alone, in windows of at most {@link #MAX_WINDOW} keys.
   */
  private boolean nextFromCaches() {
    while (window == null || windowPos >= window.size()) {
      if (windowFrom > to) return false;
      loadWindow();
    }
    int i = windowPos++;
    long s = window.seqno(i);
    byte[] sk = window.takeKey(i);
    byte[] e = (window.flag(i) ? snap.immutable : snap.active).get(sk);
    if (e == null || WriteCache.seqnoOf(e) != s) {
      throw new IllegalStateException(
          "write cache snapshot changed under a change feed at seqno " + s);
    }
    boolean tomb = WriteCache.isDeleted(e, snap.now);
    set(s, WriteCache.userKey(sk), tomb ? null : WriteCache.valueOf(e), tomb);
    return true;
  }

  /** Loads the window from {@link #windowFrom} on and moves {@link #windowFrom} past it. */
  private void loadWindow() {
    SeqnoWindow w = new SeqnoWindow(windowCapacity);
    long seen = collect(snap.active, null, w);
    if (snap.immutable != null) seen += collect(snap.immutable, snap.active, w);
    w.sort();
    window = w;
    windowPos = 0;
    if (seen <= w.size()) {
      windowFrom = Long.MAX_VALUE; // the pass saw every entry left in the range
    } else {
      windowFrom = w.seqno(w.size() - 1) + 1;
      long left = seen - w.size();
      windowCapacity = (int) Math.min(MAX_WINDOW, Math.max(windowCapacity, left));
    }
  }

  /**
   * Offers {@code w} the entries of keyspace {@code ks} in {@code cache} with seqnos in {@code
   * [windowFrom, to]}, those {@code newer} (the active cache's snapshot, for the immutable one)
   * holds skipped; returns how many were in the range.
   */
  private long collect(Snapshot cache, Snapshot newer, SeqnoWindow w) {
    long lo = windowFrom;
    long[] seen = {0};
    cache.scan(
        WriteCache.storeKey(ks, new byte[0]),
        WriteCache.storeKeyEnd(ks),
        (keyAddr, keyLen, valueAddr, valueLen) -> {
          long s = io.basaltdb.internal.memory.Mem.lpLongBE(null, valueAddr);
          if (s < lo || s > to) return;
          if (newer == null) {
            seen[0]++;
            if (w.admits(s)) w.add(s, keyAt(keyAddr, keyLen), false);
            return;
          }
          byte[] sk = keyAt(keyAddr, keyLen);
          if (newer.get(sk) != null) return; // the active cache's version is newer
          seen[0]++;
          if (w.admits(s)) w.add(s, sk, true);
        });
    return seen[0];
  }

  private static byte[] keyAt(long addr, int len) {
    byte[] k = new byte[len];
    io.basaltdb.internal.memory.Mem.copyToArray(addr, k, 0, len);
    return k;
  }

  private void set(long s, byte[] k, byte[] v, boolean del) {
    if (s <= seqno)
      throw new IllegalStateException("change feed out of seqno order: " + s + " after " + seqno);
    seqno = s;
    key = k;
    value = v;
    deletion = del;
  }

  /** The current change's seqno. */
  public long seqno() {
    onChange();
    return seqno;
  }

  /** The current change's key (the feed's own array; the public API copies it). */
  public byte[] key() {
    onChange();
    return key;
  }

  /** The current change's value, or null for a deletion (the feed's own array). */
  public byte[] value() {
    onChange();
    return value;
  }

  public boolean isDeletion() {
    onChange();
    return deletion;
  }

  private void onChange() {
    check();
    if (key == null)
      throw new IllegalStateException("the change feed is not on a change; call next() first");
  }

  private void check() {
    if (closed) throw new ClosedException("the change feed is closed");
    snap.checkUsable();
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      if (stale != null) stale.close();
    } finally {
      if (ownsSnapshot) snap.close();
    }
  }
}
