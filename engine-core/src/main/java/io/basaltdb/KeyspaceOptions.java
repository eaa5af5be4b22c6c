package io.basaltdb;

import io.basaltdb.internal.engine.base.KeyspaceLayout;
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
  /** What a keyspace's key index is. */
  public enum Kind {
    /** An LSM tree of key index tables in key order (the default): gets, scans and cursors. */
    ORDERED,
    /**
     * CedrusDB's lazy-trie (seed 004) over a 64-bit hash of each key, held off the heap: gets,
     * puts, deletes, batches, expiry, item counts, snapshots and the change feed, but no scans or
     * cursors ({@link UnsupportedOperationException}). Flushes apply to the trie instead of writing
     * tables, so there is no key index compaction, and replaced versions become garbage at once.
     */
    HASHED
  }

  /** The layout of a keyspace's key index tables. */
  public enum KeyIndexFormat {
    /** Prefix-compressed blocks under a separator index (the default). */
    BLOCK,
    /** ForestDB's HB+-trie (seed 003, section 3) over the keys' fixed-size chunks. */
    HB_TRIE
  }

  private KeyIndexFormat keyIndexFormat = KeyIndexFormat.BLOCK;
  private int trieChunkBytes = 8;
  private Kind kind = Kind.ORDERED;
  private int branching = 256;
  private int sluggishness = 16;

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

  /** The keyspace's kind; default {@link Kind#ORDERED}. */
  public KeyspaceOptions kind(Kind kind) {
    if (kind == null) throw new InvalidArgumentException("kind must not be null");
    this.kind = kind;
    return this;
  }

  /**
   * Children per node of a {@link Kind#HASHED} keyspace's lazy-trie: a power of two from 2 to 256;
   * default 256 (the paper's, section 4.2.1). Each node costs 8 bytes per child. Ignored by {@link
   * Kind#ORDERED}.
   */
  public KeyspaceOptions branching(int b) {
    if (b < 2 || b > 256 || Integer.bitCount(b) != 1)
      throw new InvalidArgumentException(
          "branching must be a power of two from 2 to 256, was " + b);
    this.branching = b;
    return this;
  }

  /**
   * Most distinct key hashes a {@link Kind#HASHED} keyspace's lazy-trie keeps in one leaf list
   * before it splits it (sluggishness, section 2.3): 1 to 1024; default 16 (the paper's). Larger
   * lists cost fewer nodes and a longer scan per get. Ignored by {@link Kind#ORDERED}.
   */
  public KeyspaceOptions sluggishness(int s) {
    if (s < 1 || s > 1024)
      throw new InvalidArgumentException("sluggishness must be from 1 to 1024, was " + s);
    this.sluggishness = s;
    return this;
  }

  public Kind kind() {
    return kind;
  }

  public int branching() {
    return branching;
  }

  public int sluggishness() {
    return sluggishness;
  }

  /** Throws unless these options name one layout: a hashed keyspace has no key index tables. */
  void validate() {
    if (kind == Kind.HASHED && keyIndexFormat != KeyIndexFormat.BLOCK) {
      throw new InvalidArgumentException(
          "a HASHED keyspace has no key index tables: keyIndexFormat "
              + keyIndexFormat
              + " applies to ORDERED keyspaces only");
    }
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
    o.kind = kind;
    o.branching = branching;
    o.sluggishness = sluggishness;
    return o;
  }

  /**
   * The layout code a manifest records for these options ({@link KeyspaceLayout}): 0 for block
   * tables.
   */
  int manifestChunk() {
    if (kind == Kind.HASHED) return KeyspaceLayout.hashed(branching, sluggishness);
    return keyIndexFormat == KeyIndexFormat.HB_TRIE ? trieChunkBytes : 0;
  }

  /** The options a manifest's layout code stands for. */
  static KeyspaceOptions ofManifestChunk(int code) {
    KeyspaceOptions o = defaults();
    if (KeyspaceLayout.isHashed(code)) {
      o.kind(Kind.HASHED)
          .branching(KeyspaceLayout.branching(code))
          .sluggishness(KeyspaceLayout.sluggishness(code));
    } else if (code != 0) {
      o.keyIndexFormat(KeyIndexFormat.HB_TRIE).trieChunkBytes(code);
    }
    return o;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof KeyspaceOptions o
        && o.keyIndexFormat == keyIndexFormat
        && o.trieChunkBytes == trieChunkBytes
        && o.kind == kind
        && o.branching == branching
        && o.sluggishness == sluggishness;
  }

  @Override
  public int hashCode() {
    return Objects.hash(keyIndexFormat, trieChunkBytes, kind, branching, sluggishness);
  }

  @Override
  public String toString() {
    if (kind == Kind.HASHED) {
      return "KeyspaceOptions{kind=HASHED, branching="
          + branching
          + ", sluggishness="
          + sluggishness
          + "}";
    }
    return "KeyspaceOptions{keyIndexFormat="
        + keyIndexFormat
        + (keyIndexFormat == KeyIndexFormat.HB_TRIE ? ", trieChunkBytes=" + trieChunkBytes : "")
        + "}";
  }
}
