package io.basaltdb;

/**
 * An argument was refused before anything was written: a null key, a key or value over its limit,
 * an option out of range. The store is unchanged.
 *
 * <p>Thread-safety: immutable.
 */
public class InvalidArgumentException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public InvalidArgumentException(String message) {
    super(message);
  }
}
