package io.basaltdb.internal.storage;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.io.IOException;

/**
 * The rules both {@link Storage} implementations share: which names are valid, and how a failure
 * becomes an exception whose message names the operation and the file and says what to do: a {@link
 * StorageException} (a full disk says "free space"), or a {@link ClosedException} for a file used
 * after its close.
 *
 * <p>Thread-safety: stateless.
 */
final class StorageErrors {
  /** The text the operating system (Linux, macOS) puts in an IOException for ENOSPC. */
  private static final String ENOSPC = "No space left on device";

  private StorageErrors() {}

  /**
   * Checks a file name relative to the root: non-empty segments separated by {@code /}, no leading
   * or trailing separator, no "." or ".." segment, no backslash or NUL. {@code allowRoot} admits ""
   * (the root directory, for {@link Storage#list} and {@link Storage#mkdirs}).
   */
  static String checkName(String name, boolean allowRoot) {
    if (name == null) {
      throw new InvalidArgumentException("storage name is null");
    }
    if (name.isEmpty()) {
      if (allowRoot) {
        return name;
      }
      throw new InvalidArgumentException("storage name is empty");
    }
    if (name.indexOf('\\') >= 0 || name.indexOf('\0') >= 0) {
      throw new InvalidArgumentException("storage name '" + name + "' contains a backslash or NUL");
    }
    for (String segment : name.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw new InvalidArgumentException(
            "storage name '"
                + name
                + "' must be relative segments separated by '/', without empty, '.' or '..' segments");
      }
    }
    return name;
  }

  /** The directory part of a checked name: "wal" for "wal/000001.log", "" for "CURRENT". */
  static String parent(String name) {
    int slash = name.lastIndexOf('/');
    return slash < 0 ? "" : name.substring(0, slash);
  }

  /** True if {@code t} or one of its causes is the operating system's ENOSPC. */
  static boolean isNoSpace(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      String message = c.getMessage();
      if (message != null && message.contains(ENOSPC)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The exception for a failed operation; {@code what} names the operation and the file, e.g.
   * "write of 4096 bytes at offset 0 to /data/wal/000001.log".
   */
  static StorageException failure(String what, IOException cause) {
    if (isNoSpace(cause)) {
      return noSpace(what, cause);
    }
    return new StorageException(what + " failed: " + cause, cause);
  }

  /** The ENOSPC message, shared by the real and the in-memory storage (whose cause may be null). */
  static StorageException noSpace(String what, Throwable cause) {
    return new StorageException(
        what + " failed: no space left on device; free space, then reopen the store", cause);
  }

  /** A file used after its close: nothing was read or written. */
  static ClosedException closed(String file) {
    return new ClosedException("file " + file + " is closed; open it again");
  }

  /**
   * A sync refused because an earlier sync of the same handle failed: the data whose write-back
   * failed may be gone from the page cache's dirty set, so no later sync can make it durable.
   */
  static StorageException syncRefused(String file, StorageException earlier) {
    return new StorageException(
        "sync of "
            + file
            + " refused: an earlier sync of this handle failed ("
            + earlier.getMessage()
            + "), and the data it did not write may be lost without a later error;"
            + " close and reopen the store, which recovers every acknowledged write",
        earlier);
  }
}
