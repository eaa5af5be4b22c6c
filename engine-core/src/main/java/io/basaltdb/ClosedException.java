package io.basaltdb;

/**
 * An operation used a handle (store, skiplist, snapshot, iterator) after it was closed. Nothing was
 * read or written; open a new handle.
 *
 * <p>Thread-safety: immutable.
 */
public class ClosedException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public ClosedException(String message) {
    super(message);
  }
}
