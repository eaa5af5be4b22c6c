package io.basaltdb.internal.storage;

/** The storage contract, against the in-memory storage. */
class MemStorageContractTest extends StorageContractTest {
  @Override
  Storage storage() {
    return new MemStorage(1);
  }
}
