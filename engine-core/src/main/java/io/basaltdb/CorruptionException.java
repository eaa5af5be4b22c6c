package io.basaltdb;

/**
 * Data read from disk failed a checksum or a structural check. The message names the file and the
 * byte offset. Nothing was returned from the damaged data; restore the store from a backup (see
 * docs/operations.md).
 *
 * <p>Thread-safety: immutable.
 */
public class CorruptionException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public CorruptionException(String message) {
    super(message);
  }

  public CorruptionException(String file, long offset, String what) {
    super(
        "corruption in "
            + file
            + " at offset "
            + offset
            + ": "
            + what
            + "; the store cannot serve this data. Restore the store from a backup");
  }
}
