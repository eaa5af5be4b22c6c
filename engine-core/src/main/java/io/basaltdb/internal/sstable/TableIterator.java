package io.basaltdb.internal.sstable;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import java.util.NoSuchElementException;

/**
 * A cursor over the records of one {@link TableReader}, in key order, forward and backward. It
 * holds one data block at a time and reads the next (or, backward, the previous) through {@link
 * TableReader#dataBlock} when it runs off the end. A backward move within a block costs O(1)
 * amortized ({@link BlockIter}); backward moves read blocks one at a time, never through a
 * sequential iterator's readahead, which reads forward.
 *
 * <p>A move that fails (a {@link io.basaltdb.CorruptionException} from a damaged block) leaves the
 * iterator invalid; a later seek may position it again.
 *
 * <p>Thread-safety: not thread-safe; one thread at a time. Several iterators over one reader may
 * run in different threads. Using it after {@link #close()} or after the reader is closed throws
 * {@link ClosedException}.
 */
public final class TableIterator implements AutoCloseable {
  private final TableReader reader;
  private final BlockIter block = new BlockIter(false);

  /** Index of the data block in {@link #block}, or -1 when not positioned. */
  private int blockIndex = -1;

  private final boolean fillCache;

  /**
   * Reads uncached blocks in chunks ({@link TableReader#sequentialIterator()}), or null: one by
   * one.
   */
  private final Readahead ahead;

  private boolean closed;

  /**
   * Offsets and sizes of the data blocks from {@link #handlesFrom} on, copied from the index in one
   * fetch ({@link TableReader#blockHandles}) for forward moves; {@link #handleCount} of them hold.
   */
  private final long[] handleOffsets = new long[HANDLES];

  private final int[] handleSizes = new int[HANDLES];
  private int handlesFrom;
  private int handleCount;

  private static final int HANDLES = 64;

  /**
   * Set when a move ran off the last record (not by a failed move): {@link #seekForward} then stays
   * put.
   */
  private boolean exhausted;

  TableIterator(TableReader reader, boolean fillCache, Readahead ahead) {
    this.reader = reader;
    this.fillCache = fillCache;
    this.ahead = ahead;
  }

