package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.memory.Mem;
import java.util.Arrays;

/**
 * Walks the navigation pages of an HB+-trie table ({@link TrieBuilder}; seed 003, section 3;
 * docs/format.md, "HB+-trie tables"): a point lookup finds the one record that may hold a key, a
 * seek finds the record block where the first key at or after a target is. Pages come from the
 * {@link TableReader}'s block cache ({@link Pages}), pinned only while read.
 *
 * <p>A point lookup that ends on a record reference has matched every byte of the key up to the end
 * of that record's chunk (each skipped prefix and each chunk on the way), so the record's key is
 * checked by decoding that one entry with those bytes as its shared prefix ({@link
 * BlockIter#matchAt}): a record whose key differs is "not in this table". One that ends in a leaf
 * tree names a record block, which is searched as a block table's data block is.
 *
 * <p>Invariants (a page that breaks one is a {@link CorruptionException}, so a damaged or crafted
 * file can neither loop nor read outside the navigation region):
 *
 * <ol>
 *   <li>Every page lies in the navigation region, and a page refers only to pages before it (they
 *       were written first), so every walk ends.
 *   <li>A child node's chunk index is past its parent's, and its skipped prefix is exactly the
 *       bytes between them.
 *   <li>A record reference names an existing record block and an offset inside it.
 * </ol>
 *
 * <p>Thread-safety: immutable after construction; any number of threads may walk it at once.
 */
final class TrieIndex {
  static final int TAG_RECORD = 0;
  static final int TAG_NODE = 1;
  static final int TAG_LEAF = 2;

  /** A trie node whose one entry page is carried in the reference ({@link TrieBuilder}). */
  static final int TAG_NODE_INLINE = 3;

  /** A leaf tree whose one entry page is carried in the reference. */
  static final int TAG_LEAF_INLINE = 4;

  /** Page flag: an inner page (entries name pages below); else an entry page. */
  static final int PAGE_INNER = 1;

  /** Page flag: entry offsets are u32, not u16. */
  static final int PAGE_WIDE = 2;

  /** Where a lookup or seek ends outside every record: past the structure walked. */
  static final int PAST = -1;

  /** Reads a navigation page, checked, pinned. */
  interface Pages {
    BlockCache.Block page(long offset, int size);
  }

  private final Pages pages;
  private final int chunk;
  private final byte[] root;
  private final long navStart;
  private final long navEnd;
  private final int[] blockSizes;
  private final String file;

  /** The root's reference, decoded once (null for an empty table); never changed after. */
  private final Ref rootRef;

  TrieIndex(
      Pages pages,
      int chunk,
      byte[] root,
      long navStart,
      long navEnd,
      int[] blockSizes,
      String file) {
    this.pages = pages;
    this.chunk = chunk;
    this.root = root;
    this.navStart = navStart;
    this.navEnd = navEnd;
    this.blockSizes = blockSizes;
    this.file = file;
    this.rootRef = blockSizes.length == 0 ? null : decodeRoot();
  }

  int chunkBytes() {
    return chunk;
  }

  /** A decoded reference: to a record, a trie node or a leaf tree. */
  private static final class Ref {
    int tag;
    int block;
    int pos;
    int firstBlock;
    int chunkIndex;
    byte[] skip;
    long pageOffset;
    int pageSize;

    /** The entry page itself, for a node or leaf tree carried inline; else null. */
    byte[] inline;

    /** From a seek's {@link #find}: the entry's key equals the target. */
    boolean equalKey;
  }

