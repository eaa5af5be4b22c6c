package io.basaltdb.io;

/**
 * The built-in transport against the contract, reading the file around the page cache (O_DIRECT).
 */
class PooledDirectTransportContractTest extends PooledTransportContractTest {
  @Override
  boolean directReads() {
    return true;
  }
}
