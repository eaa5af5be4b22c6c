package io.basaltdb.internal.sstable;

import io.basaltdb.InvalidArgumentException;

/**
 * How a {@link TableWriter} lays out a table. None of these needs to be known to read the table
 * back: everything a reader needs is in the file (docs/format.md, "SSTable").
 *
 * <p>Thread-safety: immutable.
 *
 * @param blockSize target size of a data block's contents in bytes; a block is cut once it reaches
 *     this size, so blocks are slightly larger, and a single entry larger than it gets a block of
 *     its own; default 4096, range 32 to 64 MiB
 * @param restartInterval entries between restart points (entries stored with their full key) in a
 *     data block; larger saves space, smaller makes a lookup scan fewer entries; default 16, range
 *     1 to 1024
 * @param bloomBitsPerKey bits of bloom filter per key; 10 gives about 1% false positives; 0 writes
 *     no filter; default 10, range 0 to 64
 * @param trieChunkBytes 0 writes a block table (the default layout); 4, 8 or 16 writes an HB+-trie
 *     table ({@link TrieBuilder}) with chunks of that many bytes, whose record blocks restart every
 *     {@code restartInterval} entries ({@link #TRIE_RESTART_INTERVAL} from {@link #withTrie})
 * @param trieSkewRule false builds an HB+-trie table without the section 3.2 rule (every shared
 *     chunk becomes a trie node): only to measure what the rule is worth
 */
public record TableOptions(
    int blockSize,
    int restartInterval,
    int bloomBitsPerKey,
    int trieChunkBytes,
    boolean trieSkewRule) {
  public static final int MIN_BLOCK_SIZE = 32;
  public static final int MAX_BLOCK_SIZE = 64 << 20;
  public static final int MAX_RESTART_INTERVAL = 1024;
  public static final int MAX_BLOOM_BITS_PER_KEY = 64;

  /**
   * Restart interval of an HB+-trie table's record blocks: a lookup that ends on a record decodes
   * that one entry, so restarts serve only seeks and leaf trees, and a long interval saves the full
   * keys a restart stores.
   */
  public static final int TRIE_RESTART_INTERVAL = 64;

  /** A block table's options. */
  public TableOptions(int blockSize, int restartInterval, int bloomBitsPerKey) {
    this(blockSize, restartInterval, bloomBitsPerKey, 0, true);
  }

  public static TableOptions defaults() {
    return new TableOptions(4096, 16, 10);
  }

  public TableOptions withBlockSize(int n) {
    return new TableOptions(n, restartInterval, bloomBitsPerKey, trieChunkBytes, trieSkewRule);
  }

  public TableOptions withRestartInterval(int n) {
    return new TableOptions(blockSize, n, bloomBitsPerKey, trieChunkBytes, trieSkewRule);
  }

  public TableOptions withBloomBitsPerKey(int n) {
    return new TableOptions(blockSize, restartInterval, n, trieChunkBytes, trieSkewRule);
  }

  /**
   * An HB+-trie table with {@code chunkBytes}-byte chunks (0: a block table) and record blocks
   * restarting every {@link #TRIE_RESTART_INTERVAL} entries.
   */
  public TableOptions withTrie(int chunkBytes) {
    return new TableOptions(
        blockSize,
        chunkBytes == 0 ? restartInterval : TRIE_RESTART_INTERVAL,
        bloomBitsPerKey,
        chunkBytes,
        trieSkewRule);
  }

  /** As this, with the section 3.2 rule on or off (off only to measure it). */
  public TableOptions withTrieSkewRule(boolean on) {
    return new TableOptions(blockSize, restartInterval, bloomBitsPerKey, trieChunkBytes, on);
  }

  public boolean isTrie() {
    return trieChunkBytes != 0;
  }

  /** Throws {@link InvalidArgumentException} naming the first field out of range. */
  public void validate() {
    if (blockSize < MIN_BLOCK_SIZE || blockSize > MAX_BLOCK_SIZE) {
      throw new InvalidArgumentException(
          "blockSize must be between "
              + MIN_BLOCK_SIZE
              + " and "
              + MAX_BLOCK_SIZE
              + ", was "
              + blockSize);
    }
    if (restartInterval < 1 || restartInterval > MAX_RESTART_INTERVAL) {
      throw new InvalidArgumentException(
          "restartInterval must be between 1 and "
              + MAX_RESTART_INTERVAL
              + ", was "
              + restartInterval);
    }
    if (trieChunkBytes != 0 && !TrieBuilder.validChunk(trieChunkBytes)) {
      throw new InvalidArgumentException(
          "trieChunkBytes must be 0 (a block table), 1, 2, 4, 8 or 16, was " + trieChunkBytes);
    }
    if (bloomBitsPerKey < 0 || bloomBitsPerKey > MAX_BLOOM_BITS_PER_KEY) {
      throw new InvalidArgumentException(
          "bloomBitsPerKey must be between 0 and "
              + MAX_BLOOM_BITS_PER_KEY
              + ", was "
              + bloomBitsPerKey);
    }
  }
}
