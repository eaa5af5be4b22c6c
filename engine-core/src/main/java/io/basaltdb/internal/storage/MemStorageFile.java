package io.basaltdb.internal.storage;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.nio.ByteBuffer;

/**
 * A handle on a {@link MemStorage} file. It names the file's contents ({@link MemFile}), not its
 * name, so it survives a rename or delete of the name as a POSIX descriptor does; it dies at close
 * (later uses throw {@link io.basaltdb.ClosedException}) and at a simulated crash
 * (StorageException, as for a process that lost its files). Like FileStorage's handles, it refuses
 * every sync after a failed one.
 *
 * <p>Concurrency: every operation holds the storage's monitor; {@code closed} and {@code
 * syncFailure} are guarded by it too.
 */
final class MemStorageFile implements StorageFile {
  private final MemStorage storage;
  private final String name;
  private final MemFile file;

  /** The storage's crash epoch when this handle was opened; the handle is dead once they differ. */
  private final long epoch;

  /** Guarded by storage. */
  private boolean closed;

  /** The first failed sync, after which every sync fails; guarded by storage. */
  private StorageException syncFailure;

  MemStorageFile(MemStorage storage, String name, MemFile file, long epoch) {
    this.storage = storage;
    this.name = name;
    this.file = file;
    this.epoch = epoch;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int read(long position, ByteBuffer dst) {
    checkPosition(position, -1);
    synchronized (storage) {
      enter(MemStorage.Op.READ);
      return file.read(position, dst);
    }
  }

  @Override
  public void write(long position, ByteBuffer src) {
    checkPosition(position, src.remaining());
    synchronized (storage) {
      enter(MemStorage.Op.WRITE);
      storage.checkGrowth(MemStorage.Op.WRITE, name, position + src.remaining() - file.size());
      file.write(position, src);
      storage.mutated();
    }
  }

  @Override
  public long size() {
    synchronized (storage) {
      enter(null);
      return file.size();
    }
  }

  @Override
  public void truncate(long size) {
    checkPosition(size, 0);
    synchronized (storage) {
      enter(MemStorage.Op.TRUNCATE);
      file.truncate(size);
      storage.mutated();
    }
  }

  @Override
  public void preallocate(long size) {
    checkPosition(size, 0);
    synchronized (storage) {
      enter(MemStorage.Op.PREALLOCATE);
      storage.checkGrowth(MemStorage.Op.PREALLOCATE, name, size - file.size());
      if (size > file.size()) {
        file.truncate(size); // an unsynced size change, like fallocate's
      }
      storage.mutated();
    }
  }

  @Override
  public void sync() {
    synchronized (storage) {
      checkLive();
      if (syncFailure != null) {
        throw StorageErrors.syncRefused(storage.describe(name), syncFailure);
      }
      MemStorage.Fault fault = storage.admit(MemStorage.Op.SYNC, name);
      if (fault != MemStorage.Fault.NONE) {
        file.failSync(storage.random());
        syncFailure = storage.failure(MemStorage.Op.SYNC, name, fault);
        throw syncFailure;
      }
      file.sync();
      storage.mutated();
    }
  }

  @Override
  public void close() {
    synchronized (storage) {
      closed = true;
    }
  }

  @Override
  public String toString() {
    return storage.describe(name);
  }

  private void enter(MemStorage.Op op) {
    checkLive();
    storage.enter(op, name);
  }

  private void checkLive() {
    if (closed) {
      throw StorageErrors.closed(storage.describe(name));
    }
    if (epoch != storage.epoch()) {
      throw new StorageException(
          "file " + storage.describe(name) + " was closed by a simulated crash; reopen it");
    }
  }

  /** Checks a position or size; {@code length} is the bytes to write there, or -1 for a read. */
  private void checkPosition(long position, int length) {
    if (position < 0) {
      throw new InvalidArgumentException("negative file position or size: " + position);
    }
    if (length >= 0 && position + length > MemFile.MAX_SIZE) {
      throw new StorageException(
          "growing "
              + storage.describe(name)
              + " to "
              + (position + length)
              + " bytes failed: in-memory files are limited to "
              + MemFile.MAX_SIZE
              + " bytes");
    }
  }
}
