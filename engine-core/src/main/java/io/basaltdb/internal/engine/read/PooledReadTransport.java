package io.basaltdb.internal.engine.read;

import io.basaltdb.spi.ReadTransport;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The default {@link ReadTransport}: blocking positional reads ({@code FileChannel} underneath) run
 * on a small pool of daemon threads, so a batch has up to {@code queueDepth} reads in flight.
 * Threads start on demand and end after a second idle.
 *
 * <p>Thread-safety: safe for concurrent submits; close waits for submitted reads. Reads submitted
 * after close fail with a {@link io.basaltdb.ClosedException}. Public for engine-io's transport
 * contract tests.
 */
public final class PooledReadTransport implements ReadTransport {
  private static final AtomicInteger THREADS = new AtomicInteger();
  private final ThreadPoolExecutor pool;

  public PooledReadTransport(int queueDepth) {
    pool =
        new ThreadPoolExecutor(
            queueDepth,
            queueDepth,
            1,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "basalt-read-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    pool.allowCoreThreadTimeOut(true);
  }

  @Override
  public String name() {
    return "thread-pool";
  }

  @Override
  public void submit(List<Read> reads) {
    if (pool.isShutdown()) {
      for (Read r : reads)
        r.result()
            .completeExceptionally(new io.basaltdb.ClosedException("the read transport is closed"));
      return;
    }
    // Of several reads the caller makes the first itself: one hand-off less, with the rest in
    // flight
    // meanwhile. A lone read (a batch handing over a key's next read as its last completes) goes to
    // the
    // pool, so the caller is free to take the batch's other completions.
    int first = reads.size() > 1 ? 1 : 0;
    for (int i = first; i < reads.size(); i++) {
      Read r = reads.get(i);
      try {
        pool.execute(r::readNow);
      } catch (java.util.concurrent.RejectedExecutionException e) { // closed meanwhile
        r.result()
            .completeExceptionally(new io.basaltdb.ClosedException("the read transport is closed"));
      }
    }
    if (first == 1) reads.get(0).readNow();
  }

  @Override
  public void close() {
    pool.shutdown();
    try {
      pool.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