  /**
   * Where a point lookup of {@code key} must look: a record block and the offset of the one entry
   * that may hold it (with the number of its bytes the walk matched), or a record block to search
   * ({@code entry} -1); null if the trie rules the key out.
   */
  TableReader.BlockSpan locate(byte[] key, long[] blockOffsets) {
    if (blockSizes.length == 0) return null; // an empty table
    Ref ref = rootRef;
    int depth = 0;
    int parentChunk = -1;
    long below = navEnd;
    for (int level = 0; ; level++) {
      if (level > TrieBuilder.MAX_LEVELS)
        throw corrupt(ref.pageOffset, "a trie deeper than " + TrieBuilder.MAX_LEVELS + " levels");
      switch (ref.tag) {
        case TAG_RECORD:
          {
            int known = Math.min(key.length, depth);
            return new TableReader.BlockSpan(
                blockOffsets[ref.block], blockSizes[ref.block], ref.pos, known);
          }
        case TAG_NODE:
          {
            checkChild(ref, depth, parentChunk, below);
            int from = ref.chunkIndex * chunk;
            if (key.length < from
                || Arrays.compare(key, depth, from, ref.skip, 0, ref.skip.length) != 0) {
              return null;
            }
            int end = Math.min(key.length, from + chunk);
            Ref next = find(ref, key, from, end, false, EXACT);
            if (next == null) return null;
            parentChunk = ref.chunkIndex;
            depth = from + chunk;
            if (ref.inline == null) below = ref.pageOffset;
            ref = next;
            break;
          }
        case TAG_LEAF:
          {
            if (ref.inline == null) checkPage(ref.pageOffset, ref.pageSize, below);
            int from = depth + ref.skip.length;
            if (key.length < from
                || Arrays.compare(key, depth, from, ref.skip, 0, ref.skip.length) != 0) {
              return null;
            }
            Ref b = find(ref, key, from, key.length, true, LOWER);
            if (b == null) return null;
            return new TableReader.BlockSpan(blockOffsets[b.block], blockSizes[b.block], -1, 0);
          }
        default:
          throw corrupt(ref.pageOffset, "unknown reference tag " + ref.tag);
      }
    }
  }

  /**
   * The record block holding the first record at or after {@code key}, or holding the record just
   * before it (a seek searches the block and moves on to the next if it must); the block count if
   * every record is before {@code key}.
   */
  int lowerBound(byte[] key) {
    if (blockSizes.length == 0) return 0;
    int b = lowerBound(rootRef, 0, -1, navEnd, key, 0);
    return b == PAST ? blockSizes.length : b;
  }

  private int lowerBound(Ref ref, int depth, int parentChunk, long below, byte[] key, int level) {
    if (level > TrieBuilder.MAX_LEVELS)
      throw corrupt(ref.pageOffset, "a trie deeper than " + TrieBuilder.MAX_LEVELS + " levels");
    switch (ref.tag) {
      case TAG_RECORD:
        return ref.block;
      case TAG_NODE:
        {
          checkChild(ref, depth, parentChunk, below);
          int from = ref.chunkIndex * chunk;
          int c = compareSegment(key, depth, ref.skip);
          if (c < 0) return ref.firstBlock;
          if (c > 0) return PAST;
          int end = Math.min(key.length, from + chunk);
          Ref e = find(ref, key, from, end, false, LOWER);
          if (e == null) return PAST;
          if (e.tag == TAG_RECORD) return e.block;
          if (!e.equalKey) return e.firstBlock;
          long childBelow = ref.inline == null ? ref.pageOffset : below;
          int inside = lowerBound(e, from + chunk, ref.chunkIndex, childBelow, key, level + 1);
          if (inside != PAST) return inside;
          Ref after = find(ref, key, from, end, false, STRICT);
          return after == null ? PAST : after.tag == TAG_RECORD ? after.block : after.firstBlock;
        }
      case TAG_LEAF:
        {
          if (ref.inline == null) checkPage(ref.pageOffset, ref.pageSize, below);
          int c = compareSegment(key, depth, ref.skip);
          if (c < 0) return ref.firstBlock;
          if (c > 0) return PAST;
          int from = depth + ref.skip.length;
          Ref b = find(ref, key, from, key.length, true, LOWER);
          return b == null ? PAST : b.block;
        }
      default:
        throw corrupt(ref.pageOffset, "unknown reference tag " + ref.tag);
    }
  }

  /**
   * Compares {@code key[depth, ...)} with {@code skip} as far as skip goes: negative if the key's
   * bytes there sort before it (a key that ends inside it does), positive after, 0 if they match.
   */
  private static int compareSegment(byte[] key, int depth, byte[] skip) {
    int end = Math.min(key.length, depth + skip.length);
    if (end < depth) return -1;
    int c = Arrays.compareUnsigned(key, depth, end, skip, 0, end - depth);
    if (c != 0) return c;
    return end - depth < skip.length ? -1 : 0;
  }

  private static final int EXACT = 0;
  private static final int LOWER = 1;
  private static final int STRICT = 2;

