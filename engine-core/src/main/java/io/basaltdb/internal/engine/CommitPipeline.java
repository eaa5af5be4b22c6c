package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.MemoryLimitException;
import io.basaltdb.SyncMode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
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
 * Applying and publishing {@link Engine#lastSeqno} happen under {@link Engine#applyLock}, so a snapshot
 * sees whole groups.
 *
 * <p>Thread-safety: {@link #write} may be called from any thread.
 */
final class CommitPipeline {
  private final Engine engine;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition turn = lock.newCondition();
  /** Wakes writers stalled on a full write cache; signalled by the flusher. */
  private final Condition flushed = lock.newCondition();
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

  CommitPipeline(Engine engine) {
    this.engine = engine;
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
      engine.checkWritable();
      if (!engine.inMemory) makeRoom();
      lock.lock();
      try {
        long bytes = 0;
        for (Pending q : queue) {
          if (!group.isEmpty() && bytes + q.batch.encodedSize() > engine.options.maxGroupCommitBytes()) break;
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
      engine.fail(error);
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
    long seq = engine.lastSeqno + 1;
    long estimate = 0;
    for (Pending q : group) {
      q.batch.firstSeqno = seq;
      seq += q.batch.count;
      batches.add(q.batch);
      estimate += q.batch.userBytes() + q.batch.count * 96L;
    }
    checkMemory(estimate);
    if (!engine.inMemory) {
      try {
        long written = engine.wal.append(batches, engine.options.syncMode() == SyncMode.SYNC);
        engine.stats.walBytes.add(written);
        if (engine.options.syncMode() == SyncMode.SYNC) engine.stats.walSyncs.increment();
      } catch (BasaltException e) {
        engine.fail(e);
        throw e;
      }
    }
    engine.applyLock.lock();
    try {
      Memtable m = engine.current().active;
      try {
        for (Batch b : batches) apply(m, b);
      } catch (RuntimeException e) {
        if (engine.inMemory) throw e;
        // The WAL holds the group, the write cache only part of it, and its seqnos are spent: nothing
        // more may be written in this run. Reopening replays the group whole.
        BasaltException f = new BasaltException("the write cache could not take a group the WAL already holds ("
            + e + "); the store refuses writes until it is reopened, which replays the group", e);
        engine.fail(f);
        throw f;
      }
      engine.lastSeqno = seq - 1; // publish: gets that met the group's entries were waiting for this
      if (engine.inMemory) {
        for (Batch b : batches) removeTombstones(m, b);
      }
    } finally {
      engine.applyLock.unlock();
    }
    engine.stats.groupCommits.increment();
    for (Batch b : batches) {
      engine.stats.batches.increment();
      engine.stats.userBytes.add(b.userBytes());
    }
  }

  /**
   * Applies a batch to a memtable, deletes as tombstones, which shadow older versions in the key index
   * and tell a concurrent get that a delete is not yet published. Operations on a keyspace dropped
   * meanwhile are skipped; their seqnos stay consumed.
   */
  void apply(Memtable m, Batch b) {
    for (int i = 0; i < b.count; i++) {
      long seqno = b.firstSeqno + i;
      if (!engine.isLive(b.keyspaces[i])) continue;
      boolean delete = b.types[i] != Batch.PUT;
      m.apply(b.keyspaces[i], b.keys[i], seqno, delete, b.values[i]);
      if (delete) engine.stats.deletes.increment(); else engine.stats.puts.increment();
    }
  }

  /**
   * The in-memory engine, once the group is published: removes the batch's tombstones outright, as it
   * has no older versions for them to shadow. Still under the apply lock, so no snapshot sees them.
   */
  private void removeTombstones(Memtable m, Batch b) {
    for (int i = 0; i < b.count; i++) {
      if (b.types[i] != Batch.PUT && engine.isLive(b.keyspaces[i])) {
        m.removeTombstone(b.keyspaces[i], b.keys[i], b.firstSeqno + i);
      }
    }
  }

  /**
   * Refuses a group the memory quota cannot hold before anything is written, so a batch is never half
   * applied. Snapshots pin the write caches they read, which is the usual reason on disk.
   */
  private void checkMemory(long estimate) {
    long quota = engine.allocator.quota();
    long used = engine.allocator.usedBytes();
    if (used + 2 * estimate + 2 * engine.chunkSize > quota) {
      throw new MemoryLimitException((engine.inMemory ? "the in-memory store is full: " : "the write cache is full: ")
          + used + " of " + quota + " bytes in use, a write needs about " + estimate
          + (engine.inMemory ? "; delete data or reopen with a larger Options.memoryQuota"
              : "; open snapshots pin flushed write caches, close them or raise Options.memoryQuota")
          + ". Nothing was written");
    }
  }

  /**
   * Disk only: switches a full write cache to immutable and rotates the WAL, or, if the previous one is
   * still being flushed, slows the writer (the active cache is 3/4 full) or stalls it (full).
   */
  private void makeRoom() {
    long half = engine.options.writeCacheSize() / 2;
    boolean slowed = false;
    while (true) {
      engine.checkWritable();
      Version v = engine.current();
      if (l0Full(v)) {
        long t0 = System.nanoTime();
        lock.lock();
        try {
          if (engine.failure() == null) flushed.await(20, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new BasaltException("interrupted while waiting for compaction; nothing was written");
        } finally {
          lock.unlock();
        }
        engine.stats.l0StallNanos.add(System.nanoTime() - t0);
        engine.stats.l0Stalls.increment();
        continue;
      }
      long active = v.active.bytes();
      if (active < half) {
        if (v.immutable != null && !slowed && active >= half * 3 / 4) {
          long t0 = System.nanoTime();
          sleepQuietly(1);
          engine.stats.slowdownNanos.add(System.nanoTime() - t0);
          engine.stats.slowdowns.increment();
          slowed = true;
          continue;
        }
        return;
      }
      if (v.immutable == null) {
        engine.flusher.switchMemtable();
        return;
      }
      long t0 = System.nanoTime();
      lock.lock();
      try {
        if (engine.current().immutable != null && engine.failure() == null) flushed.await(50, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new BasaltException("interrupted while waiting for the write cache to flush; nothing was written");
      } finally {
        lock.unlock();
      }
      engine.stats.stallNanos.add(System.nanoTime() - t0);
      engine.stats.stalls.increment();
    }
  }

  /** Whether a keyspace has so many level-0 tables that writers must wait for compaction. */
  private boolean l0Full(Version v) {
    for (Map.Entry<Integer, KeyspaceFiles> e : v.files.entrySet()) { // a dropped keyspace stalls nobody
      if (e.getValue().level(0).size() >= engine.options.l0StopWritesTrigger() && engine.isLive(e.getKey())) return true;
    }
    return false;
  }

  /** Called by the flusher after each flush, by compactions and by the engine on failure. */
  void wakeStalled() {
    lock.lock();
    try {
      flushed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Switches the write cache (as a leader would, between groups) and waits for it to be flushed. */
  void forceFlush() {
    atHead(() -> {
      engine.checkWritable();
      // Wait out a flush in progress, then switch the active cache if it holds anything.
      while (engine.current().immutable != null) awaitFlush();
      if (!engine.current().active.isEmpty()) engine.flusher.switchMemtable();
    });
    while (engine.current().immutable != null) awaitFlush();
  }

  private void awaitFlush() {
    engine.checkWritable();
    lock.lock();
    try {
      if (engine.current().immutable != null) flushed.await(20, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BasaltException("interrupted while waiting for a flush");
    } finally {
      lock.unlock();
    }
  }

  /** The in-memory engine removes a dropped keyspace's keys at once (no flush will skip them). */
  void dropInMemory(int keyspace) {
    atHead(() -> {
      engine.applyLock.lock();
      try {
        engine.current().active.removeKeyspace(keyspace);
      } finally {
        engine.applyLock.unlock();
      }
    });
  }

  /** Runs {@code action} at the head of the write queue, between commit groups, as a leader would. */
  private void atHead(Runnable action) {
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

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
