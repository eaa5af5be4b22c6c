package io.basaltdb.internal.engine.version;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.sstable.TableReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * The on-disk read sources of one keyspace in one {@link Version}: its key index tables by level,
 * and its log segments sorted by start seqno (Magma section 3: "an in-memory array of segments",
 * found by binary search on the seqno a key index record gives).
 *
 * <p>Tables are kept in search order: level 0 newest first (its tables overlap), then each deeper
 * level sorted by smallest key (its tables do not overlap). A key's newest record is therefore in
 * the first table of that order that holds it, and a level beyond 0 has at most one candidate
 * table, found by binary search.
 *
 * <p>Under key index guards ({@link #guards} not null; {@link Guards}) a deeper level is sorted by
 * guard instead, and within a guard newest first (the manifest's order, {@link VersionEdit}): every
 * table lies inside one guard (checked here: a table that straddles a guard key is a bug and fails
 * the version), and the tables of one guard may overlap. A key's candidates at such a level are its
 * guard's tables, the first holding it holding the newest version there.
 *
 * <p>Thread-safety: immutable; the readers it holds are safe for concurrent use.
 */
public final class KeyspaceFiles {
  public static final KeyspaceFiles EMPTY = new KeyspaceFiles(List.of(), List.of());

  /**
   * The smallest segment size {@link io.basaltdb.Options#segmentSizeRatio} derives, unless
   * segmentSize is smaller.
   */
  static final long MIN_DERIVED_SEGMENT = 2L << 20;

  /**
   * The size at which this keyspace's tail segment is closed, and the live bytes one collection job
   * gathers into a segment: {@link io.basaltdb.Options#segmentSizeRatio} of the log's file bytes,
   * between {@link #MIN_DERIVED_SEGMENT} and {@link io.basaltdb.Options#segmentSize} (Magma section
   * 3.5).
   */
  public long segmentLimit(io.basaltdb.Options options) {
    return segmentLimit(options, logBytes());
  }

  /** {@link #segmentLimit(io.basaltdb.Options)} for a log of {@code logBytes}. */
  public static long segmentLimit(io.basaltdb.Options options, long logBytes) {
    long max = options.segmentSize();
    if (options.segmentSizeRatio() <= 0) return max;
    long derived = (long) (Math.max(0, logBytes) * options.segmentSizeRatio());
    return Math.min(max, Math.max(MIN_DERIVED_SEGMENT, derived));
  }

  /** The file bytes of the keyspace's segments (their tail offsets). */
  long logBytes() {
    long total = 0;
    for (Segment s : segments) total += s.state().tailOffset();
    return total;
  }

  /** Levels of the key index: 0 (overlapping tables) to MAX_LEVELS - 1. */
  public static final int MAX_LEVELS = 7;

  /** A key index table and its file number. */
  public record Table(long fileNumber, int level, TableReader reader) {
    public byte[] smallest() {
      return reader.info().smallestKey();
    }

    public byte[] largest() {
      return reader.info().largestKey();
    }

    public long bytes() {
      return reader.info().fileSize();
    }

    /** Whether {@code key} lies in the table's key range (it may still not hold it). */
    public boolean holdsInRange(byte[] key) {
      return Arrays.compareUnsigned(smallest(), key) <= 0
          && Arrays.compareUnsigned(largest(), key) >= 0;
    }
  }

  /** A log segment's checkpointed state and a reader of it. */
  public record Segment(SegmentState state, SegmentReader reader) {}

  /** A delete list table: its manifest entry and a reader (keys are 8-byte big-endian seqnos). */
  public record DeleteTable(Manifest.DeleteTableMeta meta, TableReader reader) {}

  /** Every table in search order (see the class comment). */
  public final List<Table> tables;

  public final List<Segment> segments;

  /**
   * The delete list's tables (level 0 newest first, then level 1 by seqno) and the segments'
   * garbage.
   */
  public final List<DeleteTable> deletes;

  public final Map<Long, Manifest.SegmentGarbage> garbage;

  /** The guard keys of a guarded key index; null for the leveled layout. */
  public final Guards guards;

  /**
   * Under guards: per level, the {@code tables} index where each guard's tables start (one more
   * entry: the end).
   */
  private final int[][] guardStart;

  private final long[] starts;

  /**
   * {@code tables} index of the first table of each level; {@code levelStart[MAX_LEVELS]} is the
   * size.
   */
  private final int[] levelStart = new int[MAX_LEVELS + 1];

  /** {@code tables}: level-0 tables newest first, in any position; deeper levels in any order. */
  public KeyspaceFiles(List<Table> tables, List<Segment> segments) {
    this(tables, segments, List.of(), List.of());
  }

  public KeyspaceFiles(
      List<Table> tables,
      List<Segment> segments,
      List<DeleteTable> deletes,
      List<Manifest.SegmentGarbage> garbage) {
    this(tables, segments, deletes, garbage, null);
  }

  /**
   * {@code tables}: each level's tables newest first (deeper levels of a leveled store in any
   * order); {@code guards}: the guard keys of a guarded store, null for a leveled one.
   */
  public KeyspaceFiles(
      List<Table> tables,
      List<Segment> segments,
      List<DeleteTable> deletes,
      List<Manifest.SegmentGarbage> garbage,
      Guards guards) {
    this.guards = guards;
    this.deletes = List.copyOf(deletes);
    Map<Long, Manifest.SegmentGarbage> bySegment = new HashMap<>();
    for (Manifest.SegmentGarbage x : garbage) bySegment.put(x.segmentId(), x);
    this.garbage = Map.copyOf(bySegment);
    List<Table> ordered = new ArrayList<>(tables);
    // Stable: level 0, and each guard of a guarded level, keep their order (newest first). A
    // table's
    // guard is found once, not per comparison: versions are built under the VersionSet's lock.
    Map<Table, Integer> guardOfTable = new java.util.IdentityHashMap<>();
    if (guards != null) {
      for (Table t : ordered)
        guardOfTable.put(t, t.level == 0 ? 0 : guards.guardOf(t.level, t.smallest()));
    }
    ordered.sort(
        (a, b) ->
            a.level != b.level
                ? Integer.compare(a.level, b.level)
                : a.level == 0
                    ? 0
                    : guards != null
                        ? Integer.compare(guardOfTable.get(a), guardOfTable.get(b))
                        : Arrays.compareUnsigned(a.smallest(), b.smallest()));
    this.tables = List.copyOf(ordered);
    for (int i = 0, l = 0; l <= MAX_LEVELS; l++) {
      while (i < ordered.size() && ordered.get(i).level < l) i++;
      levelStart[l] = i;
    }
    levelStart[MAX_LEVELS] = ordered.size();
    if (guards == null) {
      guardStart = null;
      for (int i = 1;
          i < ordered.size();
          i++) { // deeper levels must not overlap, or reads go wrong
        Table a = ordered.get(i - 1), b = ordered.get(i);
        if (a.level == b.level
            && a.level > 0
            && Arrays.compareUnsigned(a.largest(), b.smallest()) >= 0) {
          throw new IllegalStateException(
              "key index tables "
                  + a.fileNumber
                  + " and "
                  + b.fileNumber
                  + " of level "
                  + a.level
                  + " overlap");
        }
      }
    } else {
      guardStart = new int[MAX_LEVELS][];
      for (int l = 1; l < MAX_LEVELS; l++) {
        int[] gs = new int[guards.count(l) + 2];
        int i = levelStart[l];
        for (int g = 0; g < gs.length - 1; g++) {
          gs[g] = i;
          while (i < levelStart[l + 1] && guardOfTable.get(ordered.get(i)) == g) i++;
        }
        gs[gs.length - 1] = i;
        guardStart[l] = gs;
        for (int t = levelStart[l];
            t < levelStart[l + 1];
            t++) { // a table must lie inside one guard
          Table x = ordered.get(t);
          if (guardOfTable.get(x) != guards.guardOf(l, x.largest())) {
            throw new IllegalStateException(
                "key index table " + x.fileNumber + " of level " + l + " straddles a guard key");
          }
        }
      }
    }
    this.segments = List.copyOf(segments);
    this.starts = new long[segments.size()];
    for (int i = 0; i < starts.length; i++) {
      starts[i] = segments.get(i).state.startSeqno();
      if (i > 0 && starts[i] <= starts[i - 1])
        throw new IllegalStateException("segments out of seqno order");
    }
  }

  /** Adds the names of every file this holds (keyspace {@code ks}) to {@code out}. */
  void addFileNames(int ks, java.util.Set<String> out) {
    for (Table t : tables) out.add(FileNames.table(ks, t.fileNumber()));
    for (DeleteTable d : deletes) out.add(FileNames.deleteTable(ks, d.meta().fileNumber()));
    for (Segment s : segments) out.add(FileNames.segment(ks, s.state().segmentId()));
  }

  /** The segment whose seqno range may hold {@code seqno}, or null. */
  public Segment segmentFor(long seqno) {
    int lo = 0, hi = starts.length - 1, found = -1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (starts[mid] <= seqno) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found < 0 ? null : segments.get(found);
  }

  /**
   * The document a key index record of {@code key} points at: the cached copy, or else the document
   * read from its segment (counted in {@code fileReads}) and, once its key is checked, cached. Its
   * absence, or a document of another key (a damaged record whose checksum still matched, or a
   * bug), is corruption, never an answer.
   */
  public Document document(
      byte[] key,
      long seqno,
      long hint,
      Supplier<String> keyspace,
      LongAdder fileReads,
      LongAdder hintMisses) {
    return document(key, seqno, hint, keyspace, fileReads, hintMisses, true);
  }

  /**
   * As {@link #document(byte[], long, long, Supplier, LongAdder, LongAdder)}; with {@code askCache}
   * false the caller has just missed the cache for it (a get into a buffer), so it is read without
   * asking again (which would count a second miss).
   */
  public Document document(
      byte[] key,
      long seqno,
      long hint,
      Supplier<String> keyspace,
      LongAdder fileReads,
      LongAdder hintMisses,
      boolean askCache) {
    Segment s = segmentFor(seqno);
    Document d = s == null || !askCache ? null : s.reader.cached(seqno);
    boolean read = false;
    if (s != null && d == null) {
      fileReads.increment();
      d = s.reader.readUncached(seqno, hint, hintMisses);
      read = true;
    }
    if (d == null) {
      throw new CorruptionException(
          "the key index of keyspace '"
              + keyspace.get()
              + "' names seqno "
              + seqno
              + ", which no log segment holds"
              + (s == null ? "" : " (looked in segment " + s.state.segmentId() + ")")
              + "; the store's files are inconsistent. Restore the store from a backup");
    }
    if (!Arrays.equals(d.key(), key)) {
      throw new CorruptionException(
          "the key index of keyspace '"
              + keyspace.get()
              + "' maps a key to seqno "
              + seqno
              + ", but the document there in segment "
              + s.state.segmentId()
              + " has another key; the"
              + " store's files are inconsistent. Restore the store from a backup");
    }
    if (read) s.reader.remember(d);
    return d;
  }

  /** The number of tables of level {@code l}. */
  public int levelCount(int l) {
    return levelStart[l + 1] - levelStart[l];
  }

  /** Table {@code i} of level {@code l} in search order (for loops that allocate no iterator). */
  public Table table(int l, int i) {
    return tables.get(levelStart[l] + i);
  }

  /** Under guards: the guard of level {@code l >= 1} that {@code key} falls in. */
  public int guardOf(int l, byte[] key) {
    return guards.guardOf(l, key);
  }

  /** Under guards: the number of tables of guard {@code g} of level {@code l >= 1}. */
  public int guardTableCount(int l, int g) {
    return guardStart[l][g + 1] - guardStart[l][g];
  }

  /** Under guards: table {@code i} (newest first) of guard {@code g} of level {@code l >= 1}. */
  public Table guardTable(int l, int g, int i) {
    return tables.get(guardStart[l][g] + i);
  }

  /** The tables of level {@code l} in search order. */
  public List<Table> level(int l) {
    return tables.subList(levelStart[l], levelStart[l + 1]);
  }

  public long levelBytes(int l) {
    long n = 0;
    for (Table t : level(l)) n += t.bytes();
    return n;
  }

  /** Whether the key index keeps guards. */
  public boolean guarded() {
    return guards != null;
  }

  /**
   * Under guards: the number of guards of level {@code l >= 1} (its guard keys and the sentinel).
   */
  public int guardCount(int l) {
    return guardStart[l].length - 1;
  }

  /** Under guards: the tables of guard {@code g} of level {@code l >= 1}, newest first. */
  public List<Table> guardTables(int l, int g) {
    return tables.subList(guardStart[l][g], guardStart[l][g + 1]);
  }

  /**
   * Under guards: the tables of level {@code l >= 1} that may hold {@code key} (its guard's),
   * newest first.
   */
  public List<Table> candidates(int l, byte[] key) {
    return guardTables(l, guards.guardOf(l, key));
  }

  /**
   * The one table of level {@code l >= 1} whose key range holds {@code key}, or null (leveled
   * layout).
   */
  public Table candidate(int l, byte[] key) {
    int lo = levelStart[l], hi = levelStart[l + 1] - 1;
    while (lo <= hi) { // the first table whose largest key is not below key
      int mid = (lo + hi) >>> 1;
      if (Arrays.compareUnsigned(tables.get(mid).largest(), key) < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    if (lo == levelStart[l + 1]) return null;
    Table t = tables.get(lo);
    return Arrays.compareUnsigned(t.smallest(), key) <= 0 ? t : null;
  }
}
