package io.basaltdb.internal.skiplist;

import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.Region;
import io.basaltdb.internal.memory.SlabAllocator;

/**
 * Byte layout of an off-heap skiplist node, and the accessors for its fields. The layout is
 * documented in docs/format.md ("Skiplist node"); the constants here mirror it.
 *
 * <pre>
 *  offset  size  field
 *  0       8     bornSn   term the node was inserted in; written before publication, then immutable
 *  8       8     deadSn   0 while live; set once, by CAS, to the term it was superseded or deleted in
 *  16      4     meta     bits 0-19 key length, 20-25 tower height, 26-27 build state
 *  20      4     value length
 *  24      8     key prefix: the key's first 8 bytes, zero-padded, as a big-endian long
 *  32      8*h   next[0..h-1]  tower of links (below)
 *  32+8h   k     key bytes
 *  ..      v     value bytes
 * </pre>
 *
 * <p>A link (a tower slot) is one 64-bit word, so one CAS swaps all of it:
 *
 * <pre>
 *  bits 0-31   the successor's {@link Region#ref reference} (offset from the region base in 8-byte
 *              units); 0 is the end of the level
 *  bit  32     this node's "deleted" mark at that level
 *  bits 33-63  the successor's key prefix, top 31 bits ({@code prefix >>> 33})
 * </pre>
 *
 * The successor's prefix travels with the reference to it, so a search that finds the key it looks
 * for sorting before a successor's prefix descends without loading that successor: the node that
 * ends each level's scan, one cache miss per level, is never touched. The prefix is a function of
 * the reference (a node's prefix never changes), so a link is always self-consistent.
 *
 * <p>Thread-safety: bornSn, lengths, height, prefix, key and value are written before the node is
 * published by the CAS that links it and never change afterwards, so plain loads are enough once a
 * reader has reached the node through a volatile load of a next pointer. deadSn, next pointers and
 * the build state are read with volatile loads and changed only by CAS. Accessors are named by
 * access mode, as the package documents.
 */
final class Node {
  static final int BORN_OFFSET = 0;
  static final int DEAD_OFFSET = 8;
  static final int META_OFFSET = 16;
  static final int VALUE_LEN_OFFSET = 20;

  /**
   * Most comparisons during a search end on the prefix, on the same cache line as the tower's base.
   */
  static final int PREFIX_OFFSET = 24;

  static final int TOWER_OFFSET = 32;
  static final int HEADER_SIZE = TOWER_OFFSET;

  static final int KEY_LEN_BITS = 20;
  static final int KEY_LEN_MASK = (1 << KEY_LEN_BITS) - 1;
  static final int HEIGHT_SHIFT = KEY_LEN_BITS;
  static final int HEIGHT_MASK = 0x3F;
  static final int STATE_SHIFT = 26;
  static final int STATE_MASK = 0x3 << STATE_SHIFT;

  /** Tower levels above 0 may still be linked by the inserter. */
  static final int STATE_BUILDING = 0;

  /** The inserter has finished with the tower; a remover may unlink and retire the node. */
  static final int STATE_BUILT = 1 << STATE_SHIFT;

  /** Marked for removal while still building: the inserter unlinks and retires it when done. */
  static final int STATE_MARKED_EARLY = 2 << STATE_SHIFT;

  static final long MARK = 1L << 32;
  static final int LINK_PREFIX_SHIFT = 33;
  private static final long REF_MASK = 0xFFFF_FFFFL;

  private Node() {}

  static long size(int height, int keyLen, int valueLen) {
    return HEADER_SIZE + 8L * height + keyLen + valueLen;
  }

  /**
   * Nodes at least this tall (1 in 64) come from the allocator's hot arena. Every search moves
   * across them at levels 3 and up, so packing them together puts those steps on far fewer pages
   * and DRAM rows than if they sat among the short nodes (about 10% more lookups per second at 10M
   * entries).
   */
  static final int HOT_HEIGHT = 4;

  /** The allocator arena of a node of this height. */
  static int arena(int height) {
    return height >= HOT_HEIGHT ? SlabAllocator.HOT_ARENA : 0;
  }

  static long size(long node) {
    return size(height(node), keyLen(node), valueLen(node));
  }

  /** Writes the immutable header fields of a fresh node; next pointers are set by the caller. */
  static void init(long node, int height, int keyLen, int valueLen) {
    int state = height == 1 ? STATE_BUILT : STATE_BUILDING;
    Mem.spLong(node + BORN_OFFSET, 0);
    Mem.spLong(node + DEAD_OFFSET, 0);
    Mem.spInt(node + META_OFFSET, keyLen | (height << HEIGHT_SHIFT) | state);
    Mem.spInt(node + VALUE_LEN_OFFSET, valueLen);
    Mem.spLong(node + PREFIX_OFFSET, 0);
  }

