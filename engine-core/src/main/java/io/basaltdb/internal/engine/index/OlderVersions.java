package io.basaltdb.internal.engine.index;

import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.sstable.TableIterator;
import io.basaltdb.internal.sstable.TableReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The newest version of each of a sorted stream of keys in a set of key index tables: the tables
 * older than a level-0 merge's inputs, which {@link Compactor} probes for every key the merge
 * writes so the version each record supersedes goes to the delete list at once (see {@link
 * Compactor}, "revealing merges"). One forward cursor per table ({@link
 * TableIterator#seekForward}): probes in ascending order read each data block at most once, and a
 * table's bloom filter (pinned for the job) keeps the cursor off the blocks of keys it does not
 * hold: a merge costs about one pass over the blocks that hold its keys (in Magma's update
 * workload, the base level's), and a probe of each older filter per key. No block is cached.
 *
 * <p>After {@link #find} returns true, {@link #seqno}, {@link #docSize} and {@link #tombstone}
 * describe the version found.
 *
 * <p>Thread-safety: one thread; the tables must stay open (their version pinned) until {@link
 * #close}.
 */
final class OlderVersions implements AutoCloseable {
  /** A cursor over one table and its pinned bloom filter, opened at its first probe. */
  private static final class Cursor {
    final KeyspaceFiles.Table table;
    TableIterator it;
    TableReader.FilterProbe filter;

    public Cursor(KeyspaceFiles.Table table) {
      this.table = table;
    }

    /**
     * Whether the table holds {@code key} (bloom filter hash {@code hash}), the cursor then on its
     * record.
     */
    boolean probe(byte[] key, long hash) {
      if (filter == null) filter = table.reader().filterProbe();
      if (!filter.mayContain(hash)) return false;
      if (it == null) {
        it = table.reader().sequentialIterator();
        it.seek(key);
      } else {
        it.seekForward(key);
      }
      return it.valid() && it.compareKey(key) == 0;
    }

    void close() {
      if (it != null) it.close();
      if (filter != null) filter.close();
      it = null;
      filter = null;
    }
  }

  /**
   * Tables of one level, newest first, that may overlap; groups of a level are disjoint and
   * ascending.
   */
  private static final class Group {
    final Cursor[] tables;
    final byte[] largest;

    Group(List<KeyspaceFiles.Table> tables) {
      this.tables = new Cursor[tables.size()];
      byte[] max = null;
      for (int i = 0; i < this.tables.length; i++) {
        KeyspaceFiles.Table t = tables.get(i);
        this.tables[i] = new Cursor(t);
        if (max == null || Arrays.compareUnsigned(t.largest(), max) > 0) max = t.largest();
      }
      this.largest = max;
    }

    void close() {
      for (Cursor c : tables) c.close();
    }
  }

  /** Level 0's older tables, newest first: each may hold any key of its range. */
  private final Cursor[] level0;

  /** Each deeper level's groups by key, and the one the last probe reached. */
  private final Group[][] levels;

  private final int[] at;
  private byte[] last;

  long seqno;
  int docSize;
  boolean tombstone;

  /**
   * {@code level0} newest first, then each deeper level as groups of tables: a leveled level's
   * tables one by one, by key; a guarded level's guards, by key, each with its tables newest first.
   */
  OlderVersions(List<KeyspaceFiles.Table> level0, List<List<List<KeyspaceFiles.Table>>> levels) {
    this.level0 = new Cursor[level0.size()];
    for (int i = 0; i < this.level0.length; i++) this.level0[i] = new Cursor(level0.get(i));
    List<Group[]> ls = new ArrayList<>();
    for (List<List<KeyspaceFiles.Table>> level : levels) {
      List<Group> gs = new ArrayList<>();
      for (List<KeyspaceFiles.Table> g : level) {
        if (!g.isEmpty()) gs.add(new Group(g));
      }
      if (!gs.isEmpty()) ls.add(gs.toArray(new Group[0]));
    }
    this.levels = ls.toArray(new Group[0][]);
    this.at = new int[this.levels.length];
  }

  /** Whether no table is probed: every key then has no older version. */
  boolean isEmpty() {
    return level0.length == 0 && levels.length == 0;
  }

  /**
   * Finds {@code key}'s newest version in the tables; keys must come in strictly ascending order.
   * Level 0 first, newest table first, then each deeper level: the first table holding the key
   * holds its newest version there (the {@link KeyspaceFiles} search order).
   */
  boolean find(byte[] key) {
    if (last != null && Arrays.compareUnsigned(last, key) >= 0) {
      throw new IllegalStateException("keys probed out of order");
    }
    last = key;
    long hash = TableReader.keyHash(key);
    for (Cursor c : level0) {
      if (inRange(c.table, key) && c.probe(key, hash)) return found(c);
    }
    for (int l = 0; l < levels.length; l++) {
      Group[] level = levels[l];
      int i = at[l];
      while (i < level.length && Arrays.compareUnsigned(level[i].largest, key) < 0)
        level[i++].close();
      at[l] = i;
      if (i == level.length) continue;
      for (Cursor c : level[i].tables) {
        if (inRange(c.table, key) && c.probe(key, hash)) return found(c);
      }
    }
    return false;
  }

  private static boolean inRange(KeyspaceFiles.Table t, byte[] key) {
    return Arrays.compareUnsigned(t.smallest(), key) <= 0
        && Arrays.compareUnsigned(t.largest(), key) >= 0;
  }

  private boolean found(Cursor c) {
    seqno = c.it.seqno();
    docSize = c.it.docSize();
    // A version with an expiry counts as a tombstone here: the compaction that drops it reports it
    // (at the
    // bottom once expired, or under a newer version), never an early reveal, so it is reported
    // once.
    tombstone = c.it.tombstone() || c.it.expiry() != 0;
    return true;
  }

  @Override
  public void close() {
    for (Cursor c : level0) c.close();
    for (Group[] level : levels) {
      for (Group g : level) g.close();
    }
  }
}
