package io.basaltdb.internal.hashindex;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.skiplist.AccessBarrier;
import io.basaltdb.internal.sstable.KeyRecord;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The lazy-trie (CedrusDB, seed 004 section 2): a hash trie over a 64-bit key hash cut into
 * characters of log2(b) bits, with path compression and sluggish splitting. Each node is an array
 * of b child slots; a slot is empty, a child node, or a leaf list of records whose hashes share the
 * slot's path. A list holds up to s distinct hashes; one more and it is replaced by a node that
 * takes its records, recursively until every list fits (figure 5), except at full depth, where the
 * hash has no characters left and a list grows as it must. A delete that leaves a node empty, or
 * with a single list child that fits, collapses it into its parent, repeatedly (figure 3 c, d). So
 * an insert splits at most one path and a delete merges at most one.
 *
 * <h2>Concurrency</h2>
 *
 * One writer (the engine's flusher; tests use one thread) calls {@link #put} and {@link #delete};
 * any number of readers call {@link #get} without locks. Readers never see a half-built structure:
 * a list is immutable once published, and a new node is filled before the slot that points to it is
 * stored with release semantics ({@link Mem#soLong}); readers load slots with {@link Mem#lvLong}. A
 * list that is replaced, and a node that a merge removes, are retired: each reader is an accessor
 * of an {@link AccessBarrier}, retired blocks are handed to the barrier session open when they were
 * unlinked, and they are freed (on the writer's thread) only once that session and every older one
 * have terminated. So a freed block is reused only when no reader can reach it.
 *
 * <h2>Memory</h2>
 *
 * Nodes and lists live in a {@link TrieSpace}: slots hold logical offsets, so the writer can write
 * the space's dirty pages to a checkpoint and an open can load them back ({@link #beginLoad}). A
 * reader loads the space's base once per get, inside its barrier session; when the space grows, the
 * old block is retired like any other, so it stays readable until those readers leave.
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>The root is a node at depth 0 and is never removed. A node at depth d indexes its slots by
 *       hash character d; every record below slot c of that node has character d equal to c.
 *   <li>A list holds at most s distinct hashes unless it sits in a node at the last depth.
 *   <li>No node but the root has no children, or a single child that is a list of at most s hashes
 *       (paths are minimal; seed 004 section 2.2 allows single-child chains of nodes).
 *   <li>Within a list records are sorted by hash, then key; no key appears twice in the trie.
 *   <li>A block is either reachable from the root, retired and waiting for its barrier session, or
 *       free in the space: never two of these. Reachable blocks do not overlap.
 * </ol>
 */
public final class LazyTrie implements AutoCloseable {
  /** Branching factor CedrusDB settles on (section 4.2.1). */
  public static final int DEFAULT_BRANCHING = 256;

  /** Sluggishness CedrusDB settles on (section 4.2.1). */
  public static final int DEFAULT_SLUGGISHNESS = 16;

  private static final long NODE_TAG = 1;
  private static final int CHILDREN_OFFSET = 0;
  private static final int NODE_HEADER = 8;

  /** Retired longs (address, size pairs) that make the writer close a barrier session. */
  private static final int RETIRE_BATCH = 1024;

  private final int bits;
  private final int branching;
  private final int maxDepth;
  private final int sluggishness;
  private final long nodeBytes;
  private final KeyHasher hasher;
  private final TrieSpace space;
  private final AccessBarrier barrier;
  private final long root;

  /** Sessions whose accessors have all left; offered by whichever thread saw the last exit. */
  private final ConcurrentLinkedQueue<AccessBarrier.Session> terminated =
      new ConcurrentLinkedQueue<>();

  // ---- writer-owned state (the writer's thread only)
  private long[] retired = new long[RETIRE_BATCH + 4];
  private int retiredCount;
  private final Map<Long, AccessBarrier.Session> freeable = new HashMap<>();
  private long nextToFree;
  private final long[] path = new long[65];

  // ---- counts: written by the writer only; read racily by stats (a stale value is fine)
  private long records;
  private long nodes;
  private long lists;
  private long listBytes;
  private long pendingBlocks;

  /** Set once by close(); read by every reader after it enters the barrier. */
  private volatile boolean closed;

  /**
   * @param branching b, a power of two from 2 to 256
   * @param sluggishness s, at least 1
   */
  public LazyTrie(
      int branching, int sluggishness, KeyHasher hasher, MemoryQuota quota, String name) {
    if (branching < 2 || branching > 256 || Integer.bitCount(branching) != 1) {
      throw new InvalidArgumentException(
          "lazy-trie branching must be a power of two from 2 to 256, was " + branching);
    }
    if (sluggishness < 1 || sluggishness > 1024) {
      throw new InvalidArgumentException(
          "lazy-trie sluggishness must be from 1 to 1024, was " + sluggishness);
    }
    this.branching = branching;
    this.bits = Integer.numberOfTrailingZeros(branching);
    this.maxDepth = 64 / bits;
    this.sluggishness = sluggishness;
    this.nodeBytes = NODE_HEADER + 8L * branching;
    this.hasher = hasher;
    this.barrier = new AccessBarrier(terminated::offer);
    this.space = new TrieSpace(quota, name, (address, bytes) -> retire(address, -bytes));
    this.root = newNode();
    if (root != TrieSpace.FIRST) throw new IllegalStateException("root at " + root);
  }

  public KeyHasher hasher() {
    return hasher;
  }

  public long hash(byte[] key) {
    return hasher.hash(key);
  }

  private int charAt(long hash, int depth) {
    return (int) (hash >>> (64 - bits * (depth + 1))) & (branching - 1);
  }

  /** The offset of child slot {@code c} of the node at offset {@code node}. */
  private long slot(long node, int c) {
    return node + NODE_HEADER + 8L * c;
  }

  /** The writer's address of offset {@code off}: recomputed after every allocation (growth). */
  private long a(long off) {
    return space.base() + off;
  }

  /** Stores a slot with release semantics (the child is complete before it is reachable). */
  private void store(long slotOff, long v) {
    Mem.soLong(a(slotOff), v);
    space.markDirty(slotOff, 8);
  }

  // ---- reads
  // -----------------------------------------------------------------------------------------

  /**
   * Fills {@code out} with the record of {@code key} and returns true, or returns false when the
   * trie has none. Lock-free; any thread.
   *
   * @throws ClosedException after {@link #close}
   */
  public boolean get(byte[] key, KeyRecord out) {
    return get(key, hasher.hash(key), out);
  }

  /** As {@link #get(byte[], KeyRecord)} with the key's hash already computed. */
  public boolean get(byte[] key, long hash, KeyRecord out) {
    AccessBarrier.Session s = barrier.enter();
    try {
      if (closed) throw new ClosedException("lazy-trie is closed");
      long b = space.base(); // once: offsets stay valid, and this block stays while we are inside
      long node = root;
      for (int depth = 0; ; depth++) {
        // acquire: pairs with the writer's release store, so the child is seen fully built
        long v = Mem.lvLong(b + slot(node, charAt(hash, depth)));
        if (v == 0) return false;
        if ((v & NODE_TAG) == 0) {
          long rec = TrieList.find(b + v, hash, key);
          if (rec == 0) return false;
          TrieList.read(rec, key, out);
          return true;
        }
        node = v & ~NODE_TAG;
      }
    } finally {
      barrier.exit(s);
    }
  }

  // ---- writes (the writer's thread only)
  // -------------------------------------------------------------
  // Locals hold offsets; an address (a(...)) is taken after the last allocation before its use,
  // since an allocation may move the space.

  /**
   * Inserts or replaces the record of {@code key}. Returns true and fills {@code old} (when not
   * null) with the record it replaced, or returns false when the key was absent.
   */
  public boolean put(
      byte[] key, long seqno, int docSize, long hint, long expiry, int flags, KeyRecord old) {
    checkWritable();
    if (flags < 0 || flags > 0xFF) throw new InvalidArgumentException("flags must fit a byte");
    long hash = hasher.hash(key);
    long node = root;
    int depth = 0;
    while (true) {
      long slot = slot(node, charAt(hash, depth));
      long v = Mem.lpLong(a(slot)); // the writer's own earlier stores
      if (v == 0) {
        int size = TrieList.HEADER_SIZE + TrieList.recordSize(key.length);
        long list = newList(size);
        long la = a(list);
        TrieList.writeRecord(TrieList.first(la), hash, key, seqno, docSize, hint, expiry, flags);
        TrieList.writeHeader(la, 1, 1, size);
        store(slot, list);
        addChildren(node, 1);
        records++;
        return false;
      }
      if ((v & NODE_TAG) != 0) {
        node = v & ~NODE_TAG;
        depth++;
        continue;
      }
      return putInList(slot, v, depth, hash, key, seqno, docSize, hint, expiry, flags, old);
    }
  }

  private boolean putInList(
      long slot,
      long list,
      int depth,
      long hash,
      byte[] key,
      long seqno,
      int docSize,
      long hint,
      long expiry,
      int flags,
      KeyRecord old) {
    long la = a(list);
    long end = TrieList.end(la);
    long at = TrieList.first(la);
    long found = 0;
    for (; at < end; at = TrieList.next(at)) {
      int c = TrieList.compare(hash, key, at);
      if (c == 0) {
        found = at;
        break;
      }
      if (c < 0) break;
    }
    if (found != 0 && old != null) TrieList.read(found, TrieList.keyOf(found), old);
    // relative to the list, since the allocation below may move the space
    long atRel = at - la, endRel = end - la;
    long afterRel = (found != 0 ? TrieList.next(found) : at) - la;
    int count = TrieList.count(la) + (found != 0 ? 0 : 1);
    int size = (int) atRel + TrieList.recordSize(key.length) + (int) (endRel - afterRel);
    long fresh = newList(size);
    la = a(list);
    long fa = a(fresh);
    Mem.copyMemory(
        la + TrieList.HEADER_SIZE, fa + TrieList.HEADER_SIZE, atRel - TrieList.HEADER_SIZE);
    long w = TrieList.writeRecord(fa + atRel, hash, key, seqno, docSize, hint, expiry, flags);
    Mem.copyMemory(la + afterRel, w, endRel - afterRel);
    int distinct = TrieList.distinctIn(TrieList.first(fa), fa + size);
    TrieList.writeHeader(fa, count, distinct, size);
    long replacement = fresh;
    if (distinct > sluggishness && depth < maxDepth - 1) {
      replacement = split(fresh + TrieList.HEADER_SIZE, fresh + size, depth + 1);
      freeUnpublished(fresh, size);
    }
    store(slot, replacement); // release: the list or subtree is complete before it is reachable
    retireList(list);
    if (found == 0) records++;
    return found != 0;
  }

  /**
   * Builds a node at {@code depth} holding the records at offsets {@code [from, to)} of an
   * unpublished list, grouped by hash character {@code depth}; groups of more than s hashes become
   * nodes in turn. Returns the tagged node.
   */
  private long split(long from, long to, int depth) {
    long node = newNode();
    int children = 0;
    long r = from;
    while (r < to) {
      int c = charAt(TrieList.hash(a(r)), depth);
      long runEnd = r;
      while (runEnd < to && charAt(TrieList.hash(a(runEnd)), depth) == c) {
        runEnd += TrieList.recordSize(TrieList.keyLength(a(runEnd)));
      }
      int distinct = TrieList.distinctIn(a(r), a(runEnd));
      long child;
      if (distinct > sluggishness && depth < maxDepth - 1) {
        child = split(r, runEnd, depth + 1);
      } else {
        child = listOf(r, runEnd, distinct);
      }
      Mem.spLong(a(slot(node, c)), child); // plain: the node is not reachable yet
      space.markDirty(slot(node, c), 8);
      children++;
      r = runEnd;
    }
    Mem.spInt(a(node + CHILDREN_OFFSET), children);
    return node | NODE_TAG;
  }

  private long listOf(long from, long to, int distinct) {
    int size = TrieList.HEADER_SIZE + (int) (to - from);
    long list = newList(size);
    long la = a(list);
    Mem.copyMemory(a(from), la + TrieList.HEADER_SIZE, to - from);
    TrieList.writeHeader(la, TrieList.countIn(a(from), a(to)), distinct, size);
    return list;
  }

  /**
   * Removes the record of {@code key}. Returns true and fills {@code old} (when not null) with it,
   * or returns false when the key was absent.
   */
  public boolean delete(byte[] key, KeyRecord old) {
    checkWritable();
    long hash = hasher.hash(key);
    long node = root;
    int depth = 0;
    long v;
    while (true) {
      path[depth] = node;
      v = Mem.lpLong(a(slot(node, charAt(hash, depth))));
      if (v == 0) return false;
      if ((v & NODE_TAG) == 0) break;
      node = v & ~NODE_TAG;
      depth++;
    }
    long va = a(v);
    long rec = TrieList.find(va, hash, key);
    if (rec == 0) return false;
    if (old != null) TrieList.read(rec, TrieList.keyOf(rec), old);
    long slot = slot(node, charAt(hash, depth));
    if (TrieList.count(va) == 1) {
      store(slot, 0); // readers that still hold the list may read it
      addChildren(node, -1);
    } else {
      long recRel = rec - va, afterRel = TrieList.next(rec) - va, endRel = TrieList.bytes(va);
      int count = TrieList.count(va);
      int size = (int) (endRel - (afterRel - recRel));
      long fresh = newList(size);
      va = a(v);
      long fa = a(fresh);
      Mem.copyMemory(
          va + TrieList.HEADER_SIZE, fa + TrieList.HEADER_SIZE, recRel - TrieList.HEADER_SIZE);
      Mem.copyMemory(va + afterRel, fa + recRel, endRel - afterRel);
      TrieList.writeHeader(fa, count - 1, TrieList.distinctIn(TrieList.first(fa), fa + size), size);
      store(slot, fresh); // release: the list is complete before it is reachable
    }
    retireList(v);
    records--;
    collapse(hash, depth);
    return true;
  }

  /** Merges up from the node at {@code depth} on {@code hash}'s path (seed 004 figure 3 c, d). */
  private void collapse(long hash, int depth) {
    for (int d = depth; d > 0; d--) {
      long node = path[d];
      long parentSlot = slot(path[d - 1], charAt(hash, d - 1));
      int children = Mem.lpInt(a(node + CHILDREN_OFFSET));
      if (children == 0) {
        store(parentSlot, 0);
        addChildren(path[d - 1], -1);
      } else if (children == 1) {
        long only = onlyChild(node);
        if ((only & NODE_TAG) != 0 || TrieList.distinct(a(only)) > sluggishness) return;
        store(parentSlot, only); // release: the list was published long ago; the slot is new
      } else {
        return;
      }
      retire(node, nodeBytes);
      nodes--;
    }
  }

  private long onlyChild(long node) {
    for (int c = 0; c < branching; c++) {
      long v = Mem.lpLong(a(slot(node, c)));
      if (v != 0) return v;
    }
    throw new IllegalStateException("lazy-trie node counts a child it does not have");
  }

  private void addChildren(long node, int delta) {
    long at = a(node + CHILDREN_OFFSET);
    Mem.spInt(at, Mem.lpInt(at) + delta);
    space.markDirty(node + CHILDREN_OFFSET, 4);
  }

  // ---- memory
  // ----------------------------------------------------------------------------------------

  private long newNode() {
    long n = space.allocate(nodeBytes);
    Mem.fill(a(n), nodeBytes, (byte) 0);
    nodes++;
    return n;
  }

  private long newList(int size) {
    long l = space.allocate(size);
    lists++;
    listBytes += size;
    return l;
  }

  /** Frees a list that was never reachable by a reader. */
  private void freeUnpublished(long list, int size) {
    lists--;
    listBytes -= size;
    space.free(list, size);
  }

  private void retireList(long list) {
    int size = TrieList.bytes(a(list));
    lists--;
    listBytes -= size;
    retire(list, size);
  }

  /**
   * Hands a block to the next barrier session: a space block (offset, size), or with a negative
   * size a whole old space block (address, -bytes) the space replaced when it grew.
   */
  private void retire(long block, long size) {
    // the space's growth (size < 0) retires from inside an allocation, where it must not publish:
    // the batch grows instead
    if (retiredCount + 2 > retired.length) retired = Arrays.copyOf(retired, 2 * retired.length);
    retired[retiredCount++] = block;
    retired[retiredCount++] = size;
    if (size > 0) pendingBlocks++;
    if (size > 0 && retiredCount >= RETIRE_BATCH) publishRetired();
  }

  /**
   * Hands the blocks retired so far to the current barrier session, and frees those whose session
   * and every older one have terminated. The writer calls it after each batch of updates.
   */
  public void publishRetired() {
    if (retiredCount > 0) {
      long[] batch = retired;
      int count = retiredCount;
      retired = new long[RETIRE_BATCH + 4];
      retiredCount = 0;
      barrier.close(batch, count);
    }
    freeTerminated();
  }

  private void freeTerminated() {
    for (AccessBarrier.Session s; (s = terminated.poll()) != null; ) {
      freeable.put(s.seq, s);
    }
    for (AccessBarrier.Session s; (s = freeable.remove(nextToFree)) != null; nextToFree++) {
      for (int i = 0; i < s.count; i += 2) {
        if (s.batch[i + 1] < 0) {
          space.freeOld(s.batch[i], -s.batch[i + 1]);
        } else {
          space.free(s.batch[i], s.batch[i + 1]);
          pendingBlocks--;
        }
      }
    }
  }

  private void checkWritable() {
    if (closed) throw new ClosedException("lazy-trie is closed");
  }

  // ---- checkpoints
  // -----------------------------------------------------------------------------------

  /** The space the trie lives in: its dirty pages are what a checkpoint writes. */
  public TrieSpace space() {
    return space;
  }

  /**
   * Starts loading a checkpoint into this empty trie (before any reader or write): the space
   * becomes {@code top} bytes long, for the caller to fill with {@link TrieSpace#loadPage}, then
   * {@link #finishLoad}.
   */
  public void beginLoad(long top) {
    checkWritable();
    if (records != 0 || lists != 0 || nodes != 1) {
      throw new IllegalStateException("a checkpoint loads into an empty trie only");
    }
    space.resetForLoad(top);
  }

  /**
   * Finishes a load: walks the loaded structure from the root, checking every bound and invariant,
   * rebuilds the counts and the space's free blocks, and forgets the dirty marks (the space equals
   * its checkpoint). The loaded trie must hold {@code expectRecords}.
   *
   * @throws IllegalStateException naming the first damage found; the trie must then be closed
   */
  public void finishLoad(long expectRecords) {
    checkWritable();
    Shape shape = new Shape();
    Granules used = new Granules(space.top() >>> 3);
    walk(root, 0, 0, shape, used, false);
    if (shape.records != expectRecords) {
      throw new IllegalStateException(
          "checkpoint holds " + shape.records + " records, its header says " + expectRecords);
    }
    records = shape.records;
    nodes = shape.nodes;
    lists = shape.lists;
    listBytes = shape.listBytes;
    space.rebuildFree(BitSet.valueOf(used.words), shape.nodes + shape.lists);
    space.clearDirty();
  }

  // ---- introspection
  // ---------------------------------------------------------------------------------

  public int branching() {
    return branching;
  }

  public int sluggishness() {
    return sluggishness;
  }

  /** Live records. */
  public long size() {
    return records;
  }

  /** Bytes of nodes and lists reachable from the root (allocation requests, not class sizes). */
  public long bytes() {
    return nodes * nodeBytes + listBytes;
  }

  public long nodeCount() {
    return nodes;
  }

  /** Bytes of the nodes alone (the child tables), without the lists' records. */
  public long nodeBytes() {
    return nodes * nodeBytes;
  }

  public long listCount() {
    return lists;
  }

  /** Bytes the trie's space holds from its quota, free blocks included. */
  public long reservedBytes() {
    return space.chargedBytes();
  }

  /** Retired blocks not yet freed. */
  public long pendingBlocks() {
    return pendingBlocks;
  }

  /**
   * Visits every record (the writer's thread, or while no writer runs): {@code visitor} gets a
   * {@link KeyRecord} whose key is a fresh copy and whose {@code tombstone} is false.
   */
  public void forEach(Consumer<KeyRecord> visitor) {
    forEachUnder(0, branching, false, visitor);
  }

  /**
   * As {@link #forEach}, for the records under the root's slots {@code [from, to)} only, and with
   * {@code expiringOnly} only those with an expiry (the others' keys are not copied). The expiry
   * sweep visits the trie a few root slots at a time this way.
   */
  public void forEachUnder(int from, int to, boolean expiringOnly, Consumer<KeyRecord> visitor) {
    checkWritable();
    if (from < 0 || to > branching || from > to)
      throw new IllegalArgumentException("root slots [" + from + ", " + to + ") of " + branching);
    ArrayDeque<Long> stack = new ArrayDeque<>();
    visitSlots(root, from, to, stack, expiringOnly, visitor);
    while (!stack.isEmpty()) visitSlots(stack.pop(), 0, branching, stack, expiringOnly, visitor);
  }

  private void visitSlots(
      long node,
      int from,
      int to,
      ArrayDeque<Long> stack,
      boolean expiringOnly,
      Consumer<KeyRecord> visitor) {
    for (int c = from; c < to; c++) {
      long v = Mem.lpLong(a(slot(node, c)));
      if (v == 0) continue;
      if ((v & NODE_TAG) != 0) {
        stack.push(v & ~NODE_TAG);
        continue;
      }
      long la = a(v);
      for (long r = TrieList.first(la), end = TrieList.end(la); r < end; r = TrieList.next(r)) {
        if (expiringOnly && Mem.lpLong(r + TrieList.EXPIRY_OFFSET) == 0) continue;
        KeyRecord out = new KeyRecord();
        TrieList.read(r, TrieList.keyOf(r), out);
        visitor.accept(out);
      }
    }
  }

  /**
   * Checks every invariant of the class comment against the whole structure (the writer's thread,
   * or while no writer runs) and returns its shape; throws {@link IllegalStateException} naming the
   * first violation. Reachable blocks must not overlap each other or a free block, and the space's
   * live blocks must be the reachable ones plus those retired and not yet freed.
   */
  public Shape checkInvariants() {
    checkWritable();
    Shape shape = new Shape();
    Granules used = new Granules(space.top() >>> 3);
    walk(root, 0, 0, shape, used, true);
    if (shape.records != records || shape.nodes != nodes || shape.lists != lists) {
      throw new IllegalStateException(
          "lazy-trie counts "
              + records
              + " records, "
              + nodes
              + " nodes, "
              + lists
              + " lists; the walk found "
              + shape);
    }
    if (space.liveBlocks() != shape.nodes + shape.lists + pendingBlocks) {
      throw new IllegalStateException(
          "space holds "
              + space.liveBlocks()
              + " live blocks; reachable "
              + (shape.nodes + shape.lists)
              + " + retired "
              + pendingBlocks);
    }
    space.forEachFree(
        (off, bytes) -> {
          int g = (int) (off >>> 3);
          if (used.any(g, g + (int) (bytes >>> 3))) {
            throw new IllegalStateException("free block at " + off + " overlaps a live one");
          }
        });
    return shape;
  }

  /** Claims {@code [off, off + size)} for one block in {@code used}, or throws if it cannot. */
  private void claim(long off, long size, Granules used, String what) {
    long bytes = TrieSpace.blockSize(size);
    if (off < TrieSpace.FIRST || (off & 7) != 0 || off + bytes > space.top()) {
      throw new IllegalStateException(
          what + " at " + off + " (" + bytes + " bytes) is off the space");
    }
    int g = (int) (off >>> 3), end = g + (int) (bytes >>> 3);
    if (used.any(g, end)) throw new IllegalStateException(what + " at " + off + " overlaps");
    used.take(g, end);
  }

  /**
   * The 8-byte granules of the space that reachable blocks take, for a walk: a word at a time
   * ({@link BitSet#nextSetBit} would scan past a block's range to the next set bit, however far).
   */
  static final class Granules {
    final long[] words;

    Granules(long granules) {
      words = new long[(int) ((granules + 63) >>> 6)];
    }

    /** Whether any granule of {@code [from, to)} is taken. */
    boolean any(int from, int to) {
      for (int i = from; i < to; ) {
        int lo = i & 63, hi = Math.min(64, lo + (to - i));
        if ((words[i >>> 6] & mask(lo, hi)) != 0) return true;
        i += hi - lo;
      }
      return false;
    }

    void take(int from, int to) {
      for (int i = from; i < to; ) {
        int lo = i & 63, hi = Math.min(64, lo + (to - i));
        words[i >>> 6] |= mask(lo, hi);
        i += hi - lo;
      }
    }

    private static long mask(int lo, int hi) {
      return (hi == 64 ? -1L : (1L << hi) - 1) & (-1L << lo);
    }
  }

  /**
   * Walks the subtree of {@code node}, claiming its blocks in {@code used}; every bound is checked,
   * and with {@code full} every invariant too (a load checks bounds, overlaps and counts: the
   * checkpoint's pages carry checksums, and the walk must only keep a damaged one from reaching
   * memory outside the space).
   */
  private void walk(long node, int depth, long prefix, Shape shape, Granules used, boolean full) {
    if (depth >= maxDepth) throw new IllegalStateException("node below full depth");
    claim(node, nodeBytes, used, "node");
    shape.nodes++;
    shape.maxDepth = Math.max(shape.maxDepth, depth);
    int children = 0;
    long onlyChild = 0;
    for (int c = 0; c < branching; c++) {
      long v = Mem.lpLong(a(slot(node, c)));
      if (v == 0) continue;
      children++;
      onlyChild = v;
      long childPrefix = prefix | ((long) c << (64 - bits * (depth + 1)));
      if ((v & NODE_TAG) != 0) {
        walk(v & ~NODE_TAG, depth + 1, childPrefix, shape, used, full);
      } else {
        checkList(v, depth, childPrefix, shape, used, full);
      }
    }
    if (children != Mem.lpInt(a(node + CHILDREN_OFFSET))) {
      throw new IllegalStateException("node at depth " + depth + " miscounts its children");
    }
    if (depth > 0 && children == 0) {
      throw new IllegalStateException("empty node at depth " + depth);
    }
    if (depth > 0
        && children == 1
        && (onlyChild & NODE_TAG) == 0
        && TrieList.distinct(a(onlyChild)) <= sluggishness) {
      throw new IllegalStateException("node at depth " + depth + " should have merged");
    }
  }

  private void checkList(
      long list, int depth, long prefix, Shape shape, Granules used, boolean full) {
    if (list < TrieSpace.FIRST || list + TrieList.HEADER_SIZE > space.top()) {
      throw new IllegalStateException("list at " + list + " is off the space");
    }
    int size = TrieList.bytes(a(list));
    if (size < TrieList.HEADER_SIZE + TrieList.RECORD_HEADER_SIZE) {
      throw new IllegalStateException("list at " + list + " of " + size + " bytes");
    }
    claim(list, size, used, "list");
    shape.lists++;
    shape.listBytes += size;
    int usedBits = bits * (depth + 1);
    long mask = usedBits == 64 ? -1L : ~(-1L >>> usedBits);
    int count = 0;
    int distinct = 0;
    long prevHash = 0;
    byte[] prevKey = null;
    long la = a(list);
    long end = la + size;
    for (long r = TrieList.first(la); r < end; r = TrieList.next(r)) {
      if (r + TrieList.RECORD_HEADER_SIZE > end
          || r + TrieList.recordSize(TrieList.keyLength(r)) > end) {
        throw new IllegalStateException("record overruns its list at depth " + depth);
      }
      long h = TrieList.hash(r);
      if (!full) {
        if (count == 0 || h != prevHash) distinct++;
        count++;
        prevHash = h;
        continue;
      }
      byte[] k = TrieList.keyOf(r);
      if ((h & mask) != prefix) {
        throw new IllegalStateException("record off its path at depth " + depth);
      }
      if (prevKey != null) {
        int c = Long.compareUnsigned(prevHash, h);
        if (c == 0) c = java.util.Arrays.compareUnsigned(prevKey, k);
        if (c >= 0) throw new IllegalStateException("list out of order at depth " + depth);
      }
      if (prevKey == null || h != prevHash) distinct++;
      count++;
      prevHash = h;
      prevKey = k;
    }
    if (count == 0 || count != TrieList.count(la) || distinct != TrieList.distinct(la)) {
      throw new IllegalStateException("list header disagrees with its records at depth " + depth);
    }
    if (distinct > sluggishness && depth < maxDepth - 1) {
      throw new IllegalStateException(
          "list of " + distinct + " hashes above s=" + sluggishness + " at depth " + depth);
    }
    shape.records += count;
    shape.maxListHashes = Math.max(shape.maxListHashes, distinct);
  }

  /** What {@link #checkInvariants} found. */
  public static final class Shape {
    public long nodes;
    public long lists;
    public long listBytes;
    public long records;
    public int maxDepth;
    public int maxListHashes;

    @Override
    public String toString() {
      return records + " records, " + nodes + " nodes, " + lists + " lists, depth " + maxDepth;
    }
  }

  // ---- close
  // -----------------------------------------------------------------------------------------

  /**
   * Frees the space once the readers inside have left; later calls throw {@link ClosedException}.
   * The writer's thread, once no writes are running.
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true; // volatile: a reader that enters after the session close below sees it
    publishRetired();
    long last = barrier.currentSeq();
    barrier.close(new long[0], 0);
    while (nextToFree <= last) {
      freeTerminated();
      if (nextToFree <= last) Thread.onSpinWait();
    }
    space.close();
  }
}
