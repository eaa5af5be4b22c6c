package io.basaltdb.io;

import io.basaltdb.spi.ReadBuffers;
import io.basaltdb.spi.ReadTransport;

/**
 * Puts {@link UringReadTransport} in place of the engine's built-in thread pool for batched reads when
 * engine-io is on the class path (found through {@link java.util.ServiceLoader}). Where io_uring cannot
 * start, {@link #create} throws and the engine logs one line and keeps its built-in transport.
 */
public final class UringReadTransportProvider implements ReadTransport.Provider {
  @Override
  public int priority() {
    return 10;
  }

  @Override
  public ReadTransport create(int queueDepth, ReadBuffers buffers) {
    return UringReadTransport.open(queueDepth, buffers);
  }
}
