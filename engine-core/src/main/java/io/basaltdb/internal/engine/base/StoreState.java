package io.basaltdb.internal.engine.base;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.StorageException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Whether the store is open and healthy, and the signal writers stall on. The first write, flush or
 * compaction failure is recorded and refuses writes from then on (reads still work); a failure and
 * every flush or compaction wake the stalled writers, so they see the failure or the room made.
 *
 * <p>Thread-safety: any thread. {@link #failure} and {@link #closed} are volatile (every writer
 * reads them; the first failure is set under this object's monitor, so it is told of once); the
 * stall condition is guarded by its own lock.
 */
public final class StoreState {
  /** The first failure; written once (racy first-wins is fine: any failure refuses writes). */
  private volatile BasaltException failure;

  /** Set once by close. */
  private volatile boolean closed;

  private final ReentrantLock stallLock = new ReentrantLock();
  private final Condition progress = stallLock.newCondition();

  /** Tells the listener and the log of the store's work and its failure. */
  private final Notifier notifier;

  public StoreState(Notifier notifier) {
    this.notifier = notifier;
  }

  public Notifier notifier() {
    return notifier;
  }

  public void checkOpen() {
    if (closed) throw new ClosedException("the store is closed; open it again");
  }

  public boolean isClosed() {
    return closed;
  }

  /** Marks the store closed; false if it already was. */
  public synchronized boolean markClosed() {
    if (closed) return false;
    closed = true;
    return true;
  }

  /**
   * Records the first failure, and tells of it once; writes are refused from then on. The listener
   * and the log hear of it on a thread of their own: callers may hold the VersionSet's or the apply
   * lock, which a listener reading the store's stats would need, and a listener may close the
   * store, which waits for the very worker that failed.
   */
  public void fail(BasaltException e) {
    boolean first;
    synchronized (this) {
      first = failure == null;
      if (first) failure = e;
    }
    if (first) {
      Thread t = new Thread(() -> notifier.failed(e), "basalt-failure-notifier");
      t.setDaemon(true);
      t.start();
    }
    progressed();
  }

  public BasaltException failure() {
    return failure;
  }

  public void checkWritable() {
    BasaltException f = failure;
    if (f != null) {
      throw new StorageException(
          "the store refuses writes after an earlier failure ("
              + f.getMessage()
              + "); reads still work. Close and reopen the store to recover every acknowledged write",
          f);
    }
  }

  /** A flush or compaction finished, or the store failed: wakes every stalled writer. */
  public void progressed() {
    stallLock.lock();
    try {
      progress.signalAll();
    } finally {
      stallLock.unlock();
    }
  }

  /**
   * Waits up to {@code millis} for progress while {@code stillBlocked} holds and the store has not
   * failed; {@code what} names the wait in the interruption message.
   */
  public void awaitProgress(
      long millis, java.util.function.BooleanSupplier stillBlocked, String what) {
    stallLock.lock();
    try {
      if (failure == null && stillBlocked.getAsBoolean())
        progress.await(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BasaltException("interrupted while waiting for " + what + "; nothing was written");
    } finally {
      stallLock.unlock();
    }
  }
}
