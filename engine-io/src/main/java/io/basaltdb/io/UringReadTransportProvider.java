package io.basaltdb.io;

import io.basaltdb.spi.ReadBuffers;
import io.basaltdb.spi.ReadTransport;

/**
 * Puts {@link UringReadTransport} in place of the engine's built-in thread pool for batched reads
 * when engine-io is on the class path (found through {@link java.util.ServiceLoader}). Where
 * io_uring cannot start, {@link #create} throws and the engine logs one line and keeps its built-in
 * transport.
 *
 * <p>Each batch keeps up to the store's {@code readQueueDepth} reads in flight; the ring takes
 * those of {@value #BATCHES} concurrent batches (256 reads at the default depth of 32), so batches
 * on several threads do not queue behind one another's reads, as they would behind a ring of one
 * batch's depth. How many are in the kernel at once is bounded too by the store's pooled read
 * buffers.
 */
public final class UringReadTransportProvider implements ReadTransport.Provider {
  /** Concurrent batches the ring has room for. */
  static final int BATCHES = 8;

  @Override
  public int priority() {
    return 10;
  }

  @Override
  public ReadTransport create(int queueDepth, ReadBuffers buffers) {
    return UringReadTransport.open(Math.min(4096, queueDepth * BATCHES), buffers);
  }
}
