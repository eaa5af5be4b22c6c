package io.basaltdb;

import java.util.Objects;

/**
 * How one keyspace is laid out, chosen when it is created ({@link Basalt#createKeyspace(String,
 * KeyspaceOptions)}) and kept in the store's manifest: a keyspace's options never change, and a
 * store opened by a build that reads them keeps them (a store whose keyspaces all have the defaults
 * is written in the manifest format older builds read).
 *
 * <p>The key index format (docs/architecture.md, "Choosing a key index format"):
 *
 * <ul>
 *   <li>{@link KeyIndexFormat#BLOCK} (the default): LevelDB-style tables of prefix-compressed keys
 *       in 4 KiB blocks under one index of the shortest separators between blocks.
 *   <li>{@link KeyIndexFormat#HB_TRIE}: ForestDB's HB+-trie (seed 003): records in key order, the
 *       keys' shared prefixes stored once per block, found through a trie of fixed-size key chunks
 *       ({@link #trieChunkBytes}) whose 4 KiB navigation pages go through the block cache. For long
 *       keys, and keys with long shared prefixes (URLs, composite document keys, Kafka Streams
 *       window keys); the index costs a few bytes per key whatever the key length.
 * </ul>
 *
 * Both formats give the same answers; compaction, garbage collection, snapshots, the change feed,
 * backups and recovery work the same on either. The in-memory store keeps no key index tables and
 * refuses a format other than {@link KeyIndexFormat#BLOCK}.
 *
 * <p>Thread-safety: a mutable builder; configure it in one thread, then hand it to {@link
 * Basalt#createKeyspace(String, KeyspaceOptions)}, which copies it.
 */
public final class KeyspaceOptions {
  /** The layout of a keyspace's key index tables. */
  public enum KeyIndexFormat {
    /** Prefix-compressed blocks under a separator index (the default). */
    BLOCK,
    /** ForestDB's HB+-trie (seed 003, section 3) over the keys' fixed-size chunks. */
    HB_TRIE
  }

  private KeyIndexFormat keyIndexFormat = KeyIndexFormat.BLOCK;
  private int trieChunkBytes = 8;

  private KeyspaceOptions() {}

  /** Block tables; a trie chunk of 8 bytes should {@link KeyIndexFormat#HB_TRIE} be chosen. */
  public static KeyspaceOptions defaults() {
    return new KeyspaceOptions();
  }

  /** The key index format; default {@link KeyIndexFormat#BLOCK}. */
  public KeyspaceOptions keyIndexFormat(KeyIndexFormat format) {
    if (format == null) throw new InvalidArgumentException("keyIndexFormat must not be null");
    this.keyIndexFormat = format;
    return this;
  }

  /**
   * Bytes per chunk of an {@link KeyIndexFormat#HB_TRIE} key index: 4, 8 or 16; default 8 (the
   * paper's). A longer chunk tells more keys apart per trie level but makes each node entry larger;
   * 8 suits most keys. Ignored by {@link KeyIndexFormat#BLOCK}.
   */
  public KeyspaceOptions trieChunkBytes(int bytes) {
    if (bytes != 4 && bytes != 8 && bytes != 16)
      throw new InvalidArgumentException("trieChunkBytes must be 4, 8 or 16, was " + bytes);
    this.trieChunkBytes = bytes;
    return this;
  }

  public KeyIndexFormat keyIndexFormat() {
    return keyIndexFormat;
  }

  public int trieChunkBytes() {
    return trieChunkBytes;
  }

  KeyspaceOptions copy() {
    KeyspaceOptions o = new KeyspaceOptions();
    o.keyIndexFormat = keyIndexFormat;
    o.trieChunkBytes = trieChunkBytes;
    return o;
  }

  /** The trie chunk size a manifest records for these options: 0 for block tables. */
  int manifestChunk() {
    return keyIndexFormat == KeyIndexFormat.HB_TRIE ? trieChunkBytes : 0;
  }

  /** The options a manifest's chunk size stands for. */
  static KeyspaceOptions ofManifestChunk(int chunk) {
    KeyspaceOptions o = defaults();
    if (chunk != 0) o.keyIndexFormat(KeyIndexFormat.HB_TRIE).trieChunkBytes(chunk);
    return o;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof KeyspaceOptions o
        && o.keyIndexFormat == keyIndexFormat
        && o.trieChunkBytes == trieChunkBytes;
  }

  @Override
  public int hashCode() {
    return Objects.hash(keyIndexFormat, trieChunkBytes);
  }

  @Override
  public String toString() {
    return "KeyspaceOptions{keyIndexFormat="
        + keyIndexFormat
        + (keyIndexFormat == KeyIndexFormat.HB_TRIE ? ", trieChunkBytes=" + trieChunkBytes : "")
        + "}";
  }
}
