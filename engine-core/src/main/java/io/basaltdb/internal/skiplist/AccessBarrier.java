package io.basaltdb.internal.skiplist;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Consumer;

/**
 * Safe memory reclamation by access barrier and barrier sessions (Nitro, seed 001 section 6).
 *
 * <p>Every operation on the skiplist is an accessor: it enters the barrier, which counts it in the
 * current session, and exits when done. Nodes that have been unlinked are retired in batches:
 * closing the current session hands it the batch and opens a new one. Accessors that enter after
 * the close cannot reach the batch (it was unlinked before the close); accessors counted in the
 * closed session, or in any older one, might. So a batch is freed once its session and every older
 * session have terminated (every accessor counted in them has exited). The free callback receives
 * terminated sessions; {@link GarbageCollector} frees them in sequence order.
 *
 * <p>Concurrency: a session's live count is striped over padded cells (one per group of threads,
 * chosen by thread id) so that readers on different cores do not bounce one cache line; Nitro's
 * single 32-bit counter becomes several. Closing adds {@link #CLOSED} to every cell; an accessor
 * whose increment returns a value at or above CLOSED raced with the close, undoes its increment and
 * retries in the new session (Nitro's "detect and recover"). A session is terminated when every
 * cell reads exactly CLOSED; whoever brings the last cell there (the closer or the last accessor
 * out) notices, and a CAS makes the notification happen once.
 *
 * <p>Public for {@code io.basaltdb.internal.hashindex}, whose lazy-trie retires nodes the same way.
 *
 * <p>Invariants:
 *
 * <ol>
 *   <li>A cell is never negative, and never above CLOSED + {@link #MAX_ACCESSORS}; either would
 *       mean an exit without an enter, and fails loudly with {@link IllegalStateException}.
 *   <li>Sessions are closed one at a time (under this barrier's monitor) and numbered 0, 1, 2, ...
 *       in the order they close.
 * </ol>
 */
public final class AccessBarrier {
  static final long CLOSED = 1L << 40;
  static final long MAX_ACCESSORS = 1L << 31;

  /**
   * Longs per cell: 128 bytes, two cache lines, against false sharing and adjacent-line prefetch.
   */
  private static final int PAD = 16;

  private final int stripeMask;
  private final Consumer<Session> onTerminated;

  /** The session new accessors join; replaced only under this object's monitor, read racily. */
  private volatile Session current;

  public AccessBarrier(Consumer<Session> onTerminated) {
    int stripes =
        Integer.highestOneBit(Math.max(4, Runtime.getRuntime().availableProcessors() * 2) - 1) << 1;
    this.stripeMask = stripes - 1;
    this.onTerminated = onTerminated;
    this.current = new Session(0, stripes);
  }

  /**
   * Joins the current session; the caller must pass the result to {@link #exit} on the same thread.
   */
  public Session enter() {
    int stripe = stripe();
    while (true) {
      Session s = current;
      long v = s.add(stripe, 1); // SC atomic: either the closer's +CLOSED sees us, or we see it
      if (v < CLOSED) {
        return s;
      }
      check(s, v - 1 > CLOSED + MAX_ACCESSORS, v);
      // raced with close: leave the closed session and join the new one
      if (s.add(stripe, -1) == CLOSED) {
        s.checkTerminated(onTerminated);
      }
    }
  }

  public void exit(Session s) {
    long v = s.add(stripe(), -1);
    if (v >= CLOSED) {
      if (v == CLOSED) {
        s.checkTerminated(onTerminated);
      }
      return;
    }
    // below zero, or just below CLOSED (a closed session's cell dropped under it): more exits than
    // enters
    check(s, v < 0 || v > MAX_ACCESSORS, v);
  }

  /**
   * Closes the current session with {@code batch} (the first {@code count} entries are node
   * addresses already unlinked) and opens the next one.
   */
  public synchronized void close(long[] batch, int count) {
    Session old = current;
    Session next = new Session(old.seq + 1, stripeMask + 1);
    old.batch = batch;
    old.count = count;
    current = next; // volatile publish: later accessors join next, never old
    for (int i = 0; i <= stripeMask; i++) {
      old.add(i, CLOSED);
    }
    old.checkTerminated(onTerminated);
  }

  /** Sequence number of the session currently open; every older one has been closed. */
  public long currentSeq() {
    return current.seq;
  }

  private int stripe() {
    @SuppressWarnings(
        "deprecation") // Thread.threadId() arrives in JDK 19; getId() is the same value
    long id = Thread.currentThread().getId();
    return (int) ((id * 0x9E3779B97F4A7C15L) >>> 40) & stripeMask;
  }

  private static void check(Session s, boolean impossible, long v) {
    if (impossible) {
      throw new IllegalStateException(
          "access barrier session "
              + s.seq
              + " reached the impossible live count "
              + v
              + ": an accessor exited without entering, or exited twice");
    }
  }

  /** One barrier session: striped live count, and the batch of nodes it must free. */
  public static final class Session {
    public final long seq;
    private final AtomicLongArray cells;
    private final AtomicBoolean terminated = new AtomicBoolean();

    /** Written by the closer before the session is published as closed; read after termination. */
    public long[] batch;

    public int count;

    Session(long seq, int stripes) {
      this.seq = seq;
      this.cells = new AtomicLongArray(stripes * PAD);
    }

    long add(int stripe, long delta) {
      return cells.addAndGet(stripe * PAD, delta);
    }

    void checkTerminated(Consumer<Session> onTerminated) {
      for (int i = 0; i < cells.length(); i += PAD) {
        if (cells.get(i) != CLOSED) {
          return;
        }
      }
      if (terminated.compareAndSet(false, true)) {
        onTerminated.accept(this);
      }
    }

    public boolean isTerminated() {
      return terminated.get();
    }
  }
}
