package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.storage.StorageFile;
import java.util.concurrent.atomic.LongAdder;

/**
 * Reads documents from one checkpointed state of a log segment (seed 000 section 3.4.1: seqno ->
 * this segment's seqno index -> block -> document). The view is immutable: documents appended after
 * the state's checkpoint are not seen, and nothing at or past its tail offset is ever read. The
 * engine makes a new reader after each flush while the writer goes on appending to the same file.
 *
 * <p>Every block and page is checked (checksum, type, segment id, bounds, ordering) before use;
 * damage raises {@link CorruptionException}, never a wrong document.
 *
 * <p>Index pages go through the store's {@link BlockCache} when there is one, in {@link
 * IndexPage}'s flat form, keyed by the segment file's cache owner and the page offset: a page never
 * changes once written, so the readers of successive states of one file share the cached pages.
 * Documents read by {@link #read} are cached one by one under the next owner number, keyed by their
 * seqno's distance from the segment's start seqno (a seqno names one document version for good, so
 * a cached copy is never stale); see {@link #cached} for their layout.
 *
 * <p>Thread-safety: safe for concurrent reads; each call uses its own buffers.
 */
public final class SegmentReader {
  private final StorageFile file;
  private final SegmentState state;

  /**
   * Blocks and pages fetched and checked; bumped by every reading thread (LongAdder spreads them).
   */
  private final LongAdder blockReads = new LongAdder();

  /** Null: every page and document is read from the file. */
  private final BlockCache cache;

  /** Owner of the index pages; {@code cacheOwner + 1} owns the documents. */
  private final long cacheOwner;

  public SegmentReader(StorageFile file, SegmentState state) {
    this(file, state, null, -1);
  }

  /**
   * A reader whose index pages and documents go through {@code cache} (null for none) under {@code
   * cacheOwner} and {@code cacheOwner + 1}, the numbers {@link BlockCache#newOwners newOwners(2)}
   * gave this segment file.
   */
  public SegmentReader(StorageFile file, SegmentState state, BlockCache cache, long cacheOwner) {
    state.validate();
    this.file = file;
    this.state = state;
    this.cache = cache;
    this.cacheOwner = cacheOwner;
  }

  /**
   * Whether a document was read since the cold pass last sampled it ({@link #takeRead}). Plain, and
   * written only when false, so reads of a hot segment from many threads share its cache line; a
   * lost update only makes the segment look read a sample later.
   */
  private boolean read;

  private void touch() {
    if (!read) read = true;
  }

  /**
   * Whether the segment was read since the last call (garbage collection's cold pass, one thread):
   * a segment being read is not cold, however long ago it was written.
   */
  public boolean takeRead() {
    boolean r = read;
    if (r) read = false;
    return r;
  }

  /** The first of the reader's two block cache owners (index pages; documents are the next). */
  public long cacheOwner() {
    return cacheOwner;
  }

  public SegmentState state() {
    return state;
  }

  /**
   * The document with {@code seqno}, or null if this state of the segment has none: the cached
   * copy, or else read from the file and cached (see {@link #readUncached}).
   */
  public Document read(long seqno, long hint) {
    Document d = cached(seqno);
    if (d != null) return d;
    d = readUncached(seqno, hint);
    if (d != null) remember(d);
    return d;
  }

  /**
   * Bytes a cached document takes before its key: the tombstone flag, the expiry and the key
   * length.
   */
  private static final int CACHED_HEADER = 13;

  /**
   * The cached copy of the document with {@code seqno}, or null if the cache does not hold it (or
   * this state of the segment does not). A cached document is its tombstone flag (1 byte), its
   * expiry (8 bytes, little-endian), its key length (4 bytes, little-endian), its key and its
   * value, checked when it was read from the file.
   */
  public Document cached(long seqno) {
    touch();
    if (!cachesDocuments(seqno)) return null;
    BlockCache.Block c = cache.get(cacheOwner + 1, docSlot(seqno), BlockCache.Kind.DOCUMENT);
    if (c == null) return null;
    try {
      boolean tombstone = Mem.lpByte(c.base, c.address) != 0;
      long expiry = Mem.lpLongLE(c.base, c.address + 1);
      int keyLength = Mem.lpIntLE(c.base, c.address + 9);
      byte[] key = new byte[keyLength];
      byte[] value = new byte[c.size - CACHED_HEADER - keyLength];
      Mem.copyToArray(c.base, c.address + CACHED_HEADER, key, 0, keyLength);
      Mem.copyToArray(c.base, c.address + CACHED_HEADER + keyLength, value, 0, value.length);
      return new Document(seqno, key, value, tombstone, expiry);
    } finally {
      c.release();
    }
  }

