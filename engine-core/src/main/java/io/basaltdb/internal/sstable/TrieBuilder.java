package io.basaltdb.internal.sstable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Builds the navigation of an HB+-trie table (seed 003, sections 3.1 and 3.2; docs/format.md,
 * "HB+-trie tables") from the keys of its records, which {@link TableWriter} has already written
 * into record blocks in key order. The table is immutable, so the trie is built once, statically,
 * from the sorted keys rather than by the paper's insertions; the result is the shape insertions
 * would give.
 *
 * <p>A range of sorted keys that share their first {@code D} bytes (the chunks the parent consumed)
 * becomes one of:
 *
 * <ul>
 *   <li>a <em>trie node</em>: with {@code L} the longest prefix common to the range and {@code p =
 *       L / c}, the node is keyed by chunk {@code p} (bytes {@code [pc, pc + c)}, shorter where a
 *       key ends) and stores the skipped prefix {@code [D, pc)} in its reference. Each chunk that
 *       one key alone has points at that key's record; a chunk several keys share points at the
 *       node built for them with {@code D = (p + 1)c};
 *   <li>a <em>leaf tree</em> (section 3.2.1), for a range below the root that the section 3.2.3
 *       rule does not extend: keyed by the keys' remaining bytes, it stores the range's common
 *       prefix {@code [D, L)} once and, per record block the range touches, the shortest separator
 *       above the range's last key in that block. A lookup reads that block and searches it.
 * </ul>
 *
 * The rule: a range of {@code n} keys whose next distinguishing chunk has {@code b} distinct values
 * is extended into a trie node when {@code n > b * fL} and {@code b >= fL}, with {@code fL =
 * floor(B / (k + v))} the fanout of a leaf tree page ({@code B} = {@value #PAGE_BYTES}, {@code k}
 * the mean length of the keys' remaining bytes, {@code v} = {@value #POINTER_BYTES}). The root is
 * always a trie node keyed by chunk 0. Because the keys are all known, {@code b} and {@code k} are
 * exact, where the paper estimates them from a leaf tree's root page.
 *
 * <p>Every node or leaf tree is written as a B+-tree of pages of about {@value #PAGE_BYTES} bytes
 * (children first, so a parent knows where they are): entry pages hold its sorted entries, inner
 * pages the last key of each page below. Pages are written before the filter, in the order they are
 * finished.
 *
 * <p>Thread-safety: not thread-safe; owned by one {@link TableWriter}.
 */
final class TrieBuilder {
  /** Target size of a navigation page's contents. */
  static final int PAGE_BYTES = 4096;

  /**
   * Largest entry page a parent's reference carries inline: a small child (a leaf tree over one or
   * two record blocks, a node of a few entries) then costs its parent's page a few dozen bytes
   * instead of a page of its own, which a lookup would have to find in the cache, or read, as often
   * as it reads a record block.
   */
  static final int INLINE_BYTES = 128;

  /**
   * Levels of trie nodes and leaf trees below and including the root: the builder makes a leaf tree
   * at the last, and a reader reports a deeper trie as corruption. Keys nesting deeper than this
   * (thousands of chunks of shared prefixes, one branching at each) would otherwise make a walk as
   * deep, on the reader's stack and the writer's.
   */
  static final int MAX_LEVELS = 64;

  /** {@code v} of the section 3.2.3 rule: the size of a pointer. */
  static final int POINTER_BYTES = 8;

  /**
   * Whether tables may use chunks of {@code c} bytes: 4, 8 or 16 (what keyspaces offer), or 1 and 2
   * (the paper's examples, for tests).
   */
  static boolean validChunk(int c) {
    return c == 1 || c == 2 || c == 4 || c == 8 || c == 16;
  }

  /** Writes a finished page (appending its trailer) and returns its file offset. */
  interface PageSink {
    long write(Output page);
  }

  private final int chunk;
  private final boolean skewRule;

  /** The keys back to back; key i is {@code keys[start[i], start[i + 1])}. */
  private byte[] keys = new byte[4096];

  private int[] start = new int[1025];
  private int[] block = new int[1024];
  private int[] pos = new int[1024];
  private int n;

  private PageSink sink;

  // What was built, for tests and benchmarks.
  private long navBytes;
  private int trieNodes;
  private int leafTrees;
  private int pages;
  private int inlined;

  /** {offset, content size} of every page written, in file order (tests damage them). */
  private final List<long[]> pageSpans = new ArrayList<>();

  /**
   * @param skewRule false builds the naive trie (every shared chunk becomes a trie node): for
   *     measuring what the section 3.2 rule is worth, never for tables a store writes
   */
  TrieBuilder(int chunk, boolean skewRule) {
    this.chunk = chunk;
    this.skewRule = skewRule;
  }

  /** Bytes of the keys added so far. */
  long keyBytes() {
    return start[n];
  }

  /** Adds the next key, whose record is the entry at {@code pos} of record block {@code block}. */
  void add(byte[] key, int block, int pos) {
    if (n == this.block.length) {
      int m = n * 2;
      this.block = Arrays.copyOf(this.block, m);
      this.pos = Arrays.copyOf(this.pos, m);
      start = Arrays.copyOf(start, m + 1);
    }
    int end = start[n];
    if (keys.length - end < key.length) {
      long need = (long) end + key.length;
      if (need > Integer.MAX_VALUE - 16)
        throw new IllegalStateException("HB+-trie table keys exceed 2 GiB");
      long want = Math.min(Math.max((long) keys.length * 2, need), Integer.MAX_VALUE - 16);
      keys = Arrays.copyOf(keys, (int) want);
    }
    System.arraycopy(key, 0, keys, end, key.length);
    start[n + 1] = end + key.length;
    this.block[n] = block;
    this.pos[n] = pos;
    n++;
  }

  /** Writes every page through {@code sink} and returns the root's reference. */
  byte[] finish(PageSink sink) {
    this.sink = sink;
    return node(0, n, 0, 0);
  }

  long navBytes() {
    return navBytes;
  }

  int trieNodes() {
    return trieNodes;
  }

  int leafTrees() {
    return leafTrees;
  }

  int pages() {
    return pages;
  }

  /** Nodes and leaf trees whose entries went inline in their parent's reference. */
  int inlined() {
    return inlined;
  }

  List<long[]> pageSpans() {
    return pageSpans;
  }

  private int len(int i) {
    return start[i + 1] - start[i];
  }

  /** Bytes key {@code a} and key {@code b} share. */
  private int lcp(int a, int b) {
    int la = len(a), lb = len(b);
    int m = Arrays.mismatch(keys, start[a], start[a] + la, keys, start[b], start[b] + lb);
    return m < 0 ? la : m;
  }

  /** Whether keys {@code a} and {@code b} have the same chunk {@code p} (ends included). */
  private boolean sameChunk(int a, int b, int p) {
    int from = p * chunk;
    int ea = Math.min(len(a), from + chunk), eb = Math.min(len(b), from + chunk);
    if (ea - from != eb - from) return false;
    return Arrays.equals(
        keys, start[a] + from, start[a] + ea, keys, start[b] + from, start[b] + eb);
  }

  /** The reference to the structure for keys {@code [lo, hi)}, which share {@code depth} bytes. */
  private byte[] node(int lo, int hi, int depth, int level) {
    boolean root = level == 0;
    int common = hi - lo <= 1 ? (hi == lo ? 0 : len(lo)) : lcp(lo, hi - 1);
    int p = root ? 0 : common / chunk; // the root is keyed by the first chunk (figure 6)
    // a leaf tree where the rule says so, and always at the deepest level a reader accepts
    if (!root && (level == MAX_LEVELS - 1 || !extend(lo, hi, depth, p)))
      return leaf(lo, hi, depth, common);
    List<byte[]> entryKeys = new ArrayList<>();
    List<byte[]> entryValues = new ArrayList<>();
    int from = p * chunk;
    int childDepth = from + chunk;
    for (int a = lo; a < hi; ) {
      int b = a + 1;
      while (b < hi && sameChunk(a, b, p)) b++;
      int end = Math.min(len(a), childDepth);
      entryKeys.add(Arrays.copyOfRange(keys, start[a] + from, start[a] + end));
      entryValues.add(b - a == 1 ? recordRef(a) : node(a, b, childDepth, level + 1));
      a = b;
    }
    Tree at = writeTree(entryKeys, entryValues, !root);
    trieNodes++;
    Output ref = new Output(32 + from - depth);
    ref.putByte(at.inline == null ? TrieIndex.TAG_NODE : TrieIndex.TAG_NODE_INLINE);
    ref.putVarint(hi == lo ? 0 : block[lo]);
    ref.putVarint(p);
    ref.putVarint(from - depth);
    if (hi > lo) ref.putBytes(keys, start[lo] + depth, from - depth);
    at.putTo(ref);
    return Arrays.copyOf(ref.array(), ref.size());
  }

  /** The section 3.2.3 rule for keys {@code [lo, hi)} below {@code depth}, split at chunk p. */
  private boolean extend(int lo, int hi, int depth, int p) {
    if (!skewRule) return true;
    long count = hi - lo;
    long branches = 1;
    long keyBytes = len(lo) - depth;
    for (int i = lo + 1; i < hi; i++) {
      if (!sameChunk(i - 1, i, p)) branches++;
      keyBytes += len(i) - depth;
    }
    return extends_(count, branches, keyBytes / count);
  }

  /**
   * Section 3.2.3: whether {@code n} keys of mean length {@code k} with {@code b} branches in their
   * next chunk are better indexed by a trie node than by a leaf tree.
   */
  static boolean extends_(long n, long b, long k) {
    long fanout = Math.max(1, PAGE_BYTES / (k + POINTER_BYTES));
    return n > b * fanout && b >= fanout;
  }

  private byte[] recordRef(int i) {
    Output ref = new Output(12);
    ref.putByte(TrieIndex.TAG_RECORD);
    ref.putVarint(block[i]);
    ref.putVarint(pos[i]);
    return Arrays.copyOf(ref.array(), ref.size());
  }

  /** A leaf tree over keys {@code [lo, hi)}, which share {@code common >= depth} bytes. */
  private byte[] leaf(int lo, int hi, int depth, int common) {
    List<byte[]> seps = new ArrayList<>();
    List<byte[]> blocks = new ArrayList<>();
    for (int i = lo; i < hi; i++) {
      if (i + 1 < hi && block[i + 1] == block[i]) continue; // not the range's last in its block
      byte[] sep = suffix(i, common);
      if (i + 1 < hi) sep = TableWriter.shortestSeparator(sep, suffix(i + 1, common));
      Output v = new Output(6);
      v.putVarint(block[i]);
      seps.add(sep);
      blocks.add(Arrays.copyOf(v.array(), v.size()));
    }
    Tree at = writeTree(seps, blocks, true);
    leafTrees++;
    Output ref = new Output(32 + common - depth);
    ref.putByte(at.inline == null ? TrieIndex.TAG_LEAF : TrieIndex.TAG_LEAF_INLINE);
    ref.putVarint(block[lo]);
    ref.putVarint(common - depth);
    ref.putBytes(keys, start[lo] + depth, common - depth);
    at.putTo(ref);
    return Arrays.copyOf(ref.array(), ref.size());
  }

  private byte[] suffix(int i, int from) {
    return Arrays.copyOfRange(keys, start[i] + from, start[i + 1]);
  }

  /**
   * Where a node's or leaf tree's entries are: a B+-tree of pages whose root page is {@code
   * (offset, size)}, or, for a small one, its single entry page {@code inline} in the parent's
   * reference.
   */
  private record Tree(long offset, int size, byte[] inline) {
    void putTo(Output ref) {
      if (inline == null) {
        ref.putVarint(offset);
        ref.putVarint(size);
      } else {
        ref.putVarint(inline.length);
        ref.putBytes(inline, 0, inline.length);
      }
    }
  }

  /**
   * Writes sorted entries as a B+-tree of pages and returns where its root page is; with {@code
   * mayInline}, entries whose one page would take at most {@value #INLINE_BYTES} bytes are returned
   * as that page, written nowhere: the parent's reference carries it.
   */
  private Tree writeTree(List<byte[]> entryKeys, List<byte[]> values, boolean mayInline) {
    if (mayInline) {
      long bytes = 5;
      for (int i = 0; i < entryKeys.size() && bytes <= INLINE_BYTES; i++) {
        byte[] k = entryKeys.get(i);
        bytes += varintSize(k.length) + k.length + values.get(i).length + 2;
      }
      if (bytes <= INLINE_BYTES) { // fits one entry page: encodePage takes every entry
        inlined++;
        Output page = encodePage(entryKeys, values, 0, false, new int[1]);
        return new Tree(0, 0, Arrays.copyOf(page.array(), page.size()));
      }
    }
    List<byte[]> keys = entryKeys, vals = values;
    boolean inner = false;
    while (true) {
      List<byte[]> lastKeys = new ArrayList<>();
      List<byte[]> handles = new ArrayList<>();
      long offset = 0;
      int size = 0;
      int[] next = new int[1];
      int i = 0;
      do { // at least one page: an empty table's root is an empty page
        Output page = encodePage(keys, vals, i, inner, next);
        size = page.size();
        offset = sink.write(page);
        pages++;
        pageSpans.add(new long[] {offset, size});
        navBytes += size + Format.TRAILER_SIZE;
        lastKeys.add(next[0] == i ? new byte[0] : keys.get(next[0] - 1));
        Output h = new Output(16);
        h.putVarint(offset);
        h.putVarint(size);
        handles.add(Arrays.copyOf(h.array(), h.size()));
        i = next[0];
      } while (i < keys.size());
      if (handles.size() == 1) return new Tree(offset, size, null);
      keys = lastKeys;
      vals = handles;
      inner = true;
    }
  }

  /**
   * Encodes the entries from {@code from} on into one page of about {@value #PAGE_BYTES} bytes (an
   * entry page at least one entry, an inner page two: with entries larger than a page, keys of
   * kilobytes, each level above still halves, so the tree ends in a root); sets {@code next[0]} to
   * the first entry left out.
   */
  private static Output encodePage(
      List<byte[]> keys, List<byte[]> values, int from, boolean inner, int[] next) {
    Output page = new Output(PAGE_BYTES + 256);
    int[] offsets = new int[16];
    int m = 0;
    int i = from;
    for (; i < keys.size(); i++) {
      byte[] k = keys.get(i), v = values.get(i);
      int entry = varintSize(k.length) + k.length + v.length;
      if (m >= (inner ? 2 : 1) && page.size() + entry + 4 * (m + 1) + 5 > PAGE_BYTES) break;
      if (m == offsets.length) offsets = Arrays.copyOf(offsets, m * 2);
      offsets[m++] = page.size();
      page.putVarint(k.length);
      page.putBytes(k, 0, k.length);
      page.putBytes(v, 0, v.length);
    }
    next[0] = i;
    boolean wide = page.size() > 0xFFFF;
    for (int j = 0; j < m; j++) {
      if (wide) {
        page.putIntLE(offsets[j]);
      } else {
        page.putByte(offsets[j]);
        page.putByte(offsets[j] >>> 8);
      }
    }
    page.putIntLE(m);
    page.putByte((inner ? TrieIndex.PAGE_INNER : 0) | (wide ? TrieIndex.PAGE_WIDE : 0));
    return page;
  }

  private static int varintSize(long v) {
    int s = 1;
    while ((v >>>= 7) != 0) s++;
    return s;
  }
}
