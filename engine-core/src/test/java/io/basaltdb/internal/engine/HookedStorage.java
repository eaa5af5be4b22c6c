package io.basaltdb.internal.engine;

import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Consumer;

/**
 * A storage whose file writes and syncs first call a hook with the file's name, holding no lock of
 * the wrapped storage: a test can hold a flush, a compaction or an fsync where it wants. Everything
 * else goes to {@code inner}.
 */
record HookedStorage(Storage inner, Consumer<String> beforeWrite, Consumer<String> beforeSync)
    implements Storage {
  private static final Consumer<String> NONE = name -> {};

  /** Hooks writes only. */
  static HookedStorage beforeWrite(Storage inner, Consumer<String> hook) {
    return new HookedStorage(inner, hook, NONE);
  }

  /** Hooks syncs only. */
  static HookedStorage beforeSync(Storage inner, Consumer<String> hook) {
    return new HookedStorage(inner, NONE, hook);
  }

  @Override
  public StorageFile create(String name) {
    return wrap(inner.create(name));
  }

  @Override
  public StorageFile open(String name) {
    return wrap(inner.open(name));
  }

  @Override
  public boolean exists(String name) {
    return inner.exists(name);
  }

  @Override
  public List<String> list(String dir) {
    return inner.list(dir);
  }

  @Override
  public void delete(String name) {
    inner.delete(name);
  }

  @Override
  public void rename(String from, String to) {
    inner.rename(from, to);
  }

  @Override
  public void mkdirs(String dir) {
    inner.mkdirs(dir);
  }

  @Override
  public AutoCloseable lock(String name) {
    return inner.lock(name);
  }

  @Override
  public String describe(String name) {
    return inner.describe(name);
  }

  private StorageFile wrap(StorageFile f) {
    return new StorageFile() {
      @Override
      public String name() {
        return f.name();
      }

      @Override
      public int read(long position, ByteBuffer dst) {
        return f.read(position, dst);
      }

      @Override
      public long size() {
        return f.size();
      }

      @Override
      public void truncate(long size) {
        f.truncate(size);
      }

      @Override
      public void preallocate(long size) {
        f.preallocate(size);
      }

      @Override
      public void close() {
        f.close();
      }

      @Override
      public void write(long position, ByteBuffer src) {
        beforeWrite.accept(f.name());
        f.write(position, src);
      }

      @Override
      public void sync() {
        beforeSync.accept(f.name());
        f.sync();
      }
    };
  }
}
