package io.basaltdb.internal.engine.read;

import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.spi.ReadBuffers;
import io.basaltdb.spi.ReadTransport;
import java.util.List;

/**
 * A provider's read transport, started at the first batch of reads instead of at open. Starting
 * engine-io's io_uring transport (netty's classes, its native library, a ring and an event loop
 * thread) took 120 ms of a store's 550 ms open, and only batched gets and scans use it: a store
 * that makes point reads and writes, or a YCSB phase whose run time counts its open, never pays for
 * it. A provider that fails to start then leaves the store on the built-in pool, as at open before.
 *
 * <p>Thread-safety: {@link #submit} from any thread; the first one starts the transport under this
 * object's monitor, later ones read it through a volatile field.
 */
public final class LazyReadTransport implements ReadTransport {
  private final ReadTransport.Provider provider;
  private final int queueDepth;
  private final ReadBuffers buffers;
  private final Notifier notifier;

  /** The started transport; written once under the monitor, read racily (volatile). */
  private volatile ReadTransport started;

  /** Set by close, under the monitor: a batch after it starts nothing. */
  private boolean closed;

  public LazyReadTransport(
      ReadTransport.Provider provider, int queueDepth, ReadBuffers buffers, Notifier notifier) {
    this.provider = provider;
    this.queueDepth = queueDepth;
    this.buffers = buffers;
    this.notifier = notifier;
  }

  @Override
  public String name() {
    ReadTransport t = started;
    return t != null ? t.name() : "not started (" + provider.getClass().getName() + ")";
  }

  @Override
  public void submit(List<Read> reads) {
    ReadTransport t = started;
    if (t == null) t = start();
    if (t
        == null) { // closed before any batch: the reads fail, as the contract says, rather than the
      // call
      io.basaltdb.ClosedException closed =
          new io.basaltdb.ClosedException("the store is closed; open it again");
      for (Read r : reads) r.result().completeExceptionally(closed);
      return;
    }
    t.submit(reads);
  }

  /** Starts the transport, once; null if the store closed before it was started. */
  private synchronized ReadTransport start() {
    if (started != null) return started;
    if (closed) return null;
    ReadTransport t;
    try {
      t = provider.create(queueDepth, buffers);
      Notifier.LOG.info(
          "{}: batched reads through {} (queue depth {})",
          notifier.store(),
          t.getClass().getName(),
          queueDepth);
    } catch (RuntimeException | LinkageError e) {
      // a provider that cannot start: the built-in transport works everywhere
      Notifier.LOG.warn(
          "{}: the read transport on the class path could not start ({}); batched reads use the"
              + " built-in thread pool",
          notifier.store(),
          e.toString());
      t = new PooledReadTransport(queueDepth);
    }
    started = t;
    return t;
  }

  @Override
  public synchronized void close() {
    closed = true;
    ReadTransport t = started;
    if (t != null) t.close();
  }
}
