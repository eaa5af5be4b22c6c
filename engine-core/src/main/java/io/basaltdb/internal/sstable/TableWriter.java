package io.basaltdb.internal.sstable;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * Writes one SSTable of the key index (seed 000, section 3) from records added in strictly
 * increasing key order. The file is laid out as (docs/format.md, "SSTable"):
 *
 * <pre>
 *   data block 0 | ... | data block n-1 | filter block? | meta block | index block | footer
 * </pre>
 *
 * every block followed by a 5-byte trailer (compression type 0, CRC32C of contents and type), so
 * every byte but the footer's is covered by a block checksum, and the footer has its own. The index
 * entry of a data block is written when the next block's first key is known, so it can be the
 * shortest key that separates the two blocks.
 *
 * <p>Blocks are gathered in a write buffer of {@link #WRITE_BUFFER} bytes and written together, at
 * the latest by {@link #finish()}, as a segment's are: one positional write per block made most of
 * a table's writes small, and with {@code Options.directWrites} only large writes go around the
 * page cache. Nothing reads a table before it is finished.
 *
 * <p>The file must be empty; the writer syncs it in {@link #finish()} but never closes it. After a
 * {@link io.basaltdb.StorageException} the writer is dead: the caller deletes the file.
 *
 * <p>Thread-safety: not thread-safe; one thread adds and finishes.
 */
public final class TableWriter {
  private final StorageFile file;
  private final TableOptions options;
  private final BlockBuilder data;
  private final BlockBuilder index;

  /** Where the next block goes. */
  private long offset;

  /** Bytes of blocks gathered into one file write. */
  static final int WRITE_BUFFER = 128 << 10;

  /** Blocks not yet written, from file offset {@link #pendingAt}; allocated at the first block. */
  private ByteBuffer pending;

  private long pendingAt;

  private byte[] smallestKey;
  private byte[] lastKey;
  private long entryCount;
  private long tombstones;
  private long minSeqno = Long.MAX_VALUE;
  private long maxSeqno = Long.MIN_VALUE;

  /**
   * Document bytes of every record, and the expiries and sizes of the expiring ones (the
   * histogram's input).
   */
  private long docBytes;

  private long[] expiries = new long[0];
  private int[] expiringSizes = new int[0];
  private int expiring;

  /** Key hashes for the filter; null when the table has none. */
  private long[] hashes;

  /** A data block was written whose index entry waits for the next key. */
  private boolean pendingIndex;

  private long pendingOffset;
  private int pendingSize;

  /** The trie's builder for an HB+-trie table ({@link TableOptions#isTrie}); null otherwise. */
  private final TrieBuilder trie;

  /** Data (record) blocks written, and their sizes (kept for an HB+-trie table's header). */
  private int blocksWritten;

  private int[] blockSizes = new int[64];

  /** Set when finish() starts or a write fails; no call is accepted after. */
  private boolean done;

  public TableWriter(StorageFile file, TableOptions options) {
    if (file == null || options == null)
      throw new InvalidArgumentException("file and options must not be null");
    options.validate();
    if (file.size() != 0) {
      throw new InvalidArgumentException(
          "table file " + file.name() + " must be empty, has " + file.size() + " bytes");
    }
    this.file = file;
    this.options = options;
    this.data =
        new BlockBuilder(options.restartInterval(), options.blockSize() + options.blockSize() / 4);
    this.index = new BlockBuilder(1, 1024);
    this.hashes = options.bloomBitsPerKey() > 0 ? new long[1024] : null;
    this.trie =
        options.isTrie() ? new TrieBuilder(options.trieChunkBytes(), options.trieSkewRule()) : null;
  }

  /**
   * Appends a record. {@code key} must sort strictly after the previous key ({@link
   * KeyRecord#compareKeys}); it is copied. {@code seqno} and {@code docSize} must not be negative.
   */
  public void add(byte[] key, long seqno, int docSize, boolean tombstone, long hint) {
    add(key, seqno, docSize, tombstone, hint, false);
  }

  /**
   * As {@link #add(byte[], long, int, boolean, long)}, with the record's {@link
   * KeyRecord#olderReported} flag.
   */
  public void add(
      byte[] key, long seqno, int docSize, boolean tombstone, long hint, boolean olderReported) {
    add(key, seqno, docSize, tombstone, hint, olderReported, 0);
  }

  /**
   * As {@link #add(byte[], long, int, boolean, long, boolean)}, with the record's {@link
   * KeyRecord#expiry} (0: none; a table with one is written in format version 5, with an {@link
   * ExpiryHistogram}).
   */
  public void add(
      byte[] key,
      long seqno,
      int docSize,
      boolean tombstone,
      long hint,
      boolean olderReported,
      long expiry) {
    checkOpen();
    if (expiry < 0) throw new InvalidArgumentException("expiry must not be negative: " + expiry);
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (key.length > KeyRecord.MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          "key of " + key.length + " bytes exceeds " + KeyRecord.MAX_KEY_SIZE);
    }
    if (seqno < 0 || docSize < 0) {
      throw new InvalidArgumentException(
          "seqno and docSize must not be negative: " + seqno + ", " + docSize);
    }
    if (lastKey != null && KeyRecord.compareKeys(lastKey, key) >= 0) {
      throw new InvalidArgumentException(
          "keys must be added in strictly increasing order; entry "
              + entryCount
              + " is not after the previous key");
    }
    byte[] k = key.clone();
    if (pendingIndex) {
      index.addHandle(shortestSeparator(lastKey, k), pendingOffset, pendingSize);
      pendingIndex = false;
    }
    if (trie != null) trie.add(k, blocksWritten, data.nextEntryOffset());
    data.addRecord(k, seqno, docSize, tombstone, hint, olderReported, expiry);
    docBytes += docSize;
    if (tombstone) tombstones++;
    if (expiry != 0) {
      if (expiring == expiries.length) {
        expiries = Arrays.copyOf(expiries, Math.max(16, expiring * 2));
        expiringSizes = Arrays.copyOf(expiringSizes, expiries.length);
      }
      expiries[expiring] = expiry;
      expiringSizes[expiring++] = docSize;
    }
    if (hashes != null) {
      if (entryCount == hashes.length) hashes = Arrays.copyOf(hashes, hashes.length * 2);
      hashes[(int) entryCount] = BloomFilter.hash(k);
    }
    if (smallestKey == null) smallestKey = k;
    lastKey = k;
    entryCount++;
    minSeqno = Math.min(minSeqno, seqno);
    maxSeqno = Math.max(maxSeqno, seqno);
    if (data.sizeEstimate() >= options.blockSize()) flushDataBlock();
  }

  /** Records added so far. */
  public long entryCount() {
    return entryCount;
  }

  /** Bytes of data blocks so far, written or pending: what compaction cuts its output tables by. */
  public long dataSize() {
    return offset + data.sizeEstimate();
  }

  /**
   * Writes the last data block, the filter, meta and index blocks and the footer, syncs the file
   * and returns what the table holds. An empty table (no records) is valid.
   */
  public TableInfo finish() {
    checkOpen();
    done = true;
    if (!data.isEmpty()) flushDataBlock();
    if (pendingIndex) index.addHandle(lastKey, pendingOffset, pendingSize);
    long recordsEnd = offset;
    byte[] trieRoot =
        trie == null
            ? null
            : trie.finish(
                page -> {
                  long at = offset;
                  writeBlock(page);
                  return at;
                });
    long filterOffset = 0;
    int filterSize = 0;
    if (hashes != null) {
      byte[] filter = BloomFilter.build(hashes, (int) entryCount, options.bloomBitsPerKey());
      Output out = new Output(filter.length + Format.TRAILER_SIZE);
      out.putBytes(filter, 0, filter.length);
      filterOffset = offset;
      filterSize = filter.length;
      writeBlock(out);
    }
    Output meta = new Output(64);
    ExpiryHistogram histogram =
        expiring == 0 ? null : ExpiryHistogram.build(expiries, expiringSizes, expiring, docBytes);
    int version = MetaBlock.versionOf(tombstones, histogram != null);
    if (trie != null) version = Format.VERSION_WITH_TOMBSTONES; // the meta layout of a trie table
    MetaBlock.encode(meta, smallestKey, lastKey, histogram, tombstones, version);
    long metaOffset = offset;
    int metaSize = meta.size();
    writeBlock(meta);
    Output idx = trie == null ? index.finish() : trieHeader(recordsEnd, trieRoot);
    if (trie != null) version = Format.VERSION_HB_TRIE;
    long indexOffset = offset;
    int indexSize = idx.size();
    writeBlock(idx);
    boolean empty = entryCount == 0;
    Footer footer =
        new Footer(
            filterOffset,
            filterSize,
            metaOffset,
            metaSize,
            indexOffset,
            indexSize,
            entryCount,
            empty ? 0 : minSeqno,
            empty ? 0 : maxSeqno,
            version);
    byte[] foot = footer.encode();
    done = true; // a failed write leaves the writer dead
    gather(foot, foot.length);
    flushPending();
    file.sync();
    return new TableInfo(
        offset, entryCount, smallestKey, lastKey, footer.minSeqno(), footer.maxSeqno(), tombstones);
  }

  private void flushDataBlock() {
    pendingOffset = offset;
    Output out = data.finish();
    pendingSize = out.size();
    writeBlock(out);
    if (blocksWritten == blockSizes.length)
      blockSizes = Arrays.copyOf(blockSizes, blocksWritten * 2);
    blockSizes[blocksWritten++] = pendingSize;
    pendingIndex = trie == null;
    data.reset();
  }

  /**
   * An HB+-trie table's header, where a block table has its index block (docs/format.md): chunk
   * size, the record blocks' sizes (they tile the file from offset 0), where the navigation pages
   * end, and the root's reference.
   */
  private Output trieHeader(long recordsEnd, byte[] root) {
    Output h = new Output(32 + 3 * blocksWritten + root.length);
    h.putByte(options.trieChunkBytes());
    h.putVarint(blocksWritten);
    for (int i = 0; i < blocksWritten; i++) h.putVarint(blockSizes[i]);
    h.putVarint(recordsEnd);
    h.putVarint(root.length);
    h.putBytes(root, 0, root.length);
    return h;
  }

  /**
   * Bytes of the keys an HB+-trie table's builder holds until {@link #finish} (all the table's
   * keys, whole); 0 for a block table. A caller cuts tables by this too: keys with long shared
   * prefixes take far more room whole than in the record blocks ({@link #dataSize}).
   */
  public long trieKeyBytes() {
    return trie == null ? 0 : trie.keyBytes();
  }

  /** Navigation bytes of an HB+-trie table (pages with their trailers); 0 for a block table. */
  public long navigationBytes() {
    return trie == null ? 0 : trie.navBytes();
  }

  /** {offset, content size} of an HB+-trie table's navigation pages, in file order. */
  java.util.List<long[]> navigationPages() {
    return trie == null ? java.util.List.of() : trie.pageSpans();
  }

  /** Trie nodes and leaf trees an HB+-trie table's navigation holds: {nodes, leaf trees, pages}. */
  int[] trieShape() {
    return trie == null ? new int[3] : new int[] {trie.trieNodes(), trie.leafTrees(), trie.pages()};
  }

  /** Appends the trailer to the contents in {@code out} and writes both at {@link #offset}. */
  private void writeBlock(Output out) {
    int size = out.size();
    out.putByte(Format.COMPRESSION_NONE);
    out.putIntLE(Format.crc(out.array(), 0, size + 1));
    boolean wasDone = done;
    done = true; // until the write returns: a failed write leaves the writer dead
    gather(out.array(), out.size());
    done = wasDone;
  }

  /**
   * Adds {@code len} bytes of {@code bytes} at {@link #offset} to the write buffer, writing the
   * buffer first if they do not fit, or them straight if they exceed it.
   */
  private void gather(byte[] bytes, int len) {
    if (pending == null) pending = ByteBuffer.allocate(WRITE_BUFFER);
    if (len > pending.remaining()) flushPending();
    if (len > pending.capacity()) {
      file.write(offset, ByteBuffer.wrap(bytes, 0, len));
      pendingAt = offset + len;
    } else {
      if (pending.position() == 0) pendingAt = offset;
      pending.put(bytes, 0, len);
    }
    offset += len;
  }

  /** Writes the gathered blocks to the file. */
  private void flushPending() {
    if (pending == null || pending.position() == 0) return;
    pending.flip();
    file.write(pendingAt, pending);
    pending.clear();
    pendingAt = offset;
  }

  private void checkOpen() {
    if (done)
      throw new ClosedException("table writer for " + file.name() + " is finished or failed");
  }

  /**
   * A short key {@code s} with {@code a <= s < b} (given {@code a < b}): {@code a} cut after its
   * first byte that differs from {@code b}, that byte incremented, when this stays below {@code b};
   * otherwise {@code a} itself.
   */
  static byte[] shortestSeparator(byte[] a, byte[] b) {
    int max = Math.min(a.length, b.length);
    int i = Arrays.mismatch(a, 0, max, b, 0, max);
    if (i < 0 || i + 1 >= a.length) return a; // a is a prefix of b, or cutting saves nothing
    int ai = a[i] & 0xFF;
    if (ai == 0xFF || ai + 1 >= (b[i] & 0xFF)) return a;
    byte[] s = Arrays.copyOf(a, i + 1);
    s[i] = (byte) (ai + 1);
    return s;
  }
}
