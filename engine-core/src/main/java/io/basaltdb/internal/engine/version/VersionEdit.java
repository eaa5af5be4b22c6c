package io.basaltdb.internal.engine.version;

import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.segment.SegmentState;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One change of the store's file set (LevelDB's {@code VersionEdit}): what a flush, a compaction, a
 * keyspace creation or drop, a rollback or the creation of a store added and removed. Only {@link
 * VersionSet} applies edits: it writes the manifest the edit leads to and installs the version.
 *
 * <p>Per keyspace an edit holds key index tables added (with their level) and removed (by file
 * number), log segments put (a new segment, or a new checkpointed state of one, replacing the state
 * with the same id) and removed (by id; a put and a remove of other ids in one edit is a segment
 * replacement, as segment compaction will commit it), and a delta of the keyspace's {@link
 * Manifest.Counters}. Store-wide it holds the flushed seqno, the WAL start, the WAL head (the WAL
 * file current at the commit), keyspaces created and dropped, and whether the immutable write cache
 * is now flushed.
 *
 * <p>Garbage collection (Magma section 4) adds, per keyspace: delete list tables added (a key index
 * compaction's discards, or a delete list compaction's output) and removed; the seqnos and sizes of
 * the versions a key index compaction discarded, which become the garbage of the segments holding
 * them when the edit applies (so garbage is counted in the same manifest that drops the versions:
 * exactly once); and a segment replacement (a segment compaction), whose output inherits the
 * inputs' garbage less what the compaction removed.
 *
 * <p>Added tables and put segments carry their open readers when an edit is built by a running
 * store, so the new version can read them; offline edits (rollback, a new store) carry metadata
 * only.
 *
 * <p>Thread-safety: built by one thread, then handed to the VersionSet; not shared.
 */
public final class VersionEdit {
  /** The changes to one keyspace. */
  static final class Change {
    /** Added tables, level-0 ones newest first. */
    final List<Manifest.TableMeta> addedTables = new ArrayList<>();

    final Map<Long, KeyspaceFiles.Table> openedTables = new LinkedHashMap<>();
    final Set<Long> removedTables = new HashSet<>();
    final List<SegmentState> putSegments = new ArrayList<>();
    final Map<Long, KeyspaceFiles.Segment> openedSegments = new LinkedHashMap<>();
    final Set<Long> removedSegments = new HashSet<>();
    Manifest.Counters delta = Manifest.Counters.ZERO;

    /** Added delete list tables; level-0 ones newest first, {@code addedIn} set when applied. */
    final List<Manifest.DeleteTableMeta> addedDeletes = new ArrayList<>();

    final Map<Long, KeyspaceFiles.DeleteTable> openedDeletes = new LinkedHashMap<>();
    final Set<Long> removedDeletes = new HashSet<>();

    /** Seqnos a key index compaction discarded, ascending, and their document sizes. */
    long[] discardSeqnos = new long[0];

    int[] discardSizes = new int[0];

    /** A segment compaction, or null. */
    SegmentReplacement replacement;

    /** A rollback's delete list and garbage, replacing the current ones; null otherwise. */
    List<Manifest.DeleteTableMeta> restoredDeletes;

    List<Manifest.SegmentGarbage> restoredGarbage;

    /** Guard keys a compaction added, by level. */
    final Map<Integer, List<byte[]>> addedGuards = new LinkedHashMap<>();

    /** A rollback's guards, replacing the current ones; null otherwise. */
    Guards restoredGuards;

    /**
     * The keyspace's key index format from now on ({@link #keyIndexFormat}); -1 leaves it alone.
     */
    int trieChunkBytes = -1;

    /**
     * The highest seqno of a tombstone a compaction dropped (0: none): the purge seqno rises to it.
     */
    long purgedSeqno;

    /** A rollback's purge seqno, replacing the current one; -1 otherwise. */
    long restoredPurgeSeqno = -1;
  }

  /**
   * Segments {@code inputs} (adjacent, none the tail) replaced by {@code output} (-1: every
   * document was garbage), which removed {@code removedBytes} and {@code removedCount} of their
   * garbage and started from manifest {@code gcBase}.
   */
  public record SegmentReplacement(
      List<Long> inputs, long output, long removedBytes, long removedCount, long gcBase) {}

