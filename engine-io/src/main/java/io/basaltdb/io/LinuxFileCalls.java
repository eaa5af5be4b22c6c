package io.basaltdb.io;

import io.basaltdb.spi.NativeFileCalls;
import java.io.IOException;
import java.nio.file.Path;

/**
 * {@link NativeFileCalls} for Linux through jffi ({@link Libc}): {@code fallocate(2)} reserves the
 * blocks of a preallocated segment file, so a write into it cannot fail with no space left on the
 * device the way a write into the hole of a sparse file can.
 *
 * <p>The file is opened by path for the call (the JDK does not expose a channel's descriptor); the
 * engine preallocates once per segment file, so the extra open costs nothing that matters.
 *
 * <p>Thread-safety: stateless apart from the loaded library, which allows concurrent calls.
 */
public final class LinuxFileCalls implements NativeFileCalls {
  private static final int O_WRONLY = 01;
  private static final int O_CLOEXEC = 02000000;
  private static final int EINTR = 4;
  private static final int EOPNOTSUPP = 95;
  private static final int ENOSYS = 38;

  private final boolean supported;

  /** Loads libc; ServiceLoader calls this. Use {@link #isSupported()} before relying on it. */
  public LinuxFileCalls() {
    this.supported = isLinux() && Libc.UNAVAILABLE == null;
  }

  /** True when running on Linux with libc loaded. */
  public boolean isSupported() {
    return supported;
  }

  @Override
  public String name() {
    return "linux-fallocate";
  }

  @Override
  public boolean allocate(Path file, long length) throws IOException {
    if (length < 0)
      throw new IllegalArgumentException("negative length " + length + " for " + file);
    if (!supported) return false;
    String path = file.toAbsolutePath().toString();
    int fd = Libc.open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      throw new IOException(
          "open of " + path + " for fallocate failed: " + Libc.strerror(Libc.errno()));
    }
    try {
      if (length == 0) return true;
      while (true) {
        if (Libc.fallocate(fd, 0, 0, length) == 0) return true;
        int errno = Libc.errno();
        if (errno == EINTR) continue;
        if (errno == EOPNOTSUPP || errno == ENOSYS) return false;
        throw new IOException(
            "fallocate of " + length + " bytes for " + path + " failed: " + Libc.strerror(errno));
      }
    } finally {
      Libc.close(fd);
    }
  }

  private static boolean isLinux() {
    return System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("linux");
  }
}
