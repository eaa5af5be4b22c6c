package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;

/**
 * Reads ahead of an iterator that goes through a table's data blocks in file order (a compaction's
 * inputs, a revealing merge's cursors over the older tables, the delete list's merges): a block is
 * cut from the last chunk read when the chunk holds it; otherwise a new chunk is read from the
 * block on. A chunk that follows the last one grows (doubling from {@value #FIRST} to {@value #MAX}
 * bytes), one after a jump starts small again, as the kernel's own readahead does. With direct
 * reads (no kernel readahead) this is what turns a merge's thousands of 4 KiB reads into a few
 * large ones; a revealing merge probing the base level for 8 flushes' keys touches most of its
 * blocks, in order.
 *
 * <p>Memory: one heap chunk per iterator, dropped with it: {@value #MAX} bytes at most, or one
 * block if a block is larger.
 *
 * <p>Thread-safety: confined to its iterator's thread.
 */
final class Readahead {
  static final int FIRST = 32 << 10;
  static final int MAX = 256 << 10;

  private byte[] chunk;
  private long start;
  private int length;

  /** Bytes of the next chunk, if it follows this one. */
  private int next = FIRST;

  /** Chunks read (for tests). */
  private int reads;

  /**
   * The {@code len} bytes at {@code offset} of {@code file}, none of them at or beyond {@code
   * limit} (the end of the table's data blocks): from the chunk, or from a new chunk read from
   * {@code offset}.
   *
   * @throws CorruptionException if the file ends before {@code offset + len}
   */
  byte[] read(StorageFile file, long offset, int len, long limit, String description) {
    if (chunk == null || offset < start || offset + len > start + length) {
      long end = start + length;
      boolean follows =
          chunk != null && offset >= start && offset <= end; // at or across the last chunk's end
      boolean near =
          chunk != null && offset > end && offset - end < next; // a short skip ahead of it
      int want = follows ? Math.min(MAX, next * 2) : near ? next : FIRST;
      next = want;
      int size = (int) Math.max(len, Math.min(want, limit - offset));
      if (chunk == null || chunk.length < size)
        chunk = new byte[Math.max(size, Math.min(MAX, want))];
      length = 0; // a read that throws part-way leaves nothing here taken for the old chunk
      int n = file.read(offset, ByteBuffer.wrap(chunk, 0, size));
      reads++;
      if (n < len) {
        chunk = null;
        length = 0;
        throw new CorruptionException(
            description,
            offset,
            "file ends " + Math.max(n, 0) + " bytes into a " + len + "-byte read");
      }
      start = offset;
      length = n;
    }
    int at = (int) (offset - start);
    return java.util.Arrays.copyOfRange(chunk, at, at + len);
  }

  /** Chunks read so far. */
  int reads() {
    return reads;
  }
}