  /**
   * Searches the page tree rooted at {@code (offset, size)} for {@code key[from, to)}: with {@code
   * EXACT} the entry whose key equals it, with {@code LOWER} the first entry at or after it, with
   * {@code STRICT} the first after it; null if there is none. A leaf tree's entries name a record
   * block (the result's {@code block}); a trie node's are references.
   */
  private Ref find(Ref tree, byte[] key, int from, int to, boolean leafTree, int mode) {
    long below = navEnd;
    long offset = tree.pageOffset;
    int size = tree.pageSize;
    byte[] inline = tree.inline;
    while (true) {
      BlockCache.Block page;
      if (inline != null) {
        page = BlockCache.heapBlock(inline, BlockCache.Kind.TABLE_INDEX);
      } else {
        checkPage(offset, size, below);
        page = pages.page(offset, size);
      }
      try {
        Object base = page.base;
        long a = page.address;
        PageHeader h = header(page, offset);
        int flags = h.flags, count = h.count, width = h.width, limit = h.limit;
        int lo = 0, hi = count;
        boolean equal;
        while (lo < hi) {
          int mid = (lo + hi) >>> 1;
          int c =
              compareEntry(
                  base,
                  a,
                  entryAt(base, a, limit, mid, width, offset),
                  limit,
                  offset,
                  key,
                  from,
                  to);
          if (c < 0 || (c == 0 && mode == STRICT)) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        if (lo == count) return null;
        int at = entryAt(base, a, limit, lo, width, offset);
        int[] p = {at};
        int keyLen = readLength(base, a, limit, p, offset);
        if (keyLen > limit - p[0]) throw corrupt(offset, "entry key overruns the page");
        equal = compareEntry(base, a, at, limit, offset, key, from, to) == 0;
        p[0] += keyLen;
        if ((flags & PAGE_INNER) != 0) {
          if (inline != null) throw corrupt(offset, "an inline page that is an inner page");
          long child = readVarint(base, a, limit, p, offset);
          long childSize = readVarint(base, a, limit, p, offset);
          if (childSize > Integer.MAX_VALUE) throw corrupt(offset, "page size " + childSize);
          below = offset;
          offset = child;
          size = (int) childSize;
          continue;
        }
        if (mode == EXACT && !equal) return null;
        Ref r = new Ref();
        r.equalKey = equal;
        if (leafTree) {
          r.tag = -1;
          r.block = checkBlock(readVarint(base, a, limit, p, offset), offset);
        } else {
          decodeRef(base, a, limit, p, offset, r);
        }
        return r;
      } finally {
        page.release();
      }
    }
  }

  /**
   * A navigation page's trailer: flags, entry count, offset width, and where the entries end (the
   * offset array starts).
   */
  private record PageHeader(int flags, int count, int width, int limit) {}

  /** Reads and checks the trailer of {@code page}, read at {@code offset}. */
  private PageHeader header(BlockCache.Block page, long offset) {
    Object base = page.base;
    long a = page.address;
    int n = page.size;
    if (n < 5) throw corrupt(offset, "navigation page of " + n + " bytes");
    int flags = Mem.lpUnsignedByte(base, a + n - 1);
    if ((flags & ~(PAGE_INNER | PAGE_WIDE)) != 0)
      throw corrupt(offset, "unknown page flags " + flags);
    int count = Mem.lpIntLE(base, a + n - 5);
    int width = (flags & PAGE_WIDE) != 0 ? 4 : 2;
    if (count < 0 || (long) count * width > n - 5)
      throw corrupt(offset, "page of " + n + " bytes cannot hold " + count + " entries");
    return new PageHeader(flags, count, width, n - 5 - count * width);
  }

  private int entryAt(Object base, long a, int limit, int i, int width, long offset) {
    long at = a + limit + (long) i * width;
    int e =
        width == 4
            ? Mem.lpIntLE(base, at)
            : Mem.lpUnsignedByte(base, at) | Mem.lpUnsignedByte(base, at + 1) << 8;
    if (e < 0 || e >= limit) throw corrupt(offset, "entry offset " + e + " outside the page");
    return e;
  }

  /** Compares the key of the entry at {@code at} with {@code key[from, to)}. */
  private int compareEntry(
      Object base, long a, int at, int limit, long offset, byte[] key, int from, int to) {
    int len, keyAt;
    int first = Mem.lpUnsignedByte(base, a + at); // at < limit (entryAt)
    if (first < 0x80) { // a key under 128 bytes, every chunk: no cursor to allocate
      len = first;
      keyAt = at + 1;
    } else {
      int[] p = {at};
      len = readLength(base, a, limit, p, offset);
      keyAt = p[0];
    }
    if (len > limit - keyAt) throw corrupt(offset, "entry key overruns the page");
    int m = Math.min(len, to - from);
    for (int i = 0; i < m; i++) {
      int x = Mem.lpUnsignedByte(base, a + keyAt + i), y = key[from + i] & 0xFF;
      if (x != y) return x - y;
    }
    return len - (to - from);
  }

  private Ref decodeRoot() {
    Ref r = new Ref();
    byte[] b = root;
    BlockCache.Block h = BlockCache.heapBlock(b, BlockCache.Kind.TABLE_INDEX);
    decodeRef(h.base, h.address, b.length, new int[] {0}, -1, r);
    if (r.tag != TAG_NODE) throw corrupt(-1, "the trie's root is not a trie node");
    return r;
  }

  private void decodeRef(Object base, long a, int limit, int[] p, long offset, Ref r) {
    if (p[0] >= limit) throw corrupt(offset, "reference runs past the page");
    r.tag = Mem.lpUnsignedByte(base, a + p[0]++);
    switch (r.tag) {
      case TAG_RECORD:
        r.block = checkBlock(readVarint(base, a, limit, p, offset), offset);
        long pos = readVarint(base, a, limit, p, offset);
        if (pos >= blockSizes[r.block])
          throw corrupt(
              offset, "record at " + pos + " of a " + blockSizes[r.block] + "-byte block");
        r.pos = (int) pos;
        return;
      case TAG_NODE:
      case TAG_LEAF:
      case TAG_NODE_INLINE:
      case TAG_LEAF_INLINE:
        boolean inline = r.tag >= TAG_NODE_INLINE;
        if (inline) r.tag -= TAG_NODE_INLINE - TAG_NODE;
        r.firstBlock = checkBlock(readVarint(base, a, limit, p, offset), offset);
        if (r.tag == TAG_NODE) {
          long ci = readVarint(base, a, limit, p, offset);
          if (ci > KeyRecord.MAX_KEY_SIZE) throw corrupt(offset, "chunk index " + ci);
          r.chunkIndex = (int) ci;
        }
        int skip = readLength(base, a, limit, p, offset);
        if (skip > limit - p[0] || skip > KeyRecord.MAX_KEY_SIZE)
          throw corrupt(offset, "skipped prefix of " + skip + " bytes overruns the page");
        r.skip = new byte[skip];
        Mem.copyToArray(base, a + p[0], r.skip, 0, skip);
        p[0] += skip;
        r.inline = null;
        if (inline) {
          int len = readLength(base, a, limit, p, offset);
          if (len > limit - p[0] || len < 5 || len > TrieBuilder.INLINE_BYTES)
            throw corrupt(offset, "inline page of " + len + " bytes");
          r.inline = new byte[len];
          Mem.copyToArray(base, a + p[0], r.inline, 0, len);
          p[0] += len;
          r.pageOffset = offset;
          r.pageSize = 0;
          return;
        }
        r.pageOffset = readVarint(base, a, limit, p, offset);
        long size = readVarint(base, a, limit, p, offset);
        if (size > Integer.MAX_VALUE) throw corrupt(offset, "page size " + size);
        r.pageSize = (int) size;
        return;
      default:
        throw corrupt(offset, "unknown reference tag " + r.tag);
    }
  }

  /** Invariant 2 for a trie node reached at {@code depth} below {@code parentChunk}, and 1. */
  private void checkChild(Ref ref, int depth, int parentChunk, long below) {
    if (ref.chunkIndex <= parentChunk && parentChunk >= 0
        || (long) ref.chunkIndex * chunk - depth != ref.skip.length) {
      throw corrupt(
          ref.pageOffset,
          "trie node at chunk "
              + ref.chunkIndex
              + " below depth "
              + depth
              + " skips "
              + ref.skip.length
              + " bytes");
    }
    if (ref.inline == null) checkPage(ref.pageOffset, ref.pageSize, below);
  }

  /** Invariant 1: the page lies in the navigation region, before {@code below}. */
  private void checkPage(long offset, int size, long below) {
    if (offset < navStart
        || size < 0
        || offset >= below
        || offset + size + Format.TRAILER_SIZE > navEnd) {
      throw corrupt(
          offset,
          "navigation page ["
              + offset
              + ", +"
              + size
              + ") outside ["
              + navStart
              + ", "
              + below
              + ")");
    }
  }

  private int checkBlock(long b, long offset) {
    if (b >= blockSizes.length)
      throw corrupt(offset, "record block " + b + " of " + blockSizes.length);
    return (int) b;
  }

  private int readLength(Object base, long a, int limit, int[] p, long offset) {
    long v = readVarint(base, a, limit, p, offset);
    if (v > Integer.MAX_VALUE) throw corrupt(offset, "length " + v);
    return (int) v;
  }

  private long readVarint(Object base, long a, int limit, int[] p, long offset) {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p[0] >= limit) throw corrupt(offset, "varint runs past the page");
      byte x = Mem.lpByte(base, a + p[0]++);
      v |= (long) (x & 0x7F) << shift;
      if (x >= 0) {
        if (v < 0) throw corrupt(offset, "varint out of range");
        return v;
      }
    }
    throw corrupt(offset, "varint longer than 10 bytes");
  }

  private CorruptionException corrupt(long offset, String what) {
    return new CorruptionException(file, Math.max(0, offset), what);
  }

  /**
   * The trie's shape as text, for tests: {@code node(p=P,skip=S)[chunk->child,...]} for a trie
   * node, {@code leaf(skip=S,blocks=N)} for a leaf tree, {@code rec} for a record; bytes printed as
   * Latin-1 text.
   */
  String describe() {
    if (blockSizes.length == 0) return "empty";
    StringBuilder sb = new StringBuilder();
    describe(rootRef, sb);
    return sb.toString();
  }

  private void describe(Ref ref, StringBuilder sb) {
    switch (ref.tag) {
      case TAG_RECORD -> sb.append("rec");
      case TAG_LEAF -> {
        java.util.List<byte[]> keys = new java.util.ArrayList<>();
        java.util.List<Ref> values = new java.util.ArrayList<>();
        entries(ref, true, keys, values);
        sb.append(ref.inline != null ? "leaf*(skip=" : "leaf(skip=")
            .append(text(ref.skip))
            .append(",blocks=")
            .append(keys.size());
        sb.append(')');
      }
      default -> {
        java.util.List<byte[]> keys = new java.util.ArrayList<>();
        java.util.List<Ref> values = new java.util.ArrayList<>();
        entries(ref, false, keys, values);
        sb.append(ref.inline != null ? "node*(p=" : "node(p=")
            .append(ref.chunkIndex)
            .append(",skip=")
            .append(text(ref.skip));
        sb.append(")[");
        for (int i = 0; i < keys.size(); i++) {
          if (i > 0) sb.append(',');
          sb.append(text(keys.get(i))).append("->");
          describe(values.get(i), sb);
        }
        sb.append(']');
      }
    }
  }

  private static String text(byte[] b) {
    return new String(b, java.nio.charset.StandardCharsets.ISO_8859_1);
  }

  /** Every entry of the page tree at {@code (offset, size)}, in order. */
  private void entries(
      Ref tree, boolean leafTree, java.util.List<byte[]> keys, java.util.List<Ref> out) {
    if (tree.inline == null) {
      entries(tree.pageOffset, tree.pageSize, null, leafTree, keys, out);
    } else {
      entries(tree.pageOffset, 0, tree.inline, leafTree, keys, out);
    }
  }

  private void entries(
      long offset,
      int size,
      byte[] inline,
      boolean leafTree,
      java.util.List<byte[]> keys,
      java.util.List<Ref> out) {
    BlockCache.Block page =
        inline != null
            ? BlockCache.heapBlock(inline, BlockCache.Kind.TABLE_INDEX)
            : pages.page(offset, size);
    try {
      Object base = page.base;
      long a = page.address;
      PageHeader h = header(page, offset);
      int flags = h.flags, count = h.count, width = h.width, limit = h.limit;
      for (int i = 0; i < count; i++) {
        int[] p = {entryAt(base, a, limit, i, width, offset)};
        int len = readLength(base, a, limit, p, offset);
        if (len > limit - p[0]) throw corrupt(offset, "entry key overruns the page");
        byte[] k = new byte[len];
        Mem.copyToArray(base, a + p[0], k, 0, len);
        p[0] += len;
        if ((flags & PAGE_INNER) != 0) {
          long child = readVarint(base, a, limit, p, offset);
          long childSize = readVarint(base, a, limit, p, offset);
          if (inline != null || childSize > Integer.MAX_VALUE)
            throw corrupt(offset, "bad inner page entry");
          checkPage(child, (int) childSize, offset);
          entries(child, (int) childSize, null, leafTree, keys, out);
          continue;
        }
        Ref r = new Ref();
        if (leafTree) {
          r.tag = -1;
          r.block = checkBlock(readVarint(base, a, limit, p, offset), offset);
        } else {
          decodeRef(base, a, limit, p, offset, r);
        }
        keys.add(k);
        out.add(r);
      }
    } finally {
      page.release();
    }
  }
}
