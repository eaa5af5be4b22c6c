package io.basaltdb.internal.skiplist;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.Mem;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A handle on an immutable snapshot of a {@link SkipList} (Nitro, seed 001 section 3): every read
 * through it sees exactly the versions born at or before its term and not dead at it, however many
 * writes run concurrently. Snapshots are reference counted; each handle holds one reference and
 * gives it back on {@link #close()}. {@link #duplicate()} takes another reference as a new handle.
 *
 * <p>Thread-safety: a handle may be used from several threads at once; close is idempotent. Using a
 * closed handle, or any handle of a closed skiplist, throws {@link ClosedException}.
 */
public final class Snapshot implements AutoCloseable {
  private final SkipList list;
  final Descriptor descriptor;
  private final AtomicBoolean closed = new AtomicBoolean();

  Snapshot(SkipList list, Descriptor descriptor) {
    this.list = list;
    this.descriptor = descriptor;
  }

  /** The term this snapshot reads at. */
  public long sn() {
    return descriptor.sn;
  }

  /** The value of {@code key} in this snapshot, or null. */
  public byte[] get(byte[] key) {
    SkipList.checkKey(key);
    AccessBarrier.Session s = list.barrier.enter();
    try {
      checkUsable();
      long v = find(key);
      return v == 0 ? null : SkipList.valueOf(v);
    } finally {
      list.barrier.exit(s);
    }
  }

  /** As {@link SkipList#get(byte[], byte[])}, in this snapshot. */
  public int get(byte[] key, byte[] out) {
    SkipList.checkKey(key);
    if (out == null) throw new InvalidArgumentException("output buffer must not be null");
    AccessBarrier.Session s = list.barrier.enter();
    try {
      checkUsable();
      long v = find(key);
      return v == 0 ? -1 : SkipList.copyValue(v, out);
    } finally {
      list.barrier.exit(s);
    }
  }

  /**
   * Hands {@code sink} every item this snapshot sees with a key in {@code [from, to)} (null bounds
   * are open), in key order, and returns how many ({@link SkipList#scan}): no key or value is
   * copied unless the sink copies it, so a pass that looks at a few bytes of each item costs a walk
   * of the level-0 list.
   */
  public long scan(byte[] from, byte[] to, ItemSink sink) {
    checkUsable();
    return list.scan(descriptor.sn, from, to, sink);
  }

  /** A new iterator over this snapshot, positioned nowhere: call a seek first. */
  public SnapshotIterator iterator() {
    checkUsable();
    return new SnapshotIterator(list, this);
  }

  /** Another handle on the same snapshot, with its own reference. */
  public Snapshot duplicate() {
    checkUsable();
    int r;
    do {
      r = descriptor.refs.get();
      if (r == 0) throw new ClosedException("snapshot " + descriptor.sn + " is closed");
    } while (!descriptor.refs.compareAndSet(r, r + 1));
    return new Snapshot(list, descriptor);
  }

  public boolean isClosed() {
    return closed.get() || list.closed;
  }

  /**
   * Gives this handle's reference back; the snapshot's versions may be collected once all are back.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)
        && descriptor.refs.decrementAndGet() == 0
        && !list.closed) {
      list.gc.snapshotReleased();
    }
  }

  /** Throws unless this handle and its skiplist are open; call inside the access barrier. */
  void checkUsable() {
    if (closed.get())
      throw new ClosedException("snapshot " + descriptor.sn + " is closed; take a new one");
    list.checkOpen();
  }

  private long find(byte[] key) {
    long first = list.findFirstAtOrAfter(key, Mem.ARRAY_BASE, key.length);
    if (first == 0 || Keys.compare(key, Mem.ARRAY_BASE, key.length, first) != 0) return 0;
    long v = SkipList.decisiveVersion(first, descriptor.sn);
    return v != 0 && Node.visibleAt(v, descriptor.sn) ? v : 0;
  }

  @Override
  public String toString() {
    return "Snapshot[sn=" + descriptor.sn + (isClosed() ? ", closed]" : "]");
  }

  /** The shared state of a snapshot: its term, reference count and dead list (section 4). */
  static final class Descriptor {
    final long sn;

    /** Handles still open; the snapshot may be collected at zero. */
    final AtomicInteger refs = new AtomicInteger(1);

    /** Nodes killed in term sn; immutable after creation. */
    final long[] dead;

    final int deadCount;

    Descriptor(long sn, long[] dead, int deadCount) {
      this.sn = sn;
      this.dead = dead;
      this.deadCount = deadCount;
    }
  }
}
