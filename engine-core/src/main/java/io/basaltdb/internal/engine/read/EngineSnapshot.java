package io.basaltdb.internal.engine.read;

import io.basaltdb.ClosedException;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.skiplist.Snapshot;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A consistent view of the whole store at one seqno: a Nitro snapshot of the active write cache
 * (taken under the apply lock, so it holds exactly the groups applied up to {@link #seqno()}), one
 * of the immutable cache if there is one, and the pinned {@link Version}'s tables and segments.
 * Later flushes do not disturb it: the version keeps the skiplists it names alive.
 *
 * <p>Thread-safety: gets may run from several threads at once; each cursor belongs to one thread.
 * Close is idempotent; use after close (of the snapshot or the store) throws {@link
 * ClosedException}.
 */
public final class EngineSnapshot implements AutoCloseable {
  final ReadPath reads;
  private final KeyspaceCatalog catalog;
  private final StoreState state;
  public final Version version;
  private final long seqno;
  final Snapshot active;
  final Snapshot immutable;

  /** The instant this snapshot judges expiries at: when it was taken, so its reads stay stable. */
  final long now;

  private final AtomicBoolean closed = new AtomicBoolean();

  public EngineSnapshot(
      ReadPath reads, KeyspaceCatalog catalog, StoreState state, Version version, long seqno) {
    this.reads = reads;
    this.catalog = catalog;
    this.state = state;
    this.version = version;
    this.seqno = seqno;
    this.now = reads.now();
    this.active = version.active.list.snapshot();
    Snapshot imm = null;
    try {
      imm = version.immutable == null ? null : version.immutable.list.snapshot();
    } catch (RuntimeException e) {
      active.close();
      throw e;
    }
    this.immutable = imm;
  }

  /** The last seqno this snapshot sees. */
  public long seqno() {
    return seqno;
  }

  public byte[] get(int ks, byte[] key) {
    checkUsable();
    catalog.checkLive(ks);
    reads.countGet();
    byte[] sk = WriteCache.storeKey(ks, key);
    byte[] e = active.get(sk);
    if (e == null && immutable != null) e = immutable.get(sk);
    if (e != null) return ReadPath.valueAt(e, now);
    return reads.getFromFiles(version.files(ks), ks, key, now, seqno);
  }

  /** Keys in {@code [from, to)} of keyspace {@code ks} in order; null bounds are open. */
  public EngineCursor cursor(int ks, byte[] from, byte[] to) {
    checkUsable();
    catalog.checkLive(ks);
    catalog.checkOrdered(ks, "cursors");
    return new EngineCursor(this, ks, from, to, false);
  }

  /**
   * Keys in {@code [from, to)} of keyspace {@code ks} in descending order; null bounds are open.
   */
  public EngineCursor reverseCursor(int ks, byte[] from, byte[] to) {
    checkUsable();
    catalog.checkLive(ks);
    catalog.checkOrdered(ks, "cursors");
    return new EngineCursor(this, ks, from, to, false, 0, true);
  }

  public void checkUsable() {
    if (closed.get())
      throw new ClosedException("the snapshot at seqno " + seqno + " is closed; take a new one");
    state.checkOpen();
  }

  public boolean isClosed() {
    return closed.get();
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) return;
    try {
      reads.unregisterSnapshot(seqno);
      active.close();
      if (immutable != null) immutable.close();
    } finally {
      version.release();
    }
  }
}
