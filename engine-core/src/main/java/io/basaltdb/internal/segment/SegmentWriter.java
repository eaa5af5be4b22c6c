package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.HARD_SIZE_LIMIT;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_KEY_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_SEGMENT_ID;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_VALUE_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_FLAG_CHILD_LAST;
import static io.basaltdb.internal.segment.SegmentFormat.PAGE_FLAG_PARTIAL;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Appends documents in seqno order to the tail log segment and maintains its seqno index (Magma,
 * seed 000 section 3: "log-structured storage of documents in seqno order, with a per-segment seqno
 * index"). A flush appends its documents as key-ordered runs instead ({@link #appendRun}): in key
 * order within the run, with an index entry per document. Layout: docs/format.md, "Log segment".
 *
 * <p>Documents are packed into data blocks of about {@code blockSize} uncompressed bytes. When a
 * block is sealed it is written at the tail, and its entry {@code (firstSeqno, offset)} goes into
 * the in-memory tail page of index level 0. A tail page that fills is written right after the block
 * that filled it and its own entry goes one level up, so blocks and index pages interleave in the
 * file and the index is an append-only B+tree that never rewrites a full page. A {@link
 * #checkpoint} writes the open block and then, bottom-up, one copy of every level's partial tail
 * page, each ending with an entry for the copy just written below it; the top copy is the root. A
 * later checkpoint writes new copies (copy on write); the old ones become dead bytes ({@link
 * SegmentState#staleBytes}).
 *
 * <p>Sealed blocks and full index pages are gathered in a write buffer of {@link #WRITE_BUFFER}
 * bytes and written together, at the latest by {@link #checkpoint}: a flush or a collection job
 * wrote each 4 KiB block with its own {@code pwrite}, a quarter of the flusher's time in the YCSB
 * profile (docs/architecture.md, "Segment writes"). Nothing reads past a checkpoint's tail, so
 * nothing reads the buffer's bytes.
 *
 * <p>Concurrency: one thread (the engine's flusher) calls every method. {@link SegmentReader}s of
 * earlier checkpoints read the same file meanwhile; they only read below their state's tail, and
 * this writer only writes at or past the tail of its latest checkpoint (or of the state it was
 * reopened from).
 *
 * <p>Invariants:
 *
 * <ol>
 *   <li>The open block, when not empty, is written at {@code block.offset() == tail}; index pages
 *       are written only after a block is sealed. So a document's block offset, its location hint,
 *       is known when it is appended.
 *   <li>Every sealed block has an entry in level 0's tail page or in a written full leaf page;
 *       every written full page at level l has an entry at level l+1 (tail page or a written full
 *       page).
 *   <li>The top level's tail page is never empty; no tail page is ever full between calls.
 *   <li>Children are written before their parents: every entry points to a smaller offset than the
 *       page holding it. Readers check this, so a damaged index cannot loop.
 *   <li>After a failed write the writer refuses everything: the engine reopens from the last
 *       checkpoint.
 * </ol>
 */
public final class SegmentWriter {
  private final StorageFile file;
  private final long segmentId;
  private final long startSeqno;
  private final SegmentOptions options;
  private final int pageSize;
  private final int pageCapacity;
  private final BlockBuilder block;

  /** The tail page of each index level; index = level. */
  private final List<IndexPage> levels = new ArrayList<>();

  private long tail;
  private long lastSeqno;
  private long documentCount;
  private long documentBytes;
  private long staleBytes;
  private long spineBytes;
  private int lastDocumentSize;
  private SegmentState lastState;

  /** Something was appended since {@link #lastState}. */
  private boolean dirty;

  private boolean failed;

  /** Records written at {@link #pendingAt} on: {@link #tail} counts them. Flushed by checkpoint. */
  private final ByteBuffer pending = ByteBuffer.allocate(WRITE_BUFFER);

  /** The file offset of the first byte of {@link #pending}. */
  private long pendingAt;

  /** Bytes of sealed blocks and index pages gathered into one file write. */
  static final int WRITE_BUFFER = 128 << 10;

  private SegmentWriter(
      StorageFile file, long segmentId, long startSeqno, SegmentOptions options, int pageSize) {
    this.file = file;
    this.segmentId = segmentId;
    this.startSeqno = startSeqno;
    this.options = options;
    this.pageSize = pageSize;
    this.pageCapacity = IndexPage.capacity(pageSize);
    this.block = new BlockBuilder(options.blockSize(), options.zstdLevel());
  }

  /**
   * Starts segment {@code segmentId} in an empty {@code file}: preallocates it, writes its header.
   */
  public static SegmentWriter create(
      StorageFile file, long segmentId, long startSeqno, SegmentOptions options) {
    options.validate();
    if (segmentId < 0
        || segmentId > MAX_SEGMENT_ID
        || startSeqno < 0
        || startSeqno == Long.MAX_VALUE) {
      throw new InvalidArgumentException(
          "segment id " + segmentId + " or start seqno " + startSeqno + " out of range");
    }
    SegmentWriter w = new SegmentWriter(file, segmentId, startSeqno, options, options.pageSize());
    if (options.preallocateBytes() > 0) {
      file.preallocate(options.preallocateBytes());
    }
    file.write(0, SegmentIo.fileHeader(segmentId, startSeqno, options.pageSize()));
    w.tail = FILE_HEADER_SIZE;
    w.lastSeqno = startSeqno - 1;
    w.lastState = w.state(0);
    return w;
  }

  /**
   * Continues a segment after a restart from its checkpointed {@code state}: reads the checkpoint's
   * right-most index path back into the tail pages and appends from {@code state.tailOffset()} on,
   * overwriting whatever was written past it. The segment keeps its page size; other options may
   * change.
   */
  public static SegmentWriter reopen(StorageFile file, SegmentState state, SegmentOptions options) {
    options.validate();
    state.validate();
    SegmentIo.checkFileHeader(file, state);
    if (file.size() < state.tailOffset()) {
      throw new CorruptionException(
          file.name(), file.size(), "file ends before the checkpointed tail " + state.tailOffset());
    }
    SegmentWriter w =
        new SegmentWriter(file, state.segmentId(), state.startSeqno(), options, state.pageSize());
    w.tail = state.tailOffset();
    w.lastSeqno = state.lastSeqno();
    w.documentCount = state.documentCount();
    w.documentBytes = state.documentBytes();
    w.staleBytes = state.staleBytes();
    w.spineBytes = state.spineBytes();
    w.lastState = state;
    w.loadSpine(state);
    return w;
  }

  /** Rebuilds the tail pages from the checkpoint's partial pages, root first. */
  private void loadSpine(SegmentState state) {
    IndexPage[] pages = new IndexPage[state.levels()];
    long off = state.rootOffset();
    long limit = state.tailOffset();
    long first = -1;
    for (int level = pages.length - 1; level >= 0; level--) {
      IndexPage p = SegmentIo.readPage(file, off, limit, segmentId, level, pageSize);
      boolean childLast = (p.flags & PAGE_FLAG_CHILD_LAST) != 0;
      int keep = p.count() - (childLast ? 1 : 0);
      if ((p.flags & PAGE_FLAG_PARTIAL) == 0
          || keep >= pageCapacity
          || (first >= 0 && p.seqno(0) != first)
          || (childLast && level == 0)
          || (keep == 0 && level == pages.length - 1)) {
        throw new CorruptionException(
            file.name(), off, "index page is not the checkpoint's tail page of level " + level);
      }
      pages[level] = p.toTailPage(keep, pageCapacity);
      if (childLast) {
        first = p.seqno(keep);
        limit = off;
        off = p.child(keep);
      } else {
        for (int l = level - 1; l >= 0; l--) {
          pages[l] = new IndexPage(l, pageCapacity);
        }
        break;
      }
    }
    levels.addAll(List.of(pages));
  }

  /**
   * Appends a document; its seqno must exceed every earlier one. Returns its location hint {@code
   * segmentId << 32 | offset of its block}. Throws InvalidArgumentException (nothing appended) for
   * a seqno out of order, a key over 64 KiB, a value over 20 MiB, or a segment past 3 GiB.
   */
  public long append(long seqno, byte[] key, byte[] value, boolean tombstone) {
    return append(seqno, key, value, tombstone, 0);
  }

  /**
   * As {@link #append(long, byte[], byte[], boolean)}, for a document that expires at {@code
   * expiry} (0: never).
   */
  public long append(long seqno, byte[] key, byte[] value, boolean tombstone, long expiry) {
    if (value == null)
      throw new InvalidArgumentException("segment append: the value must be non-null");
    return append(seqno, key, value, 0, value.length, tombstone, expiry);
  }

  /**
   * As {@link #append(long, byte[], byte[], boolean, long)}, the value being {@code
   * value[valueOffset, valueOffset + valueLength)}: the flusher appends straight from a write cache
   * entry, without copying the value out of it first.
   */
  public long append(
      long seqno,
      byte[] key,
      byte[] value,
      int valueOffset,
      int valueLength,
      boolean tombstone,
      long expiry) {
    checkUsable();
    if (expiry < 0)
      throw new InvalidArgumentException("segment append: a negative expiry " + expiry);
    checkDocument(key, value, valueOffset, valueLength);
    if (seqno <= lastSeqno || seqno == Long.MAX_VALUE) {
      throw new InvalidArgumentException(
          "segment append: seqno " + seqno + " is not above the last seqno " + lastSeqno);
    }
    if (tail >= HARD_SIZE_LIMIT) {
      throw new InvalidArgumentException(
          "segment " + file.name() + " is full (" + tail + " bytes); roll to a new one");
    }
    try {
      int size = block.sizeIfAdded(seqno, key.length, valueLength, expiry);
      if (!block.isEmpty() && block.length() + size > options.blockSize()) {
        sealBlock();
      }
      int docSize = block.add(tail, seqno, key, value, valueOffset, valueLength, tombstone, expiry);
      long hint = SegmentFormat.hint(segmentId, block.offset());
      lastSeqno = seqno;
      documentCount++;
      documentBytes += docSize;
      lastDocumentSize = docSize;
      dirty = true;
      if (block.length() >= options.blockSize()) {
        sealBlock();
      }
      return hint;
    } catch (RuntimeException e) {
      failed = true;
      throw e;
    }
  }

  /**
   * The most document bytes (keys and values) a writer should put in one key-ordered run: a
   * seqno-ordered walk of a run (the change feed, collection, recovery) holds the whole run
   * decoded. A single larger document makes a run of its own.
   */
  public static final long RUN_BYTES = 16L << 20;

  /**
   * The documents of a key-ordered run ({@link #appendRun}), in the order they are stored: key
   * order. A document's value is {@code value(i)[valueOffset(i), valueOffset(i) + valueLength(i))}.
   */
  public interface Run {
    int size();

    long seqno(int i);

    /**
     * The document with the {@code j}-th smallest seqno: {@code seqno(bySeqno(0)) <
     * seqno(bySeqno(1)) < ...} (the writer checks it, so it sorts nothing).
     */
    int bySeqno(int j);

    byte[] key(int i);

    byte[] value(int i);

    int valueOffset(int i);

    int valueLength(int i);

    boolean tombstone(int i);

    long expiry(int i);
  }

  /**
   * Appends {@code docs} as one key-ordered run (docs/format.md, "Key-ordered runs"): their blocks
   * in the order given (key order), so a scan of neighbouring keys finds their documents in a few
   * neighbouring blocks, where seqno order scatters them over the whole flush; then a seqno index
   * entry per document, in seqno order, so lookups by seqno and the seqno-ordered walk still work.
   * Every seqno must exceed every earlier one and be distinct. Fills {@code hints[i]} and {@code
   * sizes[i]} with document {@code i}'s location hint and encoded size. Throws
   * InvalidArgumentException, having appended nothing, for a seqno out of order or repeated, a key
   * over 64 KiB or a value over 20 MiB, or a segment past 3 GiB.
   */
  public void appendRun(Run docs, long[] hints, int[] sizes) {
    checkUsable();
    int n = docs.size();
    if (n == 0) return;
    long previous = lastSeqno;
    for (int j = 0; j < n; j++) {
      int i = docs.bySeqno(j);
      if (i < 0 || i >= n) {
        throw new InvalidArgumentException(
            "segment append: a run of " + n + " documents names document " + i + " in seqno order");
      }
      long seqno = docs.seqno(i);
      if (seqno <= previous || seqno == Long.MAX_VALUE) {
        throw new InvalidArgumentException(
            j == 0
                ? "segment append: seqno " + seqno + " is not above the last seqno " + lastSeqno
                : seqno == previous
                    ? "segment append: seqno " + seqno + " twice in a run"
                    : "segment append: a run's seqno order gives " + seqno + " after " + previous);
      }
      previous = seqno;
    }
    for (int i = 0; i < n; i++) {
      checkDocument(docs.key(i), docs.value(i), docs.valueOffset(i), docs.valueLength(i));
      if (docs.expiry(i) < 0)
        throw new InvalidArgumentException("segment append: a negative expiry " + docs.expiry(i));
    }
    if (tail >= HARD_SIZE_LIMIT) {
      throw new InvalidArgumentException(
          "segment " + file.name() + " is full (" + tail + " bytes); roll to a new one");
    }
    try {
      if (!block.isEmpty()) sealBlock();
      block.startRun(docs.seqno(docs.bySeqno(0)));
      long bytes = 0;
      for (int i = 0; i < n; i++) {
        long seqno = docs.seqno(i);
        int length = docs.valueLength(i);
        long expiry = docs.expiry(i);
        int size = block.sizeIfAdded(seqno, docs.key(i).length, length, expiry);
        if (!block.isEmpty() && block.length() + size > options.blockSize()) sealRunBlock(false);
        int docSize =
            block.add(
                tail,
                seqno,
                docs.key(i),
                docs.value(i),
                docs.valueOffset(i),
                length,
                docs.tombstone(i),
                expiry);
        hints[i] = SegmentFormat.hint(segmentId, block.offset());
        sizes[i] = docSize;
        bytes += docSize;
        if (block.length() >= options.blockSize() && i < n - 1) sealRunBlock(false);
      }
      sealRunBlock(true); // never empty: the last document is in it
      block.endRun();
      // One entry per document, in seqno order: a lookup by seqno lands on its block.
      for (int j = 0; j < n; j++) {
        int i = docs.bySeqno(j);
        addEntry(0, docs.seqno(i), hints[i] & 0xFFFF_FFFFL);
      }
      lastSeqno = previous;
      documentCount += n;
      documentBytes += bytes;
      lastDocumentSize = sizes[n - 1];
      dirty = true;
    } catch (RuntimeException e) {
      failed = true;
      throw e;
    }
  }

  /**
   * Appends {@code docs}, given in seqno order, as one key-ordered run ({@link #appendRun}): sorted
   * by key (unsigned bytes), a key's versions by seqno. Collection rewrites live documents this
   * way, so the documents of neighbouring keys that it gathers from several segments end up in
   * neighbouring blocks. Throws as {@link #appendRun} does, having appended nothing.
   */
  public void appendKeyOrdered(List<Document> docs) {
    int n = docs.size();
    if (n == 0) return;
    Integer[] byKey = new Integer[n];
    for (int i = 0; i < n; i++) byKey[i] = i;
    java.util.Arrays.sort(
        byKey,
        (a, b) -> {
          int c = java.util.Arrays.compareUnsigned(docs.get(a).key(), docs.get(b).key());
          return c != 0 ? c : Long.compare(docs.get(a).seqno(), docs.get(b).seqno());
        });
    Document[] sorted = new Document[n];
    int[] bySeqno = new int[n];
    for (int k = 0; k < n; k++) {
      sorted[k] = docs.get(byKey[k]);
      bySeqno[byKey[k]] = k; // docs are in seqno order: the j-th smallest seqno is docs.get(j)
    }
    appendRun(new DocumentRun(sorted, bySeqno), new long[n], new int[n]);
  }

  /** Whole documents, key-ordered, as a {@link Run}. */
  private record DocumentRun(Document[] docs, int[] bySeqno) implements Run {
    @Override
    public int size() {
      return docs.length;
    }

    @Override
    public long seqno(int i) {
      return docs[i].seqno();
    }

    @Override
    public int bySeqno(int j) {
      return bySeqno[j];
    }

    @Override
    public byte[] key(int i) {
      return docs[i].key();
    }

    @Override
    public byte[] value(int i) {
      return docs[i].value();
    }

    @Override
    public int valueOffset(int i) {
      return 0;
    }

    @Override
    public int valueLength(int i) {
      return docs[i].value().length;
    }

    @Override
    public boolean tombstone(int i) {
      return docs[i].tombstone();
    }

    @Override
    public long expiry(int i) {
      return docs[i].expiry();
    }
  }

  /** Writes the open block of a run at the tail; its documents' entries come after the run. */
  private void sealRunBlock(boolean last) {
    write(block.seal(segmentId, last));
  }

  private static void checkDocument(byte[] key, byte[] value, int valueOffset, int valueLength) {
    if (key == null
        || value == null
        || key.length > MAX_KEY_SIZE
        || valueLength > MAX_VALUE_SIZE
        || valueOffset < 0
        || valueLength < 0
        || valueOffset > value.length - valueLength) {
      throw new InvalidArgumentException(
          "segment append: key and value must be non-null, at most "
              + MAX_KEY_SIZE
              + " and "
              + MAX_VALUE_SIZE
              + " bytes");
    }
  }

  /** Encoded (uncompressed) size of the last appended document, the size the key index records. */
  public int lastDocumentSize() {
    return lastDocumentSize;
  }

  /**
   * Writes the open block and the partial tail pages, and returns the state that describes
   * everything appended so far. Nothing is durable until {@link #sync}. Without appends since the
   * last checkpoint it writes nothing and returns the same state.
   */
  public SegmentState checkpoint() {
    checkUsable();
    if (!dirty) {
      return lastState;
    }
    try {
      if (!block.isEmpty()) {
        sealBlock();
      }
      // A writer reopened at this checkpoint starts with no history: so does this one, and both
      // write the same bytes from here.
      block.forgetCompressionHistory();
      long spineStart = tail;
      long childSeqno = 0;
      long childOffset = 0;
      long root = 0;
      for (IndexPage p : levels) {
        if (p.count() == 0 && childOffset == 0) {
          continue; // lower levels that a full page just emptied
        }
        long first = p.count() > 0 ? p.seqno(0) : childSeqno;
        int flags = PAGE_FLAG_PARTIAL | (childOffset != 0 ? PAGE_FLAG_CHILD_LAST : 0);
        root = write(p.encode(segmentId, flags, childSeqno, childOffset));
        childSeqno = first;
        childOffset = root;
      }
      flushPending(); // the state's bytes are in the file before anyone is given it
      staleBytes += spineBytes;
      spineBytes = tail - spineStart;
      lastState = state(root);
      dirty = false;
      return lastState;
    } catch (RuntimeException e) {
      failed = true;
      throw e;
    }
  }

  private SegmentState state(long root) {
    return new SegmentState(
        segmentId,
        startSeqno,
        lastSeqno,
        tail,
        root,
        levels.size(),
        documentCount,
        documentBytes,
        staleBytes,
        spineBytes,
        options.blockSize(),
        pageSize,
        options.zstdLevel() > 0);
  }

  /** Writes the open block at the tail and indexes it (invariant 1). */
  private void sealBlock() {
    long first = block.firstSeqno();
    long off = write(block.seal(segmentId));
    addEntry(0, first, off);
  }

  private void addEntry(int level, long seqno, long child) {
    if (level == levels.size()) {
      levels.add(new IndexPage(level, pageCapacity));
    }
    IndexPage p = levels.get(level);
    p.add(seqno, child);
    if (p.isFull()) {
      long first = p.seqno(0);
      long off = write(p.encode(segmentId, 0, 0, 0));
      p.clear();
      addEntry(level + 1, first, off);
    }
  }

  /**
   * Writes a record at the tail (into the write buffer, or the file if it does not fit) and returns
   * its offset.
   */
  private long write(ByteBuffer record) {
    long off = tail;
    int n = record.remaining();
    if (n > pending.remaining()) flushPending();
    if (n > pending.capacity()) {
      file.write(off, record);
      pendingAt = off + n;
    } else {
      if (pending.position() == 0) pendingAt = off;
      pending.put(record);
    }
    tail = off + n;
    return off;
  }

  /** Writes the buffered records to the file. */
  private void flushPending() {
    if (pending.position() == 0) return;
    pending.flip();
    file.write(pendingAt, pending);
    pending.clear();
    pendingAt = tail;
  }

  private void checkUsable() {
    if (failed) {
      throw new StorageException(
          "segment "
              + file.name()
              + ": an earlier write failed; reopen the segment "
              + "from its last checkpoint");
    }
  }

  /** The tail offset: bytes written so far; the open block, not written yet, will start here. */
  public long size() {
    return tail;
  }

  /** True once {@link #size} reaches maxSegmentSize: the engine should roll to a new segment. */
  public boolean isFull() {
    return tail >= options.maxSegmentSize();
  }

  /** The zstd level of its data blocks, 0 for LZ4. */
  public int zstdLevel() {
    return options.zstdLevel();
  }

  public long segmentId() {
    return segmentId;
  }

  public long lastSeqno() {
    return lastSeqno;
  }

  /** Makes everything written so far durable; call after {@link #checkpoint}. */
  public void sync() {
    checkUsable();
    try {
      flushPending();
      file.sync();
    } catch (RuntimeException e) {
      failed = true;
      throw e;
    }
  }
}
