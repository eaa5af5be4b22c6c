package io.basaltdb.internal.engine.version;

import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.sstable.KeyRecord;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Exact item counts (Magma section 7.2; {@link io.basaltdb.Options#exactItemCounts}): per keyspace,
 * how many keys have a live newest version. Each write is looked up before it is applied, to tell
 * an insert from an update and a delete of a live key from one of an absent key: the commit group's
 * earlier writes, the active write cache, the immutable one, then the key index (range and bloom
 * filter first, so a new key costs no I/O; an existing key one data block, usually cached). The
 * commit leader counts a group before its WAL write and adds the counts under the apply lock as it
 * publishes the group; WAL replay counts each replayed batch the same way, from the counts the
 * manifest holds. A write cache switch notes the counts at its seqno ({@link
 * WriteCache#itemsAtSwitch}), and the flush of that cache commits them with its files, so the
 * manifest's counts are always those at its flushed seqno ({@link Manifest.Counters#items}). A key
 * whose newest version has an expiry is not counted (its expiry is a delete nobody writes, which no
 * lookup would see happen); docs/architecture.md, "Document expiry".
 *
 * <p>Thread-safety: {@link #deltas} is called by one thread at a time (the commit leader, or
 * replay); the counts are written under the apply lock and read by anyone.
 */
public final class ItemCounter {
  /**
   * Finds the newest key index record of a key in a version's files ({@code ReadPath#findRecord}).
   */
  @FunctionalInterface
  public interface RecordFinder {
    boolean find(int ks, KeyspaceFiles files, byte[] key, KeyRecord rec);
  }

  private final RecordFinder reads;
  private final KeyspaceCatalog catalog;

  /** The live counts as of the last published seqno, by keyspace id (absent: 0). */
  private final Map<Integer, Long> counts = new ConcurrentHashMap<>();

  public ItemCounter(RecordFinder reads, KeyspaceCatalog catalog) {
    this.reads = reads;
    this.catalog = catalog;
  }

  /** The live keys of keyspace {@code ks} as of the last published seqno. */
  public long count(int ks) {
    return counts.getOrDefault(ks, 0L);
  }

  /** The counts as of the last published seqno; a copy. Caller holds the apply lock (a switch). */
  public Map<Integer, Long> copy() {
    return Map.copyOf(counts);
  }

  /** Sets a keyspace's count (open; a recount). */
  public void set(int ks, long n) {
    counts.put(ks, n);
  }

  /**
   * What counting a group found: how it changes each keyspace's live keys, and for each write (by
   * batch and operation; null for a write to a keyspace no longer live) what is below the active
   * write cache for its key, which the write's entry keeps for the flush ({@link
   * WriteCache.Below}).
   */
  public record Counted(Map<Integer, Long> deltas, WriteCache.Below[][] below) {}

  /** Adds a group's deltas; caller holds the apply lock, just before it publishes the group. */
  public void add(Counted c) {
    for (Map.Entry<Integer, Long> d : c.deltas().entrySet())
      counts.merge(d.getKey(), d.getValue(), Long::sum);
  }

  /**
   * How the group's writes, in order, change each keyspace's live count, given {@code v}, which
   * holds every write published before the group (the leader's current version: a flush or
   * compaction installed since moves versions between its sources, but does not change which is the
   * newest). Writes to keyspaces no longer live are skipped, as the apply skips them.
   */
  public Counted deltas(Version v, List<Batch> group) {
    Map<Integer, Long> out = new HashMap<>(4);
    WriteCache.Below[][] below = new WriteCache.Below[group.size()][];
    int ops = 0;
    for (Batch b : group) ops += b.count;
    Map<ByteBuffer, State> written =
        ops > 1 ? new HashMap<>(ops * 2) : null; // the group's earlier writes
    KeyRecord rec = new KeyRecord();
    for (int g = 0; g < group.size(); g++) {
      Batch b = group.get(g);
      below[g] = new WriteCache.Below[b.count];
      for (int i = 0; i < b.count; i++) {
        int ks = b.keyspaces[i];
        if (!catalog.isLive(ks)) continue;
        boolean live = b.types[i] == Batch.PUT && b.expiry(i) == 0; // expiring keys are not counted
        byte[] key = b.key(i);
        ByteBuffer k = written == null ? null : ByteBuffer.wrap(WriteCache.storeKey(ks, key));
        State earlier = k == null ? null : written.get(k);
        State was = earlier != null ? earlier : stateIn(v, ks, key, rec);
        if (was.live != live) out.merge(ks, live ? 1L : -1L, Long::sum);
        below[g][i] = was.below;
        if (k != null) written.put(k, new State(live, was.below));
      }
    }
    return new Counted(out, below);
  }

  /** Whether a write cache entry is a counted key: a put without an expiry. */
  private static boolean counted(byte[] e) {
    return !WriteCache.isTombstone(e) && !WriteCache.expires(e);
  }

  /** A key's state before a write: whether it is live, and what is below the active write cache. */
  private record State(boolean live, WriteCache.Below below) {}

  /**
   * {@code key}'s newest version in {@code v}: in the active cache (what is below the cache is what
   * its entry says), the immutable one (below the active cache is that entry, whose document size
   * is not known before its flush: unknown, left to compaction to report), or the key index (its
   * record).
   */
  private State stateIn(Version v, int ks, byte[] key, KeyRecord rec) {
    byte[] e = v.active.get(ks, key);
    if (e != null) return new State(counted(e), WriteCache.belowOf(e));
    e = v.immutable == null ? null : v.immutable.get(ks, key);
    if (e != null) return new State(counted(e), WriteCache.Below.UNKNOWN);
    if (!reads.find(ks, v.files(ks), key, rec)) return new State(false, WriteCache.Below.NONE);
    // A version with an expiry is below as a tombstone is: its report is left to the compaction
    // that drops
    // it (at the bottom once it has expired, or under a newer version), so it is never reported
    // twice.
    return new State(
        !rec.tombstone && rec.expiry == 0,
        WriteCache.Below.of(rec.tombstone || rec.expiry != 0, rec.seqno, rec.docSize));
  }
}
