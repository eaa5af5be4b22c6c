package io.basaltdb.internal.engine.hashed;

import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.DocumentIterator;
import io.basaltdb.internal.sstable.KeyRecord;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
  private final Map<Integer, HashedIndex> byKeyspace = new ConcurrentHashMap<>();
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
    return byKeyspace.get(ks);
  }

  public boolean isEmpty() {
    return byKeyspace.isEmpty();
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
    byKeyspace.put(ks, idx);
    return idx;
  }

  /**
   * Registers a snapshot at {@code seqno} with every index; false, with none registered, if one of
   * them no longer holds the versions it would need.
   */
  public synchronized boolean register(long seqno) {
    java.util.List<HashedIndex> done = new java.util.ArrayList<>();
    for (HashedIndex idx : byKeyspace.values()) {
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
    for (HashedIndex idx : byKeyspace.values()) idx.unregister(seqno);
  }

  /** Forgets a dropped keyspace's index and frees it once its readers have left. */
  public synchronized void drop(int ks) {
    HashedIndex idx = byKeyspace.remove(ks);
    if (idx != null) idx.close();
  }

  /** Bytes the tries' records and nodes take. */
  public long bytes() {
    long b = 0;
    for (HashedIndex idx : byKeyspace.values()) b += idx.trie().bytes();
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

  /**
   * Rebuilds {@code idx} from the keyspace's log at open: every document its delete list does not
   * name is the newest version of its key (a flush reports each version it replaces, and each
   * tombstone, in its own commit), so the live puts are exactly the index. Segments are in seqno
   * order, so the delete list is merged in one pass. Returns the documents read.
   */
  public static long rebuild(HashedIndex idx, KeyspaceFiles files) {
    long read = 0;
    KeyRecord have = new KeyRecord();
    try (DeleteList.Cursor stale = new DeleteList.Cursor(files.deletes, 0, Long.MAX_VALUE - 1)) {
      boolean more = stale.next();
      for (KeyspaceFiles.Segment s : files.segments) {
        DocumentIterator it = s.reader().iterator(s.state().startSeqno());
        while (it.hasNext()) {
          Document d = it.next();
          read++;
          while (more && stale.seqno() < d.seqno()) more = stale.next();
          if (more && stale.seqno() == d.seqno()) continue; // replaced or removed
          if (d.tombstone()) continue;
          // A live version is the only one of its key; keep the newest should two survive.
          if (idx.trie().get(d.key(), have) && have.seqno > d.seqno()) continue;
          idx.load(d.key(), d.seqno(), it.lastSize(), it.lastHint(), d.expiry());
        }
      }
    }
    idx.trie().publishRetired();
    return read;
  }

  @Override
  public void close() {
    for (int ks : byKeyspace.keySet()) drop(ks);
  }
}
