package io.basaltdb.io;

import io.netty.channel.uring.IoUring;

/**
 * Whether netty's io_uring transport can run on this machine. The io_uring read transport that plugs
 * into engine-core's read SPI is built on this module (see docs/architecture.md, "I/O").
 *
 * <p>Thread-safety: stateless.
 */
public final class IoUringSupport {
  private IoUringSupport() {}

  /** True when the native io_uring library loaded and the kernel accepts io_uring setup. */
  public static boolean isAvailable() {
    return IoUring.isAvailable();
  }

  /** Why io_uring is unavailable, or null when it is available. */
  public static Throwable unavailabilityCause() {
    return IoUring.unavailabilityCause();
  }
}
