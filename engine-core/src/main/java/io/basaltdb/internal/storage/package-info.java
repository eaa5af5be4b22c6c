/**
 * The file-system seam: {@link io.basaltdb.internal.storage.Storage} and its files, implemented by
 * {@link io.basaltdb.internal.storage.FileStorage} (real files, durable metadata through directory
 * fsyncs) and {@link io.basaltdb.internal.storage.MemStorage} (in memory, for tests: simulated
 * power loss that drops unsynced data, injected faults, crash points). Every failure is a {@link
 * io.basaltdb.StorageException} naming the operation and the file; a full disk says "no space left
 * on device; free space, then reopen the store" in both. A file used after its close throws {@link
 * io.basaltdb.ClosedException}; a file whose sync failed refuses every later sync.
 */
package io.basaltdb.internal.storage;
