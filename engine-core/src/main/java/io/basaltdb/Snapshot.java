package io.basaltdb;

import io.basaltdb.internal.engine.read.EngineSnapshot;

/**
 * A consistent, read-only view of every keyspace of a store at one moment: it sees every batch
 * written before it was taken, whole, and nothing written after. It pins memory and files until
 * closed.
 *
 * <p>Thread-safety: gets may run concurrently; each cursor belongs to one thread. Close is
 * idempotent; use after close throws {@link ClosedException}.
 */
public final class Snapshot implements AutoCloseable {
  private final Basalt db;
  private final EngineSnapshot snap;

  Snapshot(Basalt db, EngineSnapshot snap) {
    this.db = db;
    this.snap = snap;
  }

  /** The sequence number of the last write this snapshot sees. */
  public long seqno() {
    return snap.seqno();
  }

  public byte[] get(Keyspace keyspace, byte[] key) {
    check(keyspace);
    Keys.checkKey(key);
    return snap.get(keyspace.id, key);
  }

  /**
   * A cursor over {@code [from, to)} of {@code keyspace} in this snapshot; null bounds are open.
   */
  public Cursor scan(Keyspace keyspace, byte[] from, byte[] to) {
    check(keyspace);
    Keyspace.checkBound(from, "from");
    Keyspace.checkBound(to, "to");
    return new Cursor(snap.cursor(keyspace.id, from, to));
  }

  /**
   * A cursor over {@code [from, to)} of {@code keyspace} in this snapshot in descending order (the
   * greatest key below {@code to} first); null bounds are open.
   */
  public Cursor reverseScan(Keyspace keyspace, byte[] from, byte[] to) {
    check(keyspace);
    Keyspace.checkBound(from, "from");
    Keyspace.checkBound(to, "to");
    return new Cursor(snap.reverseCursor(keyspace.id, from, to));
  }

  /**
   * The changes of {@code keyspace} with seqnos in {@code [fromSeqno, toSeqno]} as of this snapshot
   * (the end capped at {@link #seqno()}), in seqno order; see {@link ChangeFeed} and {@link
   * Keyspace#changes(long, long)}. Closing the feed leaves the snapshot open.
   */
  public ChangeFeed changes(Keyspace keyspace, long fromSeqno, long toSeqno, ChangeFeed.Mode mode) {
    check(keyspace);
    if (mode == null) throw new InvalidArgumentException("mode must not be null");
    return new ChangeFeed(
        db.engine.changes(snap, keyspace.id, fromSeqno, toSeqno, mode == ChangeFeed.Mode.EXACT));
  }

  private void check(Keyspace keyspace) {
    if (keyspace == null) throw new InvalidArgumentException("keyspace must not be null");
    if (keyspace.db != db)
      throw new InvalidArgumentException(
          "keyspace '" + keyspace.name() + "' belongs to another store");
  }

  @Override
  public void close() {
    snap.close();
  }
}
