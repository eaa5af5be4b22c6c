package io.basaltdb.io;

import io.basaltdb.internal.engine.read.PooledReadTransport;
import io.basaltdb.spi.ReadTransport;

/**
 * The engine's built-in transport (a pool of threads doing positional reads) against the contract.
 */
class PooledTransportContractTest extends ReadTransportContract {
  @Override
  ReadTransport transport(int queueDepth) {
    return new PooledReadTransport(queueDepth);
  }
}