  /** Positions on the first record, or makes the iterator invalid if the table is empty. */
  public void seekFirst() {
    checkOpen();
    try {
      load(0);
      if (blockIndex >= 0) block.seekToFirst();
      skipToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /** Positions on the first record whose key is at or after {@code key}, or invalid if none. */
  public void seek(byte[] key) {
    checkOpen();
    if (key == null) throw new InvalidArgumentException("key must not be null");
    try {
      load(reader.findBlock(key));
      if (blockIndex >= 0) block.seek(key);
      skipToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /** Positions on the last record, or makes the iterator invalid if the table is empty. */
  public void seekLast() {
    checkOpen();
    try {
      loadBackward(reader.blockCount() - 1);
      if (blockIndex >= 0) block.seekToLast();
      skipBackToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /** Positions on the last record whose key is before {@code key}, or invalid if none. */
  public void seekBefore(byte[] key) {
    checkOpen();
    if (key == null) throw new InvalidArgumentException("key must not be null");
    try {
      // Every key of the blocks before the first whose separator is at or after key is before
      // key, and every key after that block is after it: the record is in that block or the last
      // of the one before.
      int b = reader.findBlock(key);
      if (b >= reader.blockCount()) {
        loadBackward(reader.blockCount() - 1);
        if (blockIndex >= 0) block.seekToLast();
      } else {
        loadBackward(b);
        block.seekBefore(key);
      }
      skipBackToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /** Moves to the previous record; invalid before the first. */
  public void prev() {
    checkPositioned();
    try {
      block.prev();
      skipBackToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /**
   * Moves forward to the first record whose key is at or after {@code key}, for a cursor probing
   * keys in ascending order: it stays put when the current record is there already, searches the
   * block it holds when the key is in it, and reads only the block the key falls in otherwise
   * (never one in between). An exhausted iterator stays exhausted; an iterator never positioned
   * seeks.
   */
  public void seekForward(byte[] key) {
    checkOpen();
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (blockIndex < 0) {
      if (!exhausted) seek(key);
      return;
    }
    try {
      if (block.valid() && block.compareKey(key) >= 0) return;
      int b = reader.findBlock(key);
      if (b != blockIndex) load(b);
      if (blockIndex >= 0) block.seek(key);
      skipToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /**
   * Compares the current record's key with {@code key} (unsigned bytes, as {@link
   * KeyRecord#compareKeys}) without copying it.
   */
  public int compareKey(byte[] key) {
    checkPositioned();
    if (key == null) throw new InvalidArgumentException("key must not be null");
    return block.compareKey(key);
  }

  public boolean valid() {
    checkOpen();
    return blockIndex >= 0 && block.valid();
  }

  /** Moves to the next record; invalid after the last. */
  public void next() {
    checkPositioned();
    try {
      block.next();
      skipToValid();
    } catch (RuntimeException e) {
      throw unposition(e);
    }
  }

  /** A copy of the current key. */
  public byte[] key() {
    checkPositioned();
    return block.keyCopy();
  }

  /** Fills {@code out} with the current record, its key a fresh copy; returns {@code out}. */
  public KeyRecord record(KeyRecord out) {
    if (out == null) throw new InvalidArgumentException("output record must not be null");
    checkPositioned();
    return out.set(
        block.keyCopy(),
        block.seqno,
        block.docSize,
        block.tombstone,
        block.hint,
        block.olderReported,
        block.expiry);
  }

  public long seqno() {
    checkPositioned();
    return block.seqno;
  }

  public int docSize() {
    checkPositioned();
    return block.docSize;
  }

  public boolean tombstone() {
    checkPositioned();
    return block.tombstone;
  }

  public long hint() {
    checkPositioned();
    return block.hint;
  }

  /** The current record's {@link KeyRecord#expiry}, 0 for none. */
  public long expiry() {
    checkPositioned();
    return block.expiry;
  }

  /** The current record's {@link KeyRecord#olderReported} flag. */
  public boolean olderReported() {
    checkPositioned();
    return block.olderReported;
  }

  /** Releases the current block; idempotent. The reader stays open. */
  @Override
  public void close() {
    closed = true;
    blockIndex = -1;
    block.release();
  }

  /** Loads data block {@code i}, or unpositions the iterator if there is no such block. */
  private void load(int i) {
    exhausted = i >= reader.blockCount();
    if (exhausted) {
      blockIndex = -1;
      return;
    }
    if (i < handlesFrom || i >= handlesFrom + handleCount) {
      handleCount = reader.blockHandles(i, handleOffsets, handleSizes);
      handlesFrom = i;
    }
    int k = i - handlesFrom;
    block.reset(reader.dataBlock(i, handleOffsets[k], handleSizes[k], fillCache, ahead));
    blockIndex = i;
  }

  /**
   * Loads data block {@code i} for a backward move (never through the readahead), or unpositions
   * the iterator if {@code i} is -1.
   */
  private void loadBackward(int i) {
    exhausted = false;
    if (i < 0) {
      blockIndex = -1;
      return;
    }
    block.reset(reader.dataBlock(i, fillCache, null));
    blockIndex = i;
  }

  /** While the current block is exhausted, moves to the last record of the one before. */
  private void skipBackToValid() {
    while (blockIndex >= 0 && !block.valid()) {
      loadBackward(blockIndex - 1);
      if (blockIndex >= 0) block.seekToLast();
    }
  }

  /**
   * Makes the iterator invalid after a move failed part-way (a damaged block, a closed file), so
   * that it never stays on a record before the one asked for; returns {@code e} for the caller to
   * throw.
   */
  private RuntimeException unposition(RuntimeException e) {
    blockIndex = -1;
    exhausted = false;
    return e;
  }

  /** While the current block is exhausted, moves to the first record of the next one. */
  private void skipToValid() {
    while (blockIndex >= 0 && !block.valid()) {
      load(blockIndex + 1);
      if (blockIndex >= 0) block.seekToFirst();
    }
  }

  /** Chunks its readahead read so far, or -1 without one (for tests). */
  int chunkReads() {
    return ahead == null ? -1 : ahead.reads();
  }

  private void checkOpen() {
    if (closed)
      throw new ClosedException("table iterator is closed; create a new one from the reader");
    reader.checkOpen();
  }

  private void checkPositioned() {
    checkOpen();
    if (blockIndex < 0 || !block.valid()) {
      throw new NoSuchElementException(
          "iterator is not positioned on a record; check valid() first");
    }
  }
}
