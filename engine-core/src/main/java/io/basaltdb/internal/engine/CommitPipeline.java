package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.Options;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Group commit (Magma section 3.1; LevelDB's writer queue): writers queue their batches; the writer at
 * the head becomes the leader, makes room in the write cache (switching it, or waiting for a flush),
 * takes the batches queued behind it up to {@link io.basaltdb.Options#maxGroupCommitBytes}, assigns
 * their seqnos, writes them to the WAL with one write and one fsync, applies them to the active write
 * cache and wakes their writers. While it does, new writers queue up for the next group.
 *
 * <h2>Concurrency</h2>
 * {@link #lock} guards the queue and the done flags of queued writes. Only the head of the queue acts
 * as leader, so groups are committed one at a time, in queue order, and seqnos follow WAL order.
 * Applying and publishing {@link Versions#lastSeqno} happen under {@link Versions#applyLock}, so a snapshot
 * sees whole groups. What differs between the disk and the in-memory store (room, logging) is the
 * {@link CommitTarget}'s.
 *
 * <p>Thread-safety: {@link #write} may be called from any thread.
 */
final class CommitPipeline {
  private final Options options;
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final StoreState state;
  private final EngineStats stats;
  private final CommitTarget target;
  private final ReentrantLock lock = new ReentrantLock();
  private final java.util.concurrent.locks.Condition turn = lock.newCondition();
  /** Queued writes, leader first; guarded by lock. */
  private final ArrayDeque<Pending> queue = new ArrayDeque<>();
  /** Set by close; guarded by lock. */
  private boolean closed;

  private static final class Pending {
    final Batch batch;
    /** Guarded by the pipeline's lock. */
    boolean done;
    BasaltException error;

    Pending(Batch batch) {
      this.batch = batch;
    }
  }

  CommitPipeline(Options options, Versions versions, KeyspaceCatalog catalog, StoreState state, EngineStats stats,
      CommitTarget target) {
    this.options = options;
    this.versions = versions;
    this.catalog = catalog;
    this.state = state;
    this.stats = stats;
    this.target = target;
  }

  void write(Batch batch) {
    Pending p = new Pending(batch);
    lock.lock();
    try {
      if (closed) throw new ClosedException("the store is closed; open it again");
      queue.addLast(p);
      while (!p.done && queue.peekFirst() != p) turn.awaitUninterruptibly();
      if (p.done) {
        if (p.error != null) throw p.error;
        return;
      }
    } finally {
      lock.unlock();
    }
    lead(p);
  }

  /** Runs one commit group as its leader; {@code p} is at the head of the queue. */
  private void lead(Pending p) {
    List<Pending> group = new ArrayList<>();
    BasaltException error = null;
    try {
      state.checkWritable();
      target.makeRoom();
      lock.lock();
      try {
        long bytes = 0;
        for (Pending q : queue) {
          if (!group.isEmpty() && bytes + q.batch.encodedSize() > options.maxGroupCommitBytes()) break;
          group.add(q);
          bytes += q.batch.encodedSize();
        }
      } finally {
        lock.unlock();
      }
      commit(group);
    } catch (BasaltException e) {
      error = e;
      if (group.isEmpty()) group.add(p);
    } catch (RuntimeException | Error e) {
      error = new BasaltException("write failed: " + e, e);
      state.fail(error);
      if (group.isEmpty()) group.add(p);
    }
    lock.lock();
    try {
      for (Pending q : group) {
        q.done = true;
        q.error = error;
        queue.removeFirst();
      }
      turn.signalAll();
    } finally {
      lock.unlock();
    }
    if (error != null) throw error;
  }

  private void commit(List<Pending> group) {
    List<Batch> batches = new ArrayList<>(group.size());
    long seq = versions.lastSeqno + 1;
    long estimate = 0;
    for (Pending q : group) {
      q.batch.firstSeqno = seq;
      seq += q.batch.count;
      batches.add(q.batch);
      estimate += q.batch.userBytes() + q.batch.count * 96L;
    }
    target.admit(estimate);
    target.log(batches);
    versions.applyLock.lock();
    try {
      WriteCache m = versions.current().active;
      try {
        for (Batch b : batches) apply(m, b, catalog, stats);
      } catch (RuntimeException e) {
        // The WAL holds the group, the write cache only part of it, and its seqnos are spent: nothing
        // more may be written in this run. Reopening replays the group whole. Admission makes this a bug.
        io.basaltdb.StorageException f = new io.basaltdb.StorageException("the write cache could not take a"
            + " group the WAL already holds (" + e + "); the store refuses writes until it is reopened, which"
            + " replays the group", e);
        state.fail(f);
        throw f;
      }
      versions.lastSeqno = seq - 1; // publish: gets that met the group's entries were waiting for this
      target.applied(m, batches);
    } finally {
      versions.applyLock.unlock();
    }
    stats.groupCommits.increment();
    for (Batch b : batches) {
      stats.batches.increment();
      stats.userBytesWritten.add(b.userBytes());
    }
  }

  /**
   * Applies a batch to a write cache, deletes as tombstones, which shadow older versions in the key index
   * and tell a concurrent get that a delete is not yet published. Operations on a keyspace dropped
   * meanwhile are skipped; their seqnos stay consumed.
   */
  static void apply(WriteCache m, Batch b, KeyspaceCatalog catalog, EngineStats stats) {
    for (int i = 0; i < b.count; i++) {
      long seqno = b.firstSeqno + i;
      if (!catalog.isLive(b.keyspaces[i])) continue;
      boolean delete = b.types[i] != Batch.PUT;
      m.apply(b.keyspaces[i], b.keys[i], seqno, delete, b.values[i]);
      if (delete) stats.deletes.increment(); else stats.puts.increment();
    }
  }

  /** Runs {@code action} at the head of the write queue, between commit groups, as a leader would. */
  void runBetweenGroups(Runnable action) {
    Pending p = new Pending(new Batch(0));
    lock.lock();
    try {
      if (closed) throw new ClosedException("the store is closed; open it again");
      queue.addLast(p);
      while (queue.peekFirst() != p) turn.awaitUninterruptibly();
    } finally {
      lock.unlock();
    }
    try {
      action.run();
    } finally {
      lock.lock();
      try {
        queue.removeFirst();
        turn.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /** Refuses new writes and waits for queued ones to finish. */
  void close() {
    lock.lock();
    try {
      closed = true;
      while (!queue.isEmpty()) turn.awaitUninterruptibly();
    } finally {
      lock.unlock();
    }
  }
}
