package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import java.util.concurrent.locks.LockSupport;

/**
 * Fsyncs the WAL on a thread of its own ({@code basalt-wal-sync}), so that a commit leader in
 * {@code SyncMode.SYNC} links its group into the write cache while the group's fsync runs, and
 * publishes the group once both are done ({@link CommitPipeline}). With one writer the fsync and the
 * skiplist inserts took about a third of a commit each in the update race; one after the other they
 * added up.
 *
 * <p>One request at a time: the leader {@link #request requests} a sync after it wrote its group and
 * {@link #await awaits} it before it publishes, and only then can the next group be written. A failed
 * sync is sticky (the file refuses later syncs too, {@code FileStorageFile}), and every later await
 * throws it.
 *
 * <p>Thread-safety: {@link #request} and {@link #await} are for the commit leader (one at a time);
 * {@code requested} and {@code waiter} are written only by it, {@code completed} and {@code failure}
 * only by the sync thread, all volatile, each written before the unpark that announces it.
 */
final class WalSyncer {
  private final CommitLog wal;
  private final Thread thread;
  private volatile long requested;
  private volatile long completed;
  private volatile BasaltException failure;
  private volatile Thread waiter;
  private volatile boolean closed;

  WalSyncer(CommitLog wal) {
    this.wal = wal;
    this.thread = new Thread(this::run, "basalt-wal-sync");
    thread.setDaemon(true);
    thread.start();
  }

  /** Asks for an fsync of everything written to the WAL so far; returns the ticket to {@link #await}. */
  long request() {
    long ticket = requested + 1;
    requested = ticket;
    LockSupport.unpark(thread);
    return ticket;
  }

  /**
   * Waits until the sync of {@code ticket} is done.
   *
   * @throws BasaltException the sync's failure (or an earlier one)
   */
  void await(long ticket) {
    waiter = Thread.currentThread();
    // An interrupt status (a file operation restores it after retrying, FileStorageFile) would make
    // every park return at once: the leader would spin for the whole fsync. Set again on the way out.
    boolean interrupted = Thread.interrupted();
    try {
      while (completed < ticket) {
        BasaltException f = failure;
        if (f != null) throw f;
        if (closed) throw new ClosedException("the WAL sync thread stopped; the store is closing");
        LockSupport.park(this);
        interrupted |= Thread.interrupted();
      }
    } finally {
      waiter = null;
      if (interrupted) Thread.currentThread().interrupt();
    }
    BasaltException f = failure;
    if (f != null) throw f;
  }

  private void run() {
    while (!closed) {
      long r = requested;
      if (completed >= r) {
        LockSupport.park(this);
        continue;
      }
      try {
        wal.sync();
      } catch (BasaltException e) {
        failure = e;
      } catch (RuntimeException | Error e) {
        failure = new BasaltException("WAL sync failed: " + e, e);
      }
      completed = r;
      Thread w = waiter;
      if (w != null) LockSupport.unpark(w);
    }
  }

  /** Stops the thread after the sync in progress, if any; a leader still waiting then fails. */
  void close() {
    closed = true;
    LockSupport.unpark(thread);
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Thread w = waiter;
    if (w != null) LockSupport.unpark(w);
  }
}