  final Map<Integer, Change> changes = new LinkedHashMap<>();
  final Map<Integer, String> created = new LinkedHashMap<>();

  /** The chunk size of each created keyspace with HB+-trie tables. */
  final Map<Integer, Integer> createdTrieChunks = new java.util.HashMap<>();

  final Set<Integer> dropped = new HashSet<>();

  /** Absolute values, or -1 to keep the current ones. */
  long flushedSeqno = -1;

  long walStart = -1;
  long walHead = -1;
  private boolean walHeadReset;

  /** Manifest flags this edit sets and clears ({@link Manifest#FLAG_ITEM_COUNTS}). */
  private int flagsSet, flagsCleared;

  /** The immutable write cache is flushed: the new version reads without it. */
  boolean writeCacheFlushed;

  /**
   * Run by the VersionSet under its lock just before the manifest is written (a compaction tells
   * its {@link io.basaltdb.internal.engine.base.DiscardListener} there, so no other commit comes
   * between the calls and the one dropping the versions); not run if the edit is refused.
   */
  public Runnable beforeCommit = () -> {};

  /**
   * Run by the VersionSet under the apply lock right after it installs the edit's version, so a
   * snapshot sees both or neither: a batch that skipped the WAL publishes its seqnos there ({@code
   * Flusher.flushBatch}). Not run if the edit is refused or its manifest cannot be written.
   */
  public Runnable onInstall = () -> {};

  private Change change(int keyspace) {
    return changes.computeIfAbsent(keyspace, k -> new Change());
  }

  /** Adds an open table (a running store's flush or compaction). */
  public VersionEdit addTable(int keyspace, KeyspaceFiles.Table t) {
    Change c = change(keyspace);
    c.addedTables.add(new Manifest.TableMeta(t.fileNumber(), t.level()));
    c.openedTables.put(t.fileNumber(), t);
    return this;
  }

  /** Adds a table by its metadata only (offline edits). */
  public VersionEdit addTable(int keyspace, Manifest.TableMeta t) {
    change(keyspace).addedTables.add(t);
    return this;
  }

  public VersionEdit removeTable(int keyspace, long fileNumber) {
    change(keyspace).removedTables.add(fileNumber);
    return this;
  }

  /** Puts a segment state with its reader (a running store's flush). */
  public VersionEdit putSegment(int keyspace, KeyspaceFiles.Segment s) {
    Change c = change(keyspace);
    c.putSegments.add(s.state());
    c.openedSegments.put(s.state().segmentId(), s);
    return this;
  }

  /** Puts a segment state by its metadata only (offline edits). */
  public VersionEdit putSegment(int keyspace, SegmentState s) {
    change(keyspace).putSegments.add(s);
    return this;
  }

  public VersionEdit removeSegment(int keyspace, long segmentId) {
    change(keyspace).removedSegments.add(segmentId);
    return this;
  }

  /** Adds an open delete list table. */
  public VersionEdit addDeleteTable(int keyspace, KeyspaceFiles.DeleteTable t) {
    Change c = change(keyspace);
    c.addedDeletes.add(t.meta());
    c.openedDeletes.put(t.meta().fileNumber(), t);
    return this;
  }

  public VersionEdit removeDeleteTable(int keyspace, long fileNumber) {
    change(keyspace).removedDeletes.add(fileNumber);
    return this;
  }

  /**
   * The versions a key index compaction dropped: {@code seqnos} ascending, with their document
   * sizes. Each becomes garbage of the segment holding it when the edit applies.
   */
  public VersionEdit discards(int keyspace, long[] seqnos, int[] sizes) {
    Change c = change(keyspace);
    if (c.discardSeqnos.length > 0) throw new IllegalStateException("discards already set");
    c.discardSeqnos = seqnos;
    c.discardSizes = sizes;
    return this;
  }

  /** A segment compaction's replacement; its output segment is put separately. */
  public VersionEdit replaceSegments(int keyspace, SegmentReplacement r) {
    Change c = change(keyspace);
    c.replacement = r;
    for (long id : r.inputs()) c.removedSegments.add(id);
    return this;
  }

