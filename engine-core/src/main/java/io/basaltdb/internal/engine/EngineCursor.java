package io.basaltdb.internal.engine;

import io.basaltdb.ClosedException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A range scan over one keyspace of an {@link EngineSnapshot} (Magma section 3.3): a {@link
 * MergingIterator} over the active write cache, the immutable one and the key index tables, which
 * hides deleted keys and older versions. Values of keys found in the tables are read from the log
 * segments as the cursor reaches them.
 *
 * <p>Thread-safety: one thread at a time. Use after close, or after the snapshot or store closed,
 * throws {@link ClosedException}.
 */
public final class EngineCursor implements AutoCloseable {
  private final EngineSnapshot snap;
  private final int ks;
  private final byte[] to;
  private final boolean ownsSnapshot;
  private final List<MergingIterator.Source> sources = new ArrayList<>();
  private final MergingIterator merge;
  private byte[] key;
  private byte[] value;
  private boolean closed;
  private boolean exhausted;

  EngineCursor(EngineSnapshot snap, int ks, byte[] from, byte[] to, boolean ownsSnapshot) {
    this.snap = snap;
    this.ks = ks;
    this.to = to == null ? null : to.clone();
    this.ownsSnapshot = ownsSnapshot;
    byte[] start = from == null ? new byte[0] : from;
    try {
      sources.add(new MergeSources.CacheSource(snap.active.iterator(), ks, start));
      if (snap.immutable != null) sources.add(new MergeSources.CacheSource(snap.immutable.iterator(), ks, start));
      // A scan caches what it reads, as gets do.
      MergeSources.addIndexSources(snap.version.files(ks), start, this.to, true, sources);
    } catch (RuntimeException e) {
      for (MergingIterator.Source s : sources) s.close();
      if (ownsSnapshot) snap.close();
      throw e;
    }
    merge = new MergingIterator(sources, true, null, snap.now);
  }

  /** Moves to the next key; false at the end of the range. The first call moves to the first key. */
  public boolean next() {
    check();
    if (!exhausted && merge.next()) {
      MergingIterator.Source s = merge.current();
      if (to == null || Arrays.compareUnsigned(s.key(), to) < 0) {
        key = s.key();
        value = s instanceof MergeSources.CacheSource c ? c.value()
            : snap.reads.readDocument(snap.version.files(ks), ks, key, s.seqno(), ((MergeSources.IndexSource) s).hint())
                .value();
        return true;
      }
    }
    exhausted = true;
    key = null;
    value = null;
    return false;
  }

  /** The current key (a copy owned by the caller). */
  public byte[] key() {
    check();
    if (key == null) throw new IllegalStateException("the cursor is not on a key; call next() first");
    return key.clone();
  }

  public byte[] value() {
    check();
    if (key == null) throw new IllegalStateException("the cursor is not on a key; call next() first");
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
