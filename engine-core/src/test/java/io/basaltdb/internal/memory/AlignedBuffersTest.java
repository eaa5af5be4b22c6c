package io.basaltdb.internal.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.spi.ReadBuffers;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The read buffers: aligned, pooled up to their limit, every byte counted until dropped. */
class AlignedBuffersTest {
  static final int B = 12 << 10;

  @Test
  void bufferFor_holdsAReadOfThatSizeAtAnyOffset() {
    for (int len : new int[] {1, 4096, 4096 + 37, 5120, 65536}) {
      int buffer = AlignedBuffers.bufferFor(len);
      assertEquals(0, buffer % ReadBuffers.ALIGNMENT);
      for (int skip = 0; skip < ReadBuffers.ALIGNMENT; skip += 511) {
        int span = (skip + len + ReadBuffers.ALIGNMENT - 1) & -ReadBuffers.ALIGNMENT;
        assertTrue(
            span <= buffer, len + " bytes " + skip + " into a page span " + span + " > " + buffer);
      }
    }
    assertEquals(
        12 << 10, AlignedBuffers.bufferFor(4096 + 1024), "a 4 KiB block's read: three pages");
  }

  @Test
  void pooledUpToTheLimit_oneOffsBeyond_allCountedUntilDropped() {
    AlignedBuffers p = new AlignedBuffers(2L * B, B);
    ByteBuffer a = p.take(100);
    ByteBuffer b = p.take(B);
    assertEquals(2L * B, p.bytes());
    ByteBuffer c = p.take(10); // the pool is spent: a one-off
    ByteBuffer wide = p.take(B + 1); // wider than a pooled buffer: a one-off
    for (ByteBuffer x : List.of(a, b, c, wide)) {
      assertTrue(x.isDirect());
      assertEquals(0, x.alignmentOffset(0, ReadBuffers.ALIGNMENT), "aligned");
      assertEquals(0, x.capacity() % ReadBuffers.ALIGNMENT);
      assertEquals(0, x.position());
      assertEquals(x.capacity(), x.limit());
    }
    assertTrue(wide.capacity() >= B + 1);
    assertEquals(2L * B + c.capacity() + wide.capacity(), p.bytes());
    assertEquals(2, p.overflows());
    assertEquals(4, p.taken());
    p.give(c);
    p.give(wide);
    assertEquals(2L * B, p.bytes(), "one-offs are dropped when given back");
    p.give(a);
    ByteBuffer again = p.take(B);
    assertSame(a, again, "a pooled buffer is reused, the most recent first");
    assertEquals(0, again.position());
    p.give(again);
    p.give(b);
    assertEquals(0, p.taken());
    assertEquals(2L * B, p.bytes(), "the pool keeps its buffers");
    p.close();
    assertEquals(0, p.bytes(), "closing drops the idle buffers");
  }

  @Test
  void thePoolGrowsOnDemand_tellingEachBufferBeforeItIsMade_butNotOneOffs() {
    AlignedBuffers p = new AlignedBuffers(2L * B, B);
    java.util.List<Long> told = new java.util.ArrayList<>();
    p.onGrow(told::add);
    assertEquals(0, p.pooledBytes(), "nothing until a read needs it");
    ByteBuffer a = p.take(10);
    p.give(a);
    assertSame(a, p.take(10), "an idle buffer is reused: no growth");
    ByteBuffer b = p.take(10);
    ByteBuffer c = p.take(10); // beyond the pool: a one-off
    ByteBuffer wide = p.take(B + 1);
    assertEquals(List.of((long) B, (long) B), told);
    assertEquals(2L * B, p.pooledBytes());
    for (ByteBuffer x : List.of(a, b, c, wide)) p.give(x);
    p.close();
  }

  @Test
  void tryTake_givesNothingWhenThePoolIsSpent_butAWideReadItsOwnBuffer() {
    AlignedBuffers p = new AlignedBuffers(2L * B, B);
    ByteBuffer a = p.tryTake(B);
    ByteBuffer b = p.tryTake(1);
    assertTrue(a != null && b != null && a != b);
    assertEquals(null, p.tryTake(1), "every pooled buffer taken and the pool full: nothing");
    assertEquals(2L * B, p.pooledBytes());
    assertEquals(0, p.overflows(), "a refusal is not an overflow");
    ByteBuffer wide = p.tryTake(B + 1);
    assertTrue(
        wide != null && wide.capacity() >= B + 1, "no pooled buffer would fit: one of its own");
    assertEquals(1, p.overflows());
    p.give(a);
    assertSame(a, p.tryTake(B), "a buffer given back is there for the next");
    p.give(a);
    p.give(b);
    p.give(wide);
    assertEquals(0, p.taken());
    p.close();
    AlignedBuffers none =
        new AlignedBuffers(0, B); // no pool (a store without a block cache): never wait for one
    ByteBuffer own = none.tryTake(10);
    assertTrue(own != null && own.capacity() >= 10);
    none.give(own);
    none.close();
  }

  @Test
  void buffersGivenBackAfterClose_areDropped_andConcurrentUseKeepsCountsExact() throws Exception {
    AlignedBuffers p = new AlignedBuffers(4L * B, B);
    List<Thread> threads = new ArrayList<>();
    java.util.concurrent.atomic.AtomicReference<Throwable> failed =
        new java.util.concurrent.atomic.AtomicReference<>();
    for (int t = 0; t < 4; t++) {
      Thread th =
          new Thread(
              () -> {
                long mark = Thread.currentThread().getId() << 32;
                for (int i = 0; i < 20_000; i++) {
                  ByteBuffer x = p.take(i % 7 == 0 ? B * 2 : 4096);
                  x.putLong(0, mark | i);
                  Thread.yield();
                  if (x.getLong(0) != (mark | i))
                    throw new AssertionError("a buffer was handed to two threads at once");
                  p.give(x);
                }
              });
      th.setUncaughtExceptionHandler((x, e) -> failed.compareAndSet(null, e));
      threads.add(th);
    }
    threads.forEach(Thread::start);
    for (Thread t : threads) t.join();
    if (failed.get() != null) throw new AssertionError(failed.get());
    assertEquals(0, p.taken());
    assertTrue(p.bytes() <= 4L * B, "only the pool's buffers remain: " + p.bytes());
    ByteBuffer held = p.take(1);
    p.close();
    assertEquals(B, p.bytes(), "the buffer still held");
    p.give(held);
    assertEquals(0, p.bytes(), "a pooled buffer given back after close is dropped");
  }
}
