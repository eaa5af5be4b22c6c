package io.basaltdb.internal.storage;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.nio.ByteBuffer;

/**
 * A handle on a {@link MemStorage} file. It names the file's contents ({@link MemFile}), not its
 * name, so it survives a rename or delete of the name as a POSIX descriptor does; it dies at close and
 * at a simulated crash.
 *
 * <p>Concurrency: every operation holds the storage's monitor; {@code closed} is guarded by it too.
 */
final class MemStorageFile implements StorageFile {
  private final MemStorage storage;
  private final String name;
  private final MemFile file;
  /** The storage's crash epoch when this handle was opened; the handle is dead once they differ. */
  private final long epoch;
  /** Guarded by storage. */
  private boolean closed;

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
      if (size > file.size()) {
        file.truncate(size); // an unsynced size change, like fallocate's
      }
      storage.mutated();
    }
  }

  @Override
  public void sync() {
    synchronized (storage) {
      enter(MemStorage.Op.SYNC);
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
    if (closed) {
      throw new StorageException("file " + storage.describe(name) + " is closed");
    }
    if (epoch != storage.epoch()) {
      throw new StorageException("file " + storage.describe(name) + " was closed by a simulated crash; reopen it");
    }
    storage.enter(op, name);
  }

  /** Checks a position or size; {@code length} is the bytes to write there, or -1 for a read. */
  private void checkPosition(long position, int length) {
    if (position < 0) {
      throw new InvalidArgumentException("negative file position or size: " + position);
    }
    if (length >= 0 && position + length > MemFile.MAX_SIZE) {
      throw new StorageException("growing " + storage.describe(name) + " to " + (position + length)
          + " bytes failed: in-memory files are limited to " + MemFile.MAX_SIZE + " bytes");
    }
  }
}
