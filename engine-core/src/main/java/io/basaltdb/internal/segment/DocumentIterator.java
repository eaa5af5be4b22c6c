package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_BLOCK;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_PAGE;

import io.basaltdb.CorruptionException;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * Walks a segment's documents in seqno order from a starting seqno to the state's last document,
 * for the change feed (seed 000 section 3.4.3): the reader finds the first block through the seqno
 * index, then this reads the file sequentially, block after block, skipping the index pages between
 * them (checked, since their length comes from their header). Reads go through a window of at least
 * 64 KiB.
 *
 * <p>{@link #hasNext} and {@link #next} throw {@link CorruptionException} on a damaged record.
 *
 * <p>Thread-safety: none; one thread uses an iterator. Iterators of one reader are independent.
 */
public final class DocumentIterator implements Iterator<Document> {
  private static final int WINDOW_SIZE = 64 << 10;

  private final SegmentReader reader;
  private final SegmentState state;
  private final long fromSeqno;

  /** Offset of the next record to read. */
  private long pos;

  private Block block;
  private long blockOffset;
  private int index;
  private long previousLast;

  /** A fresh array per refill: raw blocks keep referring to the window they were decoded from. */
  private byte[] window = new byte[0];

  private long windowStart;
  private int windowLength;

  DocumentIterator(SegmentReader reader, long startOffset, long fromSeqno) {
    this.reader = reader;
    this.state = reader.state();
    this.fromSeqno = fromSeqno;
    this.pos = startOffset;
    this.previousLast = state.startSeqno() - 1;
  }

  @Override
  public boolean hasNext() {
    while (block == null || index >= block.count()) {
      if (pos >= state.tailOffset()) {
        return false;
      }
      advance();
    }
    return true;
  }

  @Override
  public Document next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return block.document(index++);
  }

  /**
   * As {@link #next}, without the value (an empty array): for a reader of keys and metadata, such
   * as a hashed keyspace's replay, which would otherwise copy every value only to drop it.
   */
  public Document nextWithoutValue() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return block.document(index++, false);
  }

  /** The log hint of the document {@link #next} returned last (its block's place). */
  public long lastHint() {
    return SegmentFormat.hint(state.segmentId(), blockOffset);
  }

  /** The encoded size of the document {@link #next} returned last, as its writer counted it. */
  public int lastSize() {
    return block.documentSize(index - 1);
  }

  /**
   * Reads the record at {@link #pos}: a block becomes the current one; a page is checked and
   * skipped.
   */
  private void advance() {
    long room = state.tailOffset() - pos;
    int rel = ensure(Math.min(room, BLOCK_HEADER_SIZE));
    if (room < PAGE_HEADER_SIZE) {
      throw corrupt("record header runs past the tail");
    }
    byte type = window[rel + TYPE_OFFSET];
    if (type == TYPE_BLOCK && room >= BLOCK_HEADER_SIZE) {
      int length = Block.recordLength(window, rel);
      if (length < 0 || length > room) {
        throw corrupt("data block overruns the tail");
      }
      rel = ensure(length);
      reader.countRead();
      Block b = new Block(window, rel, length, reader.file().name(), pos, state.segmentId());
      if (b.firstSeqno <= previousLast || b.lastSeqno > state.lastSeqno()) {
        throw corrupt("data block seqnos [" + b.firstSeqno + ", " + b.lastSeqno + "] out of order");
      }
      previousLast = b.lastSeqno;
      block = b;
      blockOffset = pos;
      index = b.ceiling(fromSeqno);
      pos += length;
    } else if (type == TYPE_PAGE) {
      int length = IndexPage.recordLength(window, rel);
      if (length < 0 || length > room) {
        throw corrupt("index page overruns the tail");
      }
      rel = ensure(length);
      reader.countRead();
      IndexPage.decode(
          window, rel, length, reader.file().name(), pos, state.segmentId(), -1, state.pageSize());
      pos += length;
    } else {
      throw corrupt("not a data block or index page");
    }
  }

  /**
   * Makes {@code [pos, pos + n)} available in the window, reading at least 64 KiB (bounded by the
   * tail) when it is not; returns the position of {@code pos} in the window.
   */
  private int ensure(long n) {
    if (pos < windowStart || pos + n > windowStart + windowLength) {
      int want = (int) Math.min(state.tailOffset() - pos, Math.max(n, WINDOW_SIZE));
      window = new byte[want];
      windowStart = pos;
      windowLength = SegmentIo.read(reader.file(), pos, window, 0, want);
      if (windowLength < n) {
        throw corrupt("file ends before the checkpointed tail " + state.tailOffset());
      }
    }
    return (int) (pos - windowStart);
  }

  private CorruptionException corrupt(String what) {
    return new CorruptionException(reader.file().name(), pos, what);
  }
}
