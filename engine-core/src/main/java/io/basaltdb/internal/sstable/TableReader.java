package io.basaltdb.internal.sstable;

import io.basaltdb.ClosedException;
import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * Reads an SSTable written by {@link TableWriter}. {@link #open} reads the footer, then the index,
 * filter and meta blocks and verifies their checksums. With a {@link BlockCache} the decoded index
 * ({@link FlatIndex}) and the filter go into the cache, off the heap, and are read back from the
 * file when the cache has evicted them; without one they stay on the heap. A lookup costs at most
 * one data block read beyond them: bloom filter, binary search of the index, one block read, binary
 * search of the block's restart points and a short scan (seed 000, section 3; LevelDB
 * table_format).
 *
 * <p>An HB+-trie table (footer version 7) has a trie header where the index block would be: the
 * reader keeps its record blocks' offsets and sizes on the heap as a flat index without separators,
 * so iterators read the record blocks as data blocks, and finds blocks and entries through {@link
 * TrieIndex}, whose navigation pages go through the cache as index blocks.
 *
 * <p>Data blocks go through the cache too (Magma's index block cache holds the key index's pages):
 * a get searches a cached block in place, off the heap, under a pin, and caches a block it had to
 * read. An iterator copies a cached block to the heap (it may stay on a block for as long as its
 * user likes, so it holds no pin) and caches what it reads only if it was asked to: compaction
 * reads every block once and must not push the hot ones out. Every block is keyed by its file
 * offset.
 *
 * <p>Concurrency: after {@link #open} returns, the index, filter and info are immutable (final
 * fields, safely published by the constructor; the cache's copies are pinned while read, so an
 * eviction never frees one in use), and data is read with positional reads only, so any number of
 * threads may call {@link #get} and use their own iterators at once. {@link #get} searches the
 * block it reads with a cursor confined to the calling thread ({@code LOOKUP}) instead of a new
 * one. {@link #close()} may race with reads: a read that started before it may fail with the
 * storage's exception for a closed file; one that starts after throws {@link ClosedException}.
 *
 * <p>Invariants (checked by {@link #open}; a file that breaks one is a {@link
 * CorruptionException}):
 *
 * <ol>
 *   <li>The blocks tile the file with no gap: data blocks from offset 0 in index order, then the
 *       filter block (if any), the meta block, the index block and the footer; so every byte of the
 *       file is covered by a block's CRC32C or the footer's.
 *   <li>Index separators strictly increase, and the last one is the table's largest key. They are
 *       stored in full (the index restarts at every entry), so together they fit in the index
 *       block: the decoded index is never much larger than the block it came from.
 *   <li>The entry count is 0 exactly when there are no data blocks.
 * </ol>
 */
public final class TableReader implements AutoCloseable {
  /**
   * Largest block contents a reader accepts: the block and its trailer must fit in one Java array.
   * A writer's blocks are far smaller (data blocks about {@link TableOptions#MAX_BLOCK_SIZE} at
   * most).
   */
  static final int MAX_BLOCK_READ = Integer.MAX_VALUE - 16 - Format.TRAILER_SIZE;

  /**
   * The data-block cursor of {@link #get}, one per thread and shared by every reader (a get never
   * calls another get). Confined to its thread; between gets it holds no block, only its key
   * buffer, which grows to the longest key it has decoded (at most {@link KeyRecord#MAX_KEY_SIZE}
   * bytes).
   */
  private static final ThreadLocal<BlockIter> LOOKUP =
      ThreadLocal.withInitial(() -> new BlockIter(false));

  private final StorageFile file;
  private final String description;
  private final TableInfo info;
  private final Footer footer;

  /**
   * Where the data blocks end (the filter or meta block starts): the index is checked against it.
   */
  private final long dataEnd;

  private final int blockCount;

  /** Null when the reader keeps its index and filter on the heap. */
  private final BlockCache cache;

  private final long owner;

  /** Without a cache: the flat index and the filter contents (null if none), pinned for good. */
  private final BlockCache.Block heapIndex;

  private final BlockCache.Block heapFilter;

  /** With a cache: reload an evicted index or filter from the file. */
  private final Supplier<byte[]> indexLoader = this::loadIndex;

  private final Supplier<byte[]> filterLoader = this::loadFilter;

  /** Data blocks read from the file; incremented by any reading thread. */
  private final LongAdder blockReads = new LongAdder();

  /** Index and filter blocks read again after the cache evicted them. */
  private final LongAdder metaReads = new LongAdder();

  /** An HB+-trie table's navigation ({@link TrieIndex}); null for a block table. */
  private final TrieIndex trie;

  /** An HB+-trie table's record block offsets (block i starts at blockOffsets[i]); else null. */
  private final long[] blockOffsets;

  /** Bytes of the index: a block table's index block, or a trie table's pages and header. */
  private final long indexBytes;

  /** Navigation pages read from the file (a trie table's; cache misses). */
  private final LongAdder navReads = new LongAdder();

  /** The meta block's expiry histogram; immutable. */
  private final ExpiryHistogram expiry;

  /** Set once by close(); read by every call (volatile: a call after close sees it). */
  private volatile boolean closed;

  private TableReader(StorageFile file, String description, BlockCache cache) {
    this.file = file;
    this.description = description;
    this.cache = cache;
    this.owner = cache == null ? -1 : cache.newOwner();
    long size = file.size();
    if (size < Format.FOOTER_SIZE) {
      throw new CorruptionException(
          description, 0, "file of " + size + " bytes is shorter than a footer");
    }
    long footerOffset = size - Format.FOOTER_SIZE;
    Footer f =
        Footer.decode(readExact(footerOffset, Format.FOOTER_SIZE), footerOffset, description);
    this.footer = f;
    // Invariant 1, from the end backwards.
    expectEnd(f.indexOffset(), f.indexSize(), footerOffset, "index block");
    expectEnd(f.metaOffset(), f.metaSize(), f.indexOffset(), "meta block");
    long end = f.metaOffset();
    if (f.hasFilter()) {
      expectEnd(f.filterOffset(), f.filterSize(), f.metaOffset(), "filter block");
      end = f.filterOffset();
    }
    if (cache != null && size >>> 32 != 0) {
      throw new CorruptionException(
          description, 0, "a table of " + size + " bytes is larger than any writer makes");
    }
    List<byte[]> seps = new ArrayList<>();
    byte[] flat;
    boolean isTrie = f.version() == Format.VERSION_HB_TRIE;
    if (isTrie) {
      // record blocks from 0 to recordsEnd, then navigation pages up to the filter or meta block
      byte[] header = readVerified(f.indexOffset(), f.indexSize());
      TrieHeader h = TrieHeader.decode(header, f.indexSize(), f.indexOffset(), end, description);
      this.dataEnd = h.recordsEnd();
      this.blockOffsets = h.offsets();
      blockCount = h.sizes().length;
      for (int i = 0; i < blockCount; i++) seps.add(new byte[0]);
      flat = FlatIndex.build(seps, h.offsets(), h.sizes());
      trie =
          new TrieIndex(
              this::navPage, h.chunk(), h.root(), h.recordsEnd(), end, h.sizes(), description);
      indexBytes = end - h.recordsEnd() + f.indexSize() + Format.TRAILER_SIZE;
    } else {
      this.dataEnd = end;
      flat = decodeIndex(seps);
      blockCount = seps.size();
      trie = null;
      blockOffsets = null;
      indexBytes = f.indexSize() + Format.TRAILER_SIZE;
    }
    byte[] filterBytes = f.hasFilter() ? decodeFilter() : null;
    MetaBlock.Meta meta =
        MetaBlock.decode(
            readVerified(f.metaOffset(), f.metaSize()),
            f.metaSize(),
            f.metaOffset(),
            description,
            isTrie ? Format.VERSION_WITH_TOMBSTONES : f.version());
    expiry = meta.expiry();
    info = checkedInfo(f, size, meta, isTrie ? null : seps, blockCount);
    if (isTrie) {
      heapIndex = BlockCache.heapBlock(flat, BlockCache.Kind.TABLE_INDEX); // the block directory
      heapFilter =
          filterBytes == null || (cache != null && cache.admits(filterBytes.length))
              ? null
              : BlockCache.heapBlock(filterBytes, BlockCache.Kind.TABLE_FILTER);
      if (cache != null && filterBytes != null && heapFilter == null) {
        cache
            .put(owner, footer.filterOffset(), BlockCache.Kind.TABLE_FILTER, filterBytes)
            .release();
      }
    } else if (cache == null) {
      heapIndex = BlockCache.heapBlock(flat, BlockCache.Kind.TABLE_INDEX);
      heapFilter =
          filterBytes == null
              ? null
              : BlockCache.heapBlock(filterBytes, BlockCache.Kind.TABLE_FILTER);
    } else {
      // a block too big for a shard would be re-read from the file at every probe: keep it on the
      // heap
      boolean bigIndex = cache.capacity() > 0 && !cache.admits(flat.length);
      boolean bigFilter =
          filterBytes != null && cache.capacity() > 0 && !cache.admits(filterBytes.length);
      heapIndex = bigIndex ? BlockCache.heapBlock(flat, BlockCache.Kind.TABLE_INDEX) : null;
      heapFilter =
          bigFilter ? BlockCache.heapBlock(filterBytes, BlockCache.Kind.TABLE_FILTER) : null;
      // a table is read right after it is written or opened: start with its index and filter cached
      if (!bigIndex)
        cache.put(owner, footer.indexOffset(), BlockCache.Kind.TABLE_INDEX, flat).release();
      if (filterBytes != null && !bigFilter) {
        cache
            .put(owner, footer.filterOffset(), BlockCache.Kind.TABLE_FILTER, filterBytes)
            .release();
      }
    }
  }

  /**
   * Reads and checks the index block (invariants 1 and 2) and returns its flat form; fills {@code
   * seps}.
   */
  private byte[] decodeIndex(List<byte[]> seps) {
    Footer f = footer;
    Block index = readBlock(f.indexOffset(), f.indexSize());
    List<long[]> handles = new ArrayList<>();
    BlockIter it = new BlockIter(true);
    it.reset(index);
    long expected = 0;
    long keyBytes = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      byte[] sep = it.keyCopy();
      // The index restarts at every entry, so each separator is stored in full: together they
      // cannot
      // be longer than the block. Prefix-compressed entries could decode 10 bytes into 64 KiB each.
      keyBytes += sep.length;
      if (keyBytes > f.indexSize()) {
        throw new CorruptionException(
            description,
            f.indexOffset(),
            "index separators up to entry "
                + seps.size()
                + " take "
                + keyBytes
                + " bytes, more than the "
                + f.indexSize()
                + "-byte index block stores");
      }
      if (!seps.isEmpty() && KeyRecord.compareKeys(seps.get(seps.size() - 1), sep) >= 0) {
        throw new CorruptionException(
            description, f.indexOffset(), "index separators out of order at " + seps.size());
      }
      if (it.handleOffset != expected
          || it.handleSize > dataEnd - expected - Format.TRAILER_SIZE
          || it.handleSize > MAX_BLOCK_READ) {
        throw new CorruptionException(
            description,
            f.indexOffset(),
            "index entry "
                + seps.size()
                + " points at ["
                + it.handleOffset
                + ", +"
                + it.handleSize
                + ")");
      }
      expected += (long) it.handleSize + Format.TRAILER_SIZE;
      seps.add(sep);
      handles.add(new long[] {it.handleOffset, it.handleSize});
    }
    if (expected != dataEnd) {
      throw new CorruptionException(
          description, expected, "data blocks end at " + expected + ", not " + dataEnd);
    }
    long[] offsets = new long[handles.size()];
    int[] sizes = new int[handles.size()];
    for (int i = 0; i < offsets.length; i++) {
      offsets[i] = handles.get(i)[0];
      sizes[i] = (int) handles.get(i)[1];
    }
    return FlatIndex.build(seps, offsets, sizes);
  }

  /** Reads and checks the filter block; returns its contents without the trailer. */
  private byte[] decodeFilter() {
    Footer f = footer;
    byte[] b = readVerified(f.filterOffset(), f.filterSize());
    BloomFilter.parse(b, f.filterSize(), f.filterOffset(), description);
    return Arrays.copyOf(b, f.filterSize());
  }

  private byte[] loadIndex() {
    metaReads.increment();
    List<byte[]> seps = new ArrayList<>();
    byte[] flat = decodeIndex(seps);
    if (seps.size() != blockCount) {
      throw new CorruptionException(
          description, footer.indexOffset(), "index block changed since the table was opened");
    }
    return flat;
  }

  private byte[] loadFilter() {
    metaReads.increment();
    return decodeFilter();
  }

  /** The index, pinned: release it when done. */
  private BlockCache.Block index() {
    if (heapIndex != null) return heapIndex;
    BlockCache.Block b =
        cache.get(owner, footer.indexOffset(), BlockCache.Kind.TABLE_INDEX, indexLoader);
    if (closed)
      cache.remove(owner, footer.indexOffset()); // raced with close: do not leave it cached
    return b;
  }

  /**
   * The filter contents if the block cache holds them (or the heap does), pinned; null otherwise or
   * if none.
   */
  private BlockCache.Block cachedFilter() {
    if (!footer.hasFilter()) return null;
    if (heapFilter != null) return heapFilter;
    return cache.getIfCached(owner, footer.filterOffset(), BlockCache.Kind.TABLE_FILTER);
  }

  /** The filter contents, pinned (release when done); null if the table has none. */
  private BlockCache.Block filter() {
    if (!footer.hasFilter()) return null;
    if (heapFilter != null) return heapFilter;
    BlockCache.Block b =
        cache.get(owner, footer.filterOffset(), BlockCache.Kind.TABLE_FILTER, filterLoader);
    if (closed) cache.remove(owner, footer.filterOffset());
    return b;
  }

  /**
   * Opens the table in {@code file}; {@code description} names it in error messages. The reader
   * owns the file from now on: it is closed by {@link #close()}, or here if opening fails.
   *
   * @throws CorruptionException if the footer, index, filter or meta block is damaged
   */
  public static TableReader open(StorageFile file, String description) {
    return open(file, description, null);
  }

  /**
   * As {@link #open(StorageFile, String)}, keeping the index and filter in {@code cache} (null: on
   * the heap). The reader drops its index and filter from the cache when it is closed; its data
   * blocks are left to age out (no reader asks for them again: an owner number is never reused).
   */
  public static TableReader open(StorageFile file, String description, BlockCache cache) {
    if (file == null) throw new InvalidArgumentException("file must not be null");
    try {
      return new TableReader(file, description == null ? file.name() : description, cache);
    } catch (RuntimeException
        | Error e) { // an Error too (OutOfMemoryError): do not leak the handle
      try {
        file.close();
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  /**
   * The table's info from its footer and meta block, checked against the index's {@code separators}
   * (null for an HB+-trie table, whose navigation holds none) and its {@code n} blocks.
   */
  private TableInfo checkedInfo(
      Footer f, long size, MetaBlock.Meta meta, List<byte[]> separators, int n) {
    byte[] smallest = meta.smallest(), largest = meta.largest();
    if ((f.entryCount() == 0) != (n == 0) || f.entryCount() < n) {
      throw new CorruptionException(
          description,
          size - Format.FOOTER_SIZE + Format.FOOTER_ENTRY_COUNT_OFFSET,
          "entry count " + f.entryCount() + " does not fit " + n + " data blocks");
    }
    if (n == 0) return new TableInfo(size, 0, null, null, 0, 0, 0);
    if (meta.tombstones() > f.entryCount()) {
      throw new CorruptionException(
          description,
          f.metaOffset(),
          meta.tombstones() + " tombstones in a table of " + f.entryCount() + " records");
    }
    if (separators == null) {
      if (KeyRecord.compareKeys(smallest, largest) > 0)
        throw new CorruptionException(
            description, f.metaOffset(), "smallest key sorts after the largest");
    } else if (KeyRecord.compareKeys(smallest, separators.get(0)) > 0
        || !Arrays.equals(largest, separators.get(n - 1))) {
      throw new CorruptionException(
          description, f.metaOffset(), "smallest or largest key disagrees with the index");
    }
    return new TableInfo(
        size, f.entryCount(), smallest, largest, f.minSeqno(), f.maxSeqno(), meta.tombstones());
  }

  /**
   * Looks up {@code key}; if present fills {@code out} (with {@code out.key = key}) and returns
   * true. Reads at most one data block, and searches it with this thread's {@code LOOKUP} cursor.
   */
  public boolean get(byte[] key, KeyRecord out) {
    if (out == null) throw new InvalidArgumentException("output record must not be null");
    if (!mayContain(key)) return false;
    return read(key, out, true);
  }

  /**
   * As {@link #get(byte[], KeyRecord)} for a caller that has just seen {@link #mayContain(byte[],
   * long)} return true: reads the one data block that may hold {@code key}.
   */
  public boolean getChecked(byte[] key, KeyRecord out) {
    return getChecked(key, out, true);
  }

  /**
   * As {@link #getChecked(byte[], KeyRecord)}; with {@code fillCache} false a data block read from
   * the file is not offered to the block cache (a background scan's lookups should not evict what
   * readers use).
   */
  public boolean getChecked(byte[] key, KeyRecord out, boolean fillCache) {
    if (out == null) throw new InvalidArgumentException("output record must not be null");
    checkOpen();
    return read(key, out, fillCache);
  }

  private boolean read(byte[] key, KeyRecord out, boolean fillCache) {
    // null: a trie ruled the key out (a block table's cannot: mayContain checked the key range)
    BlockSpan span = dataBlockFor(key);
    if (span == null) return false;
    BlockCache.Block pinned =
        cache == null ? null : cache.get(owner, span.offset, BlockCache.Kind.TABLE_DATA);
    if (pinned != null) return searchPinned(pinned, span, key, out);
    Block b = dataBlock(span.offset, span.size, -1, null);
    if (cache != null && fillCache) cacheBlock(span.offset, b);
    return search(b, span, key, out);
  }

  /**
   * The file this reader reads (a batched lookup reads its data blocks through the read transport).
   */
  public StorageFile file() {
    return file;
  }

  /**
   * A data block's place in the file: its offset and its size without the trailer; in an HB+-trie
   * table, also the offset of the one entry a lookup must check ({@code entry}, -1: search the
   * block) and how many of the key's bytes the trie matched for it ({@code known}).
   */
  public record BlockSpan(long offset, int size, int entry, int known) {
    public BlockSpan(long offset, int size) {
      this(offset, size, -1, 0);
    }

    /** Bytes to read for the block: its contents and its trailer. */
    public int readSize() {
      return size + Format.TRAILER_SIZE;
    }
  }

  /**
   * The data block that may hold {@code key} (by the block index, which is loaded if the cache
   * evicted it), or null if the key is past the last block. A batched lookup asks {@link
   * #getCached} first and reads the block through the read transport on a miss ({@link #fetched}).
   */
  public BlockSpan dataBlockFor(byte[] key) {
    checkOpen();
    if (trie != null) return trie.locate(key, blockOffsets);
    BlockCache.Block idx = index();
    try {
      int i = FlatIndex.find(idx.base, idx.address, key);
      if (i == blockCount) return null;
      long offset = FlatIndex.blockOffset(idx.base, idx.address, i);
      int size = FlatIndex.blockSize(idx.base, idx.address, i);
      if (size > MAX_BLOCK_READ) {
        throw new CorruptionException(
            description, offset, "block of " + size + " bytes is larger than any table holds");
      }
      return new BlockSpan(offset, size);
    } finally {
      idx.release();
    }
  }

  /**
   * {@link #getCached}: the block is not in the cache; read it ({@link #fetched}) and {@link
   * #search} it.
   */
  public static final int NOT_CACHED = -1;

  /**
   * Looks up {@code key} in the data block {@code span} if the block cache holds it, reading
   * nothing: 1 if found (into {@code out}), 0 if the block does not hold the key, {@link
   * #NOT_CACHED} otherwise.
   */
  public int getCached(byte[] key, KeyRecord out, BlockSpan span) {
    if (cache == null) return NOT_CACHED;
    BlockCache.Block pinned = cache.get(owner, span.offset, BlockCache.Kind.TABLE_DATA);
    if (pinned == null) return NOT_CACHED;
    return searchPinned(pinned, span, key, out) ? 1 : 0;
  }

  /**
   * A data block read through the read transport, checked and parsed: search it with {@link
   * #search}.
   */
  public static final class FetchedBlock {
    private final Block block;
    private final BlockSpan span;

    private FetchedBlock(Block block, BlockSpan span) {
      this.block = block;
      this.span = span;
    }
  }

  /**
   * The data block {@code span} from the {@code got} bytes a batched read put in {@code buf} (it
   * asked for {@link BlockSpan#readSize()}): checked as a point read checks it, counted as a block
   * read, and offered to the block cache as a point read's block is.
   *
   * @throws CorruptionException if the file ended early or the block is damaged
   */
  public FetchedBlock fetched(BlockSpan span, byte[] buf, int got) {
    checkOpen();
    if (got != span.readSize()) {
      throw new CorruptionException(
          description,
          span.offset,
          "file ends " + got + " bytes into a " + span.readSize() + "-byte read");
    }
    checkTrailer(buf, span.offset, span.size);
    Block b = Block.parse(buf, span.size, span.offset, description);
    blockReads.increment();
    if (b.isEmpty())
      throw new CorruptionException(
          description, span.offset, "data block at " + span.offset + " is empty");
    if (cache != null) cacheBlock(span.offset, b);
    return new FetchedBlock(b, span);
  }

  /**
   * Looks up {@code key} in a fetched block, where {@code span} ({@link #dataBlockFor} of the key;
   * several keys may share one fetched block) says to look; if present fills {@code out} and
   * returns true.
   */
  public boolean search(FetchedBlock fetched, BlockSpan span, byte[] key, KeyRecord out) {
    if (span.offset != fetched.span.offset)
      throw new InvalidArgumentException("the key's block is not the block fetched");
    return search(fetched.block, span, key, out);
  }

  private boolean searchPinned(BlockCache.Block pinned, BlockSpan span, byte[] key, KeyRecord out) {
    long offset = span.offset;
    BlockIter it = LOOKUP.get();
    try {
      it.resetTrusted(
          pinned.base,
          pinned.address,
          pinned.size,
          offset,
          description); // a cache hit makes no block
      return found(it, span, key, out);
    } finally {
      it.release();
      pinned.release();
    }
  }

  private boolean search(Block b, BlockSpan span, byte[] key, KeyRecord out) {
    BlockIter it = LOOKUP.get();
    try {
      it.reset(b);
      return found(it, span, key, out);
    } finally {
      it.release();
    }
  }

  /**
   * Finds {@code key} in the block {@code it} holds: at the entry the trie named ({@link
   * BlockIter#matchAt}), or by searching the block.
   */
  private static boolean found(BlockIter it, BlockSpan span, byte[] key, KeyRecord out) {
    if (span.entry >= 0) {
      if (!it.matchAt(span.entry, key, span.known)) return false;
    } else {
      it.seek(key);
      if (!it.valid() || it.compareKey(key) != 0) return false;
    }
    out.set(key, it.seqno, it.docSize, it.tombstone, it.hint, it.olderReported, it.expiry);
    return true;
  }

  /**
   * Caches a data block just read and checked (a heap block from {@link #dataBlock(long, int,
   * int)}) if this is its second read lately ({@link BlockCache#admitOnSecondRead}).
   */
  private void cacheBlock(long offset, Block b) {
    if (!cache.admitOnSecondRead(owner, offset)) return;
    cache.put(owner, offset, BlockCache.Kind.TABLE_DATA, (byte[]) b.base, b.length).release();
    if (closed) cache.remove(owner, offset); // raced with close: do not leave it cached
  }

  /**
   * False if {@code key} is certainly absent: outside the table's key range or rejected by the
   * bloom filter. Reads from the file only to reload a filter the block cache evicted.
   */
  public boolean mayContain(byte[] key) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    return mayContain(key, BloomFilter.hash(key));
  }

  /**
   * As {@link #mayContain(byte[])} with the key's {@link #keyHash}, computed once for many tables.
   */
  public boolean mayContain(byte[] key, long hash) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    return mayContain(key, hash, true);
  }

  /**
   * As {@link #mayContain(byte[], long)} for a point lookup, which reads no filter to decide: if
   * the block cache no longer holds the table's filter, the key range alone answers (true inside
   * it). Loading a cold filter is one read, of the whole filter (hundreds of KiB for a large
   * table), to save at most one read of a data block, which answers the lookup itself; so skipping
   * it never costs that lookup more reads, and spares the cache the filter when filters do not fit
   * it (they are loaded when a table opens, and stay cached while the cache has room for them;
   * {@link #mayContain(byte[], long)}, which flushes and compactions use, loads them back). The
   * price: once a filter is evicted, each later lookup of an absent key in its range reads a data
   * block where a reloaded filter would have answered many.
   */
  public boolean mayContainIfFilterCached(byte[] key, long hash) {
    return mayContain(key, hash, false);
  }

  /**
   * Key range, then the bloom filter: the cached one, or with {@code loadFilter} one read back;
   * else true.
   */
  private boolean mayContain(byte[] key, long hash, boolean loadFilter) {
    checkOpen();
    if (info.entryCount() == 0
        || KeyRecord.compareKeys(key, info.smallestKey()) < 0
        || KeyRecord.compareKeys(key, info.largestKey()) > 0) {
      return false;
    }
    BlockCache.Block f = loadFilter ? filter() : cachedFilter();
    if (f == null) return true; // no filter, or a cold one not read back: the data block decides
    try {
      return BloomFilter.mayContain(f.base, f.address, f.size, hash);
    } finally {
      f.release();
    }
  }

  /**
   * {@link #mayContain(byte[], long)} for many keys, the filter pinned once: for each {@code i} in
   * {@code [from, to)} not {@code skip}ped, whether the table may hold {@code keys[i]} (its hash
   * {@code hashes[i]}) into {@code maybe[i]} ({@code maybe[i]} is left alone where skipped).
   * Probing one table's filter for a run of keys keeps it in the CPU's cache, where probing key by
   * key across many tables missed it on nearly every probe.
   */
  public void mayContainAll(
      byte[][] keys, long[] hashes, int from, int to, boolean[] skip, boolean[] maybe) {
    checkOpen();
    if (info.entryCount() == 0) {
      for (int i = from; i < to; i++) if (!skip[i]) maybe[i] = false;
      return;
    }
    BlockCache.Block f = filter();
    try {
      byte[] smallest = info.smallestKey(), largest = info.largestKey();
      for (int i = from; i < to; i++) {
        if (skip[i]) continue;
        byte[] k = keys[i];
        maybe[i] =
            KeyRecord.compareKeys(k, smallest) >= 0
                && KeyRecord.compareKeys(k, largest) <= 0
                && (f == null || BloomFilter.mayContain(f.base, f.address, f.size, hashes[i]));
      }
    } finally {
      if (f != null) f.release();
    }
  }

  /**
   * The table's bloom filter pinned for many probes, one key at a time (a compaction probing the
   * keys of its merge in order); {@link FilterProbe#close} unpins it. Without a filter every probe
   * says yes.
   */
  public FilterProbe filterProbe() {
    checkOpen();
    return new FilterProbe(filter());
  }

  /** A pinned bloom filter ({@link #filterProbe}). Thread-safety: one thread at a time. */
  public final class FilterProbe implements AutoCloseable {
    private BlockCache.Block filter;
    private boolean closed;

    private FilterProbe(BlockCache.Block filter) {
      this.filter = filter;
    }

    /**
     * False if the filter rules out the key whose {@link #keyHash} is {@code hash}; no key range
     * check.
     */
    public boolean mayContain(long hash) {
      if (closed) throw new ClosedException("filter probe is closed");
      checkOpen();
      return filter == null
          || BloomFilter.mayContain(filter.base, filter.address, filter.size, hash);
    }

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      if (filter != null) filter.release();
      filter = null;
    }
  }

  /** The bloom filter hash of {@code key}, for {@link #mayContain(byte[], long)}. */
  public static long keyHash(byte[] key) {
    return BloomFilter.hash(key);
  }

  /**
   * A new unpositioned iterator over the table; call a seek method first. It uses cached data
   * blocks but does not cache what it reads (compaction's reads must not evict the hot blocks).
   */
  public TableIterator iterator() {
    return iterator(false);
  }

  /**
   * As {@link #iterator()}; with {@code fillCache} the blocks it reads go into the cache (scans).
   */
  public TableIterator iterator(boolean fillCache) {
    checkOpen();
    return new TableIterator(this, fillCache, null);
  }

  /**
   * As {@link #iterator()}, for a caller that goes through the table in file order (a merge, or a
   * cursor probing ascending keys that reach most of its blocks): the blocks that are not cached
   * are read in chunks of up to {@value Readahead#MAX} bytes ({@link Readahead}), not one by one.
   */
  public TableIterator sequentialIterator() {
    checkOpen();
    return new TableIterator(this, false, new Readahead());
  }

  /** Data blocks read from the file so far, by gets and iterators together. */
  public long blockReads() {
    return blockReads.sum();
  }

  public TableInfo info() {
    return info;
  }

  /** Index and filter blocks read from the file again because the block cache had evicted them. */
  /** When the table's expiring documents expire ({@link ExpiryHistogram#NONE} if none does). */
  public ExpiryHistogram expiry() {
    return expiry;
  }

  public long metaReads() {
    return metaReads.sum();
  }

  /** Navigation pages of an HB+-trie table read from the file (0 for a block table). */
  public long navigationReads() {
    return navReads.sum();
  }

  /**
   * Bytes of the table's index: a block table's index block, an HB+-trie table's navigation pages
   * and header (trailers included).
   */
  public long indexBytes() {
    return indexBytes;
  }

  /** An HB+-trie table's shape ({@link TrieIndex#describe}), for tests; null for a block table. */
  String describeTrie() {
    return trie == null ? null : trie.describe();
  }

  /** The chunk size of an HB+-trie table; 0 for a block table. */
  public int trieChunkBytes() {
    return trie == null ? 0 : trie.chunkBytes();
  }

  /**
   * An HB+-trie table's navigation page at {@code offset}, pinned: the cached one, or read, checked
   * and cached (as index; the cache drops it when the owner's blocks age out).
   */
  private BlockCache.Block navPage(long offset, int size) {
    checkOpen();
    if (cache != null) {
      BlockCache.Block b = cache.get(owner, offset, BlockCache.Kind.TABLE_INDEX);
      if (b != null) return b;
    }
    if (size > MAX_BLOCK_READ) {
      throw new CorruptionException(
          description, offset, "page of " + size + " bytes is larger than any table holds");
    }
    byte[] buf = readVerified(offset, size);
    navReads.increment();
    if (cache == null) return BlockCache.heapBlock(buf, size, BlockCache.Kind.TABLE_INDEX);
    BlockCache.Block b = cache.put(owner, offset, BlockCache.Kind.TABLE_INDEX, buf, size);
    if (closed) cache.remove(owner, offset); // raced with close: do not leave it cached
    return b;
  }

  /** Number of data blocks. */
  public int blockCount() {
    return blockCount;
  }

  /**
   * Closes the file and drops the table's index and filter from the cache (not its data blocks,
   * which age out: finding them would take a scan of the cache or a read of the index); idempotent.
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      file.close();
    } finally {
      if (cache != null) {
        cache.remove(owner, footer.indexOffset());
        cache.remove(owner, footer.filterOffset());
      }
    }
  }

  /**
   * Index of the first data block whose separator is at or after {@code key}; blockCount() if none.
   */
  int findBlock(byte[] key) {
    if (trie != null) return trie.lowerBound(key);
    BlockCache.Block idx = index();
    try {
      return FlatIndex.find(idx.base, idx.address, key);
    } finally {
      idx.release();
    }
  }

  /**
   * Data block {@code i} on the heap: a copy of the cached block, or read, verified and parsed (and
   * cached if {@code fillCache}).
   */
  Block dataBlock(int i, boolean fillCache) {
    return dataBlock(i, fillCache, null);
  }

  /**
   * As {@link #dataBlock(int, boolean)}, a block not cached read through {@code ahead} if not null.
   */
  Block dataBlock(int i, boolean fillCache, Readahead ahead) {
    checkOpen();
    long offset;
    int size;
    BlockCache.Block idx = index();
    try {
      offset = FlatIndex.blockOffset(idx.base, idx.address, i);
      size = FlatIndex.blockSize(idx.base, idx.address, i);
    } finally {
      idx.release();
    }
    return dataBlock(i, offset, size, fillCache, ahead);
  }

  /**
   * Copies the offsets and sizes of data blocks {@code from}, {@code from + 1}, ... into {@code
   * offsets} and {@code sizes}, as many as fit and exist, through one fetch of the index; returns
   * how many. A scan reads its blocks through these ({@link #dataBlock(int, long, int, boolean,
   * Readahead)}), so a block cache that evicts the index between two blocks does not make it decode
   * the whole index again for each.
   */
  int blockHandles(int from, long[] offsets, int[] sizes) {
    checkOpen();
    int n = Math.min(offsets.length, blockCount - from);
    if (n <= 0) return 0;
    BlockCache.Block idx = index();
    try {
      for (int k = 0; k < n; k++) {
        offsets[k] = FlatIndex.blockOffset(idx.base, idx.address, from + k);
        sizes[k] = FlatIndex.blockSize(idx.base, idx.address, from + k);
      }
    } finally {
      idx.release();
    }
    return n;
  }

  /**
   * Data block {@code i}, at {@code offset} and {@code size} bytes as the index gives them: as
   * {@link #dataBlock(int, boolean, Readahead)}.
   */
  Block dataBlock(int i, long offset, int size, boolean fillCache, Readahead ahead) {
    checkOpen();
    if (cache == null) return dataBlock(offset, size, i, ahead);
    BlockCache.Block pinned =
        fillCache
            ? cache.get(owner, offset, BlockCache.Kind.TABLE_DATA)
            : cache.find(owner, offset);
    if (pinned != null) {
      try {
        return Block.trusted(pinned.base, pinned.address, pinned.size, offset, description)
            .onHeap();
      } finally {
        pinned.release();
      }
    }
    Block b = dataBlock(offset, size, i, ahead);
    if (fillCache) cacheBlock(offset, b);
    return b;
  }

  /**
   * The one data-block read path: reads (through {@code ahead} if not null), verifies and parses
   * the block at {@code offset}.
   */
  private Block dataBlock(long offset, int size, int i, Readahead ahead) {
    checkOpen();
    Block b = readBlock(offset, size, ahead);
    blockReads.increment();
    if (b.isEmpty())
      throw new CorruptionException(
          description, offset, "data block " + (i < 0 ? "at " + offset : i) + " is empty");
    return b;
  }

  private Block readBlock(long offset, int size) {
    return readBlock(offset, size, null);
  }

  private Block readBlock(long offset, int size, Readahead ahead) {
    byte[] buf = readVerified(offset, size, ahead);
    return Block.parse(buf, size, offset, description);
  }

  private byte[] readVerified(long offset, int size) {
    return readVerified(offset, size, null);
  }

  /**
   * Reads a block's contents and trailer (through {@code ahead} if not null: a data block) and
   * checks the trailer; returns both in one array, the contents in {@code [0, size)}.
   */
  private byte[] readVerified(long offset, int size, Readahead ahead) {
    if (size > MAX_BLOCK_READ) {
      throw new CorruptionException(
          description, offset, "block of " + size + " bytes is larger than any table holds");
    }
    byte[] buf =
        ahead == null || offset + size + Format.TRAILER_SIZE > dataEnd
            ? readExact(offset, size + Format.TRAILER_SIZE)
            : ahead.read(file, offset, size + Format.TRAILER_SIZE, dataEnd, description);
    checkTrailer(buf, offset, size);
    return buf;
  }

  /**
   * Checks the trailer after a block's {@code size} content bytes in {@code buf}: its checksum and
   * compression type.
   */
  private void checkTrailer(byte[] buf, long offset, int size) {
    int crc = Format.getIntLE(buf, size + Format.TRAILER_CRC_OFFSET);
    if (crc != Format.crc(buf, 0, size + 1)) {
      throw new CorruptionException(description, offset, "block checksum mismatch");
    }
    int type = buf[size + Format.TRAILER_TYPE_OFFSET];
    if (type != Format.COMPRESSION_NONE) {
      throw new CorruptionException(description, offset + size, "unknown compression type " + type);
    }
  }

  private byte[] readExact(long offset, int len) {
    byte[] buf = new byte[len];
    int n = file.read(offset, ByteBuffer.wrap(buf));
    if (n != len) {
      throw new CorruptionException(
          description, offset, "file ends " + n + " bytes into a " + len + "-byte read");
    }
    return buf;
  }

  /**
   * Checks that a block of {@code size} content bytes at {@code offset} ends, trailer included, at
   * {@code end}.
   */
  private void expectEnd(long offset, int size, long end, String what) {
    if (offset > end || end - offset != (long) size + Format.TRAILER_SIZE) {
      throw new CorruptionException(
          description, offset, what + " [" + offset + ", +" + size + ") does not end at " + end);
    }
  }

  void checkOpen() {
    if (closed) throw new ClosedException("table " + description + " is closed");
  }

  String description() {
    return description;
  }
}