  /**
   * The value of the cached document with {@code seqno} into {@code out}, without making a
   * document: if the cache holds it and its key is {@code key}, copies its value to {@code out} at
   * its position when it fits (the limit then set to the value's end; a value that does not fit
   * leaves {@code out} as it was) and returns the value's length; otherwise returns -2 and the
   * caller reads it as {@link #cached} does.
   */
  public int cachedValue(long seqno, byte[] key, java.nio.ByteBuffer out) {
    BlockCache.Block c = cachedDocument(seqno, key);
    if (c == null) return -2;
    try {
      int at = CACHED_HEADER + key.length;
      int length = c.size - at;
      int pos = out.position();
      if (length <= out.limit() - pos) {
        Mem.copyToBuffer(c.base, c.address + at, out, pos, length);
        out.limit(pos + length);
      }
      return length;
    } finally {
      c.release();
    }
  }

  /**
   * As {@link #cachedValue(long, byte[], java.nio.ByteBuffer)}, as a new array (null: not cached,
   * or another key).
   */
  public byte[] cachedValue(long seqno, byte[] key) {
    BlockCache.Block c = cachedDocument(seqno, key);
    if (c == null) return null;
    try {
      int at = CACHED_HEADER + key.length;
      byte[] value = new byte[c.size - at];
      Mem.copyToArray(c.base, c.address + at, value, 0, value.length);
      return value;
    } finally {
      c.release();
    }
  }

  /**
   * The cached document with {@code seqno}, pinned, if the cache holds it and its key is {@code
   * key}; else null.
   */
  private BlockCache.Block cachedDocument(long seqno, byte[] key) {
    touch();
    if (!cachesDocuments(seqno)) return null;
    BlockCache.Block c = cache.get(cacheOwner + 1, docSlot(seqno), BlockCache.Kind.DOCUMENT);
    if (c == null) return null;
    int keyLength = Mem.lpIntLE(c.base, c.address + 9);
    if (keyLength != key.length
        || Mem.compareUnsigned(c.base, c.address + CACHED_HEADER, keyLength, key) != 0) {
      c.release();
      return null; // another key: the caller's read reports the inconsistency
    }
    return c;
  }

  /**
   * Caches {@code d}, a document of this segment just read from its file and checked, if the cache
   * takes documents of its size ({@link BlockCache#admitsSmall}) and this is its second read lately
   * ({@link BlockCache#admitOnSecondRead}).
   */
  public void remember(Document d) {
    if (!cachesDocuments(d.seqno())) return;
    int size = CACHED_HEADER + d.key().length + d.value().length;
    if (!cache.admitsSmall(size) || !cache.admitOnSecondRead(cacheOwner + 1, docSlot(d.seqno())))
      return;
    byte[] b = new byte[size];
    b[0] = (byte) (d.tombstone() ? 1 : 0);
    for (int i = 0; i < 8; i++) b[1 + i] = (byte) (d.expiry() >>> (8 * i));
    b[9] = (byte) d.key().length;
    b[10] = (byte) (d.key().length >>> 8);
    b[11] = (byte) (d.key().length >>> 16);
    b[12] = (byte) (d.key().length >>> 24);
    System.arraycopy(d.key(), 0, b, CACHED_HEADER, d.key().length);
    System.arraycopy(d.value(), 0, b, CACHED_HEADER + d.key().length, d.value().length);
    cache.put(cacheOwner + 1, docSlot(d.seqno()), BlockCache.Kind.DOCUMENT, b).release();
  }

  private boolean holds(long seqno) {
    return !state.isEmpty() && seqno >= state.startSeqno() && seqno <= state.lastSeqno();
  }

  /** A document's offset in the cache's keys: its seqno's distance from the segment's first. */
  private long docSlot(long seqno) {
    return seqno - state.startSeqno();
  }

  /** Whether documents of this segment can be cached: their slots fit a cache key's offset. */
  private boolean cachesDocuments(long seqno) {
    return cache != null && holds(seqno) && docSlot(seqno) >>> 32 == 0;
  }

  /**
   * The document with {@code seqno} read from the file (never the cache), or null if this state of
   * the segment has none. A {@code hint} (from {@link SegmentWriter#append}; -1 for none) naming
   * this segment and a block below the tail is tried first; if that block does not hold the seqno
   * (or is not a valid block: hints may be stale), the seqno index is searched from the root.
   */
  public Document readUncached(long seqno, long hint) {
    return readUncached(seqno, hint, null);
  }

