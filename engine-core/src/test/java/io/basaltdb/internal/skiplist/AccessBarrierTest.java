package io.basaltdb.internal.skiplist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The access barrier of Nitro section 6: deterministic interleavings first, then threads. */
class AccessBarrierTest {
  private final List<AccessBarrier.Session> terminated = new ArrayList<>();
  private final AccessBarrier barrier =
      new AccessBarrier(
          s -> {
            synchronized (terminated) {
              terminated.add(s);
            }
          });

  @Test
  void closedSession_terminatesOnlyWhenItsLastAccessorExits() {
    AccessBarrier.Session a = barrier.enter();
    AccessBarrier.Session b = barrier.enter();
    assertSame(a, b);
    barrier.close(new long[] {42}, 1);
    assertEquals(List.of(), terminated, "two accessors still inside");
    AccessBarrier.Session c = barrier.enter();
    assertTrue(c.seq > a.seq, "accessors after the close join the new session");
    barrier.exit(a);
    assertEquals(List.of(), terminated);
    barrier.exit(b);
    assertEquals(List.of(a), terminated);
    assertEquals(42, a.batch[0]);
    barrier.exit(c);
    assertEquals(1, terminated.size(), "the open session does not terminate");
  }

  @Test
  void closeWithNoAccessors_terminatesAtOnce() {
    AccessBarrier.Session s = barrier.enter();
    barrier.exit(s);
    barrier.close(null, 0);
    assertEquals(List.of(s), terminated);
  }

  @Test
  void exitWithoutEnter_failsLoudly() {
    AccessBarrier.Session s = barrier.enter();
    barrier.exit(s);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> barrier.exit(s));
    assertTrue(e.getMessage().contains("impossible"), e.getMessage());
  }

  @Test
  void exitTwiceFromClosedSession_failsLoudlyToo() {
    AccessBarrier.Session s = barrier.enter();
    barrier.close(null, 0);
    barrier.exit(s);
    assertEquals(1, terminated.size());
    assertThrows(IllegalStateException.class, () -> barrier.exit(s));
  }

  @Test
  void threads_everySessionTerminatesExactlyOnce() throws Exception {
    int threads = 4;
    int closes = 2_000;
    CountDownLatch done = new CountDownLatch(threads);
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread th =
          new Thread(
              () -> {
                for (int i = 0; i < 200_000; i++) {
                  AccessBarrier.Session s = barrier.enter();
                  barrier.exit(s);
                }
                done.countDown();
              });
      ts.add(th);
      th.start();
    }
    for (int i = 0; i < closes; i++) {
      barrier.close(null, 0);
    }
    done.await();
    for (Thread th : ts) th.join();
    synchronized (terminated) {
      assertEquals(closes, terminated.size());
      assertEquals(closes, terminated.stream().mapToLong(s -> s.seq).distinct().count());
    }
  }
}
