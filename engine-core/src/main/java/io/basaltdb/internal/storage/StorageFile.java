package io.basaltdb.internal.storage;

import io.basaltdb.spi.ReadTarget;
import java.nio.ByteBuffer;

/**
 * An open file of a {@link Storage}: positional reads and writes, size, truncate, sync. Every
 * operation after {@link #close()} throws {@link io.basaltdb.ClosedException}.
 *
 * <p>Thread-safety: positional reads may run concurrently with each other and with writes to other
 * ranges; writes, truncate and sync are issued by one thread at a time (the file's owner).
 */
public interface StorageFile extends ReadTarget, AutoCloseable {
  /** The file's name in its storage. */
  String name();

  /**
   * Reads into {@code dst} from {@code position} until {@code dst} is full or the file ends;
   * returns the number of bytes read (less than requested only at the end of the file).
   */
  @Override
  int read(long position, ByteBuffer dst);

  /** Writes all of {@code src} at {@code position}, extending the file if needed. */
  void write(long position, ByteBuffer src);

  /** Current size in bytes. */
  long size();

  /** Shrinks (or extends with zeros) the file to {@code size} bytes. */
  void truncate(long size);

  /**
   * Reserves space up to {@code size} bytes so later writes below it do not fail for lack of space
   * where the platform allows; never shrinks the file and never changes bytes already written.
   */
  void preallocate(long size);

  /**
   * Makes everything written so far durable (fsync). After a failed sync every later sync of this
   * handle fails too: the kernel may have dropped the data it could not write and report that only
   * once, so no later success could be trusted.
   */
  void sync();

  @Override
  void close();
}
