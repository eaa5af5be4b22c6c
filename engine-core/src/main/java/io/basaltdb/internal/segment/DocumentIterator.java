package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_BLOCK;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_OFFSET;
import static io.basaltdb.internal.segment.SegmentFormat.TYPE_PAGE;

import io.basaltdb.CorruptionException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * Walks a segment's documents in seqno order from a starting seqno to the state's last document,
 * for the change feed (seed 000 section 3.4.3): the reader finds the first block through the seqno
 * index, then this reads the file sequentially, block after block, skipping the index pages between
 * them (checked, since their length comes from their header). A key-ordered run is read whole and
 * its documents given in seqno order. Reads go through a window of at least 64 KiB.
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

  /**
   * A key-ordered run being walked in seqno order: its blocks, and for each of its documents at or
   * above {@link #fromSeqno}, in seqno order, {@code block index << 32 | document index}; {@link
   * #index} counts them. Null outside a run.
   */
  private List<Block> runBlocks;

  private long[] runOrder;

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
    while (runOrder != null ? index >= runOrder.length : block == null || index >= block.count()) {
      if (pos >= state.tailOffset()) {
        return false;
      }
      advance();
    }
    return true;
  }

  @Override
  public Document next() {
    return next(true);
  }

  /** The next document, positioning {@link #block} on its block. */
  private Document next(boolean withValue) {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    if (runOrder == null) return block.document(index++, withValue);
    long at = runOrder[index++];
    block = runBlocks.get((int) (at >>> 32));
    blockOffset = block.offset;
    docIndex = (int) at;
    return block.document(docIndex, withValue);
  }

  /** In a run, the index in {@link #block} of the document {@link #next} returned last. */
  private int docIndex;

  /**
   * As {@link #next}, without the value (an empty array): for a reader of keys and metadata, such
   * as a hashed keyspace's replay, which would otherwise copy every value only to drop it.
   */
  public Document nextWithoutValue() {
    return next(false);
  }

  /** The log hint of the document {@link #next} returned last (its block's place). */
  public long lastHint() {
    return SegmentFormat.hint(state.segmentId(), blockOffset);
  }

  /** The encoded size of the document {@link #next} returned last, as its writer counted it. */
  public int lastSize() {
    return block.documentSize(runOrder != null ? docIndex : index - 1);
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
      if (b.keyed()) {
        readRun(b, length);
        return;
      }
      if (b.firstSeqno <= previousLast || b.lastSeqno > state.lastSeqno()) {
        throw corrupt("data block seqnos [" + b.firstSeqno + ", " + b.lastSeqno + "] out of order");
      }
      previousLast = b.lastSeqno;
      block = b;
      blockOffset = pos;
      index = b.ceiling(fromSeqno);
      runOrder = null;
      runBlocks = null;
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
   * Reads the key-ordered run that {@code first}, the block at {@link #pos} ({@code length} bytes),
   * belongs to, and orders its documents at or above {@link #fromSeqno} by seqno. The seqno index
   * may have placed the walk at a block in the middle of the run: it starts again at the run's
   * first block. The run's blocks are contiguous, from its first to the one flagged as its last;
   * index pages (the run's own entries) come after it. A flush's run is at most {@code Flusher}'s
   * run limit (16 MiB of documents), so the walk holds that much.
   */
  private void readRun(Block first, int length) {
    long start = first.runStart;
    if (start != pos) {
      if (start > pos || runBlocks != null) throw corrupt("run starts at " + start);
      pos = start; // placed mid-run by the index: walk it from its first block
      advance();
      return;
    }
    List<Block> blocks = new ArrayList<>();
    blocks.add(first);
    pos += length;
    for (Block b = first; !b.runEnd; ) { // every block up to the one that ends the run is the run's
      long room = state.tailOffset() - pos;
      if (room < BLOCK_HEADER_SIZE) throw corrupt("run ends at the tail without its last block");
      int rel = ensure(BLOCK_HEADER_SIZE);
      if (window[rel + TYPE_OFFSET] != TYPE_BLOCK) throw corrupt("run without its last block");
      int n = Block.recordLength(window, rel);
      if (n < 0 || n > room) throw corrupt("data block overruns the tail");
      rel = ensure(n);
      b = new Block(window, rel, n, reader.file().name(), pos, state.segmentId());
      if (b.runStart != start) throw corrupt("run without its last block");
      reader.countRead();
      blocks.add(b);
      pos += n;
    }
    long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
    int total = 0;
    for (Block b : blocks) {
      min = Math.min(min, b.firstSeqno);
      max = Math.max(max, b.lastSeqno);
      total += b.count();
    }
    if (min <= previousLast || max > state.lastSeqno()) {
      throw corrupt("run seqnos [" + min + ", " + max + "] out of order");
    }
    long[] seqnos = new long[total];
    long[] at = new long[total];
    int n = 0;
    for (int i = 0; i < blocks.size(); i++) {
      Block b = blocks.get(i);
      for (int j = 0; j < b.count(); j++) {
        if (b.seqno(j) < fromSeqno) continue;
        seqnos[n] = b.seqno(j);
        at[n++] = (long) i << 32 | j;
      }
    }
    Integer[] sorted = new Integer[n];
    for (int i = 0; i < n; i++) sorted[i] = i;
    Arrays.sort(sorted, (x, y) -> Long.compare(seqnos[x], seqnos[y]));
    long[] order = new long[n];
    for (int i = 0; i < n; i++) {
      order[i] = at[sorted[i]];
      if (i > 0 && seqnos[sorted[i]] == seqnos[sorted[i - 1]])
        throw corrupt("seqno " + seqnos[sorted[i]] + " twice in a run");
    }
    previousLast = max;
    runBlocks = blocks;
    runOrder = order;
    index = 0;
    block = null;
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
