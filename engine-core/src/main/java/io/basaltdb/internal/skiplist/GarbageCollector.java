package io.basaltdb.internal.skiplist;

import io.basaltdb.internal.memory.SlabAllocator;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jctools.queues.MpscUnboundedArrayQueue;

/**
 * The skiplist's garbage collector and reclaimer (Nitro, seed 001 sections 4 and 6.3).
 *
 * <p>Collection: when a snapshot is released, the oldest snapshots whose reference counts are zero
 * are popped strictly in term order; each one's dead list (nodes killed in its term) is cut into
 * chunks that worker threads unlink. Unlinked nodes go to the worker's retire buffer and, a batch
 * at a time, to a barrier session. Reclamation: terminated sessions arrive on an MPSC queue (from
 * whichever thread saw the termination) and are freed in sequence order, because an accessor of an
 * older, still live session could hold a node retired later.
 *
 * <p>Dead nodes of the current term wait in their writers' dead lists until the next snapshot; when
 * they pile up (more than {@link SkipListConfig#gcBacklog()}), the collector takes and releases an
 * internal snapshot so they can be collected. A periodic tick also hands partially filled retire
 * buffers to sessions so idle writers do not hold memory.
 *
 * <p>Concurrency: popping snapshots happens under the skiplist's snapshotLock; freeing is
 * serialized by {@code freeLock}; retire buffers are guarded by their writer's monitor. Invariant:
 * sessions are freed in increasing sequence number with no gaps ({@code nextFree} is the next one
 * due).
 */
final class GarbageCollector {
  private static final int CHUNK = 4096;
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final SkipList list;
  private final ScheduledThreadPoolExecutor executor;

  /** Terminated sessions not yet freed; any thread offers, the free task drains. */
  private final MpscUnboundedArrayQueue<AccessBarrier.Session> terminated =
      new MpscUnboundedArrayQueue<>(64);

  /** Guards pending and nextFree. */
  private final Object freeLock = new Object();

  private final PriorityQueue<AccessBarrier.Session> pending =
      new PriorityQueue<>((a, b) -> Long.compare(a.seq, b.seq));
  private long nextFree;

  /** Set while a free task is queued or running; lets many terminations share one task. */
  private final AtomicBoolean freeScheduled = new AtomicBoolean();

  private final AtomicBoolean collectScheduled = new AtomicBoolean();
  private final AtomicBoolean autoSnapshotScheduled = new AtomicBoolean();

  /** Unlink chunks queued or running; quiesce waits for zero. */
  private final AtomicInteger unlinksInFlight = new AtomicInteger();

  /** Retire batch arrays returned after freeing, reused to keep the write path allocation-free. */
  private final ConcurrentLinkedQueue<long[]> batchPool = new ConcurrentLinkedQueue<>();

  /**
   * Non-intrusive backups capturing what the workers unlink (copy on write, under {@link
   * #captureLock}). Volatile: a chunk reads it after popping its dead list, which happens after the
   * backup registered (see {@link UnlinkCapture}).
   */
  private volatile UnlinkCapture[] captures = new UnlinkCapture[0];

  private final Object captureLock = new Object();

  private final Runnable freeTask = this::runFree;
  private final Runnable collectTask = this::runCollect;
  private final Runnable autoSnapshotTask = this::runAutoSnapshot;

