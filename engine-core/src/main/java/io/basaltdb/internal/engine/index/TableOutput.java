package io.basaltdb.internal.engine.index;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.sstable.TableInfo;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Writes key index records, in key order, into new tables of one keyspace and level, cutting a new
 * table when one reaches {@code targetBytes} of data (a flush writes one table; a compaction cuts
 * at {@link Options#tableTargetBytes}). Each finished table is synced, opened through the {@link
 * TableCache} and returned; nothing names it until a {@link
 * io.basaltdb.internal.engine.version.VersionEdit} commits it.
 *
 * <p>Thread-safety: one thread (a flush or a compaction job).
 */
public final class TableOutput {
  private final Storage storage;
  private final TableCache tables;
  private final AtomicLong fileNumbers;
  private final Options options;
  private final int keyspace;
  private final int level;
  private final long targetBytes;
  private final LongAdder bytesWritten;
  private final List<KeyspaceFiles.Table> finished = new ArrayList<>();

  /** File numbers of the finished tables holding a tombstone. */
  private final List<Long> withTombstones = new ArrayList<>();

  private boolean tombstoneInTable;
  private TableWriter writer;
  private StorageFile file;
  private long fileNumber;

  /** Records and their document bytes written so far. */
  private long records;

  private long docBytes;

  /** Records written so far. */
  public long records() {
    return records;
  }

  /** The document bytes the records written so far name. */
  public long docBytes() {
    return docBytes;
  }

  /**
   * False only to measure what ForestDB's section 3.2 rule is worth: {@code
   * -Dbasalt.test.noTrieSkewRule=true} builds HB+-trie tables without it (every shared chunk a trie
   * node). Never set it for a store that matters: the tables are valid, only larger and slower.
   */
  /**
   * An HB+-trie table is cut once its keys, whole, take this many bytes: its builder holds them on
   * the heap until the table is finished (a flush's one table included).
   */
  static final long MAX_TRIE_KEY_BYTES = 256L << 20;

  private static final boolean TRIE_SKEW_RULE = !Boolean.getBoolean("basalt.test.noTrieSkewRule");

  /** The keyspace's HB+-trie chunk size, 0 for block tables ({@link TableOptions#withTrie}). */
  private final int trieChunkBytes;

  public TableOutput(
      Storage storage,
      TableCache tables,
      AtomicLong fileNumbers,
      Options options,
      int keyspace,
      int level,
      long targetBytes,
      LongAdder bytesWritten,
      int trieChunkBytes) {
    this.trieChunkBytes = trieChunkBytes;
    this.storage = storage;
    this.tables = tables;
    this.fileNumbers = fileNumbers;
    this.options = options;
    this.keyspace = keyspace;
    this.level = level;
    this.targetBytes = targetBytes;
    this.bytesWritten = bytesWritten;
  }

  public void add(byte[] key, long seqno, int docSize, boolean tombstone, long hint) {
    add(key, seqno, docSize, tombstone, hint, false);
  }

  /**
   * As {@link #add(byte[], long, int, boolean, long)}, with the record's {@code olderReported}
   * flag.
   */
  public void add(
      byte[] key, long seqno, int docSize, boolean tombstone, long hint, boolean olderReported) {
    add(key, seqno, docSize, tombstone, hint, olderReported, 0);
  }

  /**
   * As {@link #add(byte[], long, int, boolean, long, boolean)}, for a record that expires at {@code
   * expiry} (0: never).
   */
  public void add(
      byte[] key,
      long seqno,
      int docSize,
      boolean tombstone,
      long hint,
      boolean olderReported,
      long expiry) {
    if (writer == null) {
      fileNumber = fileNumbers.getAndIncrement();
      storage.mkdirs(FileNames.indexDir(keyspace));
      file = storage.create(FileNames.table(keyspace, fileNumber));
      writer =
          new TableWriter(
              file,
              TableOptions.defaults()
                  .withBlockSize(options.blockSize())
                  .withBloomBitsPerKey(options.bloomBitsPerKey())
                  .withTrie(trieChunkBytes)
                  .withTrieSkewRule(TRIE_SKEW_RULE));
    }
    writer.add(key, seqno, docSize, tombstone, hint, olderReported, expiry);
    tombstoneInTable |= tombstone;
    records++;
    docBytes += docSize;
    if (writer.dataSize() >= targetBytes || writer.trieKeyBytes() >= MAX_TRIE_KEY_BYTES) cutTable();
  }

  /**
   * Finishes the table being written, if any: the next record starts a new one (a guard boundary).
   */
  void cutTable() {
    if (writer == null) return;
    TableInfo info = writer.finish();
    file.close();
    writer = null;
    file = null;
    bytesWritten.add(info.fileSize());
    finished.add(
        new KeyspaceFiles.Table(fileNumber, level, tables.openTable(keyspace, fileNumber)));
    if (tombstoneInTable) withTombstones.add(fileNumber);
    tombstoneInTable = false;
  }

  /** File numbers of the tables written that hold a tombstone. */
  List<Long> withTombstones() {
    return withTombstones;
  }

  /** Finishes and returns every table written. */
  public List<KeyspaceFiles.Table> finish() {
    cutTable();
    return finished;
  }

  /** Closes and deletes everything written (a failure, or a stop before the commit). */
  public void abandon() {
    try {
      if (file != null) {
        file.close();
        storage.delete(FileNames.table(keyspace, fileNumber));
      }
      discard(storage, tables, keyspace, finished);
    } catch (RuntimeException ignored) {
      // the files are orphans then, deleted at the next open; the first error is the one reported
    }
  }

  /** Closes and deletes tables that were written but will never be committed. */
  static void discard(
      Storage storage, TableCache tables, int keyspace, List<KeyspaceFiles.Table> written) {
    for (KeyspaceFiles.Table t : written) {
      tables.close(t.reader());
      storage.delete(FileNames.table(keyspace, t.fileNumber()));
    }
  }
}