  /**
   * As {@link #readUncached(long, long)}, counting in {@code indexReads} (if not null) each read
   * that had to search the seqno index because the hint was missing, named another segment, or
   * missed.
   */
  public Document readUncached(
      long seqno, long hint, java.util.concurrent.atomic.LongAdder indexReads) {
    touch();
    if (!holds(seqno)) {
      return null;
    }
    if (hint >= 0 && hint >>> 32 == state.segmentId()) {
      long off = hint & 0xFFFF_FFFFL;
      if (off >= FILE_HEADER_SIZE && off < state.tailOffset()) {
        try {
          Document d = readBlock(off, state.tailOffset()).find(seqno);
          if (d != null) {
            return d;
          }
        } catch (CorruptionException staleOrDamaged) {
          // Not trusted either way: the index finds the right block, and reports it if it is
          // damaged.
        }
      }
    }
    if (indexReads != null) indexReads.increment();
    long[] leaf = locate(seqno);
    return leaf == null ? null : indexedBlock(leaf).find(seqno);
  }

  /**
   * Where a batched read of {@code seqno} starts: the block offset of {@code hint} if it names this
   * segment, a block below the tail and a seqno this state holds; else -1 (use {@link #read}).
   */
  public long hintedBlock(long seqno, long hint) {
    if (state.isEmpty() || seqno < state.startSeqno() || seqno > state.lastSeqno()) return -1;
    if (hint < 0 || hint >>> 32 != state.segmentId()) return -1;
    long off = hint & 0xFFFF_FFFFL;
    return off >= FILE_HEADER_SIZE && off < state.tailOffset() - BLOCK_HEADER_SIZE ? off : -1;
  }

  /**
   * A location hint for {@code seqno} from this segment's seqno index ({@code segmentId << 32 |
   * block offset}, as {@link SegmentWriter#append} gives), or -1 if this state does not hold it:
   * key index compaction refreshes hints that name a segment garbage collection replaced (Magma
   * section 8.2). Reads index pages only (through the block cache), no document block.
   */
  public long hintFor(long seqno) {
    if (!holds(seqno)) return -1;
    long[] leaf = locate(seqno);
    return leaf == null ? -1 : state.segmentId() << 32 | leaf[0];
  }

  /**
   * Bytes a batched read of the block at {@code off} fetches: what a point read's first read takes.
   */
  public int blockReadSize(long off) {
    return (int) Math.min(state.tailOffset() - off, BLOCK_HEADER_SIZE + (long) state.blockSize());
  }

  /**
   * The document with {@code seqno} from the first {@code got} bytes of {@code b}, read at block
   * offset {@code off}; null if they do not hold it (a stale hint, a damaged block, or a block
   * longer than the read), and the caller falls back to {@link #read}, which finds the block by the
   * index and reports damage.
   */
  public Document findInRead(long off, byte[] b, int got, long seqno) {
    Object block = decodeRead(off, b, got);
    return block == null ? null : findInDecoded(block, seqno);
  }

  /**
   * The block in the first {@code got} bytes of {@code b}, read at block offset {@code off},
   * checked and decoded once for every document a batched read wants of it ({@link
   * #findInDecoded}); null if they do not hold a whole valid block of this segment (a stale hint, a
   * damaged block, or a block longer than the read: the caller falls back to a point read, which
   * reports damage).
   */
  public Object decodeRead(long off, byte[] b, int got) {
    touch();
    if (got < BLOCK_HEADER_SIZE) return null;
    int length = Block.recordLength(b, 0);
    if (length < BLOCK_HEADER_SIZE || length > got || length > state.tailOffset() - off)
      return null;
    try {
      return new Block(b, 0, length, file.name(), off, state.segmentId());
    } catch (CorruptionException staleOrDamaged) {
      return null;
    }
  }

  /** The document with {@code seqno} in a block {@link #decodeRead} gave, or null. */
  public Document findInDecoded(Object block, long seqno) {
    return ((Block) block).find(seqno);
  }

  /**
   * The whole length of the block whose first {@code got} bytes a batched read of block offset
   * {@code off} put in {@code b}, if the block is longer than that (a document bigger than a
   * block): the caller reads the rest and calls {@link #findInRead} with all of it. -1 if the bytes
   * hold the whole block, or are not a block header this segment can hold (then {@link #findInRead}
   * fails and the caller falls back to a point read, which reports damage).
   */
  public int longerBlockLength(long off, byte[] b, int got) {
    if (got < BLOCK_HEADER_SIZE) return -1;
    int length = Block.recordLength(b, 0);
    return length > got && length <= state.tailOffset() - off ? length : -1;
  }