  /** A rollback: the keyspace's delete list and segment garbage become these. */
  VersionEdit restoreGarbageState(
      int keyspace, List<Manifest.DeleteTableMeta> deletes, List<Manifest.SegmentGarbage> garbage) {
    Change c = change(keyspace);
    c.restoredDeletes = deletes;
    c.restoredGarbage = garbage;
    return this;
  }

  /**
   * Guard keys a compaction chose at level {@code level} (committed with the tables it cut at
   * them).
   */
  public VersionEdit addGuards(int keyspace, int level, List<byte[]> keys) {
    if (!keys.isEmpty())
      change(keyspace).addedGuards.computeIfAbsent(level, l -> new ArrayList<>()).addAll(keys);
    return this;
  }

  /**
   * A compaction dropped tombstones up to seqno {@code seqno}: the keyspace's purge seqno rises to
   * it (never falls, but in a rollback, {@link #restorePurgeSeqno}).
   */
  public VersionEdit purged(int keyspace, long seqno) {
    Change c = change(keyspace);
    c.purgedSeqno = Math.max(c.purgedSeqno, seqno);
    return this;
  }

  /** A rollback: the keyspace's purge seqno becomes this. */
  VersionEdit restorePurgeSeqno(int keyspace, long seqno) {
    change(keyspace).restoredPurgeSeqno = seqno;
    return this;
  }

  /** A rollback: the keyspace's guards become these. */
  VersionEdit restoreGuards(int keyspace, Guards guards) {
    change(keyspace).restoredGuards = guards;
    return this;
  }

  public VersionEdit addCounters(int keyspace, Manifest.Counters delta) {
    Change c = change(keyspace);
    c.delta = c.delta.plus(delta);
    return this;
  }

  public VersionEdit createKeyspace(int id, String name) {
    return createKeyspace(id, name, 0);
  }

  /**
   * Creates keyspace {@code id}, whose key index tables are HB+-trie tables with chunks of {@code
   * trieChunkBytes} bytes (0: block tables), or hashed ({@link KeyspaceLayout}).
   */
  public VersionEdit createKeyspace(int id, String name, int trieChunkBytes) {
    created.put(id, name);
    if (trieChunkBytes != 0) createdTrieChunks.put(id, trieChunkBytes);
    return this;
  }

  /**
   * Switches keyspace {@code keyspace}'s key index format: tables written from this commit on are
   * HB+-trie tables with {@code trieChunkBytes}-byte chunks (0: block tables); the tables it has
   * keep their format until a compaction rewrites them (readers dispatch on each table's footer).
   */
  public VersionEdit keyIndexFormat(int keyspace, int trieChunkBytes) {
    if (!KeyspaceLayout.valid(trieChunkBytes, Manifest.FORMAT_VERSION))
      throw new IllegalArgumentException(
          "key index layout " + trieChunkBytes + ": 0, 4, 8, 16 or a hashed keyspace's");
    change(keyspace).trieChunkBytes = trieChunkBytes;
    return this;
  }

  public VersionEdit dropKeyspace(int id) {
    dropped.add(id);
    return this;
  }

  public VersionEdit flushedSeqno(long seqno) {
    flushedSeqno = seqno;
    return this;
  }

  public VersionEdit walStart(long number) {
    walStart = number;
    return this;
  }

  /**
   * The WAL file current at this commit; a running store's head never moves back ({@link
   * #resetWalHead}).
   */
  public VersionEdit walHead(long number) {
    walHead = number;
    return this;
  }

  /** Sets the WAL head even below the current one: a rollback's 0 (no WAL file is needed). */
  VersionEdit resetWalHead(long number) {
    walHead = number;
    walHeadReset = true;
    return this;
  }

  /** Sets ({@code on}) or clears manifest flag {@code flag}. */
  public VersionEdit flag(int flag, boolean on) {
    if (on) {
      flagsSet |= flag;
      flagsCleared &= ~flag;
    } else {
      flagsCleared |= flag;
      flagsSet &= ~flag;
    }
    return this;
  }

  public VersionEdit writeCacheFlushed() {
    writeCacheFlushed = true;
    return this;
  }

