package io.basaltdb.io;

/** The io_uring transport against the contract, reading the file with O_DIRECT (aligned blocks). */
class UringDirectTransportContractTest extends UringTransportContractTest {
  @Override
  boolean directReads() {
    return true;
  }
}
