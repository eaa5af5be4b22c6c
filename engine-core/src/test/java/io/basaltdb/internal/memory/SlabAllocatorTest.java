package io.basaltdb.internal.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.MemoryLimitException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SlabAllocatorTest {

  @Test
  void sizeClasses_coverEverySizeAndRoundUpTightly() {
    long prev = 0;
    for (int c = 0; c < SizeClasses.COUNT; c++) {
      long size = SizeClasses.sizeOf(c);
      assertTrue(size > prev, "class sizes increase");
      assertEquals(c, SizeClasses.classOf(size));
      assertEquals(c, SizeClasses.classOf(prev + 1));
      prev = size;
    }
    assertEquals(SizeClasses.MAX_SMALL, prev);
    for (long s = 1; s <= SizeClasses.FINE_LIMIT; s++) {
      assertTrue(
          SizeClasses.sizeOf(SizeClasses.classOf(s)) - s < 8, "fine classes waste under 8 bytes");
    }
  }

  @Test
  void freedBlock_isReused() {
    try (SlabAllocator a = new SlabAllocator("t", 8 << 20, 1 << 20)) {
      long x = a.allocate(100);
      a.free(x, 100);
      assertEquals(x, a.allocate(100), "the thread cache hands back the block it just got");
      a.free(x, 100);
      assertEquals(0, a.usedBytes());
    }
  }

  @Test
  void quota_refusesNewChunk_andNothingChanges() {
    try (SlabAllocator a = new SlabAllocator("t", 1 << 20, 256 << 10)) {
      List<Long> blocks = new ArrayList<>();
      MemoryLimitException refused = null;
      try {
        while (true) blocks.add(a.allocate(1000));
      } catch (MemoryLimitException e) {
        refused = e;
      }
      assertTrue(refused.getMessage().contains("quota"), refused.getMessage());
      assertTrue(a.reservedBytes() <= a.quota());
      long used = a.usedBytes();
      assertThrows(MemoryLimitException.class, () -> a.allocate(1000));
      assertEquals(used, a.usedBytes());
      for (long b : blocks) a.free(b, 1000);
      assertEquals(0, a.usedBytes());
      long again = a.allocate(1000); // freed memory is usable again within the quota
      a.free(again, 1000);
    }
  }

  @Test
  void largeBlocks_bypassSlabs_andCountAgainstQuota() {
    try (SlabAllocator a = new SlabAllocator("t", 4 << 20, 1 << 20)) {
      long big = a.allocate(1 << 20);
      assertEquals(1 << 20, a.usedBytes());
      assertEquals(1 << 20, a.reservedBytes());
      Mem.spLong(big + (1 << 20) - 8, 42);
      assertEquals(42, Mem.lpLong(big + (1 << 20) - 8));
      assertThrows(MemoryLimitException.class, () -> a.allocate(4 << 20));
      a.free(big, 1 << 20);
      assertEquals(0, a.reservedBytes());
    }
  }

  @Test
  void closeReleasing_acceptsExactlyTheBlocksStillAllocated_largeOnesRounded() {
    SlabAllocator a = new SlabAllocator("t", 4 << 20, 1 << 20);
    a.allocate(200_041); // large: rounded to 4 KiB pages
    a.allocate(100);
    long still = SlabAllocator.blockSize(200_041) + SlabAllocator.blockSize(100);
    a.closeReleasing(still); // no MemoryLeakException: exactly these bytes were still allocated
    SlabAllocator b = new SlabAllocator("t", 4 << 20, 1 << 20);
    b.allocate(200_041);
    assertThrows(
        MemoryLeakException.class,
        () -> b.closeReleasing(200_041 - 7),
        "one byte short of a block is a leak");
  }

  @Test
  void accounting_reservedIsUsedPlusFreePlusUnbumpedPlusWaste() throws Exception {
    try (SlabAllocator a = new SlabAllocator("t", 1L << 30, 1 << 20)) {
      Thread[] threads = new Thread[3];
      for (int t = 0; t < threads.length; t++) {
        long seed = t;
        threads[t] =
            new Thread(
                () -> {
                  SplittableRandom r = new SplittableRandom(seed);
                  List<long[]> live = new ArrayList<>();
                  for (int i = 0; i < 50_000; i++) {
                    if (live.isEmpty() || r.nextInt(3) > 0) {
                      long size = 1 + r.nextInt(r.nextBoolean() ? 200 : 20_000);
                      live.add(new long[] {a.allocate(size), size});
                    } else {
                      long[] b = live.remove(r.nextInt(live.size()));
                      a.free(b[0], b[1]);
                    }
                  }
                  for (int i = 0; i < live.size() / 2; i++) {
                    long[] b = live.get(i);
                    a.free(b[0], b[1]);
                  }
                  for (int i = live.size() / 2; i < live.size(); i++) {
                    long[] b = live.get(i);
                    a.free(b[0], b[1]); // free the rest too, from this thread
                  }
                });
        threads[t].start();
      }
      for (Thread t : threads) t.join();
      SlabAllocator.Stats s = a.stats();
      assertEquals(0, s.used());
      assertEquals(
          s.reserved(), s.used() + s.freeBlocks() + s.unbumped() + s.waste(), s.toString());
      a.trimDeadThreads();
      SlabAllocator.Stats after = a.stats();
      assertEquals(
          after.reserved(), after.used() + after.freeBlocks() + after.unbumped() + after.waste());
    }
  }

  /**
   * Threads count their used bytes in their caches and add them to the shared counters in steps:
   * the allocator's and the quota's counts are still exact once the threads are done (and after
   * their caches are trimmed), whichever thread allocated or freed, below or across a step.
   */
  @Test
  void usedBytes_isExactOnceThreadsAreDone_thoughEachCountsInSteps() throws Exception {
    MemoryQuota quota = new MemoryQuota(1L << 30);
    try (SlabAllocator a = new SlabAllocator("a", quota, 1 << 20);
        SlabAllocator b = new SlabAllocator("b", quota, 1 << 20)) {
      int[] perThread = {10, 3_000}; // 640 bytes, under one step; 192 KB, across several
      List<long[]> kept = java.util.Collections.synchronizedList(new ArrayList<>());
      long[] expectedA = new long[1], expectedB = new long[1];
      Thread[] threads = new Thread[4];
      for (int t = 0; t < threads.length; t++) {
        int n = perThread[t % 2];
        SlabAllocator on = t < 2 ? a : b;
        long[] expected = t < 2 ? expectedA : expectedB;
        threads[t] =
            new Thread(
                () -> {
                  List<Long> mine = new ArrayList<>();
                  for (int i = 0; i < n; i++) mine.add(on.allocate(64));
                  for (int i = 0; i < n / 3; i++)
                    on.free(mine.remove(mine.size() - 1), 64); // some freed by their allocator
                  for (long block : mine) kept.add(new long[] {block, on == a ? 0 : 1});
                  synchronized (expected) {
                    expected[0] += mine.size() * 64L;
                  }
                });
        threads[t].start();
      }
      for (Thread t : threads) t.join();
      assertTrue(expectedA[0] > 0 && expectedB[0] > 0);
      assertEquals(expectedA[0], a.usedBytes());
      assertEquals(expectedB[0], b.usedBytes());
      assertEquals(expectedA[0] + expectedB[0], quota.usedBytes());
      assertEquals(a.usedBytes(), a.stats().used());
      a.trimDeadThreads(); // the dead threads' unflushed counts move to the shared ones
      b.trimDeadThreads();
      assertEquals(expectedA[0], a.usedBytes());
      assertEquals(expectedA[0] + expectedB[0], quota.usedBytes());
      for (long[] k : kept) (k[1] == 0 ? a : b).free(k[0], 64); // freed by another thread
      assertEquals(0, a.usedBytes());
      assertEquals(0, b.usedBytes());
      assertEquals(0, quota.usedBytes());
    }
    assertEquals(0, quota.usedBytes(), "closed allocators leave nothing in the quota's count");
    assertEquals(0, quota.reservedBytes());
  }

  @Test
  void blocksFreedByOneThread_areReusedByAnother() throws Exception {
    try (SlabAllocator a = new SlabAllocator("t", 8 << 20, 1 << 20)) {
      long[] blocks = new long[1000];
      for (int i = 0; i < blocks.length; i++) blocks[i] = a.allocate(64);
      long reserved = a.reservedBytes();
      Thread t =
          new Thread(
              () -> {
                for (long b : blocks) a.free(b, 64);
              });
      t.start();
      t.join();
      a.trimDeadThreads(); // the freeing thread died: its cache goes to the global stacks
      for (int i = 0; i < blocks.length; i++) blocks[i] = a.allocate(64);
      assertEquals(reserved, a.reservedBytes(), "no new chunk was needed");
      for (long b : blocks) a.free(b, 64);
    }
  }

  @Test
  void regionsOfDeadThreads_areReused_soShortLivedThreadsDoNotExhaustTheQuota() throws Exception {
    // 1 MiB chunks hold eight 128 KiB regions; 200 threads that each hold one block would need 25
    // chunks if every dead thread's region were lost, more than the 4 MiB quota allows.
    try (SlabAllocator a = new SlabAllocator("t", 4 << 20, 1 << 20)) {
      long[] blocks = new long[200];
      for (int t = 0; t < blocks.length; t++) {
        int id = t;
        Thread th = new Thread(() -> blocks[id] = a.allocate(100));
        th.start();
        th.join();
        a.trimDeadThreads();
      }
      assertEquals(1 << 20, a.reservedBytes(), "every thread bumped through the same region");
      SlabAllocator.Stats s = a.stats();
      assertEquals(
          s.reserved(), s.used() + s.freeBlocks() + s.unbumped() + s.waste(), s.toString());
      for (long b : blocks) a.free(b, 100);
    }
  }

  @Test
  void bigBlocksOneThreadFrees_areReusableByAnother() throws Exception {
    // 24 blocks of 100 KB (2.6 MiB of 112 KiB classes) in a 4 MiB quota: if the freeing thread kept
    // them all in its own cache, the second thread would need 2.6 MiB more and exceed the quota.
    try (SlabAllocator a = new SlabAllocator("t", 4 << 20, 1 << 20)) {
      long[] blocks = new long[24];
      Thread first =
          new Thread(
              () -> {
                for (int i = 0; i < blocks.length; i++) blocks[i] = a.allocate(100_000);
                for (long b : blocks) a.free(b, 100_000);
              });
      first.start();
      first.join();
      long reserved = a.reservedBytes();
      java.util.concurrent.atomic.AtomicReference<Throwable> failed =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread second =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < blocks.length; i++) blocks[i] = a.allocate(100_000);
                } catch (Throwable e) {
                  failed.set(e);
                }
              });
      second.start();
      second.join();
      if (failed.get() != null)
        throw new AssertionError("the second thread could not allocate", failed.get());
      assertTrue(
          a.reservedBytes() <= reserved + (1 << 20),
          "the second thread reused the first one's blocks: reserved "
              + reserved
              + " then "
              + a.reservedBytes());
      for (long b : blocks) a.free(b, 100_000);
    }
  }

  @Test
  void badArguments_andUseAfterClose() {
    assertThrows(InvalidArgumentException.class, () -> new SlabAllocator("t", 0, 1 << 20));
    assertThrows(InvalidArgumentException.class, () -> new SlabAllocator("t", 1 << 20, 1000));
    SlabAllocator a = new SlabAllocator("t", 1 << 20, 256 << 10);
    assertThrows(InvalidArgumentException.class, () -> a.allocate(0));
    a.close();
    assertThrows(ClosedException.class, () -> a.allocate(8));
  }

  // ---- debug mode (the suite runs with -Dbasalt.memory.debug=true)
  // -------------------------------------

  @Test
  void debug_doubleFree_isCaught() {
    org.junit.jupiter.api.Assumptions.assumeTrue(Mem.DEBUG);
    try (SlabAllocator a = new SlabAllocator("t", 1 << 20, 256 << 10)) {
      long x = a.allocate(32);
      a.free(x, 32);
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.free(x, 32));
      assertTrue(
          e.getMessage().contains("invalid native access")
              || e.getMessage().contains("double free"),
          e.getMessage());
    }
  }

  @Test
  void debug_useAfterFree_andOutOfBounds_areCaught() {
    org.junit.jupiter.api.Assumptions.assumeTrue(Mem.DEBUG);
    try (SlabAllocator a = new SlabAllocator("t", 1 << 20, 256 << 10)) {
      long x = a.allocate(16);
      Mem.spLong(x + 8, 1);
      assertThrows(IllegalStateException.class, () -> Mem.lpLong(x + 12), "read past the end");
      a.free(x, 16);
      assertThrows(IllegalStateException.class, () -> Mem.lpLong(x), "read after free");
    }
  }

  @Test
  void debug_leak_isReportedWithItsAllocationSite() {
    org.junit.jupiter.api.Assumptions.assumeTrue(Mem.DEBUG);
    SlabAllocator a = new SlabAllocator("leaky", 1 << 20, 256 << 10);
    a.allocate(24);
    MemoryLeakException e = assertThrows(MemoryLeakException.class, a::close);
    assertTrue(
        e.getMessage().contains("leaky") && e.getMessage().contains("size 24"), e.getMessage());
    boolean sawTest = false;
    for (StackTraceElement f : e.getCause().getStackTrace()) {
      sawTest |= f.getMethodName().equals("debug_leak_isReportedWithItsAllocationSite");
    }
    assertTrue(sawTest, "the cause points at the allocation site");
  }

  @Test
  void arenas_neverShareAChunk_norReuseEachOthersBlocks() {
    long chunk = 2L << 20; // 2 MiB-aligned chunks: a block's chunk is its address >>> 21
    try (SlabAllocator a = new SlabAllocator("t", 64L << 20, chunk)) {
      java.util.Set<Long> cold = new java.util.HashSet<>();
      java.util.Set<Long> hot = new java.util.HashSet<>();
      List<Long> coldBlocks = new ArrayList<>();
      List<Long> hotBlocks = new ArrayList<>();
      for (int i = 0; i < 40_000; i++) { // ~6 MiB per arena: several chunks each, interleaved
        long c = a.allocate(160);
        long h = a.allocate(160, SlabAllocator.HOT_ARENA);
        coldBlocks.add(c);
        hotBlocks.add(h);
        cold.add(c >>> 21);
        hot.add(h >>> 21);
      }
      assertTrue(cold.size() > 1 && hot.size() > 1);
      for (long h : hot) assertTrue(!cold.contains(h), "chunk shared by both arenas");
      long freedHot = hotBlocks.remove(hotBlocks.size() - 1);
      a.free(freedHot, 160, SlabAllocator.HOT_ARENA);
      long next = a.allocate(160);
      assertTrue(next != freedHot, "a cold allocation reused a hot block");
      coldBlocks.add(next);
      assertEquals(
          freedHot, a.allocate(160, SlabAllocator.HOT_ARENA), "the hot arena reuses its own block");
      hotBlocks.add(freedHot);
      SlabAllocator.Stats st = a.stats();
      assertEquals(st.reserved(), st.used() + st.freeBlocks() + st.unbumped() + st.waste());
      for (long c : coldBlocks) a.free(c, 160);
      for (long h : hotBlocks) a.free(h, 160, SlabAllocator.HOT_ARENA);
      assertEquals(0, a.usedBytes());
      assertThrows(InvalidArgumentException.class, () -> a.allocate(160, 2));
      assertThrows(InvalidArgumentException.class, () -> a.free(next, 160, -1));
    }
  }

  /**
   * Issue 13 item 4: blocks freed in one size class never serve another, so an owner whose sizes
   * change gives each generation its own allocator over a shared quota; closing one returns its
   * chunks, whatever classes they were carved into, and the next generation can reserve them for
   * any class.
   */
  @Test
  void sharedQuota_closingOneAllocatorFreesItsChunksForAnotherOfOtherClasses() {
    MemoryQuota quota = new MemoryQuota(4L << 20);
    SlabAllocator big = new SlabAllocator("gen1", quota, 1 << 20);
    List<Long> blocks = new ArrayList<>();
    try {
      while (true) blocks.add(big.allocate(1100));
    } catch (MemoryLimitException expected) {
      // the quota is used up by 1152-byte blocks
    }
    assertEquals(4L << 20, quota.reservedBytes());
    assertEquals(big.usedBytes(), quota.usedBytes());
    for (long b : blocks) big.free(b, 1100);
    assertEquals(0, quota.usedBytes());
    assertEquals(4L << 20, quota.reservedBytes(), "free 1152-byte blocks still hold the quota");
    try (SlabAllocator other = new SlabAllocator("gen1b", quota, 1 << 20)) {
      assertThrows(
          MemoryLimitException.class, () -> other.allocate(64), "another class finds no chunk");
    }
    big.close();
    assertEquals(0, quota.reservedBytes());
    try (SlabAllocator small = new SlabAllocator("gen2", quota, 1 << 20)) {
      List<Long> smalls = new ArrayList<>();
      for (int i = 0; i < 50_000; i++) smalls.add(small.allocate(64)); // 3.05 MiB of 64-byte blocks
      assertEquals(small.reservedBytes(), quota.reservedBytes());
      assertEquals(50_000L * 64, quota.usedBytes());
      for (long b : smalls) small.free(b, 64);
    }
    assertEquals(0, quota.reservedBytes());
    assertEquals(0, quota.usedBytes());
  }

  @Test
  void sharedQuota_boundsAllAllocatorsTogether_andLargeBlocksCount() {
    MemoryQuota quota = new MemoryQuota(2L << 20);
    try (SlabAllocator a = new SlabAllocator("a", quota, 1 << 20);
        SlabAllocator b = new SlabAllocator("b", quota, 1 << 20)) {
      long x = a.allocate(100);
      long y = b.allocate(200 << 10); // large: 200 KiB of pages
      assertEquals((1L << 20) + (200 << 10), quota.reservedBytes());
      assertThrows(
          MemoryLimitException.class,
          () -> b.allocate(100),
          "a second chunk would pass the shared quota");
      assertEquals(
          (1L << 20) + (200 << 10), quota.reservedBytes(), "a refused chunk reserves nothing");
      b.free(y, 200 << 10);
      long z = b.allocate(100);
      assertEquals(2L << 20, quota.reservedBytes());
      a.free(x, 100);
      b.free(z, 100);
    }
    assertEquals(0, quota.reservedBytes());
  }
}
