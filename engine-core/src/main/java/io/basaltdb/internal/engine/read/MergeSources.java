package io.basaltdb.internal.engine.read;

import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.skiplist.SnapshotIterator;
import io.basaltdb.internal.sstable.TableIterator;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@link MergingIterator.Source}s of the store: one keyspace of a write cache snapshot, a key
 * index table, and a guarded key index level. Each walks forward from a key on, or, for a reverse
 * merge, backward from the last key before a bound ({@link SnapshotIterator#seekBefore}, {@link
 * TableIterator#seekBefore}, guards from high to low).
 *
 * <p>Thread-safety: one thread at a time, as the iterators they wrap.
 */
public final class MergeSources {
  private MergeSources() {}

  /** One keyspace of a write cache snapshot, from a key on, or backward from before a key. */
  static final class CacheSource implements MergingIterator.Source {
    private final SnapshotIterator it;
    private final int ks;
    private final boolean reverse;
    private byte[] key;
    private byte[] entry;

    CacheSource(SnapshotIterator it, int ks, byte[] from) {
      this.it = it;
      this.ks = ks;
      this.reverse = false;
      it.seek(WriteCache.storeKey(ks, from));
      load();
    }

    /**
     * Keyspace {@code ks} backward from its last key before {@code to} (null: its last key); the
     * keys of the keyspaces before it end the walk as the next keyspace's end a forward one.
     */
    CacheSource(SnapshotIterator it, int ks, byte[] to, boolean reverse) {
      if (!reverse) throw new IllegalArgumentException("a forward source starts from a key");
      this.it = it;
      this.ks = ks;
      this.reverse = true;
      it.seekBefore(to == null ? WriteCache.storeKeyEnd(ks) : WriteCache.storeKey(ks, to));
      load();
    }

    private void load() {
      if (it.valid()) {
        byte[] sk = it.key();
        if (WriteCache.keyspaceOf(sk) == ks) {
          key = WriteCache.userKey(sk);
          entry = it.value();
          return;
        }
      }
      key = null;
      entry = null;
    }

    @Override
    public boolean valid() {
      return key != null;
    }

    @Override
    public byte[] key() {
      return key;
    }

    @Override
    public long seqno() {
      return WriteCache.seqnoOf(entry);
    }

    @Override
    public boolean tombstone() {
      return WriteCache.isTombstone(entry);
    }

    @Override
    public long expiry() {
      return WriteCache.expiryOf(entry);
    }

    /** The current value (a copy). */
    byte[] value() {
      return WriteCache.valueOf(entry);
    }

    @Override
    public void next() {
      if (reverse) it.prev();
      else it.next();
      load();
    }

    @Override
    public void close() {
      it.close();
    }
  }

  /**
   * Adds to {@code out} a source per key index table of {@code files} from key {@code from} on
   * (level 0's tables and each leveled level's), or one per guarded level ({@link LevelSource},
   * which opens one guard at a time and stops at {@code to}, null for none). {@code fillCache}: the
   * tables' data blocks go into the block cache, as a read's do. A source made before a failure
   * stays in {@code out} for the caller to close.
   */
  static void addIndexSources(
      KeyspaceFiles files,
      byte[] from,
      byte[] to,
      boolean fillCache,
      java.util.List<MergingIterator.Source> out) {
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      if (l > 0 && files.guarded()) {
        if (!files.level(l).isEmpty()) out.add(new LevelSource(files, l, from, to));
        continue;
      }
      for (KeyspaceFiles.Table t : files.level(l))
        out.add(new TableSource(t.reader().iterator(fillCache), from));
    }
  }

  /**
   * As {@link #addIndexSources} for a reverse merge: sources that walk backward from the last key
   * before {@code to} (null: from the last key); a guarded level's stops at {@code from} (null:
   * none), opening no guard wholly below it.
   */
  static void addReverseIndexSources(
      KeyspaceFiles files,
      byte[] from,
      byte[] to,
      boolean fillCache,
      java.util.List<MergingIterator.Source> out) {
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      if (l > 0 && files.guarded()) {
        if (!files.level(l).isEmpty()) out.add(new LevelSource(files, l, from, to, true));
        continue;
      }
      for (KeyspaceFiles.Table t : files.level(l))
        out.add(TableSource.before(t.reader().iterator(fillCache), to));
    }
  }

  /** A source of key index records: each names its document by seqno and location hint. */
  interface IndexSource extends MergingIterator.Source {
    long hint();
  }

  /**
   * A key index table's records, from a key on (or from its first), or backward from before a key
   * ({@link #before}).
   */
  public static final class TableSource implements IndexSource {
    private final TableIterator it;
    private final boolean reverse;

    /** The current key, copied once per position; null when exhausted. */
    private byte[] key;

    public TableSource(TableIterator it, byte[] from) {
      this.it = it;
      this.reverse = false;
      if (from == null) it.seekFirst();
      else it.seek(from);
      load();
    }

    private TableSource(TableIterator it) {
      this.it = it;
      this.reverse = true;
    }

    /**
     * The records of {@code it}'s table backward, from the last before {@code to} (null: from its
     * last).
     */
    public static TableSource before(TableIterator it, byte[] to) {
      TableSource s = new TableSource(it);
      if (to == null) it.seekLast();
      else it.seekBefore(to);
      s.load();
      return s;
    }

    private void load() {
      key = it.valid() ? it.key() : null;
    }

    @Override
    public boolean valid() {
      return key != null;
    }

    @Override
    public byte[] key() {
      return key;
    }

    @Override
    public long seqno() {
      return it.seqno();
    }

    @Override
    public boolean tombstone() {
      return it.tombstone();
    }

    @Override
    public long expiry() {
      return it.expiry();
    }

    public int docSize() {
      return it.docSize();
    }

    @Override
    public long hint() {
      return it.hint();
    }

    public boolean olderReported() {
      return it.olderReported();
    }

    @Override
    public void next() {
      if (reverse) it.prev();
      else it.next();
      load();
    }

    @Override
    public void close() {
      it.close();
    }
  }

  /**
   * One guarded level of a key index ({@link io.basaltdb.internal.engine.version.Guards}), from a
   * key on: the newest version of each key (tombstones included), guard by guard. Only the current
   * guard's tables are open, merged by an inner {@link MergingIterator}; the next non-empty guard's
   * open once it is exhausted. A cursor thus seeks the tables of one guard per level, not every
   * table of the level. Reverse, it walks the guards from high to low, each backward.
   */
  static final class LevelSource implements IndexSource {
    private final KeyspaceFiles files;
    private final int level;
    private final boolean reverse;

    /**
     * The cursor's far bound, or null: forward its exclusive upper bound (guards starting at or
     * above it are never opened), reverse its inclusive lower bound (guards ending at or below it
     * are never opened).
     */
    private final byte[] end;

    private int guard;
    private MergingIterator merge;
    private TableSource current;

    LevelSource(KeyspaceFiles files, int level, byte[] from, byte[] to) {
      this.files = files;
      this.level = level;
      this.reverse = false;
      this.end = to;
      this.guard = files.guards.guardOf(level, from);
      open(from);
    }

    /** Reverse: backward from the last key before {@code to} (null: the level's last key). */
    LevelSource(KeyspaceFiles files, int level, byte[] from, byte[] to, boolean reverse) {
      if (!reverse) throw new IllegalArgumentException("a forward level source starts from a key");
      this.files = files;
      this.level = level;
      this.reverse = true;
      this.end = from;
      int g = to == null ? files.guardCount(level) - 1 : files.guards.guardOf(level, to);
      // A guard starting at to holds no key before it.
      if (g > 0 && to != null && java.util.Arrays.equals(files.guards.key(level, g), to)) g--;
      this.guard = g;
      open(to);
    }

    /**
     * Opens guard {@code guard} (from {@code bound}, or its first key; reverse: from its last key
     * before {@code bound}, or its last) and moves to its first version, skipping empty guards; on
     * a failure nothing stays open and the source is exhausted.
     */
    private void open(byte[] bound) {
      current = null;
      while (reverse ? guard >= 0 : guard < files.guardCount(level)) {
        if (pastEnd()) break;
        java.util.List<KeyspaceFiles.Table> tables = files.guardTables(level, guard);
        java.util.List<TableSource> sources = new java.util.ArrayList<>();
        try {
          for (KeyspaceFiles.Table t : tables) {
            TableIterator it = t.reader().iterator(true);
            sources.add(reverse ? TableSource.before(it, bound) : new TableSource(it, bound));
          }
          merge =
              new MergingIterator(
                  sources, false, null, 0, reverse); // tombstones kept: the outer merge judges
          if (merge.next()) {
            current = (TableSource) merge.current();
            return;
          }
        } catch (RuntimeException | Error e) {
          merge = null;
          for (TableSource s : sources) s.close();
          throw e;
        }
        merge.close();
        merge = null;
        guard += reverse ? -1 : 1;
        bound = null;
      }
    }

    /** Whether every key of guard {@code guard} lies beyond the cursor's far bound. */
    private boolean pastEnd() {
      if (end == null) return false;
      if (!reverse) {
        return guard > 0
            && java.util.Arrays.compareUnsigned(files.guards.key(level, guard), end) >= 0;
      }
      // The guard's keys are below the next guard's key: all below from if that is at or below it.
      return guard + 1 < files.guardCount(level)
          && java.util.Arrays.compareUnsigned(files.guards.key(level, guard + 1), end) <= 0;
    }

    @Override
    public boolean valid() {
      return current != null;
    }

    @Override
    public byte[] key() {
      return current.key();
    }

    @Override
    public long seqno() {
      return current.seqno();
    }

    @Override
    public boolean tombstone() {
      return current.tombstone();
    }

    @Override
    public long expiry() {
      return current.expiry();
    }

    @Override
    public long hint() {
      return current.hint();
    }

    @Override
    public void next() {
      if (merge == null) return; // exhausted, or a failed open
      boolean more;
      try {
        more = merge.next();
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
      if (more) {
        current = (TableSource) merge.current();
        return;
      }
      merge.close();
      merge = null;
      guard += reverse ? -1 : 1;
      open(null);
    }

    @Override
    public void close() {
      if (merge != null) merge.close();
      merge = null;
      current = null;
    }
  }

  /**
   * The live keys of keyspace {@code ks} in {@code v}, by a merge of its write caches and key index
   * tables (a recount, at the open of a store whose counts are not exact).
   */
  public static long countLive(Version v, int ks) {
    return countLive(v, ks, null);
  }

  /**
   * As {@link #countLive(Version, int)}; for a hashed keyspace ({@code index} not null), its trie's
   * records with no expiry, corrected by the newest write cache entry of each key the caches hold:
   * the merge then runs over the caches alone, keeping tombstones.
   */
  public static long countLive(
      Version v, int ks, io.basaltdb.internal.engine.hashed.HashedIndex index) {
    long[] n = {0};
    if (index != null) {
      index
          .trie()
          .forEach(
              r -> {
                if (r.expiry == 0) n[0]++;
              });
    }
    io.basaltdb.internal.sstable.KeyRecord rec = new io.basaltdb.internal.sstable.KeyRecord();
    List<MergingIterator.Source> sources = new ArrayList<>();
    List<io.basaltdb.internal.skiplist.Snapshot> snaps = new ArrayList<>();
    try {
      for (WriteCache c : new WriteCache[] {v.active, v.immutable}) {
        if (c == null) continue;
        io.basaltdb.internal.skiplist.Snapshot s = c.list.snapshot();
        snaps.add(s);
        sources.add(new MergeSources.CacheSource(s.iterator(), ks, new byte[0]));
      }
      if (index == null)
        MergeSources.addIndexSources(v.files(ks), new byte[0], null, false, sources);
      try (MergingIterator merge = new MergingIterator(sources, index == null, null, 0)) {
        sources = List.of(); // the merge closes them now
        while (merge.next()) {
          MergingIterator.Source c = merge.current();
          boolean live = !c.tombstone() && c.expiry() == 0; // keys with an expiry are not counted
          boolean counted = index != null && index.get(c.key(), rec) && rec.expiry == 0;
          n[0] += (live ? 1 : 0) - (counted ? 1 : 0);
        }
      }
      return n[0];
    } finally {
      for (MergingIterator.Source s : sources) s.close();
      for (io.basaltdb.internal.skiplist.Snapshot s : snaps) s.close();
    }
  }
}