  GarbageCollector(SkipList list) {
    this.list = list;
    ThreadFactory tf =
        r -> {
          Thread t = new Worker(r, "basalt-skiplist-gc-" + THREADS.incrementAndGet());
          t.setDaemon(true);
          return t;
        };
    int fixed = list.config.gcWorkers();
    this.executor = new ScheduledThreadPoolExecutor(fixed > 0 ? fixed : 1, tf);
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  /** A collector thread: its unlinks make a {@link Writer} that is not a writer to scale to. */
  private static final class Worker extends Thread {
    Worker(Runnable r, String name) {
      super(r, name);
    }
  }

  /** The collector's threads now (the pool's core size). */
  int workers() {
    return executor.getCorePoolSize();
  }

  /**
   * With {@link SkipListConfig#gcWorkers} 0, sets the pool to one thread per live thread that
   * writes to the skiplist (its collector threads aside), from 1 up to the processors. A larger
   * pool starts its threads as chunks are queued; a smaller one lets the extra threads go when
   * idle.
   */
  private void scaleWorkers() {
    if (list.config.gcWorkers() > 0) return;
    int writers = 0;
    for (Writer w : list.writers) if (!(w.owner instanceof Worker) && w.owner.isAlive()) writers++;
    int target = Math.max(1, Math.min(writers, Runtime.getRuntime().availableProcessors()));
    if (target != executor.getCorePoolSize()) executor.setCorePoolSize(target);
  }

  void start() {
    long ms = list.config.gcIntervalMillis();
    executor.scheduleWithFixedDelay(this::tick, ms, ms, TimeUnit.MILLISECONDS);
  }

  // ---- triggers
  // ----------------------------------------------------------------------------------------

  /**
   * Called by a writer after each mutation: asks for an internal snapshot when dead nodes pile up.
   */
  void afterWrite(Writer w) {
    if (w.deadCount >= list.config.gcBacklog()
        && autoSnapshotScheduled.compareAndSet(false, true)) {
      submit(autoSnapshotTask, autoSnapshotScheduled);
    }
  }

  void snapshotReleased() {
    if (collectScheduled.compareAndSet(false, true)) {
      submit(collectTask, collectScheduled);
    }
  }

  /** Barrier callback, on whichever thread saw the session terminate. */
  void sessionTerminated(AccessBarrier.Session s) {
    terminated.offer(s);
    if (freeScheduled.compareAndSet(false, true)) {
      submit(freeTask, freeScheduled);
    }
  }

  long[] takeBatchArray() {
    long[] a = batchPool.poll();
    return a != null ? a : new long[list.config.retireBatch()];
  }

  // ---- tasks
  // -------------------------------------------------------------------------------------------

  private void tick() {
    if (list.closed) return;
    flushRetireBuffers();
    list.allocator.trimDeadThreads();
    list.pruneDeadWriters();
    scaleWorkers();
    long backlog = 0;
    for (Writer w : list.writers) {
      backlog += w.deadCount; // racy read: a stale count only delays the decision
    }
    if (backlog >= list.config.gcBacklog() && autoSnapshotScheduled.compareAndSet(false, true)) {
      submit(autoSnapshotTask, autoSnapshotScheduled);
    }
  }

  private void runAutoSnapshot() {
    autoSnapshotScheduled.set(false);
    if (list.closed) return;
    AccessBarrier.Session s = list.barrier.enter();
    try {
      if (list.closed) return;
      new Snapshot(list, list.createSnapshot()).close();
    } finally {
      list.barrier.exit(s);
    }
  }

  private void runCollect() {
    collectScheduled.set(false);
    unlinksInFlight
        .incrementAndGet(); // covers the pop: quiesce must not see 0 between pop and queueing
    try {
      queueUnlinks(popCollectable());
    } finally {
      unlinksInFlight.decrementAndGet();
    }
  }

  private void queueUnlinks(long[][] work) {
    for (long[] dead : work) {
      for (int from = 0; from < dead.length; from += CHUNK) {
        int start = from;
        int end = Math.min(dead.length, from + CHUNK);
        unlinksInFlight.incrementAndGet();
        try {
          executor.execute(() -> unlinkChunk(dead, start, end));
        } catch (RejectedExecutionException e) {
          unlinkChunk(dead, start, end); // shutting down: do it here
        }
      }
    }
  }

  /** Pops the collectable snapshots, oldest first, and returns their dead lists. */
  private long[][] popCollectable() {
    synchronized (list.snapshotLock) {
      java.util.ArrayList<long[]> out = new java.util.ArrayList<>();
      while (!list.snapshots.isEmpty() && list.snapshots.peekFirst().refs.get() == 0) {
        Snapshot.Descriptor d = list.snapshots.pollFirst();
        if (d.deadCount > 0) out.add(java.util.Arrays.copyOf(d.dead, d.deadCount));
      }
      return out.toArray(new long[0][]);
    }
  }

  private void unlinkChunk(long[] dead, int from, int to) {
    try {
      Writer w = list.writer();
      UnlinkCapture[] cs = captures; // after the pop of these nodes: see UnlinkCapture
      ItemSink[] sinks = cs.length == 0 ? null : new ItemSink[cs.length];
      try {
        for (int c = 0; c < cs.length; c++) sinks[c] = cs[c].enter(); // never throws
        AccessBarrier.Session s = list.barrier.enter();
        try {
          if (list.closed) return; // close() frees these nodes, still linked, in its final walk
          for (int i = from; i < to; i++) {
            for (int c = 0; c < cs.length; c++) {
              if (sinks[c] != null)
                cs[c].offer(sinks[c], dead[i]); // before the unlink: a backup's term sees it
            }
            list.removeNode(w, dead[i]);
          }
        } finally {
          list.barrier.exit(s);
        }
      } finally {
        for (int c = 0; c < cs.length; c++) {
          if (sinks[c] != null) cs[c].exit(sinks[c]);
        }
      }
      flush(w);
    } finally {
      unlinksInFlight.decrementAndGet();
    }
  }

  /** Registers a capture in INIT (see {@link UnlinkCapture}); later chunks see it. */
  void register(UnlinkCapture c) {
    synchronized (captureLock) {
      UnlinkCapture[] cs = java.util.Arrays.copyOf(captures, captures.length + 1);
      cs[cs.length - 1] = c;
      captures = cs;
    }
  }

  void unregister(UnlinkCapture c) {
    synchronized (captureLock) {
      UnlinkCapture[] cs = captures;
      int n = 0;
      UnlinkCapture[] out = new UnlinkCapture[cs.length];
      for (UnlinkCapture x : cs) if (x != c) out[n++] = x;
      captures = java.util.Arrays.copyOf(out, n);
    }
  }

  private void runFree() {
    freeScheduled.set(false);
    freeReady();
  }

  /** Frees every terminated session whose turn has come. */
  private void freeReady() {
    synchronized (freeLock) {
      AccessBarrier.Session s;
      while ((s = terminated.poll()) != null) {
        pending.add(s);
      }
      Writer w = list.writer();
      while (!pending.isEmpty() && pending.peek().seq == nextFree) {
        AccessBarrier.Session done = pending.poll();
        freeBatch(w, done.batch, done.count);
        if (done.batch != null) batchPool.offer(done.batch);
        done.batch = null;
        nextFree++;
      }
    }
  }

  private void freeBatch(Writer w, long[] batch, int count) {
    for (int i = 0; i < count; i++) {
      freeNode(w, batch[i]);
    }
  }

  void freeNode(Writer w, long node) {
    int height = Node.height(node);
    long size = Node.size(node);
    w.count(Writer.NODES, -1);
    w.count(Writer.USER_BYTES, -(Node.keyLen(node) + Node.valueLen(node)));
    for (int l = 0; l < height; l++) {
      w.count(Writer.LEVELS + l, -1);
    }
    list.allocator.free(node, size, Node.arena(height));
  }

  // ---- synchronous paths
  // -------------------------------------------------------------------------------

  void flushRetireBuffers() {
    for (Writer w : list.writers) {
      flush(w);
    }
  }

  private void flush(Writer w) {
    synchronized (w) {
      if (w.retiredCount > 0) {
        list.barrier.close(w.retired, w.retiredCount);
        w.retired = null;
        w.retiredCount = 0;
      }
    }
  }

  /** See {@link SkipList#quiesce()}. The caller must not be inside an operation of the list. */
  void quiesce() {
    new Snapshot(list, list.createSnapshot())
        .close(); // stitch every dead node of the term just closed
    runCollect();
    while (unlinksInFlight.get() > 0) {
      Thread.onSpinWait();
      Thread.yield();
    }
    flushRetireBuffers();
    long upTo;
    synchronized (list.barrier) {
      upTo = list.barrier.currentSeq();
      list.barrier.close(null, 0); // every accessor present now is in a session <= upTo
    }
    waitFreedThrough(upTo);
  }

  private void waitFreedThrough(long seq) {
    while (true) {
      freeReady();
      synchronized (freeLock) {
        if (nextFree > seq) return;
      }
      Thread.yield();
    }
  }

  /**
   * For close(): waits for operations in flight, stops the workers, then frees every node: retired,
   * pending, and still linked. {@code closed} is already set, so new operations touch no node. With
   * {@code bulk}, linked nodes are only counted, not freed, and the count (in allocator block
   * bytes) is returned for {@link SlabAllocator#closeReleasing}.
   */
  long shutdownAndFreeAll(boolean bulk) {
    long upTo;
    synchronized (list.barrier) {
      upTo = list.barrier.currentSeq();
      list.barrier.close(null, 0);
    }
    waitFreedThrough(upTo); // every operation that saw closed == false has finished
    executor.shutdown();
    try {
      if (!executor.awaitTermination(1, TimeUnit.MINUTES)) {
        throw new IllegalStateException("skiplist garbage collector did not stop within a minute");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "interrupted while stopping the skiplist garbage collector", e);
    }
    flushRetireBuffers();
    synchronized (list.barrier) {
      upTo = list.barrier.currentSeq();
      list.barrier.close(null, 0);
    }
    waitFreedThrough(upTo);
    Writer w = list.writer();
    // lv: every accessor has left the barrier; its exit already ordered their links before this
    long node = Node.ptr(Node.lvNext(list.head, 0));
    long headSize = Node.size(SkipList.MAX_HEIGHT, 0, 0);
    if (bulk) {
      // the allocator is ours and closes next: count the blocks instead of freeing each one
      long stillAllocated = SlabAllocator.blockSize(headSize);
      while (node != 0) {
        stillAllocated += SlabAllocator.blockSize(Node.size(node));
        node = Node.ptr(Node.lvNext(node, 0)); // lv: as above
      }
      return stillAllocated;
    }
    while (node != 0) {
      long next = Node.ptr(Node.lvNext(node, 0)); // lv: as above
      freeNode(w, node);
      node = next;
    }
    list.allocator.free(list.head, headSize);
    return 0;
  }

  private void submit(Runnable task, AtomicBoolean scheduledFlag) {
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      scheduledFlag.set(false); // shutting down; close() frees synchronously
    }
  }
}
