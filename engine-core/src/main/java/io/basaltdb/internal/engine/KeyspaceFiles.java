package io.basaltdb.internal.engine;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.sstable.TableReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * The on-disk read sources of one keyspace in one {@link Version}: its key index tables, newest first,
 * and its log segments sorted by start seqno (Magma section 3: "an in-memory array of segments", found
 * by binary search on the seqno a key index record gives).
 *
 * <p>Thread-safety: immutable; the readers it holds are safe for concurrent use.
 */
final class KeyspaceFiles {
  static final KeyspaceFiles EMPTY = new KeyspaceFiles(List.of(), List.of());

  /** A key index table and its file number. */
  record Table(long fileNumber, int level, TableReader reader) {}

  /** A log segment's checkpointed state and a reader of it. */
  record Segment(SegmentState state, SegmentReader reader) {}

  final List<Table> tables;
  final List<Segment> segments;
  private final long[] starts;

  KeyspaceFiles(List<Table> tables, List<Segment> segments) {
    this.tables = List.copyOf(tables);
    this.segments = List.copyOf(segments);
    this.starts = new long[segments.size()];
    for (int i = 0; i < starts.length; i++) {
      starts[i] = segments.get(i).state.startSeqno();
      if (i > 0 && starts[i] <= starts[i - 1]) throw new IllegalStateException("segments out of seqno order");
    }
  }

  static String tableName(int keyspace, long fileNumber) {
    return "keyspaces/" + keyspace + "/index/" + String.format("%012d", fileNumber) + ".sst";
  }

  static String segmentName(int keyspace, long fileNumber) {
    return "keyspaces/" + keyspace + "/log/" + String.format("%012d", fileNumber) + ".seg";
  }

  /** The segment whose seqno range may hold {@code seqno}, or null. */
  Segment segmentFor(long seqno) {
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
   * The document a key index record of {@code key} points at. Its absence, or a document of another
   * key (a damaged record whose checksum still matched, or a bug), is corruption, never an answer.
   */
  Document document(byte[] key, long seqno, long hint, Supplier<String> keyspace) {
    Segment s = segmentFor(seqno);
    Document d = s == null ? null : s.reader.read(seqno, hint);
    if (d == null) {
      throw new CorruptionException("the key index of keyspace '" + keyspace.get() + "' names seqno " + seqno
          + ", which no log segment holds" + (s == null ? "" : " (looked in segment " + s.state.segmentId() + ")")
          + "; the store's files are inconsistent. Restore the store from a backup");
    }
    if (!Arrays.equals(d.key(), key)) {
      throw new CorruptionException("the key index of keyspace '" + keyspace.get() + "' maps a key to seqno "
          + seqno + ", but the document there in segment " + s.state.segmentId() + " has another key; the"
          + " store's files are inconsistent. Restore the store from a backup");
    }
    return d;
  }

  KeyspaceFiles withTable(Table t) {
    List<Table> ts = new ArrayList<>(tables.size() + 1);
    ts.add(t);
    ts.addAll(tables);
    return new KeyspaceFiles(ts, segments);
  }

  /** These files with the segment of the same id replaced by {@code s}, or {@code s} appended. */
  KeyspaceFiles withSegment(Segment s) {
    List<Segment> ss = new ArrayList<>(segments);
    int i = 0;
    while (i < ss.size() && ss.get(i).state.segmentId() != s.state.segmentId()) i++;
    if (i < ss.size()) ss.set(i, s); else ss.add(s);
    return new KeyspaceFiles(tables, ss);
  }
}