  /** The file this reader reads (a batched read goes to it through the read transport). */
  public StorageFile file() {
    return file;
  }

  /** Documents with seqnos at or above {@code fromSeqno}, in seqno order. */
  public DocumentIterator iterator(long fromSeqno) {
    if (state.isEmpty() || fromSeqno > state.lastSeqno()) {
      return new DocumentIterator(this, state.tailOffset(), fromSeqno);
    }
    long[] leaf = fromSeqno > state.startSeqno() ? locate(fromSeqno) : null;
    return new DocumentIterator(this, leaf == null ? FILE_HEADER_SIZE : leaf[0], fromSeqno);
  }

  /** Blocks and index pages read so far, by point reads and iterators. */
  public long blockReads() {
    return blockReads.sum();
  }

  /**
   * Descends the index to the last block whose first seqno is at or below {@code seqno}: returns
   * {@code {block offset, offset of its leaf page, the leaf entry's seqno}}, or null if every block
   * starts after {@code seqno}.
   */
  long[] locate(long seqno) {
    long off = state.rootOffset();
    long limit = state.tailOffset();
    long expectFirst = -1;
    for (int level = state.levels() - 1; ; level--) {
      BlockCache.Block p = page(off, limit, level);
      try {
        Object b = p.base;
        long a = p.address;
        if (expectFirst >= 0 && IndexPage.flatSeqno(b, a, 0) != expectFirst) {
          throw new CorruptionException(
              file.name(),
              off,
              "index page starts at seqno "
                  + IndexPage.flatSeqno(b, a, 0)
                  + ", its parent entry says "
                  + expectFirst);
        }
        int i = IndexPage.flatFloor(b, a, seqno);
        if (i < 0) {
          return null;
        }
        if (level == 0) {
          return new long[] {IndexPage.flatChild(b, a, i), off, IndexPage.flatSeqno(b, a, i)};
        }
        expectFirst = IndexPage.flatSeqno(b, a, i);
        limit = off;
        off = IndexPage.flatChild(b, a, i);
      } finally {
        p.release();
      }
    }
  }

  /**
   * The index page of {@code level} at {@code off}, ending at or before {@code limit}, in flat form
   * and pinned (release it): from the cache, or read and checked. A cached page was checked when it
   * was read; its level and end are checked again here, as this descent expects them.
   */
  private BlockCache.Block page(long off, long limit, int level) {
    if (cache == null) {
      blockReads.increment();
      return BlockCache.heapBlock(
          SegmentIo.readFlatPage(file, off, limit, state.segmentId(), level, state.pageSize()),
          BlockCache.Kind.SEGMENT_PAGE);
    }
    BlockCache.Block p = cache.get(cacheOwner, off, BlockCache.Kind.SEGMENT_PAGE);
    if (p == null) {
      blockReads.increment();
      return cache.put(
          cacheOwner,
          off,
          BlockCache.Kind.SEGMENT_PAGE,
          SegmentIo.readFlatPage(file, off, limit, state.segmentId(), level, state.pageSize()));
    }
    if (IndexPage.flatLevel(p.base, p.address) != level
        || off + IndexPage.flatLength(p.base, p.address) > limit) {
      int l = IndexPage.flatLevel(p.base, p.address);
      p.release();
      throw new CorruptionException(
          file.name(),
          off,
          "index page of level "
              + l
              + " where a page of level "
              + level
              + " ending before "
              + limit
              + " belongs");
    }
    return p;
  }

  /** The block a {@link #locate} result names, checked against its index entry. */
  private Block indexedBlock(long[] leaf) {
    Block b = readBlock(leaf[0], leaf[1]);
    boolean agrees =
        b.keyed() // an entry per document: the block holds the entry's seqno
            ? b.indexOf(leaf[2]) >= 0
            : b.firstSeqno == leaf[2];
    if (!agrees || b.lastSeqno > state.lastSeqno()) {
      throw new CorruptionException(
          file.name(),
          leaf[0],
          "data block seqnos ["
              + b.firstSeqno
              + ", "
              + b.lastSeqno
              + "] disagree with its index entry "
              + leaf[2]);
    }
    return b;
  }

  Block readBlock(long off, long limit) {
    blockReads.increment();
    return SegmentIo.readBlock(file, off, limit, state.segmentId(), state.blockSize());
  }

  void countRead() {
    blockReads.increment();
  }
}
