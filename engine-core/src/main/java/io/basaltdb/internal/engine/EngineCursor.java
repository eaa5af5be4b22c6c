package io.basaltdb.internal.engine;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.skiplist.SnapshotIterator;
import io.basaltdb.internal.sstable.TableIterator;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A range scan over one keyspace of an {@link EngineSnapshot}: merges, in key order, the active write
 * cache, the immutable one and the key index tables newest first (Magma section 3.3). For a key present
 * in several sources the newest source decides; a tombstone hides the key. Values of keys found in the
 * tables are read from the log segments as the cursor reaches them.
 *
 * <p>Thread-safety: one thread at a time. Use after close, or after the snapshot or store closed,
 * throws {@link ClosedException}.
 */
public final class EngineCursor implements AutoCloseable {
  private final EngineSnapshot snap;
  private final int ks;
  private final byte[] to;
  private final boolean ownsSnapshot;
  private final List<Source> sources = new ArrayList<>();
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
      sources.add(new MemSource(snap.active.iterator(), ks, start));
      if (snap.immutable != null) sources.add(new MemSource(snap.immutable.iterator(), ks, start));
      for (KeyspaceFiles.Table t : snap.version.files(ks).tables) {
        sources.add(new TableSource(t.reader().iterator(true), start)); // a scan caches what it reads, as gets do
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Moves to the next key; false at the end of the range. The first call moves to the first key. */
  public boolean next() {
    check();
    while (!exhausted) {
      byte[] min = null;
      Source winner = null;
      for (Source s : sources) {
        if (!s.valid()) continue;
        byte[] k = s.key();
        if (min == null || Arrays.compareUnsigned(k, min) < 0) {
          min = k;
          winner = s;
        }
      }
      if (min == null || (to != null && Arrays.compareUnsigned(min, to) >= 0)) {
        exhausted = true;
        break;
      }
      byte[] v = winner.value(); // null for a tombstone
      for (Source s : sources) {
        if (s.valid() && Arrays.equals(s.key(), min)) s.next();
      }
      if (v != null) {
        key = min;
        value = v;
        return true;
      }
    }
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
    for (Source s : sources) s.close();
    if (ownsSnapshot) snap.close();
  }

  /** One sorted input of the merge. */
  private interface Source {
    boolean valid();

    byte[] key();

    /** The value of the current key, or null if it is a tombstone. */
    byte[] value();

    void next();

    void close();
  }

  private static final class MemSource implements Source {
    private final SnapshotIterator it;
    private final int ks;
    private byte[] key;
    private byte[] entry;

    MemSource(SnapshotIterator it, int ks, byte[] from) {
      this.it = it;
      this.ks = ks;
      it.seek(Memtable.storeKey(ks, from));
      load();
    }

    private void load() {
      if (it.valid()) {
        byte[] sk = it.key();
        if (Memtable.keyspaceOf(sk) == ks) {
          key = Memtable.userKey(sk);
          entry = it.value();
          return;
        }
      }
      key = null;
      entry = null;
    }

    public boolean valid() {
      return key != null;
    }

    public byte[] key() {
      return key;
    }

    public byte[] value() {
      return Memtable.isTombstone(entry) ? null : Memtable.valueOf(entry);
    }

    public void next() {
      it.next();
      load();
    }

    public void close() {
      it.close();
    }
  }

  private final class TableSource implements Source {
    private final TableIterator it;
    /** The current key, copied once per position (the merge asks for it several times); null if invalid. */
    private byte[] key;

    TableSource(TableIterator it, byte[] from) {
      this.it = it;
      it.seek(from);
      load();
    }

    private void load() {
      key = it.valid() ? it.key() : null;
    }

    public boolean valid() {
      return key != null;
    }

    public byte[] key() {
      return key;
    }

    public byte[] value() {
      if (it.tombstone()) return null;
      return snap.engine.readDocument(snap.version.files(ks), ks, key, it.seqno(), it.hint()).value();
    }

    public void next() {
      it.next();
      load();
    }

    public void close() {
      it.close();
    }
  }
}
