package io.basaltdb.spi;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * A file a {@link ReadTransport} reads from: the engine's handle on one of its files.
 *
 * <p>Thread-safety: positional reads may run concurrently.
 */
public interface ReadTarget {
  /**
   * Reads into {@code dst} from {@code position} until {@code dst} is full or the file ends,
   * blocking; returns the bytes read. Failures are unchecked ({@code
   * io.basaltdb.StorageException}).
   */
  int read(long position, ByteBuffer dst);

  /**
   * The operating-system path of the file, for transports that open files themselves (such as
   * engine-io's io_uring one), or null when the file is not an operating-system file (the in-memory
   * test storage).
   */
  default Path path() {
    return null;
  }

  /**
   * Whether the store reads this file around the page cache (O_DIRECT, {@code
   * Options.directReads}): a transport that opens the file itself opens it so, and reads whole
   * aligned blocks.
   */
  default boolean direct() {
    return false;
  }

  /**
   * Reads as {@link #read} does if it can on the calling thread without waiting for the device, by
   * a copy from memory (a mapping of the file whose pages the page cache is expected to hold): the
   * bytes read, or -1 having read nothing, and the caller reads them another way. A batched read
   * asks this first and hands the rest to its transport. The default cannot: -1.
   */
  default int readInPlace(long position, ByteBuffer dst) {
    return -1;
  }

  /**
   * Whether {@link #readInPlace} may read at all (a mapped file); false when it always refuses, so
   * a caller skips the attempt. The default: false.
   */
  default boolean readsInPlace() {
    return false;
  }
}
