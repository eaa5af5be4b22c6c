package io.basaltdb;

/**
 * A file operation failed: an I/O error, no space left on the device, a missing permission. The
 * message names the operation and the file. A write that throws this was not acknowledged. A write
 * refused because free disk space fell below {@code Options.diskReserveBytes} wrote nothing and the
 * store stays writable (retry once space returns); after any other failed write or flush the store
 * refuses further writes (reads go on) until it is closed and reopened, which recovers every
 * acknowledged write.
 *
 * <p>Thread-safety: immutable.
 */
public class StorageException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public StorageException(String message) {
    super(message);
  }

  public StorageException(String message, Throwable cause) {
    super(message, cause);
  }
}
