package io.basaltdb.io;

import io.basaltdb.spi.NativeFileCalls;
import java.io.IOException;
import java.nio.file.Path;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.types.off_t;
import jnr.ffi.types.ssize_t;

/**
 * {@link NativeFileCalls} for Linux through jnr-ffi: {@code fallocate(2)} reserves the blocks of a
 * preallocated segment file, so a write into it cannot fail with no space left on the device the
 * way a write into the hole of a sparse file can.
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

  /** The C library calls used; errno is saved after each call (jnr-ffi's default). */
  public interface LibC {
    int open(String path, int flags);

    int fallocate(int fd, int mode, long offset, long length);

    int close(int fd);

    /**
     * {@code preadv2(2)}: {@code iov} holds {@code iovcnt} pairs of buffer address and length. With
     * RWF_NOWAIT (8) it reads only what the page cache holds and fails with EAGAIN rather than wait
     * for the disk.
     */
    @ssize_t
    long preadv2(int fd, @In long[] iov, int iovcnt, @off_t long offset, int flags);

    String strerror(int errno);
  }

  private final LibC libc;
  private final Runtime runtime;

  /** Loads libc; ServiceLoader calls this. Use {@link #isSupported()} before relying on it. */
  public LinuxFileCalls() {
    LibC loaded = null;
    if (isLinux()) {
      try {
        loaded = LibraryLoader.create(LibC.class).load("c");
      } catch (RuntimeException | LinkageError e) {
        loaded = null; // no usable libc binding: allocate() reports unsupported
      }
    }
    this.libc = loaded;
    this.runtime = loaded == null ? null : Runtime.getRuntime(loaded);
  }

  /** True when running on Linux with libc loaded. */
  public boolean isSupported() {
    return libc != null;
  }

  @Override
  public String name() {
    return "linux-fallocate";
  }

  @Override
  public boolean allocate(Path file, long length) throws IOException {
    if (length < 0)
      throw new IllegalArgumentException("negative length " + length + " for " + file);
    if (libc == null) return false;
    String path = file.toAbsolutePath().toString();
    int fd = libc.open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      throw new IOException(
          "open of " + path + " for fallocate failed: " + libc.strerror(runtime.getLastError()));
    }
    try {
      if (length == 0) return true;
      while (true) {
        if (libc.fallocate(fd, 0, 0, length) == 0) return true;
        int errno = runtime.getLastError();
        if (errno == EINTR) continue;
        if (errno == EOPNOTSUPP) return false;
        throw new IOException(
            "fallocate of " + length + " bytes for " + path + " failed: " + libc.strerror(errno));
      }
    } finally {
      libc.close(fd);
    }
  }

  private static boolean isLinux() {
    return System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("linux");
  }
}
