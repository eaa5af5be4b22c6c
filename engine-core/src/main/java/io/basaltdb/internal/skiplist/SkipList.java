package io.basaltdb.internal.skiplist;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.SlabAllocator;
import java.util.ArrayDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Nitro's lock-free MVCC skiplist (seed 001, sections 2-4 and 6) with its nodes off the Java heap.
 *
 * <h2>Structure</h2>
 *
 * Nodes ({@link Node}) hold key, value, {@code (bornSn, deadSn)} and a tower of links, one 64-bit
 * word per level: the successor's 32-bit reference, bit 32 marking this node deleted at that level,
 * and the top 31 bits of the successor's key prefix, so one CAS swaps all three. Level 0 holds
 * every node; level l about 1/4^l of them (fan-out 4). Keys sort as unsigned bytes; the versions of
 * one key sit together, newest first (the paper orders them by bornSn; newest-first in link order
 * is the same order, and lets a lookup stop at the first version it may see).
 *
 * <h2>MVCC</h2>
 *
 * The current term starts at 1. A put links a new version, born in the writer's term, in front of
 * the key's versions and then sets the superseded version's deadSn to that term; a delete sets the
 * current version's deadSn. A reader at snapshot sn takes the first version born at or before sn
 * and sees it if {@code deadSn == 0 || deadSn > sn}. {@link #snapshot()} increments the term
 * (O(1)), waits for writers still inside the old term to leave it (each writer publishes its term
 * in {@link Writer#activeTerm}), and stitches the writers' dead lists onto the new snapshot
 * (section 4). A version born and killed in the same, current term is visible to no snapshot and is
 * unlinked at once.
 *
 * <h2>Concurrency</h2>
 *
 * Insert: level 0 by CAS (the linearization point), then the tower bottom-up. Delete of a node:
 * mark its tower top-down, then unlink it at every level; any traversal that meets a marked node
 * snips it (cooperative unlinking). A tall node removed while its inserter is still building its
 * tower is handed back to the inserter through the node's build state, so a node is retired only
 * when no level can be relinked. Reads of the current state validate that the version they read was
 * still the first one after its predecessor, so a read never returns a value older than one another
 * read already returned. Every operation is an accessor of {@link AccessBarrier}; unlinked nodes
 * are freed only when every accessor that could hold them has left.
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>At every level the list is sorted by key; versions of a key are in the same relative order
 *       at every level (newest first).
 *   <li>Along a key's versions bornSn never increases. A version's deadSn is set once: by its
 *       superseder, to the superseder's bornSn, or by a delete that read it as the newest version;
 *       a delete racing a put may set a larger one, which readers never consult (the version in
 *       front decides for every term at or after its bornSn).
 *   <li>A node is unlinked only after its level-0 next pointer is marked, and is freed only after
 *       it is unreachable at every level and every barrier session up to its retirement has
 *       terminated.
 *   <li>A node visible to a live snapshot is never marked.
 * </ol>
 *
 * <p>Thread-safety: every public method may be called from any thread, concurrently, except that
 * {@link #close()} must not be called from inside an operation of this skiplist.
 */
public final class SkipList implements AutoCloseable {
  public static final int MAX_HEIGHT = 32;

  /**
   * 64 KiB of user key plus room for the engine's keyspace prefix (a store key is prefix + user
   * key).
   */
  public static final int MAX_KEY_SIZE = 64 * 1024 + 16;

  final SkipListConfig config;
  final SlabAllocator allocator;
  private final boolean ownsAllocator;
  final long head;
  final AccessBarrier barrier;
  final GarbageCollector gc;

  /**
   * Current term; incremented only by snapshot creation under snapshotLock. Volatile: see Writer.
   */
  private volatile long term = 1;

  /**
   * Highest tower in use; raised by CAS, never lowered. Read racily: a stale value only costs time.
   */
  private final AtomicInteger topHeight = new AtomicInteger(1);

  /** Every writer of this list, for snapshot stitching and statistics. */
  final CopyOnWriteArrayList<Writer> writers = new CopyOnWriteArrayList<>();

  private final ThreadLocal<Writer> writer = ThreadLocal.withInitial(this::newWriter);

  /**
   * Counters of writers whose threads have died, folded in by the collector's tick. Guarded by
   * departedLock.
   */
  final Writer departed = new Writer(null);

  /**
   * Makes folding a dead writer into {@link #departed} and removing it from {@link #writers} one
   * step for statistics: without it a sum could read the writer in the list and again in departed.
   */
  final Object departedLock = new Object();

  /** Guards snapshot creation and the queue of live snapshots. */
  final Object snapshotLock = new Object();

  /** Snapshots not yet collected, oldest first. Guarded by snapshotLock. */
  final ArrayDeque<Snapshot.Descriptor> snapshots = new ArrayDeque<>();

  /** Set once by close(). Volatile: read by every accessor after entering the barrier. */
  volatile boolean closed;

  public SkipList(SkipListConfig config) {
    config.validate();
    this.config = config;
    if (config.allocator() != null) {
      this.allocator = config.allocator();
      this.ownsAllocator = false;
    } else {
      this.allocator = SlabAllocator.withQuota("skiplist", config.memoryQuota());
      this.ownsAllocator = true;
    }
    this.head = allocator.allocate(Node.size(MAX_HEIGHT, 0, 0));
    Node.init(head, MAX_HEIGHT, 0, 0);
    for (int l = 0; l < MAX_HEIGHT; l++) {
      Node.spNext(head, l, 0);
    }
    this.gc = new GarbageCollector(this);
    this.barrier = new AccessBarrier(gc::sessionTerminated);
    gc.start();
  }

  /** A skiplist with default configuration and its own allocator. */
  public static SkipList create() {
    return new SkipList(SkipListConfig.defaults());
  }

  // ---- public operations
  // -------------------------------------------------------------------------------

  /** Inserts or replaces {@code key}; the new version is born in the current term. */
  public void put(byte[] key, byte[] value) {
    checkValue(value);
    put(key, 0, key == null ? 0 : key.length, value, 0, value.length);
  }

  /** Inserts or replaces {@code key[koff, koff+klen)} with {@code value[voff, voff+vlen)}. */
  public void put(byte[] key, int koff, int klen, byte[] value, int voff, int vlen) {
    checkRange(key, koff, klen, MAX_KEY_SIZE, "key");
    checkRange(value, voff, vlen, config.maxValueSize(), "value");
    int height = randomHeight();
    Writer w = writer.get();
    // One session from allocation to link: close() waits for accessors, so the allocator outlives
    // this
    // write and a node is never allocated without being linked (or freed by close with the list).
    AccessBarrier.Session s = barrier.enter();
    try {
      checkOpen();
      long node =
          allocateNode(
              key, koff, klen, value, voff, vlen,
              height); // may throw MemoryLimitException: nothing is written then
      link(w, node, height, key, Mem.ARRAY_BASE + koff, klen, vlen, -1);
    } finally {
      barrier.exit(s);
    }
    gc.afterWrite(w);
  }

  /**
   * The first half of a put: allocates a node and copies the key and value into it, but links
   * nothing, so a caller can take the memory for a whole batch before it commits to the batch (the
   * engine does this before its WAL write). Hand the node to {@link #putPrepared} or {@link
   * #discardPrepared} while the list is open: a node prepared and neither linked nor discarded
   * before close is a leak.
   *
   * @throws io.basaltdb.MemoryLimitException if the allocator cannot serve the node; nothing is
   *     allocated
   */
  public long prepare(byte[] key, int koff, int klen, byte[] value, int voff, int vlen) {
    checkRange(key, koff, klen, MAX_KEY_SIZE, "key");
    checkRange(value, voff, vlen, config.maxValueSize(), "value");
    int height = randomHeight();
    // Enter before allocating: close() waits for accessors, so the allocator outlives this
    // allocation.
    AccessBarrier.Session s = barrier.enter();
    try {
      checkOpen();
      return allocateNode(key, koff, klen, value, voff, vlen, height);
    } finally {
      barrier.exit(s);
    }
  }

  /**
   * The second half of a put: links a node from {@link #prepare}; allocates nothing, so cannot run
   * out of memory.
   */
  public void putPrepared(long node) {
    putPrepared(node, -1);
  }

  /**
   * As {@link #putPrepared(long)}, and tells what the put superseded: -1 if the key had no live
   * version, else the superseded version's value byte at {@code probe} (0 to 255; 0 if its value is
   * shorter, or {@code probe} is negative). A caller that keeps a flag in its values learns, with
   * no second search, whether the put replaced a version that carried it.
   */
  public int putPrepared(long node, int probe) {
    Writer w = writer.get();
    AccessBarrier.Session s = barrier.enter();
    int superseded;
    try {
      checkOpen();
      // the key is read from the node itself
      superseded =
          link(
              w,
              node,
              Node.height(node),
              null,
              Node.keyAddr(node),
              Node.keyLen(node),
              Node.valueLen(node),
              probe);
    } finally {
      barrier.exit(s);
    }
    gc.afterWrite(w);
    return superseded;
  }

  /**
   * A node holding the key and value, not linked. Caller is inside a barrier session on an open
   * list.
   */
  private long allocateNode(
      byte[] key, int koff, int klen, byte[] value, int voff, int vlen, int height) {
    long node = allocator.allocate(Node.size(height, klen, vlen), Node.arena(height));
    Node.init(node, height, klen, vlen);
    long keyAddr = Node.keyAddr(node);
    Mem.copyFromArray(key, koff, keyAddr, klen);
    Mem.copyFromArray(value, voff, keyAddr + klen, vlen);
    Node.setPrefix(node, Keys.prefix(key, Mem.ARRAY_BASE + koff, klen));
    return node;
  }

  /**
   * Links {@code node}, whose key is at {@code keyBase + keyOffset}, in a new term. Caller is
   * inside a barrier session.
   */
  private int link(
      Writer w,
      long node,
      int height,
      Object keyBase,
      long keyOffset,
      int klen,
      int vlen,
      int probe) {
    long t = enterTerm(w);
    try {
      int superseded = insert(w, node, height, keyBase, keyOffset, klen, t, probe);
      w.count(Writer.NODES, 1);
      w.count(Writer.USER_BYTES, klen + vlen);
      for (int l = 0; l < height; l++) {
        w.count(Writer.LEVELS + l, 1);
      }
      return superseded;
    } finally {
      w.activeTerm = 0;
    }
  }

  /** Returns a node from {@link #prepare} that will not be linked; no reader has seen it. */
  public void discardPrepared(long node) {
    allocator.free(node, Node.size(node), Node.arena(Node.height(node)));
  }

  /**
   * Deletes {@code key}: its current version dies in the current term.
   *
   * @return true if the key had a live version
   */
  public boolean delete(byte[] key) {
    checkKey(key);
    Writer w = writer.get();
    AccessBarrier.Session s = barrier.enter();
    boolean deleted;
    try {
      checkOpen();
      long t = enterTerm(w);
      try {
        deleted = remove(w, key, Mem.ARRAY_BASE, key.length, t);
      } finally {
        w.activeTerm = 0;
      }
    } finally {
      barrier.exit(s);
    }
    gc.afterWrite(w);
    return deleted;
  }

  /** The current value of {@code key}, or null. */
  public byte[] get(byte[] key) {
    checkKey(key);
    AccessBarrier.Session s = barrier.enter();
    try {
      checkOpen();
      long v = findCurrent(key, Mem.ARRAY_BASE, key.length);
      return v == 0 ? null : valueOf(v);
    } finally {
      barrier.exit(s);
    }
  }

  /**
   * Copies the current value of {@code key} into {@code out} if it fits, without allocating.
   *
   * @return the value's length (compare with {@code out.length}: nothing is copied if it is
   *     larger), or -1 if the key has no current value
   */
  public int get(byte[] key, byte[] out) {
    checkKey(key);
    return get(key, key.length, out);
  }

  /**
   * As {@link #get(byte[], byte[])} for the key {@code key[0, keyLength)}: the caller's scratch
   * array may be longer than the key.
   */
  public int get(byte[] key, int keyLength, byte[] out) {
    checkRange(key, 0, keyLength, MAX_KEY_SIZE, "key");
    if (out == null) throw new InvalidArgumentException("output buffer must not be null");
    AccessBarrier.Session s = barrier.enter();
    try {
      checkOpen();
      long v = findCurrent(key, Mem.ARRAY_BASE, keyLength);
      return v == 0 ? -1 : copyValue(v, out);
    } finally {
      barrier.exit(s);
    }
  }

  /**
   * Closes the current term and returns a snapshot of everything written in it and before. The
   * caller must close the snapshot; until then its versions are kept.
   */
  public Snapshot snapshot() {
    AccessBarrier.Session s = barrier.enter();
    try {
      checkOpen();
      return new Snapshot(this, createSnapshot());
    } finally {
      barrier.exit(s);
    }
  }

  // ---- backup and restore (seed 001 section 5)
  // ---------------------------------------------------------

  /**
   * Keys cutting the list into about {@code parts} ranges of equal size (see {@link
   * BackupScan#splitKeys}).
   */
  public java.util.List<byte[]> splitKeys(int parts) {
    return BackupScan.splitKeys(this, parts);
  }

  /**
   * Hands {@code sink} every item visible at term {@code sn} with a key in {@code [from, to)}, in
   * key order, and returns how many; the caller holds the term's snapshot or an {@link
   * UnlinkCapture} of it (see {@link BackupScan#scan}).
   */
  public long scan(long sn, byte[] from, byte[] to, ItemSink sink) {
    return BackupScan.scan(this, sn, from, to, sink);
  }

  /**
   * As {@link #scan} for consecutive ranges at once, their cursors advancing in turn so their cache
   * misses overlap (see {@link BackupScan#scanInterleaved}): range i is {@code [bounds[i],
   * bounds[i+1])}, handed to {@code sinks[i]}. Returns each range's item count.
   */
  public long[] scanInterleaved(long sn, byte[][] bounds, ItemSink[] sinks) {
    return BackupScan.scanInterleaved(this, sn, bounds, sinks);
  }

  /**
   * Registers a capture (INIT) of the nodes of {@code snapshot}'s term the collector unlinks, each
   * concurrent worker writing to a sink from {@code sinks}: call {@link UnlinkCapture#activate()},
   * then release the snapshot, scan, and {@link UnlinkCapture#terminate()}.
   */
  public UnlinkCapture capture(
      Snapshot snapshot, java.util.function.Supplier<? extends ItemSink> sinks) {
    snapshot.checkUsable();
    UnlinkCapture c = new UnlinkCapture(this, snapshot.sn(), sinks);
    gc.register(c);
    return c;
  }

  /** A bottom-up builder of one segment of this list (seed 001 section 5.2). */
  public SkipListBuilder builder() {
    checkOpen();
    return new SkipListBuilder(this);
  }

  /**
   * Joins {@code segments}, which hold consecutive key ranges in this order, into this list, which
   * must be empty and not in use by any other thread: at each level the last node of a segment
   * links to the first node of the next segment that has that level, and the head to the first.
   * Publishes the nodes (the caller hands the list to other threads afterwards, with a
   * happens-before edge of its own).
   *
   * @throws IllegalStateException if the list is not empty (nothing is changed)
   * @throws IllegalArgumentException if the segments' key ranges are not in order (nothing is
   *     changed)
   */
  public void load(java.util.List<SkipListBuilder.Segment> segments) {
    checkOpen();
    // lv: the list is not shared yet; volatile only for uniformity with every other read of a link
    if (Node.lvNext(head, 0) != 0) throw new IllegalStateException("load needs an empty skiplist");
    long prevLast = 0;
    for (SkipListBuilder.Segment g : segments) {
      if (g.loaded) throw new IllegalArgumentException("a segment was loaded already");
      if (g.first[0] == 0) continue;
      if (prevLast != 0 && Keys.compareNodes(prevLast, g.first[0]) >= 0) {
        throw new IllegalArgumentException("segments out of key order");
      }
      prevLast = g.last[0];
    }
    int top = 1;
    Writer w = writer.get();
    for (int l = 0; l < MAX_HEIGHT; l++) {
      long pred = head;
      for (SkipListBuilder.Segment g : segments) {
        if (g.first[l] == 0) continue;
        // sp: nothing reads these nodes until the caller publishes the list
        Node.spNext(pred, l, Node.link(g.first[l]));
        pred = g.last[l];
        top = Math.max(top, l + 1);
      }
    }
    for (SkipListBuilder.Segment g : segments) {
      g.loaded = true;
      w.count(Writer.NODES, g.items);
      w.count(Writer.ITEMS, g.items);
      w.count(Writer.USER_BYTES, g.userBytes);
      for (int l = 0; l < MAX_HEIGHT; l++) {
        if (g.levels[l] != 0) w.count(Writer.LEVELS + l, g.levels[l]);
      }
    }
    int h;
    while (top > (h = topHeight.get()) && !topHeight.compareAndSet(h, top)) {
      Thread.onSpinWait();
    }
  }

  /** The current term: versions written now are born in it. */
  public long currentTerm() {
    return term;
  }

  public SkipListStats stats() {
    return SkipListStats.of(this);
  }

  /**
   * Runs garbage collection to completion for everything collectable now: stitches the writers'
   * dead lists onto an internal snapshot, unlinks every node no live snapshot can see, and frees
   * every retired node once no accessor can hold it. For tests and orderly shutdown; normal
   * operation does this in the background.
   */
  public void quiesce() {
    checkOpen();
    gc.quiesce();
  }

  public boolean isClosed() {
    return closed;
  }

  /**
   * Waits for running operations to finish, stops garbage collection and frees every node.
   * Snapshots and iterators still open become unusable (their operations throw {@link
   * ClosedException}).
   */
  @Override
  public void close() {
    synchronized (snapshotLock) {
      if (closed) return;
      closed = true;
    }
    // Own allocator and no debug checks: release the linked nodes with the chunks; otherwise free
    // each.
    boolean bulk = ownsAllocator && !Mem.DEBUG;
    long stillAllocated = gc.shutdownAndFreeAll(bulk);
    if (ownsAllocator) {
      allocator.closeReleasing(stillAllocated);
    }
  }

  // ---- internals: terms and snapshots
  // ------------------------------------------------------------------

  /** Publishes the writer's term; loops until the published term is still current (see Writer). */
  private long enterTerm(Writer w) {
    while (true) {
      long t = term;
      w.activeTerm = t;
      if (term == t) {
        return t;
      }
    }
  }

  Snapshot.Descriptor createSnapshot() {
    synchronized (snapshotLock) {
      checkOpen();
      long sn = term;
      term = sn + 1; // volatile: a writer that publishes sn afterwards re-reads and moves to sn + 1
      for (Writer w : writers) {
        int spins = 0;
        while (w.activeTerm == sn) { // the writer's last operation in term sn is still running
          if (++spins < 100) Thread.onSpinWait();
          else Thread.yield();
        }
      }
      long[] dead = new long[16];
      int n = 0;
      for (Writer w : writers) {
        synchronized (w) {
          int keep = 0;
          for (int i = 0; i < w.deadCount; i++) {
            long node = w.dead[i];
            // lv: set by the killer's CAS before it added the node here under w's monitor
            if (Node.lvDead(node) <= sn) {
              if (n == dead.length) dead = java.util.Arrays.copyOf(dead, n * 2);
              dead[n++] = node;
            } else {
              w.dead[keep++] = node;
            }
          }
          w.deadCount = keep;
        }
      }
      Snapshot.Descriptor d = new Snapshot.Descriptor(sn, dead, n);
      snapshots.addLast(d);
      return d;
    }
  }

  // ---- internals: search
  // -------------------------------------------------------------------------------

  /**
   * Fills {@code preds[l]} with the last node whose key sorts before the search key and {@code
   * succs[l]} with the unmarked link from it to the next node, for levels {@code top-1} down to 0,
   * snipping marked nodes on the way. preds are addresses, never marked at the time they were read.
   * A successor whose link prefix already sorts after the key is not loaded (so not checked for a
   * mark: linking in front of a marked node is fine, its remover snips it from the new
   * predecessor).
   */
  private void find(Object kb, long ko, int kl, long[] preds, long[] succs, int top) {
    long kp = Keys.prefix(kb, ko, kl);
    long kp31 = kp >>> Node.LINK_PREFIX_SHIFT;
    retry:
    while (true) {
      long pred = head;
      for (int l = top - 1; l >= 0; l--) {
        // lv: pairs with the CAS that linked the successor, so its header and key are visible
        long link = Node.lvNext(pred, l) & ~Node.MARK;
        long curr;
        while ((curr = Node.ptr(link)) != 0) {
          long lp = Node.linkPrefix(link);
          if (kp31 < lp) break; // the successor sorts after the key: no need to load it
          // lv: sees a remover's mark CAS on curr, and pairs with the CAS that linked curr's
          // successor
          long raw = Node.lvNext(curr, l);
          if (Node.isMarked(raw)) {
            long unmarked = raw & ~Node.MARK;
            if (!Node.casNext(pred, l, link, unmarked)) continue retry; // pred changed or is dying
            link = unmarked;
            continue;
          }
          if (kp31 > lp || Keys.compare(kb, ko, kl, kp, curr) > 0) {
            pred = curr;
            link = raw;
          } else {
            break;
          }
        }
        preds[l] = pred;
        succs[l] = link;
      }
      return;
    }
  }

  /**
   * The level-0 predecessor of the search key (last node sorting before it), snipping as find does.
   */
  long findPredecessor(Object kb, long ko, int kl) {
    return descend(kb, ko, kl, false);
  }

  /** The last node at level 0 (head if empty), snipping marked nodes on the way. */
  long findLast() {
    return descend(null, 0, 0, true);
  }

  /** Top-down search for the last node before the key, or before the end when {@code toEnd}. */
  private long descend(Object kb, long ko, int kl, boolean toEnd) {
    long kp = toEnd ? -1 : Keys.prefix(kb, ko, kl);
    long kp31 = kp >>> Node.LINK_PREFIX_SHIFT;
    retry:
    while (true) {
      long pred = head;
      for (int l = topHeight.get() - 1; l >= 0; l--) {
        // lv: pairs with the CAS that linked the successor, so its header and key are visible
        long link = Node.lvNext(pred, l) & ~Node.MARK;
        long curr;
        while ((curr = Node.ptr(link)) != 0) {
          long lp = Node.linkPrefix(link);
          if (kp31 < lp) break; // the successor sorts after the key: descend without loading it
          // lv: sees a remover's mark CAS on curr, and pairs with the CAS that linked curr's
          // successor
          long raw = Node.lvNext(curr, l);
          if (Node.isMarked(raw)) {
            long unmarked = raw & ~Node.MARK;
            if (!Node.casNext(pred, l, link, unmarked)) continue retry; // pred changed or is dying
            link = unmarked;
            continue;
          }
          if (toEnd || kp31 > lp || Keys.compare(kb, ko, kl, kp, curr) > 0) {
            pred = curr;
            link = raw;
          } else {
            break;
          }
        }
      }
      return pred;
    }
  }

  /**
   * The current version of the key (the node to read) or 0; validated against concurrent writers.
   */
  private long findCurrent(Object kb, long ko, int kl) {
    long pred = findPredecessor(kb, ko, kl);
    while (true) {
      // lv: pairs with the CAS that linked v (its fields are visible) and sees a mark on pred
      long raw = Node.lvNext(pred, 0);
      long v = Node.ptr(raw);
      if (Node.isMarked(raw)) { // pred died under us; search again
        pred = findPredecessor(kb, ko, kl);
        continue;
      }
      int c = v == 0 ? -1 : Keys.compare(kb, ko, kl, v);
      if (c > 0) {
        pred = v; // a smaller key was linked after pred since the search: step over it
        continue;
      }
      if (c < 0) {
        return 0; // at the load of pred.next no version of the key followed pred
      }
      // lv: pairs with the superseder's casDead, and stays ordered between the two loads of
      // pred.next
      boolean live = Node.lvDead(v) == 0;
      // v was the key's newest version when pred.next was loaded; it must still be, or a newer
      // version
      // may already have been returned by another reader
      // lv: after the load of deadSn; a put links its version before it kills the old one
      if (Node.lvNext(pred, 0) == raw) {
        return live ? v : 0;
      }
    }
  }

  /** First node at level 0 whose key is at or after the search key (0 if none). */
  long findFirstAtOrAfter(Object kb, long ko, int kl) {
    return firstAtOrAfter(findPredecessor(kb, ko, kl), kb, ko, kl);
  }

  /**
   * As {@link #findFirstAtOrAfter} from {@code pred}, a node a search found before the key: its
   * successor, validated (searched again if {@code pred} died since).
   */
  long firstAtOrAfter(long pred, Object kb, long ko, int kl) {
    while (true) {
      // lv: pairs with the CAS that linked the successor, so its header and key are visible
      long raw = Node.lvNext(pred, 0);
      long next = Node.ptr(raw);
      if (Node.isMarked(raw)) {
        pred = findPredecessor(kb, ko, kl);
      } else if (next != 0 && Keys.compare(kb, ko, kl, next) > 0) {
        pred = next; // linked after pred since the search
      } else {
        return next;
      }
    }
  }

  /** The version of the key at {@code first} (its newest) that decides visibility at sn, or 0. */
  static long decisiveVersion(long first, long sn) {
    long v = first;
    while (v != 0) {
      if (Node.born(v) <= sn) {
        return v;
      }
      // lv: pairs with the CAS that linked next, so its header and key are visible
      long next = Node.ptr(Node.lvNext(v, 0));
      if (next == 0 || !Keys.sameKey(v, next)) return 0;
      v = next;
    }
    return 0;
  }

  /** The first node after the versions of {@code node}'s key at level 0. */
  static long skipVersions(long node) {
    // lv: pairs with the CAS that linked the successor, so its key is visible
    long v = Node.ptr(Node.lvNext(node, 0));
    while (v != 0 && Keys.sameKey(node, v)) {
      v = Node.ptr(Node.lvNext(v, 0)); // lv: as above
    }
    return v;
  }

  // ---- internals: insert and remove
  // --------------------------------------------------------------------

  /**
   * Links {@code node} as its key's newest version; returns what it superseded, as {@link
   * #putPrepared(long, int)} does.
   */
  private int insert(
      Writer w, long node, int height, Object kb, long ko, int kl, long t, int probe) {
    long[] preds = w.preds;
    long[] succs = w.succs;
    int top = Math.max(topHeight.get(), height);
    long first;
    boolean hasVersion;
    while (true) {
      find(kb, ko, kl, preds, succs, top);
      first = Node.ptr(succs[0]);
      hasVersion = first != 0 && Keys.compare(kb, ko, kl, first) == 0;
      if (hasVersion && Node.born(first) > t) {
        // a writer of a newer term got here first: move to the current term so versions stay
        // ordered
        w.activeTerm = 0;
        t = enterTerm(w);
        continue;
      }
      Node.setBorn(node, t);
      for (int l = 0; l < height; l++) {
        Node.spNext(node, l, succs[l]);
      }
      if (Node.casNext(preds[0], 0, succs[0], Node.link(node))) {
        break; // linearization point: the new version is the key's newest
      }
    }
    int linked = height > 1 ? buildTower(w, node, height, kb, ko, kl) : 1;
    int h;
    while (linked > (h = topHeight.get()) && !topHeight.compareAndSet(h, linked)) {
      Thread.onSpinWait();
    }
    if (hasVersion && Node.casDead(first, t)) {
      // superseded a live version: read it before it can be unlinked (this session keeps it)
      int was =
          probe >= 0 && probe < Node.valueLen(first)
              ? Mem.lpUnsignedByte(null, Node.valueAddr(first) + probe)
              : 0;
      if (Node.born(first) == t) {
        removeSuperseded(w, first, node, linked, top); // visible to no snapshot: unlink at once
      } else {
        w.addDead(first);
      }
      return was;
    }
    w.count(Writer.ITEMS, 1); // no live version before: a new item
    return -1;
  }

  /**
   * Links levels 1..height-1 while the node is still its key's newest version and not being
   * removed. Returns the number of levels linked (from level 0 up, without gaps).
   */
  private int buildTower(Writer w, long node, int height, Object kb, long ko, int kl) {
    long[] preds = w.preds;
    long[] succs = w.succs;
    int linked = 1;
    long nodeLink = Node.link(node);
    build:
    for (int l = 1; l < height; l++) {
      while (true) {
        long raw = Node.lvNext(node, l); // lv: sees a remover's mark CAS on this tower
        if (Node.isMarked(raw)) break build; // removal started: stop growing
        long succ = succs[l];
        if (raw != succ && !Node.casNext(node, l, raw, succ)) break build;
        if (Node.casNext(preds[l], l, succ, nodeLink)) {
          linked = l + 1;
          break;
        }
        find(kb, ko, kl, preds, succs, height);
        if (Node.ptr(succs[0]) != node)
          break build; // a newer version is in front: linking higher could misorder
      }
    }
    if (!Node.casState(node, Node.STATE_BUILDING, Node.STATE_BUILT)) {
      // removed while we were building: the remover left the unlinking to us
      unlinkAllLevels(node);
      retire(w, node);
    }
    return linked;
  }

  /**
   * Removes {@code old}, just superseded by {@code newer} in the same term. The search that linked
   * {@code newer} already knows old's predecessors: newer itself on the levels newer was linked at,
   * the search's preds elsewhere. One CAS per level usually suffices; if any fails (a concurrent
   * change nearby), a full unlinking pass takes over.
   */
  private void removeSuperseded(Writer w, long old, long newer, int newerLinked, int searched) {
    int height = markTower(old);
    if (height > 1 && Node.casState(old, Node.STATE_BUILDING, Node.STATE_MARKED_EARLY)) {
      return;
    }
    long[] preds = w.preds;
    long[] succs = w.succs;
    long oldLink = Node.link(old);
    for (int l = height - 1; l >= 0; l--) {
      // preds/succs are this operation's search results for levels below `searched` only
      long pred =
          l < newerLinked ? newer : (l < searched && Node.ptr(succs[l]) == old ? preds[l] : 0);
      // lv: old's successor as last changed by any CAS; the casNext validates the pair
      if (pred == 0 || !Node.casNext(pred, l, oldLink, Node.lvNext(old, l) & ~Node.MARK)) {
        unlinkAllLevels(old);
        break;
      }
    }
    retire(w, old);
  }

  /** Sets the deleted mark on every level of the node's tower, top-down; returns the height. */
  private static int markTower(long node) {
    int height = Node.height(node);
    for (int l = height - 1; l >= 0; l--) {
      while (true) {
        long raw = Node.lvNext(node, l); // lv: the CAS below validates it
        if (Node.isMarked(raw) || Node.casNext(node, l, raw, raw | Node.MARK)) break;
      }
    }
    return height;
  }

  private boolean remove(Writer w, Object kb, long ko, int kl, long t) {
    long pred = findPredecessor(kb, ko, kl);
    while (true) {
      // lv: pairs with the CAS that linked v (its fields are visible) and sees a mark on pred
      long raw = Node.lvNext(pred, 0);
      if (Node.isMarked(raw)) {
        pred = findPredecessor(kb, ko, kl);
        continue;
      }
      long v = Node.ptr(raw);
      int c = v == 0 ? -1 : Keys.compare(kb, ko, kl, v);
      if (c > 0) {
        pred = v; // linked after pred since the search
        continue;
      }
      if (c < 0) return false;
      // lv: pairs with a concurrent put's or delete's casDead; re-validated through pred.next below
      if (Node.lvDead(v) != 0) {
        // lv: after the load of deadSn, as in findCurrent
        if (Node.lvNext(pred, 0) == raw)
          return false; // the newest version is dead: nothing to delete
        continue;
      }
      if (Node.born(v) > t) {
        w.activeTerm = 0;
        t = enterTerm(w);
        continue;
      }
      if (Node.casDead(v, t)) {
        w.count(Writer.ITEMS, -1);
        if (Node.born(v) == t && !hasLiveOlderVersion(v)) {
          removeNode(w, v);
        } else {
          // Born earlier, or its own put has not yet killed the version it superseded: unlinking v
          // now would make that older value current again. The collector of snapshot t takes it.
          w.addDead(v);
        }
        return true;
      }
    }
  }

  /** True if a version of v's key behind v is not dead yet (its superseder is still finishing). */
  private static boolean hasLiveOlderVersion(long v) {
    // lv: pairs with the CAS that linked the successor, so its key is visible
    long o = Node.ptr(Node.lvNext(v, 0));
    while (o != 0 && Keys.sameKey(v, o)) {
      if (Node.lvDead(o) == 0) return true; // lv: pairs with the superseder's casDead
      o = Node.ptr(Node.lvNext(o, 0)); // lv: as above
    }
    return false;
  }

  /**
   * Physically removes a dead node: marks its tower top-down, then unlinks it at every level and
   * retires it, unless its inserter is still building the tower (then the inserter does both).
   * Exactly one caller per node: its killer, or the collector of the snapshot it died in.
   */
  void removeNode(Writer w, long node) {
    int height = markTower(node);
    if (height > 1 && Node.casState(node, Node.STATE_BUILDING, Node.STATE_MARKED_EARLY)) {
      return;
    }
    unlinkAllLevels(node);
    retire(w, node);
  }

  /**
   * Snips the marked {@code node} at every level it is linked at. At each level it walks to the
   * last node before the key, then through the key's versions, snipping every marked one.
   */
  private void unlinkAllLevels(long node) {
    long kb = Node.keyAddr(node);
    int kl = Node.keyLen(node);
    long kp = Node.prefix(node);
    int height = Node.height(node);
    retry:
    while (true) {
      long pred = head;
      for (int l = Math.max(topHeight.get(), height) - 1; l >= 0; l--) {
        // lv: pairs with the CAS that linked the successor, so its header and key are visible
        long link = Node.lvNext(pred, l) & ~Node.MARK;
        long curr;
        while ((curr = Node.ptr(link)) != 0) { // to the last node sorting before the key
          // lv: sees a remover's mark CAS on curr, and pairs with the CAS that linked curr's
          // successor
          long raw = Node.lvNext(curr, l);
          if (Node.isMarked(raw)) {
            long unmarked = raw & ~Node.MARK;
            if (!Node.casNext(pred, l, link, unmarked)) continue retry;
            link = unmarked;
            continue;
          }
          if (Keys.compare(null, kb, kl, kp, curr) > 0) {
            pred = curr;
            link = raw;
          } else {
            break;
          }
        }
        if (l < height) {
          long p = pred;
          while ((curr = Node.ptr(link)) != 0) { // through the versions of the key
            long raw = Node.lvNext(curr, l); // lv: sees a remover's mark CAS on curr
            if (Node.isMarked(raw)) {
              long unmarked = raw & ~Node.MARK;
              if (!Node.casNext(p, l, link, unmarked)) continue retry;
              link = unmarked;
              continue;
            }
            if (Keys.compare(null, kb, kl, kp, curr) != 0) break;
            p = curr;
            link = raw;
          }
        }
      }
      return;
    }
  }

  private void retire(Writer w, long node) {
    synchronized (w) {
      if (w.retired == null) {
        w.retired = gc.takeBatchArray();
      }
      w.retired[w.retiredCount++] = node;
      if (w.retiredCount == w.retired.length) {
        barrier.close(w.retired, w.retiredCount);
        w.retired = null;
        w.retiredCount = 0;
      }
    }
  }

  // ---- internals: helpers
  // ------------------------------------------------------------------------------

  Writer writer() {
    return writer.get();
  }

  /**
   * Drops the writers of threads that have died once they hold no dead or retired nodes, folding
   * their counters into {@link #departed}, so thread-per-task callers do not grow the writer list.
   * Called only from the collector's tick.
   */
  void pruneDeadWriters() {
    for (Writer w : writers) {
      if (w.owner.isAlive())
        continue; // a dead thread's writes happen-before isAlive() returning false
      synchronized (w) {
        if (w.deadCount > 0 || w.retiredCount > 0) continue; // after the next snapshot and flush
      }
      synchronized (departedLock) {
        if (!writers.remove(w)) continue;
        for (int c = 0; c < Writer.COUNTERS; c++) {
          departed.count(c, w.counter(c));
        }
      }
    }
  }

  private Writer newWriter() {
    Writer w = new Writer(Thread.currentThread());
    writers.add(w);
    return w;
  }

  static int randomHeight() {
    // each extra level with probability 1/4: count pairs of low zero bits
    int r = ThreadLocalRandom.current().nextInt();
    int h = 1 + (Integer.numberOfTrailingZeros(r | (1 << (2 * (MAX_HEIGHT - 1) - 32))) >>> 1);
    return Math.min(h, MAX_HEIGHT);
  }

  static byte[] valueOf(long node) {
    byte[] out = new byte[Node.valueLen(node)];
    Mem.copyToArray(Node.valueAddr(node), out, 0, out.length);
    return out;
  }

  static byte[] keyOf(long node) {
    byte[] out = new byte[Node.keyLen(node)];
    Mem.copyToArray(Node.keyAddr(node), out, 0, out.length);
    return out;
  }

  static int copyValue(long node, byte[] out) {
    int len = Node.valueLen(node);
    if (len <= out.length) {
      Mem.copyToArray(Node.valueAddr(node), out, 0, len);
    }
    return len;
  }

  void checkOpen() {
    if (closed) throw closedException();
  }

  private static ClosedException closedException() {
    return new ClosedException("the skiplist is closed; open a new one");
  }

  static void checkKey(byte[] key) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (key.length > MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          "key of " + key.length + " bytes is over the " + MAX_KEY_SIZE + "-byte limit");
    }
  }

  private void checkValue(byte[] value) {
    if (value == null)
      throw new InvalidArgumentException("value must not be null (use delete to remove a key)");
  }

  private static void checkRange(byte[] b, int off, int len, int max, String what) {
    if (b == null) throw new InvalidArgumentException(what + " must not be null");
    if (off < 0 || len < 0 || off > b.length - len) {
      throw new InvalidArgumentException(
          what
              + " range ["
              + off
              + ", "
              + off
              + "+"
              + len
              + ") is outside its "
              + b.length
              + "-byte array");
    }
    if (len > max) {
      throw new InvalidArgumentException(
          what + " of " + len + " bytes is over the " + max + "-byte limit");
    }
  }
}