  /**
   * As {@link #init} for a node of a bottom-up build ({@link SkipListBuilder}): born in {@code
   * term}, tower finished.
   */
  static void initBuilt(long node, int height, int keyLen, int valueLen, long term) {
    Mem.spLong(node + BORN_OFFSET, term);
    Mem.spLong(node + DEAD_OFFSET, 0);
    Mem.spInt(node + META_OFFSET, keyLen | (height << HEIGHT_SHIFT) | STATE_BUILT);
    Mem.spInt(node + VALUE_LEN_OFFSET, valueLen);
    Mem.spLong(node + PREFIX_OFFSET, 0);
  }

  static long prefix(long node) {
    return Mem.lpLong(node + PREFIX_OFFSET);
  }

  static void setPrefix(long node, long prefix) {
    Mem.spLong(node + PREFIX_OFFSET, prefix); // before publication
  }

  static long born(long node) {
    return Mem.lpLong(node + BORN_OFFSET);
  }

  static void setBorn(long node, long sn) {
    Mem.spLong(node + BORN_OFFSET, sn); // published by the linking CAS
  }

  /**
   * deadSn, volatile: it is set concurrently by the CAS of the writer that superseded or deleted
   * the node; callers say which edge they rely on.
   */
  static long lvDead(long node) {
    return Mem.lvLong(node + DEAD_OFFSET);
  }

  static boolean casDead(long node, long sn) {
    return Mem.casLong(node + DEAD_OFFSET, 0, sn);
  }

  static int keyLen(long node) {
    return Mem.lpInt(node + META_OFFSET) & KEY_LEN_MASK;
  }

  static int height(long node) {
    return (Mem.lpInt(node + META_OFFSET) >>> HEIGHT_SHIFT) & HEIGHT_MASK;
  }

  static int valueLen(long node) {
    return Mem.lpInt(node + VALUE_LEN_OFFSET);
  }

  /**
   * Moves the build state from {@code from} to {@code to}; the CAS decides which of the inserter
   * and the remover unlinks a node whose removal raced with the building of its tower.
   */
  static boolean casState(long node, int from, int to) {
    long a = node + META_OFFSET;
    int meta = Mem.lvInt(a); // lv: the latest state, which the CAS below validates
    if ((meta & STATE_MASK) != from) return false;
    return Mem.casInt(a, meta, (meta & ~STATE_MASK) | to);
  }

  static long keyAddr(long node) {
    return node + TOWER_OFFSET + 8L * height(node);
  }

  static long valueAddr(long node) {
    return keyAddr(node) + keyLen(node);
  }

  static long nextAddr(long node, int level) {
    return node + TOWER_OFFSET + 8L * level;
  }

  /**
   * The raw link at {@code level}, mark bit included. Volatile: it pairs with the CAS that linked
   * the successor (whose fields were written before it) and sees the marks removers set by CAS;
   * callers say which of these they rely on.
   */
  static long lvNext(long node, int level) {
    return Mem.lvLong(nextAddr(node, level));
  }

  /** Plain store of a link: only before the node is published by the CAS that links it. */
  static void spNext(long node, int level, long value) {
    Mem.spLong(nextAddr(node, level), value);
  }

  static boolean casNext(long node, int level, long expect, long update) {
    return Mem.casLong(nextAddr(node, level), expect, update);
  }

  static boolean isMarked(long raw) {
    return (raw & MARK) != 0;
  }

  /** The address a raw link points to (0 at the end of a level). */
  static long ptr(long raw) {
    long ref = raw & REF_MASK;
    return ref == 0 ? 0 : Region.address(ref);
  }

  /** An unmarked link to {@code node} (0 for none); reads its immutable prefix. */
  static long link(long node) {
    return node == 0
        ? 0
        : (prefix(node) >>> LINK_PREFIX_SHIFT) << LINK_PREFIX_SHIFT | Region.ref(node);
  }

  /** The successor's key prefix carried by a link, as {@code prefix >>> LINK_PREFIX_SHIFT}. */
  static long linkPrefix(long raw) {
    return raw >>> LINK_PREFIX_SHIFT;
  }

  /** True when the node is visible at {@code sn}: born at or before it and not dead at it. */
  static boolean visibleAt(long node, long sn) {
    long dead = lvDead(node); // lv: pairs with the killer's casDead
    return born(node) <= sn && (dead == 0 || dead > sn);
  }
}
