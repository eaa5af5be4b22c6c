package io.basaltdb.spi;

import java.io.IOException;
import java.nio.file.Path;

/**
 * File-system calls the JDK lacks, which the engine uses when a provider is on the class path
 * (found with {@link java.util.ServiceLoader}; the {@code engine-io} module supplies one for
 * Linux). Without one the engine falls back to what {@link java.nio.channels.FileChannel} can do.
 *
 * <p>Thread-safety: implementations must allow concurrent calls.
 */
public interface NativeFileCalls {
  /** A short name for logs and statistics, such as "linux-fallocate". */
  String name();

  /**
   * Reserves disk blocks for the first {@code length} bytes of an existing file, extending its size
   * to {@code length} if it is shorter, as {@code fallocate(2)} with mode 0 does: later writes
   * below {@code length} cannot fail for lack of space. Bytes already in the file are unchanged;
   * new ones read as zeros.
   *
   * @return false if the file system cannot reserve blocks (the caller falls back to extending the
   *     size)
   * @throws IOException if the call fails; when the disk is full the message contains "No space
   *     left on device", as the JDK's own messages do
   */
  boolean allocate(Path file, long length) throws IOException;
}
