package io.basaltdb.internal.sstable;

import java.util.Arrays;

/**
 * Encodes one block (data or index) of sorted entries: each key is stored as the length of the
 * prefix it shares with the previous key plus the rest, except at a restart point every {@code
 * restartInterval} entries, where the full key is stored so a reader can binary-search the restarts
 * (docs/format.md, "Block contents").
 *
 * <pre>
 *   entry:   varint shared | varint unshared | key[shared..] | value
 *   block:   entry* | restart offset (u32 LE)* | restart count (u32 LE)
 * </pre>
 *
 * The value is self-delimiting: a data record ({@link #addRecord}) or a block handle ({@link
 * #addHandle}).
 *
 * <p>Thread-safety: not thread-safe; owned by one {@link TableWriter}.
 */
final class BlockBuilder {
  private final int restartInterval;
  private final Output out;
  private int[] restarts = new int[16];
  private int restartCount;

  /** Entries added since the last restart point. */
  private int sinceRestart;

  private int entries;

  /** The previous key; referenced, not copied (the writer hands in keys it owns). */
  private byte[] lastKey;

  BlockBuilder(int restartInterval, int capacity) {
    this.restartInterval = restartInterval;
    this.out = new Output(capacity);
    reset();
  }

  void reset() {
    out.reset();
    restarts[0] = 0;
    restartCount = 1;
    sinceRestart = 0;
    entries = 0;
    lastKey = null;
  }

  boolean isEmpty() {
    return entries == 0;
  }

  /** Where the next entry will start in the block. */
  int nextEntryOffset() {
    return out.size();
  }

  /** Size of the contents {@link #finish()} would produce now. */
  int sizeEstimate() {
    return out.size() + restartCount * Format.RESTART_SIZE + Format.RESTART_COUNT_SIZE;
  }

  /** Adds a data record; {@code key} sorts after the previous key. */
  void addRecord(
      byte[] key,
      long seqno,
      int docSize,
      boolean tombstone,
      long hint,
      boolean olderReported,
      long expiry) {
    addKey(key);
    boolean seqnoInKey = key.length == 8 && bigEndian(key) == seqno;
    out.putVarint(seqnoInKey ? 0 : seqno);
    out.putVarint(docSize);
    int flags =
        (tombstone ? Format.FLAG_TOMBSTONE : 0)
            | (olderReported ? Format.FLAG_OLDER_REPORTED : 0)
            | (seqnoInKey ? Format.FLAG_SEQNO_IN_KEY : 0)
            | (expiry != 0 ? Format.FLAG_EXPIRES : 0);
    if (hint == -1) {
      out.putByte(flags | Format.FLAG_NO_HINT);
    } else if (hint >= 0 && hint < Long.MAX_VALUE) { // the usual case: a file offset
      out.putByte(flags | Format.FLAG_VARINT_HINT);
      out.putVarint(hint + 1);
    } else {
      out.putByte(flags);
      out.putLongLE(hint);
    }
    if (expiry != 0) out.putVarint(expiry);
  }

  /** The 8 bytes of {@code key} as a big-endian number. */
  static long bigEndian(byte[] key) {
    long v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | (key[i] & 0xFF);
    return v;
  }

  /**
   * Adds an index entry pointing at the block whose contents are {@code size} bytes at {@code
   * offset}.
   */
  void addHandle(byte[] key, long offset, int size) {
    addKey(key);
    out.putVarint(offset);
    out.putVarint(size);
  }

  private void addKey(byte[] key) {
    int shared = 0;
    if (sinceRestart == restartInterval) {
      if (restartCount == restarts.length) restarts = Arrays.copyOf(restarts, restartCount * 2);
      restarts[restartCount++] = out.size();
      sinceRestart = 0;
    } else if (lastKey != null) {
      int max = Math.min(lastKey.length, key.length);
      int mismatch = Arrays.mismatch(lastKey, 0, max, key, 0, max);
      shared = mismatch < 0 ? max : mismatch;
    }
    out.putVarint(shared);
    out.putVarint(key.length - shared);
    out.putBytes(key, shared, key.length - shared);
    lastKey = key;
    sinceRestart++;
    entries++;
  }

  /**
   * Appends the restart array and returns the buffer holding the finished contents in {@code [0,
   * size())}; the caller may append the trailer to it. Valid until {@link #reset()}.
   */
  Output finish() {
    for (int i = 0; i < restartCount; i++) out.putIntLE(restarts[i]);
    out.putIntLE(restartCount);
    return out;
  }
}
