package io.basaltdb.internal.skiplist;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Nitro's non-intrusive backup on the collector's side (seed 001 section 5.3): while a backup scans
 * the list at term {@link #sn} without holding its snapshot, the garbage collector's workers hand
 * every node of that term they are about to unlink ({@code bornSn <= sn < deadSn}) to a delta sink,
 * so the backup is the union of what its scan saw and what the workers caught.
 *
 * <h2>States</h2>
 *
 * INIT: registered with the collector, not capturing; the backup still holds its snapshot, so no
 * node of the term can be unlinked yet. ACTIVE ({@link #activate()}): a worker entering an unlink
 * chunk ({@link #enter()}) takes a sink of its own (made by the factory the first time, then
 * reused: one delta file per concurrent worker) and writes the term's nodes to it before unlinking
 * them; the backup may now release its snapshot. TERMINATING ({@link #terminate()}): no worker
 * enters any more, and the backup waits for the workers inside to leave (their acknowledgement);
 * then the sinks are the backup's to close.
 *
 * <p>Concurrency: the state and the number of workers inside are one word, changed by CAS, so a
 * worker enters only while the state is ACTIVE and {@link #terminate()} sees every worker that did.
 * Invariant: when terminate returns, no worker holds or will take a sink of this capture.
 *
 * <p>Why nothing is missed: a node visible at {@code sn} is in the dead list of a snapshot after
 * {@code sn}, which the collector pops only after {@code sn} is released (snapshots are collected
 * in term order), and the backup releases it only after {@link #activate()}. The collector reads
 * its captures after that pop, so every chunk holding such a node sees this capture ACTIVE, unless
 * it is already TERMINATING, when the scan is over.
 */
public final class UnlinkCapture implements AutoCloseable {
  private static final long INIT = 0, ACTIVE = 1L << 48, TERMINATING = 2L << 48, DONE = 3L << 48;
  private static final long STATE_MASK = 3L << 48;

  private final SkipList list;

  /** The term captured: nodes born at or before it and dead after it. */
  final long sn;

  private final Supplier<? extends ItemSink> factory;

  /** State (top bits) and the workers inside (low bits), changed only by CAS. */
  private final AtomicLong word = new AtomicLong(INIT);

  /** Sinks not held by a worker; every sink made is here once terminate has returned. */
  private final ConcurrentLinkedQueue<ItemSink> idle = new ConcurrentLinkedQueue<>();

  /** Every sink the factory made, in order; guarded by itself. */
  private final List<ItemSink> made = new ArrayList<>();

  /**
   * The first failure of a sink or the factory (an Error too); the backup reports it at terminate.
   */
  private final AtomicReference<Throwable> failure = new AtomicReference<>();

  private final AtomicLong captured = new AtomicLong();

  UnlinkCapture(SkipList list, long sn, Supplier<? extends ItemSink> factory) {
    this.list = list;
    this.sn = sn;
    this.factory = factory;
  }

  /**
   * INIT to ACTIVE: workers capture from their next chunk on; the caller may then release its
   * snapshot.
   */
  public void activate() {
    if (!word.compareAndSet(INIT, ACTIVE))
      throw new IllegalStateException("capture of term " + sn + " is not in INIT");
  }

  /**
   * Stops capturing and waits for the workers inside to leave, then unregisters from the collector.
   * Returns the sinks that received nodes, in the order they were made; the caller closes them.
   *
   * @throws RuntimeException the first failure of a sink: the delta is incomplete, so the backup is
   *     too
   */
  public List<ItemSink> terminate() {
    long w;
    do {
      w = word.get();
      if ((w & STATE_MASK) == DONE)
        throw new IllegalStateException("capture of term " + sn + " already terminated");
    } while (!word.compareAndSet(w, TERMINATING | (w & ~STATE_MASK)));
    int spins = 0;
    while ((word.get() & ~STATE_MASK) != 0) { // workers still writing a chunk's nodes
      if (++spins < 100) Thread.onSpinWait();
      else Thread.yield();
    }
    word.set(DONE);
    list.gc.unregister(this);
    Throwable f = failure.get();
    if (f instanceof RuntimeException r) throw r;
    if (f instanceof Error e) throw e;
    if (f != null) throw new IllegalStateException(f);
    synchronized (made) {
      return List.copyOf(made);
    }
  }

  /** Nodes handed to the sinks so far. */
  public long captured() {
    return captured.get();
  }

  /**
   * Terminates if still running (a failed backup); the sinks are not returned, the caller cleans
   * up.
   */
  @Override
  public void close() {
    if ((word.get() & STATE_MASK) == DONE) return;
    try {
      terminate();
    } catch (RuntimeException ignored) {
      // the backup that closes without terminating has failed already; this failure adds nothing
    }
  }

  // ---- the collector's side
  // ----------------------------------------------------------------------------

  /**
   * A worker starting a chunk: a sink to write to, or null if the capture is not ACTIVE. Pair with
   * {@link #exit}.
   */
  ItemSink enter() {
    long w;
    do {
      w = word.get();
      if ((w & STATE_MASK) != ACTIVE || failure.get() != null) return null;
    } while (!word.compareAndSet(w, w + 1));
    ItemSink s = idle.poll();
    if (s != null) return s;
    try {
      s = factory.get();
    } catch (
        Throwable e) { // an Error too (no direct memory for a buffer): the count must go back down
      failure.compareAndSet(null, e);
      word.decrementAndGet();
      return null;
    }
    synchronized (made) {
      made.add(s);
    }
    return s;
  }

  /**
   * Writes {@code node} to {@code sink} if the captured term sees it; never throws (the collector
   * must go on). A node whose deadSn a racing delete set past its superseder's term may be written
   * although its superseder decides the key at {@link #sn} (SkipList invariant 2): the restore
   * keeps, of a key's delta items, the one with the highest seqno.
   */
  void offer(ItemSink sink, long node) {
    if (failure.get() != null) return;
    // lv: set by the killer's CAS before the node reached a dead list, which this worker popped
    // under a lock
    long dead = Node.lvDead(node);
    if (Node.born(node) > sn || dead == 0 || dead <= sn) return;
    try {
      sink.item(Node.keyAddr(node), Node.keyLen(node), Node.valueAddr(node), Node.valueLen(node));
      captured.incrementAndGet();
    } catch (
        Throwable
            e) { // the collector goes on whatever the sink does; the backup fails at terminate
      failure.compareAndSet(null, e);
    }
  }

  void exit(ItemSink sink) {
    idle.offer(sink);
    word.decrementAndGet(); // after the sink is back: terminate sees it idle
  }
}
