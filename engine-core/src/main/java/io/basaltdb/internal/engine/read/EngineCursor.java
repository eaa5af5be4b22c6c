package io.basaltdb.internal.engine.read;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A range scan over one keyspace of an {@link EngineSnapshot} (Magma section 3.3): a {@link
 * MergingIterator} over the active write cache, the immutable one and the key index tables, which
 * hides deleted keys and older versions. Values of keys found in the tables are read from the log
 * segments with read-ahead: the cursor takes the next keys from the merge, up to its read-ahead,
 * and reads their documents together through the read transport ({@link ReadPath#readDocuments}),
 * so a scan over data on disk has many reads in flight instead of one after another. By default the
 * read-ahead starts at 1 and doubles with each refill up to {@value #MAX_READ_AHEAD} (a cursor that
 * stops after a key or two reads no more than it needs); a fixed read-ahead ({@code
 * Keyspace.scan(from, to, n)}) suits a caller that knows how many keys it will take.
 *
 * <p>A reverse cursor ({@code Keyspace.reverseScan}) walks the same range, {@code [from, to)}, in
 * descending key order: its sources start at the last key before {@code to} and walk backward
 * ({@link MergeSources#addReverseIndexSources}), the merge orders keys descending, and the walk
 * ends at the first key below {@code from}. Read-ahead and values work as forward.
 *
 * <p>Thread-safety: one thread at a time. Use after close, or after the snapshot or store closed,
 * throws {@link ClosedException}.
 */
public final class EngineCursor implements AutoCloseable {
  private final EngineSnapshot snap;
  private final int ks;

  /**
   * Where the walk ends: forward the exclusive upper bound {@code to}, reverse the inclusive lower
   * bound {@code from}; null for none.
   */
  private final byte[] stop;

  private final boolean reverse;
  private final boolean ownsSnapshot;
  private final List<MergingIterator.Source> sources = new ArrayList<>();
  private final MergingIterator merge;

  /** The read-ahead a cursor grows to by default. */
  public static final int MAX_READ_AHEAD = 32;

  /**
   * Keys taken from the merge at most per refill; doubles up to {@code maxAhead} if {@code
   * growing}.
   */
  private int ahead;

  private final int maxAhead;
  private final boolean growing;

  /**
   * Keys and values taken from the merge ahead of the cursor: {@code [at, count)} not yet returned.
   */
  private byte[][] keys = new byte[1][];

  private byte[][] values = new byte[1][];

  /**
   * Of a refill's keys, those read from the files: their keys, seqnos, hints and slots in {@code
   * keys}.
   */
  private byte[][] fileKeys = new byte[1][];

  private long[] seqnos = new long[1];
  private long[] hints = new long[1];
  private int[] slots = new int[1];
  private int at;
  private int count;
  private byte[] key;
  private byte[] value;
  private boolean closed;
  private boolean exhausted;

  /**
   * What failed a refill (a damaged or unreadable block): the cursor throws it from then on, as the
   * keys it had taken ahead cannot be returned without their values and must not be skipped
   * silently.
   */
  private RuntimeException failure;

  /** A cursor with the default, growing read-ahead. */
  public EngineCursor(EngineSnapshot snap, int ks, byte[] from, byte[] to, boolean ownsSnapshot) {
    this(snap, ks, from, to, ownsSnapshot, 0);
  }

  /** As above with a fixed read-ahead of {@code readAhead} keys (0: the default, growing one). */
  public EngineCursor(
      EngineSnapshot snap, int ks, byte[] from, byte[] to, boolean ownsSnapshot, int readAhead) {
    this(snap, ks, from, to, ownsSnapshot, readAhead, false);
  }

  /** As above; with {@code reverse}, the keys of {@code [from, to)} in descending order. */
  public EngineCursor(
      EngineSnapshot snap,
      int ks,
      byte[] from,
      byte[] to,
      boolean ownsSnapshot,
      int readAhead,
      boolean reverse) {
    this.growing = readAhead == 0;
    this.ahead = growing ? 1 : readAhead;
    this.maxAhead = growing ? MAX_READ_AHEAD : readAhead;
    this.snap = snap;
    this.ks = ks;
    this.reverse = reverse;
    byte[] lo = from == null ? null : from.clone();
    byte[] hi = to == null ? null : to.clone();
    this.stop = reverse ? lo : hi;
    this.ownsSnapshot = ownsSnapshot;
    try {
      if (reverse) {
        sources.add(new MergeSources.CacheSource(snap.active.iterator(), ks, hi, true));
        if (snap.immutable != null)
          sources.add(new MergeSources.CacheSource(snap.immutable.iterator(), ks, hi, true));
        MergeSources.addReverseIndexSources(snap.version.files(ks), lo, hi, true, sources);
      } else {
        byte[] start = lo == null ? new byte[0] : lo;
        sources.add(new MergeSources.CacheSource(snap.active.iterator(), ks, start));
        if (snap.immutable != null)
          sources.add(new MergeSources.CacheSource(snap.immutable.iterator(), ks, start));
        // A scan caches what it reads, as gets do.
        MergeSources.addIndexSources(snap.version.files(ks), start, hi, true, sources);
      }
    } catch (RuntimeException e) {
      for (MergingIterator.Source s : sources) s.close();
      if (ownsSnapshot) snap.close();
      throw e;
    }
    merge = new MergingIterator(sources, true, null, snap.now, reverse);
  }

  /**
   * Moves to the next key; false at the end of the range. The first call moves to the first key.
   */
  public boolean next() {
    check();
    if (failure != null) throw failure;
    if (at == count && !exhausted) {
      try {
        refill();
      } catch (
          RuntimeException
              e) { // the keys taken ahead have no values: none of them is returned, ever
        at = 0;
        count = 0;
        exhausted = true;
        failure = e;
        throw e;
      }
    }
    if (at < count) {
      key = keys[at];
      value = values[at];
      keys[at] = null;
      values[at++] = null;
      return true;
    }
    key = null;
    value = null;
    return false;
  }

  /**
   * Takes up to {@code ahead} keys from the merge and reads the values the write caches do not
   * hold, together.
   */
  private void refill() {
    at = 0;
    count = 0;
    if (keys.length < ahead) { // grown with the read-ahead, then reused by every refill
      keys = new byte[ahead][];
      values = new byte[ahead][];
      fileKeys = new byte[ahead][];
      seqnos = new long[ahead];
      hints = new long[ahead];
      slots = new int[ahead];
    }
    int files = 0;
    while (count < ahead && merge.next()) {
      MergingIterator.Source s = merge.current();
      if (stop != null && pastStop(s.key())) {
        exhausted = true;
        break;
      }
      keys[count] = s.key();
      if (s instanceof MergeSources.CacheSource c) {
        values[count] = c.value();
      } else {
        fileKeys[files] = s.key();
        seqnos[files] = s.seqno();
        hints[files] = ((MergeSources.IndexSource) s).hint();
        slots[files++] = count;
      }
      count++;
    }
    if (count < ahead) exhausted = true;
    KeyspaceFiles f = snap.version.files(ks);
    if (files == 1) { // one document: a point read, with no hand-off to the transport
      values[slots[0]] = snap.reads.readDocument(f, ks, fileKeys[0], seqnos[0], hints[0]).value();
    } else if (files > 1) {
      byte[][] read = snap.reads.readDocuments(f, ks, fileKeys, seqnos, hints, files);
      for (int i = 0; i < files; i++) values[slots[i]] = read[i];
    }
    for (int i = 0; i < files; i++) fileKeys[i] = null; // keeps no key past its refill (a loop, not
    // Arrays.fill, whose shared type profile made this method recompile)
    if (growing) ahead = Math.min(maxAhead, ahead * 2);
  }

  /**
   * Whether {@code key} is beyond the range: at or after {@code to}, or reverse before {@code
   * from}.
   */
  private boolean pastStop(byte[] key) {
    int c = Arrays.compareUnsigned(key, stop);
    return reverse ? c < 0 : c >= 0;
  }

  /** The current key (a copy owned by the caller). */
  public byte[] key() {
    check();
    if (key == null)
      throw new IllegalStateException("the cursor is not on a key; call next() first");
    return key.clone();
  }

  public byte[] value() {
    check();
    if (key == null)
      throw new IllegalStateException("the cursor is not on a key; call next() first");
    return value.clone();
  }

  private void check() {
    if (closed) throw new ClosedException("the cursor is closed");
    snap.checkUsable();
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    merge.close();
    if (ownsSnapshot) snap.close();
  }
}
