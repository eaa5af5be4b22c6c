package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;

/**
 * The verified contents of one block (checksum already checked by {@link TableReader}) with its restart
 * array located and checked, ready for {@link BlockIter}. Immutable, so a block cache may share one
 * instance among any number of readers.
 *
 * <p>Invariants (checked by {@link #parse}; a block that breaks one is a {@link CorruptionException}):
 * <ol>
 *   <li>The restart count {@code n} is at least 1 and the array fits in the contents.
 *   <li>Restart 0 is offset 0; restarts are strictly increasing and below {@link #restartsOffset}
 *       (an empty block has the single restart 0 and {@code restartsOffset == 0}).
 * </ol>
 *
 * <p>Thread-safety: immutable.
 */
final class Block {
  final byte[] data;
  /** Where the entries end and the restart array begins. */
  final int restartsOffset;
  final int restartCount;
  /** Offset of the block's contents in the file, for error messages. */
  final long fileOffset;
  /** The file's description, for error messages. */
  final String file;

  private Block(byte[] data, int restartsOffset, int restartCount, long fileOffset, String file) {
    this.data = data;
    this.restartsOffset = restartsOffset;
    this.restartCount = restartCount;
    this.fileOffset = fileOffset;
    this.file = file;
  }

  /**
   * Checks the restart array of verified contents {@code data[0, len)} read from {@code fileOffset};
   * bytes of {@code data} after {@code len} (the trailer) are ignored.
   */
  static Block parse(byte[] data, int len, long fileOffset, String file) {
    if (len < Format.RESTART_SIZE + Format.RESTART_COUNT_SIZE) {
      throw new CorruptionException(file, fileOffset, "block of " + len + " bytes is too short for a restart array");
    }
    int countPos = len - Format.RESTART_COUNT_SIZE;
    int n = Format.getIntLE(data, countPos);
    if (n < 1 || n > countPos / Format.RESTART_SIZE) {
      throw new CorruptionException(file, fileOffset + countPos, "restart count " + n + " does not fit the block");
    }
    int restartsOffset = countPos - n * Format.RESTART_SIZE;
    int prev = -1;
    for (int i = 0; i < n; i++) {
      int pos = restartsOffset + i * Format.RESTART_SIZE;
      int r = Format.getIntLE(data, pos);
      boolean ok = i == 0 ? r == 0 : r > prev && r < restartsOffset;
      if (!ok) {
        throw new CorruptionException(file, fileOffset + pos, "restart " + i + " has bad offset " + r);
      }
      prev = r;
    }
    if (restartsOffset == 0 && n != 1) {
      throw new CorruptionException(file, fileOffset, "empty block with " + n + " restarts");
    }
    return new Block(data, restartsOffset, n, fileOffset, file);
  }

  int restart(int i) {
    return Format.getIntLE(data, restartsOffset + i * Format.RESTART_SIZE);
  }

  boolean isEmpty() {
    return restartsOffset == 0;
  }

  CorruptionException corrupt(int pos, String what) {
    return new CorruptionException(file, fileOffset + pos, what);
  }
}
