package io.basaltdb.internal.memory;

import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * Debug-mode bookkeeping behind {@link Mem}: the live allocations (with the stack trace that made
 * each one), used to bounds-check every access and to catch double frees and use after free.
 *
 * <p>Thread-safety: all state is in a concurrent map; every method may be called from any thread.
 * Only used when {@link Mem#DEBUG} is on.
 */
final class MemoryDebug {
  /** One live block: its size, the allocator that owns it, and where it was allocated. */
  record Block(long size, Object owner, Throwable allocatedAt) {}

  /** Live blocks by start address. Also holds allocators' raw chunks (owner == CHUNK). */
  private static final ConcurrentSkipListMap<Long, Block> LIVE = new ConcurrentSkipListMap<>();

  /** Marks a raw chunk: allowed to exist, but an access inside it that hits no block is refused. */
  static final Object CHUNK = new Object();

  private MemoryDebug() {}

  static void recordAllocation(long address, long size, Object owner) {
    if (owner == CHUNK) return; // chunks only bound blocks; accesses must fall inside a block
    Block previous =
        LIVE.putIfAbsent(address, new Block(size, owner, new Throwable("allocated here")));
    if (previous != null) {
      throw new IllegalStateException(
          "allocator handed out live block 0x" + Long.toHexString(address) + " twice",
          previous.allocatedAt());
    }
  }

  static void recordFree(long address, long size, Object owner) {
    Block b = LIVE.get(address);
    if (b == null) {
      throw new IllegalStateException(
          "double free or free of an unallocated address 0x"
              + Long.toHexString(address)
              + " (size "
              + size
              + ")");
    }
    if (b.size() != size || b.owner() != owner) {
      throw new IllegalStateException(
          "free of 0x"
              + Long.toHexString(address)
              + " with size "
              + size
              + " but it was allocated with size "
              + b.size()
              + (b.owner() != owner ? " by another allocator" : ""),
          b.allocatedAt());
    }
    LIVE.remove(address);
  }

  /** Throws unless {@code [a, a + len)} lies inside one live block. */
  static void check(long a, long len) {
    Map.Entry<Long, Block> e = LIVE.floorEntry(a);
    if (e == null || a + len > e.getKey() + e.getValue().size() || len < 0) {
      throw new IllegalStateException(
          "invalid native access at 0x"
              + Long.toHexString(a)
              + " length "
              + len
              + ": outside every live allocation (use after free, or out of bounds"
              + (e == null
                  ? ")"
                  : "; nearest block 0x"
                      + Long.toHexString(e.getKey())
                      + " size "
                      + e.getValue().size()
                      + ")"));
    }
  }

  /** Live blocks owned by {@code owner}, for leak reports. */
  static Map<Long, Block> liveBlocksOf(Object owner) {
    ConcurrentSkipListMap<Long, Block> out = new ConcurrentSkipListMap<>();
    LIVE.forEach(
        (a, b) -> {
          if (b.owner() == owner) out.put(a, b);
        });
    return out;
  }

  static void forgetAllOf(Object owner) {
    LIVE.entrySet().removeIf(e -> e.getValue().owner() == owner);
  }
}
