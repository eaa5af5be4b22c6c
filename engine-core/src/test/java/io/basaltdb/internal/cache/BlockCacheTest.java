package io.basaltdb.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.cache.BlockCache.Kind;
import io.basaltdb.internal.memory.Mem;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class BlockCacheTest {
  /** Contents that tell which key they belong to: every byte derived from (owner, offset). */
  private static byte[] contents(long owner, long offset, int size) {
    byte[] b = new byte[size];
    for (int i = 0; i < size; i++) b[i] = (byte) (owner * 31 + offset * 7 + i);
    return b;
  }

  private static void assertHolds(BlockCache.Block b, long owner, long offset, int size) {
    assertEquals(size, b.size);
    byte[] want = contents(owner, offset, size);
    for (int i = 0; i < size; i++) {
      assertEquals(
          want[i],
          (byte) Mem.lpUnsignedByte(b.base, b.address + i),
          "byte " + i + " of " + owner + "/" + offset);
    }
  }

  @Test
  void putThenGet_isAHit_andTheBytesAreOffHeapCopies() {
    try (BlockCache c = new BlockCache(1 << 20)) {
      long o = c.newOwner();
      assertNull(c.get(o, 0, Kind.SEGMENT_PAGE));
      byte[] src = contents(o, 0, 100);
      BlockCache.Block p = c.put(o, 0, Kind.TABLE_INDEX, src);
      assertNull(p.base, "cached blocks live off the heap");
      src[0] ^= 1; // the cache copied it
      p.release();
      BlockCache.Block g = c.get(o, 0, Kind.SEGMENT_PAGE);
      assertNotNull(g);
      assertHolds(g, o, 0, 100);
      g.release();
      assertEquals(1, c.hits());
      assertEquals(1, c.misses());
      assertEquals(100 + BlockCache.OVERHEAD, c.bytes());
      assertEquals(100 + BlockCache.OVERHEAD, c.bytes(Kind.TABLE_INDEX));
      assertEquals(0, c.bytes(Kind.TABLE_FILTER));
    }
  }

  @Test
  void leastRecentlyUsed_isEvictedFirst_andCapacityHolds() {
    int size = 1000;
    long cap = 4 * (size + BlockCache.OVERHEAD);
    try (BlockCache c = new BlockCache(cap)) {
      long o = c.newOwner();
      for (int i = 0; i < 4; i++) c.put(o, i, Kind.SEGMENT_PAGE, contents(o, i, size)).release();
      c.get(o, 0, Kind.SEGMENT_PAGE).release(); // 0 is now the most recently used; 1 the least
      c.put(o, 4, Kind.SEGMENT_PAGE, contents(o, 4, size)).release();
      assertNull(c.get(o, 1, Kind.SEGMENT_PAGE), "the least recently used block went");
      for (int i : new int[] {0, 2, 3, 4}) {
        BlockCache.Block b = c.get(o, i, Kind.SEGMENT_PAGE);
        assertNotNull(b, "block " + i);
        assertHolds(b, o, i, size);
        b.release();
      }
      assertEquals(1, c.evictions());
      assertTrue(c.bytes() <= cap, c.bytes() + " > " + cap);
      assertEquals(4, c.entries());
    }
  }

  @Test
  void shrink_lowersTheCapacity_evictsTheOldestDownToIt_andAPinnedBlockLivesUntilReleased() {
    int size = 1000;
    long one = size + BlockCache.OVERHEAD;
    try (BlockCache c = new BlockCache(6 * one)) {
      long o = c.newOwner();
      BlockCache.Block pinned =
          c.put(o, 0, Kind.TABLE_DATA, contents(o, 0, size)); // the oldest, held
      for (int i = 1; i < 6; i++) c.put(o, i, Kind.TABLE_DATA, contents(o, i, size)).release();
      assertEquals(6, c.entries());
      c.shrink(3 * one);
      assertEquals(3 * one, c.capacity());
      assertEquals(3, c.entries(), "the oldest went");
      assertEquals(3, c.evictions());
      for (int i = 3; i < 6; i++) {
        BlockCache.Block b = c.get(o, i, Kind.TABLE_DATA);
        assertNotNull(b, "block " + i + " stays");
        b.release();
      }
      assertNull(c.get(o, 0, Kind.TABLE_DATA));
      assertHolds(pinned, o, 0, size); // evicted but pinned: still readable
      pinned.release();
      assertEquals(3 * one, c.bytes(), "the evicted pinned block freed at its release");
      c.put(o, 9, Kind.TABLE_DATA, contents(o, 9, size)).release();
      assertTrue(c.bytes() <= 3 * one, "puts keep to the lowered capacity: " + c.bytes());
      c.shrink(10 * one);
      assertEquals(0, c.capacity());
      assertEquals(0, c.entries(), "nothing fits a capacity of 0");
      assertFalse(c.admits(1));
    }
  }

  @Test
  void anEvictedBlock_staysReadableUntilItsLastPinIsReleased() {
    int size = 1000;
    try (BlockCache c = new BlockCache(2 * (size + BlockCache.OVERHEAD))) {
      long o = c.newOwner();
      BlockCache.Block held = c.put(o, 0, Kind.TABLE_FILTER, contents(o, 0, size));
      BlockCache.Block again = c.get(o, 0, Kind.SEGMENT_PAGE);
      assertSame(held, again);
      // 0 was read, so the first eviction that reaches it gives it a second chance; the next takes
      // it
      for (int i = 1; i <= 4; i++) c.put(o, i, Kind.TABLE_FILTER, contents(o, i, size)).release();
      assertNull(c.get(o, 0, Kind.SEGMENT_PAGE), "evicted from the cache");
      assertHolds(
          held, o, 0, size); // still pinned twice: its memory is not freed (debug mode would throw)
      long withHeld = c.bytes();
      held.release();
      assertHolds(again, o, 0, size);
      again.release();
      assertEquals(withHeld - size - BlockCache.OVERHEAD, c.bytes(), "freed at the last release");
    }
  }

  @Test
  void aBlockReadSinceTheEvictorLastPassed_getsASecondChance_butOnlyOne() {
    int size = 1000;
    try (BlockCache c = new BlockCache(3 * (size + BlockCache.OVERHEAD))) {
      long o = c.newOwner();
      for (int i = 0; i < 3; i++) c.put(o, i, Kind.SEGMENT_PAGE, contents(o, i, size)).release();
      c.get(o, 0, Kind.SEGMENT_PAGE).release(); // the oldest, read: referenced
      c.put(o, 3, Kind.SEGMENT_PAGE, contents(o, 3, size)).release();
      assertNull(c.get(o, 1, Kind.SEGMENT_PAGE), "the oldest unreferenced block went instead of 0");
      c.put(o, 4, Kind.SEGMENT_PAGE, contents(o, 4, size)).release();
      assertNull(c.get(o, 2, Kind.SEGMENT_PAGE));
      c.put(o, 5, Kind.SEGMENT_PAGE, contents(o, 5, size)).release();
      assertNull(c.get(o, 3, Kind.SEGMENT_PAGE));
      c.put(o, 6, Kind.SEGMENT_PAGE, contents(o, 6, size)).release();
      assertNull(c.get(o, 0, Kind.SEGMENT_PAGE), "its chance was used: not read again, it goes");
      assertEquals(3, c.entries());
    }
  }

  @Test
  void admitOnSecondRead_admitsABlockOnItsSecondRead_thenMakesItEarnItsPlaceAgain() {
    try (BlockCache c = new BlockCache(1 << 20)) {
      long owner = c.newOwner();
      assertFalse(c.admitOnSecondRead(owner, 4096), "first read");
      assertFalse(c.admitOnSecondRead(owner, 8192), "another block's first read");
      assertTrue(c.admitOnSecondRead(owner, 4096), "second read");
      assertFalse(
          c.admitOnSecondRead(owner, 4096), "admitted once; after an eviction it starts over");
      assertTrue(c.admitOnSecondRead(owner, 4096));
      assertFalse(c.admitOnSecondRead(c.newOwner(), 8192), "same offset, another file");
      assertEquals(4, c.declined());
      // The window is about one slot per KiB: of 10,000 blocks read once each, far fewer than all
      // are
      // remembered by the time each is read again (a read-once stream caches little)...
      int admitted = 0;
      for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 10_000; i++) if (c.admitOnSecondRead(owner, 1_000_000 + i)) admitted++;
      }
      assertTrue(admitted < 2_000, admitted + " of 10,000 admitted on a pass over 10x the window");
      // ...while a hot set well inside the window is admitted on its second read.
      admitted = 0;
      for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 100; i++) if (c.admitOnSecondRead(owner, 5_000_000 + i)) admitted++;
      }
      assertTrue(admitted >= 90, admitted + " of 100 admitted");
    }
  }

  @Test
  void aBlockLargerThanAShard_isReturnedOnTheHeap_uncached() {
    try (BlockCache c = new BlockCache(4096)) {
      long o = c.newOwner();
      BlockCache.Block b = c.put(o, 0, Kind.TABLE_INDEX, contents(o, 0, 5000));
      assertTrue(b.base instanceof byte[]);
      assertHolds(b, o, 0, 5000);
      b.release();
      assertNull(c.get(o, 0, Kind.SEGMENT_PAGE));
      assertEquals(0, c.bytes());
    }
  }

  @Test
  void zeroCapacity_cachesNothing() {
    try (BlockCache c = new BlockCache(0)) {
      long o = c.newOwner();
      BlockCache.Block b = c.get(o, 7, Kind.SEGMENT_PAGE, () -> contents(o, 7, 64));
      assertHolds(b, o, 7, 64);
      b.release();
      assertNull(c.get(o, 7, Kind.SEGMENT_PAGE));
      assertEquals(0, c.bytes());
    }
    assertThrows(InvalidArgumentException.class, () -> new BlockCache(-1));
  }

  @Test
  void removeAndRemoveOwner_dropOnlyTheirBlocks() {
    try (BlockCache c = new BlockCache(1 << 20)) {
      long a = c.newOwner();
      long b = c.newOwner();
      for (int i = 0; i < 3; i++) {
        c.put(a, i, Kind.SEGMENT_PAGE, contents(a, i, 50)).release();
        c.put(b, i, Kind.SEGMENT_PAGE, contents(b, i, 50)).release();
      }
      c.remove(a, 1);
      assertNull(c.get(a, 1, Kind.SEGMENT_PAGE));
      c.removeOwner(b);
      for (int i = 0; i < 3; i++) assertNull(c.get(b, i, Kind.SEGMENT_PAGE));
      assertEquals(2, c.entries());
      assertEquals(2 * (50 + BlockCache.OVERHEAD), c.bytes());
    }
  }

  @Test
  void close_freesEverything_andLaterPutsGoToTheHeap() {
    BlockCache c = new BlockCache(1 << 20);
    long o = c.newOwner();
    BlockCache.Block pinned = c.put(o, 0, Kind.TABLE_INDEX, contents(o, 0, 200));
    c.put(o, 1, Kind.TABLE_INDEX, contents(o, 1, 200)).release();
    c.close();
    assertEquals(200 + BlockCache.OVERHEAD, c.bytes(), "only the pinned block is left");
    assertHolds(pinned, o, 0, 200);
    pinned.release();
    assertEquals(0, c.bytes());
    assertEquals(0, Mem.liveBlocksOf(c));
    assertNull(c.get(o, 1, Kind.SEGMENT_PAGE));
    BlockCache.Block late = c.put(o, 2, Kind.TABLE_INDEX, contents(o, 2, 10));
    assertTrue(late.base instanceof byte[]);
    late.release();
    assertEquals(0, c.bytes());
  }

  /**
   * Readers and loaders race on a cache far smaller than their working set, so blocks are evicted
   * while pinned all the time. Every read checks the bytes (in debug mode a read of freed memory
   * throws), and at the end every byte is accounted for and freed.
   */
  @Test
  void concurrentPinsAndEvictions_neverExposeFreedOrForeignMemory() throws Exception {
    BlockCache c = new BlockCache(64 << 10);
    long[] owners = {c.newOwner(), c.newOwner(), c.newOwner()};
    AtomicReference<Throwable> error = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      threads.add(
          new Thread(
              () -> {
                ThreadLocalRandom r = ThreadLocalRandom.current();
                try {
                  for (int i = 0; i < 20_000 && error.get() == null; i++) {
                    long o = owners[r.nextInt(owners.length)];
                    long off = r.nextInt(200);
                    int size = 64 + (int) (off * 13 % 2000);
                    BlockCache.Block b =
                        c.get(o, off, Kind.SEGMENT_PAGE, () -> contents(o, off, size));
                    try {
                      assertEquals(size, b.size);
                      byte[] want = contents(o, off, size);
                      for (int j = 0; j < size; j += 97) {
                        if ((byte) Mem.lpUnsignedByte(b.base, b.address + j) != want[j]) {
                          throw new AssertionError(
                              "block " + o + "/" + off + " holds foreign bytes at " + j);
                        }
                      }
                      if (r.nextInt(50) == 0) c.removeOwner(o);
                    } finally {
                      b.release();
                    }
                  }
                } catch (Throwable e) {
                  error.compareAndSet(null, e);
                }
              }));
    }
    for (Thread t : threads) t.start();
    for (Thread t : threads) t.join();
    if (error.get() != null) throw new AssertionError(error.get());
    assertTrue(c.evictions() > 1000, "the test evicted: " + c.evictions());
    assertTrue(c.bytes() <= c.capacity(), c.bytes() + " bytes with nothing pinned");
    c.close();
    assertEquals(0, c.bytes(), "every byte freed");
    assertEquals(0, Mem.liveBlocksOf(c));
  }

  @Test
  void blockMap_agreesWithAHashMap_underRandomPutsAndRemoves() {
    java.util.SplittableRandom r = new java.util.SplittableRandom(11);
    BlockCache.BlockMap m = new BlockCache.BlockMap();
    java.util.Map<Long, BlockCache.Block> model = new java.util.HashMap<>();
    for (int op = 0; op < 200_000; op++) {
      // few owners and nearby offsets, so probe runs collide and wrap around the table
      long key = (1 + r.nextInt(4)) << 32 | r.nextInt(3000);
      if (r.nextInt(3) == 0) {
        m.remove(key);
        model.remove(key);
      } else if (!model.containsKey(key)) {
        BlockCache.Block b = new BlockCache.Block(null, null, 0, 0, Kind.DOCUMENT, key, 0);
        m.put(b);
        model.put(key, b);
      }
      if (op % 1000 == 0) {
        assertEquals(model.size(), m.size());
        for (int i = 0; i < 50; i++) {
          long k = (1 + r.nextInt(4)) << 32 | r.nextInt(3000);
          assertSame(model.get(k), m.get(k), "key " + k);
        }
      }
    }
    for (java.util.Map.Entry<Long, BlockCache.Block> e : model.entrySet())
      assertSame(e.getValue(), m.get(e.getKey()));
  }
}
