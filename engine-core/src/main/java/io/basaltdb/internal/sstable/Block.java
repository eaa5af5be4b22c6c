package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.memory.Mem;

/**
 * The verified contents of one block (checksum already checked by {@link TableReader}) with its
 * restart array located and checked, ready for {@link BlockIter}. The contents are addressed as
 * {@code (base, address)} in {@link Mem}'s scheme: a heap array read from the file, or a block
 * cache entry off the heap, which is valid only while its reader holds the entry's pin.
 *
 * <p>Invariants (checked by {@link #parse}; a block that breaks one is a {@link
 * CorruptionException}):
 *
 * <ol>
 *   <li>The restart count {@code n} is at least 1 and the array fits in the contents.
 *   <li>Restart 0 is offset 0; restarts are strictly increasing and below {@link #restartsOffset}
 *       (an empty block has the single restart 0 and {@code restartsOffset == 0}).
 * </ol>
 *
 * <p>Thread-safety: immutable, except a lookup cursor's scratch block, confined to its thread.
 */
final class Block {
  // Not final only for a lookup cursor's scratch block (retarget); every other block is immutable.
  Object base;
  long address;

  /** Length of the contents: entries, restart array and restart count. */
  int length;

  /** Where the entries end and the restart array begins. */
  int restartsOffset;

  int restartCount;

  /** Offset of the block's contents in the file, for error messages. */
  long fileOffset;

  /** The file's description, for error messages. */
  String file;

  private Block(
      Object base,
      long address,
      int length,
      int restartsOffset,
      int restartCount,
      long fileOffset,
      String file) {
    this.base = base;
    this.address = address;
    this.length = length;
    this.restartsOffset = restartsOffset;
    this.restartCount = restartCount;
    this.fileOffset = fileOffset;
    this.file = file;
  }

  /**
   * Checks the restart array of verified contents {@code data[0, len)} read from {@code
   * fileOffset}; bytes of {@code data} after {@code len} (the trailer) are ignored.
   */
  static Block parse(byte[] data, int len, long fileOffset, String file) {
    if (len < Format.RESTART_SIZE + Format.RESTART_COUNT_SIZE) {
      throw new CorruptionException(
          file, fileOffset, "block of " + len + " bytes is too short for a restart array");
    }
    int countPos = len - Format.RESTART_COUNT_SIZE;
    int n = Format.getIntLE(data, countPos);
    if (n < 1 || n > countPos / Format.RESTART_SIZE) {
      throw new CorruptionException(
          file, fileOffset + countPos, "restart count " + n + " does not fit the block");
    }
    int restartsOffset = countPos - n * Format.RESTART_SIZE;
    int prev = -1;
    for (int i = 0; i < n; i++) {
      int pos = restartsOffset + i * Format.RESTART_SIZE;
      int r = Format.getIntLE(data, pos);
      boolean ok = i == 0 ? r == 0 : r > prev && r < restartsOffset;
      if (!ok) {
        throw new CorruptionException(
            file, fileOffset + pos, "restart " + i + " has bad offset " + r);
      }
      prev = r;
    }
    if (restartsOffset == 0 && n != 1) {
      throw new CorruptionException(file, fileOffset, "empty block with " + n + " restarts");
    }
    return new Block(data, Mem.ARRAY_BASE, len, restartsOffset, n, fileOffset, file);
  }

  /**
   * The block whose contents, checked by {@link #parse} before they were cached, are the {@code
   * len} bytes at {@code (base, address)}; the restart array is located again, not checked again.
   */
  static Block trusted(Object base, long address, int len, long fileOffset, String file) {
    int n = Mem.lpIntLE(base, address + len - Format.RESTART_COUNT_SIZE);
    return new Block(
        base,
        address,
        len,
        len - Format.RESTART_COUNT_SIZE - n * Format.RESTART_SIZE,
        n,
        fileOffset,
        file);
  }

  /** A block to {@link #retarget}: a thread's lookup cursor's, so a lookup allocates no block. */
  static Block scratch() {
    return new Block(null, 0, 0, 0, 0, 0, null);
  }

  /**
   * Makes this scratch block the one {@link #trusted} would return for the same arguments (it must
   * be the scratch of the calling thread's cursor; see {@link BlockIter#resetTrusted}).
   */
  void retarget(Object base, long address, int len, long fileOffset, String file) {
    int n = Mem.lpIntLE(base, address + len - Format.RESTART_COUNT_SIZE);
    this.base = base;
    this.address = address;
    this.length = len;
    this.restartsOffset = len - Format.RESTART_COUNT_SIZE - n * Format.RESTART_SIZE;
    this.restartCount = n;
    this.fileOffset = fileOffset;
    this.file = file;
  }

  /** Points this scratch block at nothing, so it keeps no contents reachable. */
  void forget() {
    base = null;
    address = 0;
    length = restartsOffset = restartCount = 0;
    file = null;
  }

  int restart(int i) {
    return Mem.lpIntLE(base, address + restartsOffset + (long) i * Format.RESTART_SIZE);
  }

  /** This block with its contents copied to a new heap array (one that outlives a cache pin). */
  Block onHeap() {
    byte[] b = new byte[length];
    Mem.copyToArray(base, address, b, 0, length);
    return new Block(b, Mem.ARRAY_BASE, length, restartsOffset, restartCount, fileOffset, file);
  }

  boolean isEmpty() {
    return restartsOffset == 0;
  }

  CorruptionException corrupt(int pos, String what) {
    return new CorruptionException(file, fileOffset + pos, what);
  }
}
