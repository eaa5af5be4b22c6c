package io.basaltdb;

/**
 * Root of every exception Basalt throws. All are unchecked; the subclass says what went wrong and
 * the message says what to do about it.
 *
 * <p>Thread-safety: immutable.
 */
public class BasaltException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public BasaltException(String message) {
    super(message);
  }

  public BasaltException(String message, Throwable cause) {
    super(message, cause);
  }
}
