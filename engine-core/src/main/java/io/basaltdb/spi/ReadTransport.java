package io.basaltdb.spi;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How the engine reads blocks when many are wanted at once (Magma's batched reads): a batched get
 * hands the key index blocks and then the document blocks its keys need to the transport, each
 * round's reads together, so many are in flight at once, and waits for them all. The built-in
 * transport runs positional {@code FileChannel} reads on a small pool of threads; a {@link
 * Provider} found on the class path with {@link java.util.ServiceLoader} replaces it (the highest
 * priority wins): engine-io's io_uring transport submits a round to the kernel in one go.
 *
 * <p>Thread-safety: {@link #submit} may be called from many threads at once.
 */
public interface ReadTransport extends AutoCloseable {
  /** One positional read and its outcome. */
  final class Read {
    private final ReadTarget target;
    private final long position;
    private final ByteBuffer dst;
    private final CompletableFuture<Integer> result = new CompletableFuture<>();

    /**
     * Reads into {@code dst} (from its position to its limit) from {@code position} of {@code
     * target}.
     */
    public Read(ReadTarget target, long position, ByteBuffer dst) {
      this.target = target;
      this.position = position;
      this.dst = dst;
    }

    public ReadTarget target() {
      return target;
    }

    public long position() {
      return position;
    }

    public ByteBuffer dst() {
      return dst;
    }

    /** Completes with the bytes read (fewer than asked at the end of the file) or the failure. */
    public CompletableFuture<Integer> result() {
      return result;
    }

    /**
     * Reads on the calling thread, blocking ({@link ReadTarget#read}), and completes the result
     * either way.
     */
    public void readNow() {
      try {
        result.complete(target.read(position, dst));
      } catch (Throwable t) {
        result.completeExceptionally(t);
      }
    }
  }

  /**
   * Creates transports; registered under META-INF/services/io.basaltdb.spi.ReadTransport$Provider.
   */
  interface Provider {
    /** Higher wins when several providers are on the class path; the built-in pool is 0. */
    int priority();

    /**
     * A transport for a store whose batches each keep up to {@code queueDepth} reads in flight
     * ({@code Options.readQueueDepth}); it may keep more in flight across concurrent batches. It
     * stages reads that need an aligned direct buffer (a heap destination, a direct-I/O target)
     * through {@code buffers}: the store's, counted in its memory quota.
     */
    ReadTransport create(int queueDepth, ReadBuffers buffers);
  }

  /** A short name for statistics, such as "thread-pool" (the built-in transport). */
  String name();

  /**
   * Starts every read; each read's {@link Read#result()} completes when it is done. A transport may
   * run some reads on the calling thread before it returns, but never waits for one read before
   * starting the next. Never throws for a failed read: the failure completes that read's result.
   */
  void submit(List<Read> reads);

  /** Stops the transport; reads submitted before complete first. */
  @Override
  void close();
}
