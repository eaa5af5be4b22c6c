package io.basaltdb.internal.engine.write;

import io.basaltdb.BasaltException;
import io.basaltdb.ClosedException;
import io.basaltdb.MemoryLimitException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.ItemCounter;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Group commit (Magma section 3.1; LevelDB's writer queue): writers queue their batches; the writer
 * at the head becomes the leader, makes room in the write cache (switching it, or waiting for a
 * flush), takes the batches queued behind it up to {@link io.basaltdb.Options#maxGroupCommitBytes},
 * assigns their seqnos, admits them to the write cache, writes them to the WAL with one write and
 * one fsync, applies them to the active write cache and wakes their writers. While it does, new
 * writers queue up for the next group.
 *
 * <h2>Admission</h2>
 *
 * Before the WAL write the leader allocates every skiplist node of the group ({@link
 * WriteCache#prepare}), so the apply after it cannot run out of memory: a write either returns
 * applied, or throws having written nothing. When the quota cannot serve the group the leader
 * collects the active cache's garbage, then lets the store free memory ({@link
 * CommitTarget#freeMemory}: wait for a flush, switch the cache) and retries; only when the group is
 * too big for the quota, or memory stays pinned (by snapshots) for {@link
 * CommitTarget#pinnedWaitNanos}, does it throw {@link MemoryLimitException}, with nothing written
 * and the store still writable.
 *
 * <h2>Concurrency</h2>
 *
 * {@link #lock} guards the queue. Only the head of the queue acts as leader, so groups are
 * committed one at a time, in queue order, and seqnos follow WAL order. A queued writer parks on
 * its own and is woken only for what concerns it (RocksDB's write thread does the same): by the
 * leader that finished its write ({@link Pending#done}), or by the one that made it the head
 * ({@link Pending#leading}). A condition signalled to every waiter at every group end made each
 * commit wake all queued writers, of which all but one went back to sleep: on two cores those
 * context switches, not the commits, were where YCSB's writers spent their time
 * (docs/architecture.md, "Group commit wake-ups"). Applying and publishing {@link
 * Versions#lastSeqno} happen under {@link Versions#applyLock}, so a snapshot sees whole groups.
 * What differs between the disk and the in-memory store (room, logging) is the {@link
 * CommitTarget}'s.
 *
 * <p>Thread-safety: {@link #write} may be called from any thread.
 */
public final class CommitPipeline {
  private final Options options;
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final StoreState state;
  private final EngineStats stats;
  private final CommitTarget target;
  private final ReentrantLock lock = new ReentrantLock();

  /** Signalled, under the lock, when the queue empties after {@link #close}. */
  private final java.util.concurrent.locks.Condition drained = lock.newCondition();

  /** Queued writes, leader first, linked through {@link Pending#next}; guarded by lock. */
  private Pending head;

  private Pending tail;

  /** Set by close; guarded by lock. */
  private boolean closed;

  // The leader's working space, reused from group to group so that a commit allocates nothing on
  // the heap.
  // Only the writer at the head of the queue uses it; the next leader starts once finish() has
  // removed
  // this group from the queue under the lock, after which the previous leader no longer touches it.
  private final ArrayList<Pending> group = new ArrayList<>();
  private final ArrayList<Batch> batches = new ArrayList<>();

  /**
   * The group's skiplist nodes per batch and operation ({@link #prepare}); rows over {@link
   * #RETAINED_ROW} are dropped.
   */
  private long[][] nodes = new long[4][];

  private static final int RETAINED_ROW = 1024;

  /** A queued write: a batch and its outcome; reused by its thread for its next write. */
  private static final class Pending {
    /** The thread that waits for it: the one that made it (each thread makes its own). */
    final Thread waiter = Thread.currentThread();

    /** Null for a {@link #runBetweenGroups} action's place in the queue, which no group takes. */
    Batch batch;

    /**
     * Set once its group has finished, under the pipeline's lock, before its thread is unparked;
     * read by that thread without the lock (volatile: {@link #error}, written before it, is then
     * visible).
     */
    volatile boolean done;

    /** Written before {@link #done}, read after it. */
    BasaltException error;

    /**
     * Set, under the pipeline's lock, when it becomes the head of the queue; read by its thread
     * without it.
     */
    volatile boolean leading;

    /**
     * The next write in the queue; guarded by the pipeline's lock. An entry leaves the queue before
     * it is marked {@link #done}, as its thread may reuse it at once.
     */
    Pending next;

    /**
     * Whether its thread is using it (a write made from inside another write takes a new one).
     * Thread-confined.
     */
    boolean inUse;
  }

  /**
   * Each thread's queue entry, reused: a thread has one write in flight at a time (but see {@link
   * #take}).
   */
  private static final ThreadLocal<Pending> THREAD_PENDING = ThreadLocal.withInitial(Pending::new);

  /**
   * This thread's queue entry for {@code batch}, or a new one if the thread is already inside a
   * write.
   */
  private static Pending take(Batch batch) {
    Pending p = THREAD_PENDING.get();
    if (p.inUse) p = new Pending();
    p.inUse = true;
    p.batch = batch;
    p.done = false;
    p.leading = false;
    p.error = null;
    p.next = null;
    return p;
  }

  /** Gives a queue entry back to its thread once its write has returned. */
  private static void release(Pending p) {
    p.batch = null;
    p.error = null;
    p.inUse = false;
  }

  /**
   * Appends {@code p} to the queue; under the lock. Returns whether it is the head, so it leads at
   * once.
   */
  private boolean enqueue(Pending p) {
    if (tail == null) {
      head = p;
      p.leading = true;
    } else {
      tail.next = p;
    }
    tail = p;
    return head == p;
  }

  /** Removes the head of the queue; under the lock. */
  private void dequeue() {
    Pending h = head;
    head = h.next;
    if (head == null) tail = null;
    h.next = null;
  }

  /**
   * After the head was removed: marks the new head, if any, as leading and returns it, to be
   * unparked once the lock is released; wakes {@link #close} if it waits. Under the lock.
   */
  private Pending promoteHead() {
    if (closed && head == null) drained.signalAll();
    Pending h = head;
    if (h == null || h.leading) return null;
    h.leading = true;
    return h;
  }

  /**
   * Busy checks of its flags a queued writer makes before it yields, then parks (RocksDB's
   * AwaitState).
   */
  static final int SPINS = Integer.getInteger("basalt.commit.spins", 500);

  /** Yields a queued writer makes before it parks. */
  static final int YIELDS = Integer.getInteger("basalt.commit.yields", 20);

  /**
   * Parks until {@code p} is done or at the head of the queue; a spurious wake-up looks again. Not
   * interruptible, as the condition wait it replaces: an interrupt is kept for the caller to see.
   */
  private static void awaitTurn(Pending p) {
    for (int i = 0;
        i < SPINS;
        i++) { // a commit takes microseconds: a spinning waiter costs its leader no wake-up call
      if (p.done || p.leading) return;
      Thread.onSpinWait();
    }
    for (int i = 0; i < YIELDS; i++) {
      if (p.done || p.leading) return;
      Thread.yield();
    }
    boolean interrupted = false;
    while (!p.done && !p.leading) {
      LockSupport.park(p);
      if (Thread.interrupted()) interrupted = true;
    }
    if (interrupted) Thread.currentThread().interrupt();
  }

  public CommitPipeline(
      Options options,
      Versions versions,
      KeyspaceCatalog catalog,
      StoreState state,
      EngineStats stats,
      CommitTarget target) {
    this.options = options;
    this.versions = versions;
    this.catalog = catalog;
    this.state = state;
    this.stats = stats;
    this.target = target;
  }

  public void write(Batch batch) {
    Pending p = take(batch);
    boolean queued = false;
    try {
      boolean leads;
      lock.lock();
      try {
        if (closed) throw new ClosedException("the store is closed; open it again");
        leads = enqueue(p);
        queued = true;
      } finally {
        lock.unlock();
      }
      if (!leads) awaitTurn(p);
      if (p.done) {
        if (p.error != null) throw p.error;
        return;
      }
      lead(p);
    } finally {
      if (!queued || p.done) {
        release(p);
      } else {
        abandon(p); // an Error left it in the queue: neither it nor its batch may be reused
      }
    }
  }

  /**
   * Leaves a queue entry that an Error (out of memory while waiting, or in a leader before it
   * finished its group) left queued: its thread takes a new entry, and its batch is never written
   * or cleared again, since a leader may still read both.
   */
  private static void abandon(Pending p) {
    if (THREAD_PENDING.get() == p) THREAD_PENDING.set(new Pending());
    if (p.batch != null) p.batch.abandon();
  }

  /** Runs one commit group as its leader; {@code p} is at the head of the queue. */
  private void lead(Pending p) {
    ArrayList<Pending> group = this.group;
    group.clear();
    BasaltException error = null;
    try {
      state.checkWritable();
      CommitTarget.WalSkip direct = target.walSkip(p.batch);
      if (direct != null) {
        group.add(p);
        commitDirect(direct, p.batch);
        stats.userBytesWritten.add(p.batch.userBytes());
        stats.batches.increment();
      } else {
        boolean deletesOnly = target.makeRoom(p.batch);
        lock.lock();
        try {
          long bytes = 0;
          // A group must fit the write quota easily, or its admission could fail where its batches
          // alone would not.
          long maxBytes = Math.min(options.maxGroupCommitBytes(), versions.quota().limit() / 8);
          for (Pending q = head; q != null; q = q.next) {
            if (q.batch == null) break; // a between-groups action: its turn comes after this group
            if (deletesOnly && !q.batch.deletesOnly())
              break; // the disk is short: puts lead their own group
            if (!group.isEmpty() && target.walSkip(q.batch) != null)
              break; // it skips the WAL: it leads its own
            if (!group.isEmpty() && bytes + q.batch.encodedSize() > maxBytes) break;
            group.add(q);
            bytes += q.batch.encodedSize();
          }
        } finally {
          lock.unlock();
        }
        commit(group);
      }
    } catch (BasaltException e) {
      error = e;
      if (group.isEmpty()) group.add(p);
    } catch (RuntimeException | Error e) {
      error = new BasaltException("write failed: " + e, e);
      state.fail(error);
      if (group.isEmpty()) group.add(p);
    } finally {
      target.groupDone();
    }
    finish(group, error);
  }

  /**
   * Marks a group's writes done with {@code error} (null: applied), wakes the queue, throws the
   * error.
   */
  private void finish(List<Pending> group, BasaltException error) {
    Pending next;
    Thread self = Thread.currentThread();
    lock.lock();
    try {
      for (int i = 0; i < group.size(); i++) {
        Pending q = group.get(i);
        Thread waiter = q.waiter;
        // Out of the queue before it is marked done: a writer that sees its flag returns without
        // the
        // lock, and its thread's next write reuses the entry (take() clears its link to the next
        // one).
        dequeue();
        q.error = error;
        q.done = true;
        // Woken here, under the lock, while this leader still owns the group list (the next one
        // reuses
        // it once the lock is released), and with nothing allocated: a woken writer takes no lock,
        // it
        // returns. One that saw its flag before parking, or has moved on, is left a permit: it only
        // makes that thread look again.
        if (waiter != self) LockSupport.unpark(waiter);
      }
      next = promoteHead();
    } finally {
      lock.unlock();
    }
    if (next != null)
      LockSupport.unpark(next.waiter); // outside the lock, which it takes to gather its group
    if (error != null) throw error;
  }

  /**
   * Commits a batch that skips the WAL (Magma section 8.1): once the store has flushed everything
   * before it ({@link CommitTarget.WalSkip#prepare}), it gets its seqnos, is counted as a group
   * would be, and is written to the segments and the key index ({@link
   * CommitTarget.WalSkip#write}), which publishes it (the counts, then {@link Versions#lastSeqno})
   * as the version holding it is installed.
   */
  private void commitDirect(CommitTarget.WalSkip direct, Batch b) {
    direct.prepare(b);
    b.firstSeqno = versions.lastSeqno() + 1;
    long last = b.firstSeqno + b.count - 1;
    ItemCounter.Counted counted = countItems(List.of(b));
    Map<Integer, Long> itemsAfter = null;
    if (counted != null) {
      versions.applyLock.lock();
      try {
        itemsAfter = new java.util.HashMap<>(versions.items().copy());
      } finally {
        versions.applyLock.unlock();
      }
      for (Map.Entry<Integer, Long> d : counted.deltas().entrySet())
        itemsAfter.merge(d.getKey(), d.getValue(), Long::sum);
    }
    direct.write(
        b,
        counted == null ? null : counted.below()[0],
        itemsAfter,
        () -> {
          if (counted != null) versions.items().add(counted);
          versions.publish(last);
        });
    for (int i = 0; i < b.count; i++) {
      if (!catalog.isLive(b.keyspaces[i])) continue;
      if (b.types[i] != Batch.PUT) stats.deletes.increment();
      else stats.puts.increment();
    }
  }

  private void commit(List<Pending> group) {
    ArrayList<Batch> batches = this.batches;
    batches.clear();
    try {
      commit(group, batches);
    } finally {
      batches.clear(); // keeps no batch reachable after its write
      for (int i = 0; i < nodes.length; i++) {
        if (nodes[i] != null && nodes[i].length > RETAINED_ROW) nodes[i] = null;
      }
    }
  }

  private void commit(List<Pending> group, List<Batch> batches) {
    long seq = versions.lastSeqno() + 1;
    long estimate = 0;
    for (int i = 0; i < group.size(); i++) {
      Pending q = group.get(i);
      q.batch.firstSeqno = seq;
      seq += q.batch.count;
      batches.add(q.batch);
      estimate += q.batch.userBytes() + q.batch.count * 96L;
    }
    // Admission: the group's memory before its WAL write. Only this leader switches the active
    // cache,
    // so the one the nodes were prepared in is still active when they are applied.
    target.precheck(batches, estimate);
    WriteCache m = admit(batches, estimate);
    ItemCounter.Counted counted = admittedCounts;
    admittedCounts = null;
    long[][] nodes = this.nodes;
    try {
      target.log(batches);
    } catch (RuntimeException | Error e) {
      discard(m, batches, nodes, batches.size(), 0, 0);
      throw e;
    }
    versions.applyLock.lock();
    try {
      int b = 0, op = 0;
      try {
        for (; b < batches.size(); b++) {
          for (op = 0; op < batches.get(b).count; op++)
            applyPrepared(m, batches.get(b), op, nodes[b][op]);
        }
      } catch (RuntimeException | Error e) {
        discard(
            m,
            batches,
            nodes,
            batches.size(),
            b,
            op + 1); // the nodes not linked yet, so the cache frees without a leak
        // A bug, not a lack of memory (the nodes are allocated): the WAL may hold a group the write
        // cache
        // holds only part of, and its seqnos are spent, so nothing more may be written in this run.
        io.basaltdb.StorageException f =
            new io.basaltdb.StorageException(
                "internal error applying a group to"
                    + " the write cache ("
                    + e
                    + "); the store refuses writes until it is reopened, which replays what"
                    + " the WAL holds",
                e);
        state.fail(f);
        throw f;
      }
      if (counted != null) versions.items().add(counted);
      versions.publish(seq - 1); // publish: gets that met the group's entries were waiting for this
      target.applied(m, batches);
    } finally {
      versions.applyLock.unlock();
    }
    stats.groupCommits.increment();
    for (int i = 0; i < batches.size(); i++) {
      stats.batches.increment();
      stats.userBytesWritten.add(batches.get(i).userBytes());
    }
  }

  /**
   * With exact item counts, how the group changes each keyspace's live keys and what is below the
   * active cache for each write ({@link ItemCounter#deltas}, against the current version: only this
   * leader adds to it or switches its active cache); null without.
   */
  private ItemCounter.Counted countItems(List<Batch> batches) {
    ItemCounter items = versions.items();
    if (items == null) return null;
    Version v = versions.acquire();
    try {
      return items.deltas(v, batches);
    } finally {
      v.release();
    }
  }

  /**
   * Allocates the nodes of {@code batches} in the active write cache (per batch and operation; 0
   * for a keyspace no longer live) and returns that cache; frees memory and retries when the quota
   * cannot serve them. The nodes are in {@link #nodes}, what counting found in {@link
   * #admittedCounts}.
   *
   * @throws MemoryLimitException if the group cannot fit; nothing is allocated or written then
   */
  private WriteCache admit(List<Batch> batches, long estimate) {
    if (estimate > versions.quota().limit() / 2) {
      throw full(
          "a write of about " + estimate + " bytes is larger than the write cache can hold", null);
    }
    long pinnedSince = 0;
    boolean collected = false;
    while (true) {
      state.checkWritable();
      WriteCache m = versions.current().active;
      // Counted against the cache the nodes go into (a retry may follow a switch): what is below a
      // key's new entry depends on it. Before any memory is taken: a failed lookup writes nothing.
      ItemCounter.Counted counted = countItems(batches);
      try {
        prepare(m, batches, counted);
        admittedCounts = counted;
        return m;
      } catch (MemoryLimitException e) {
        if (!collected) {
          m.list
              .quiesce(); // frees the versions the active cache's writes have replaced, then retry
          collected = true;
          continue;
        }
        if (target.freeMemory()) {
          collected = false;
          continue;
        }
        // Nothing the store can free: older caches are pinned by snapshots (or readers), or it is
        // full.
        long now = System.nanoTime();
        if (pinnedSince == 0) pinnedSince = now;
        if (now - pinnedSince >= target.pinnedWaitNanos()) throw full(null, e);
        LockSupport.parkNanos(10_000_000L);
      }
    }
  }

  /** Allocates every node of {@code batches} in {@code m}, or none (it frees them and rethrows). */
  private long[][] prepare(WriteCache m, List<Batch> batches, ItemCounter.Counted counted) {
    if (nodes.length < batches.size())
      nodes = java.util.Arrays.copyOf(nodes, Math.max(batches.size(), nodes.length * 2));
    long[][] nodes = this.nodes;
    int rows = 0;
    try {
      for (int i = 0; i < batches.size(); i++) {
        Batch b = batches.get(i);
        long[] row = nodes[i];
        if (row == null || row.length < b.count) row = nodes[i] = new long[Math.max(b.count, 4)];
        java.util.Arrays.fill(row, 0, b.count, 0L);
        rows = i + 1;
        for (int j = 0; j < b.count; j++) {
          if (!catalog.isLive(b.keyspaces[j])) continue;
          WriteCache.Below below = counted == null ? null : counted.below()[i][j];
          row[j] =
              m.prepare(
                  b.keyspaces[j],
                  b.data(),
                  b.keyOffset(j),
                  b.keyLength(j),
                  b.valueLength(j),
                  b.firstSeqno + j,
                  below == null ? WriteCache.Below.UNKNOWN : below,
                  b.expiry(j));
        }
      }
      return nodes;
    } catch (RuntimeException | Error e) {
      discard(m, batches, nodes, rows, 0, 0);
      throw e;
    }
  }

  /** What counting the group being admitted found (null without exact item counts); leader only. */
  private ItemCounter.Counted admittedCounts;

  /**
   * Returns the nodes of a group from batch {@code batch}, operation {@code op} on, which will not
   * be applied: the first {@code rows} rows of {@code nodes} were prepared (0 where no node was
   * taken).
   */
  private static void discard(
      WriteCache m, List<Batch> batches, long[][] nodes, int rows, int batch, int op) {
    for (int i = batch; i < rows; i++) {
      for (int j = i == batch ? op : 0; j < batches.get(i).count; j++) {
        if (nodes[i][j] != 0) m.discardPrepared(nodes[i][j]);
      }
    }
  }

  /**
   * Applies operation {@code i} of a batch whose node {@link #prepare} allocated, as {@link #apply}
   * does; a node of a keyspace dropped since is returned. Allocates nothing. Leader only, under the
   * apply lock.
   */
  private void applyPrepared(WriteCache m, Batch b, int i, long node) {
    if (node == 0) return; // its keyspace was not live at admission
    if (!catalog.isLive(b.keyspaces[i])) {
      m.discardPrepared(node);
      return;
    }
    m.applyPrepared(node, b.keyspaces[i], b.keyLength(i), b.firstSeqno + i, b.valueLength(i));
    if (b.types[i] != Batch.PUT) stats.deletes.increment();
    else stats.puts.increment();
  }

  private MemoryLimitException full(String why, MemoryLimitException cause) {
    var q = versions.quota();
    MemoryLimitException e =
        new MemoryLimitException(
            target.whenFull()
                + " ("
                + (why != null ? why + "; " : "")
                + q.reservedBytes()
                + " of "
                + q.limit()
                + " bytes reserved, "
                + q.usedBytes()
                + " in use). Nothing was written");
    if (cause != null) e.initCause(cause);
    return e;
  }

  /**
   * Applies a batch to a write cache, deletes as tombstones, which shadow older versions in the key
   * index and tell a concurrent get that a delete is not yet published. Operations on a keyspace
   * dropped meanwhile are skipped; their seqnos stay consumed.
   */
  static void apply(WriteCache m, Batch b, KeyspaceCatalog catalog, EngineStats stats) {
    apply(m, b, null, catalog, stats);
  }

  /**
   * As {@link #apply(WriteCache, Batch, KeyspaceCatalog, EngineStats)}, with what counting found
   * below ({@code below} may be null).
   */
  static void apply(
      WriteCache m, Batch b, WriteCache.Below[] below, KeyspaceCatalog catalog, EngineStats stats) {
    for (int i = 0; i < b.count; i++) {
      long seqno = b.firstSeqno + i;
      if (!catalog.isLive(b.keyspaces[i])) continue;
      boolean delete = b.types[i] != Batch.PUT;
      WriteCache.Below w = below == null || below[i] == null ? WriteCache.Below.UNKNOWN : below[i];
      long node =
          m.prepare(
              b.keyspaces[i],
              b.data(),
              b.keyOffset(i),
              b.keyLength(i),
              b.valueLength(i),
              seqno,
              w,
              b.expiry(i));
      m.applyPrepared(node, b.keyspaces[i], b.keyLength(i), seqno, b.valueLength(i));
      if (delete) stats.deletes.increment();
      else stats.puts.increment();
    }
  }

  /**
   * Runs {@code action} at the head of the write queue, between commit groups, as a leader would.
   */
  public void runBetweenGroups(Runnable action) {
    Pending p = new Pending(); // its batch null: no group takes it
    boolean leads;
    lock.lock();
    try {
      if (closed) throw new ClosedException("the store is closed; open it again");
      leads = enqueue(p);
    } finally {
      lock.unlock();
    }
    if (!leads) awaitTurn(p); // groups stop at p, so it reaches the head
    try {
      action.run();
    } finally {
      Pending next;
      lock.lock();
      try {
        dequeue();
        next = promoteHead();
      } finally {
        lock.unlock();
      }
      if (next != null) LockSupport.unpark(next.waiter);
    }
  }

  /** Refuses new writes and waits for queued ones to finish. */
  public void close() {
    lock.lock();
    try {
      closed = true;
      while (head != null) drained.awaitUninterruptibly();
    } finally {
      lock.unlock();
    }
  }
}