  /**
   * The manifest this edit makes of {@code base}: numbered {@code number}, with {@code
   * nextFileNumber}. Changes to keyspaces {@code base} does not hold (dropped meanwhile) are
   * ignored; their files are then named by no manifest and deleted as obsolete.
   */
  public Manifest applyTo(Manifest base, long number, long createdMillis, long nextFileNumber) {
    List<Manifest.KeyspaceMeta> out = new ArrayList<>();
    int nextKeyspaceId = base.nextKeyspaceId();
    for (Manifest.KeyspaceMeta k : base.keyspaces()) {
      if (dropped.contains(k.id())) continue;
      Change c = changes.get(k.id());
      out.add(c == null ? k : apply(k, c, number));
    }
    for (Map.Entry<Integer, String> e : created.entrySet()) {
      Manifest.KeyspaceMeta fresh =
          new Manifest.KeyspaceMeta(
              e.getKey(),
              e.getValue(),
              List.of(),
              List.of(),
              Manifest.Counters.ZERO,
              List.of(),
              List.of(),
              Guards.EMPTY,
              0,
              createdTrieChunks.getOrDefault(e.getKey(), 0));
      Change c = changes.get(e.getKey());
      out.add(c == null ? fresh : apply(fresh, c, number));
      nextKeyspaceId = Math.max(nextKeyspaceId, e.getKey() + 1);
    }
    return new Manifest(
        number,
        createdMillis,
        flushedSeqno >= 0 ? flushedSeqno : base.flushedSeqno(),
        nextFileNumber,
        walStart >= 0 ? walStart : base.walStart(),
        walHead < 0 ? base.walHead() : walHeadReset ? walHead : Math.max(walHead, base.walHead()),
        nextKeyspaceId,
        out,
        (base.flags() | flagsSet) & ~flagsCleared);
  }

  private static Manifest.KeyspaceMeta apply(Manifest.KeyspaceMeta k, Change c, long number) {
    // Each level's tables are listed newest first (only level 0 and a guarded level's guards need
    // the
    // order: their tables overlap; KeyspaceFiles sorts a leveled level by key). Tables added to a
    // level
    // the edit removes nothing from are newer than every table there (a flush; a push out of the
    // level
    // above) and go in front; tables added to a level the edit also removes from (a level-0 merge,
    // an
    // in-place merge, a leveled merge, a rollback) take the place of the newest table removed
    // there: the
    // inputs of a merge are neighbours in the order, and tables added while it ran stay in front.
    List<Manifest.TableMeta> tables = new ArrayList<>();
    for (int l = 0; l < KeyspaceFiles.MAX_LEVELS; l++) {
      List<Manifest.TableMeta> added = new ArrayList<>();
      for (Manifest.TableMeta t : c.addedTables) {
        if (t.level() == l) added.add(t);
      }
      boolean removesHere = false;
      for (Manifest.TableMeta t : k.tables()) {
        if (t.level() == l && c.removedTables.contains(t.fileNumber())) removesHere = true;
      }
      if (!removesHere) tables.addAll(added);
      for (Manifest.TableMeta t : k.tables()) {
        if (t.level() != l) continue;
        if (!c.removedTables.contains(t.fileNumber())) {
          tables.add(t);
        } else if (removesHere) {
          tables.addAll(added); // at the newest removed table's place
          removesHere = false;
        }
      }
    }
    List<SegmentState> segments = new ArrayList<>();
    for (SegmentState s : k.segments()) {
      if (!c.removedSegments.contains(s.segmentId())) segments.add(s);
    }
    for (SegmentState s : c.putSegments) {
      int i = 0;
      while (i < segments.size() && segments.get(i).segmentId() != s.segmentId()) i++;
      if (i < segments.size()) segments.set(i, s);
      else segments.add(s);
    }
    segments.sort((a, b) -> Long.compare(a.startSeqno(), b.startSeqno()));
    List<Manifest.DeleteTableMeta> deletes =
        c.restoredDeletes != null ? c.restoredDeletes : deletes(k, c, number);
    List<Manifest.SegmentGarbage> garbage =
        c.restoredGarbage != null ? c.restoredGarbage : garbage(k, c, segments);
    Guards guards = c.restoredGuards != null ? c.restoredGuards : k.guards();
    for (Map.Entry<Integer, List<byte[]>> e : c.addedGuards.entrySet())
      guards = guards.withAdded(e.getKey(), e.getValue());
    long purge =
        Math.max(c.restoredPurgeSeqno >= 0 ? c.restoredPurgeSeqno : k.purgeSeqno(), c.purgedSeqno);
    return new Manifest.KeyspaceMeta(
        k.id(),
        k.name(),
        tables,
        segments,
        k.counters().plus(c.delta),
        deletes,
        garbage,
        guards,
        purge,
        c.trieChunkBytes >= 0 ? c.trieChunkBytes : k.trieChunkBytes());
  }

