package io.basaltdb.io;

import com.kenai.jffi.CallContext;
import com.kenai.jffi.CallingConvention;
import com.kenai.jffi.Invoker;
import com.kenai.jffi.LastError;
import com.kenai.jffi.Library;
import com.kenai.jffi.MemoryIO;
import com.kenai.jffi.Type;
import java.nio.charset.StandardCharsets;

/**
 * The C library calls engine-io makes ({@code open}, {@code close}, {@code fallocate}, {@code
 * preadv2}, {@code strerror}), through jffi, the native layer under jnr-ffi, with errno saved after
 * each call ({@link #errno}). jnr-ffi's generated bindings took 150-800 ms to load at their first
 * use, in the middle of a store's first flush or first batched read; these load in milliseconds.
 *
 * <p>Thread-safety: stateless apart from the resolved symbols; calls may run concurrently, and
 * {@link #errno} is the calling thread's.
 */
final class Libc {
  /** Why the calls are unavailable, or null if they loaded. */
  static final Throwable UNAVAILABLE;

  private static final long OPEN, CLOSE, FALLOCATE, PREADV2, STRERROR;
  private static final CallContext OPEN_CALL, CLOSE_CALL, FALLOCATE_CALL, PREADV2_CALL;
  private static final CallContext STRERROR_CALL;

  static {
    long open = 0, close = 0, fallocate = 0, preadv2 = 0, strerror = 0;
    CallContext openCall = null, closeCall = null, fallocateCall = null, preadv2Call = null;
    CallContext strerrorCall = null;
    Throwable unavailable = null;
    try {
      Library libc = Library.getDefault();
      open = libc.getSymbolAddress("open");
      close = libc.getSymbolAddress("close");
      fallocate = libc.getSymbolAddress("fallocate");
      preadv2 = libc.getSymbolAddress("preadv2"); // 0 on a C library without it (glibc < 2.26)
      strerror = libc.getSymbolAddress("strerror");
      if (open == 0 || close == 0 || strerror == 0)
        throw new UnsatisfiedLinkError("libc has no open, close or strerror");
      openCall = call(Type.SINT, Type.POINTER, Type.SINT);
      closeCall = call(Type.SINT, Type.SINT);
      fallocateCall = call(Type.SINT, Type.SINT, Type.SINT, Type.SLONG, Type.SLONG);
      preadv2Call = call(Type.SLONG, Type.SINT, Type.POINTER, Type.SINT, Type.SLONG, Type.SINT);
      strerrorCall = call(Type.POINTER, Type.SINT);
    } catch (LinkageError | RuntimeException e) { // jffi has no native library for this platform
      unavailable = e;
    }
    OPEN = open;
    CLOSE = close;
    FALLOCATE = fallocate;
    PREADV2 = preadv2;
    STRERROR = strerror;
    OPEN_CALL = openCall;
    CLOSE_CALL = closeCall;
    FALLOCATE_CALL = fallocateCall;
    PREADV2_CALL = preadv2Call;
    STRERROR_CALL = strerrorCall;
    UNAVAILABLE = unavailable;
  }

  private Libc() {}

  private static CallContext call(Type result, Type... params) {
    return CallContext.getCallContext(result, params, CallingConvention.DEFAULT, true);
  }

  /** {@code open(2)}: a descriptor, or -1 with {@link #errno} set. */
  static int open(String path, int flags) {
    byte[] name = path.getBytes(StandardCharsets.UTF_8);
    MemoryIO io = MemoryIO.getInstance();
    long cName = io.allocateMemory(name.length + 1, false);
    if (cName == 0) throw new OutOfMemoryError("no native memory for a path of " + name.length);
    try {
      io.putZeroTerminatedByteArray(cName, name, 0, name.length);
      return (int) Invoker.getInstance().invokeL2(OPEN_CALL, OPEN, cName, flags);
    } finally {
      io.freeMemory(cName);
    }
  }

  /** {@code close(2)}: 0, or -1 with {@link #errno} set. */
  static int close(int fd) {
    return (int) Invoker.getInstance().invokeL1(CLOSE_CALL, CLOSE, fd);
  }

  /** {@code fallocate(2)}: 0, or -1 with {@link #errno} set (ENOSYS if libc lacks it). */
  static int fallocate(int fd, int mode, long offset, long length) {
    if (FALLOCATE == 0) {
      LastError.getInstance().set(ENOSYS);
      return -1;
    }
    return (int)
        Invoker.getInstance().invokeL4(FALLOCATE_CALL, FALLOCATE, fd, mode, offset, length);
  }

  /**
   * {@code preadv2(2)} of one buffer, {@code length} bytes at native {@code address}: the bytes
   * read, or -1 with {@link #errno} set (ENOSYS if libc lacks it). With RWF_NOWAIT (8) it reads
   * only what the page cache holds and fails with EAGAIN rather than wait for the disk.
   */
  static long preadv2(int fd, long address, long length, long offset, int flags) {
    if (PREADV2 == 0) {
      LastError.getInstance().set(ENOSYS);
      return -1;
    }
    MemoryIO io = MemoryIO.getInstance();
    long iov = io.allocateMemory(16, false); // struct iovec {void *base; size_t len;}
    if (iov == 0) throw new OutOfMemoryError("no native memory for an iovec");
    try {
      io.putLong(iov, address);
      io.putLong(iov + 8, length);
      return Invoker.getInstance().invokeL5(PREADV2_CALL, PREADV2, fd, iov, 1, offset, flags);
    } finally {
      io.freeMemory(iov);
    }
  }

  /** {@code strerror(3)} of {@code errno}. */
  static String strerror(int errno) {
    long s = Invoker.getInstance().invokeL1(STRERROR_CALL, STRERROR, errno);
    if (s == 0) return "errno " + errno;
    return new String(MemoryIO.getInstance().getZeroTerminatedByteArray(s), StandardCharsets.UTF_8);
  }

  /** The errno the calling thread's last call here left. */
  static int errno() {
    return LastError.getInstance().get();
  }

  private static final int ENOSYS = 38;
}