  /** Level-0 delete tables newest first (added ones are the newest), then level 1 by seqno. */
  private static List<Manifest.DeleteTableMeta> deletes(
      Manifest.KeyspaceMeta k, Change c, long number) {
    List<Manifest.DeleteTableMeta> out = new ArrayList<>();
    for (Manifest.DeleteTableMeta d : c.addedDeletes) {
      if (d.level() == 0) out.add(d.addedIn() < 0 ? d.withAddedIn(number) : d);
    }
    for (Manifest.DeleteTableMeta d : k.deletes()) {
      if (!c.removedDeletes.contains(d.fileNumber())) out.add(d);
    }
    for (Manifest.DeleteTableMeta d : c.addedDeletes) {
      if (d.level() != 0) out.add(d.addedIn() < 0 ? d.withAddedIn(number) : d);
    }
    out.sort(
        (a, b) ->
            a.level() != b.level()
                ? Integer.compare(a.level(), b.level())
                : a.level() == 0
                    ? 0
                    : Long.compare(a.minSeqno(), b.minSeqno())); // stable: level 0 keeps its order
    return out;
  }

  /**
   * The segments' garbage after the edit: a replacement's output inherits its inputs' garbage less
   * what it removed (what was discarded while it ran), each discarded version adds to the segment
   * whose seqno range holds it, and entries of segments no longer present go.
   */
  private static List<Manifest.SegmentGarbage> garbage(
      Manifest.KeyspaceMeta k, Change c, List<SegmentState> segments) {
    Map<Long, Manifest.SegmentGarbage> byId = new LinkedHashMap<>();
    for (Manifest.SegmentGarbage g : k.garbage()) byId.put(g.segmentId(), g);
    SegmentReplacement r = c.replacement;
    if (r != null) {
      long bytes = -r.removedBytes(), count = -r.removedCount();
      for (long id : r.inputs()) {
        Manifest.SegmentGarbage g = byId.remove(id);
        if (g != null) {
          bytes += g.bytes();
          count += g.count();
        }
      }
      if (r.output() >= 0) {
        byId.put(
            r.output(),
            new Manifest.SegmentGarbage(
                r.output(), Math.max(0, bytes), Math.max(0, count), r.gcBase()));
      }
    }
    long[] starts = new long[segments.size()];
    for (int i = 0; i < starts.length; i++) starts[i] = segments.get(i).startSeqno();
    long[] bytes = new long[starts.length];
    long[] counts = new long[starts.length];
    int at = 0;
    for (int i = 0; i < c.discardSeqnos.length; i++) { // both ascending: one pass
      long q = c.discardSeqnos[i];
      while (at + 1 < starts.length && starts[at + 1] <= q) at++;
      if (starts.length == 0 || starts[at] > q)
        continue; // below every segment: cannot happen, counts nothing
      bytes[at] += c.discardSizes[i];
      counts[at]++;
    }
    List<Manifest.SegmentGarbage> out = new ArrayList<>();
    for (int i = 0; i < starts.length; i++) {
      long id = segments.get(i).segmentId();
      Manifest.SegmentGarbage g = byId.get(id);
      long b = bytes[i] + (g == null ? 0 : g.bytes());
      long n = counts[i] + (g == null ? 0 : g.count());
      long base = g == null ? 0 : g.gcBase();
      if (b != 0 || n != 0 || base != 0) out.add(new Manifest.SegmentGarbage(id, b, n, base));
    }
    return out;
  }
}
