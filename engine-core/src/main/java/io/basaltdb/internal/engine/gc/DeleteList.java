package io.basaltdb.internal.engine.gc;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.sstable.TableInfo;
import io.basaltdb.internal.sstable.TableIterator;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A keyspace's delete list (Magma section 4): the stale seqnos of its log segments and their
 * document sizes, kept as an LSM of tables in the key index's table format. A record's key is its
 * seqno as 8 big-endian bytes (so key order is seqno order); its entry carries the seqno and the
 * document size, no bloom filter and no hint. A key index compaction writes its discards as one
 * level-0 table (in the edit that drops the versions); {@link SegmentCompactor} merges level 0 into
 * level 1 and merges the delete list with a segment's documents to rewrite it.
 *
 * <p>Thread-safety: an {@link Output} or a {@link Cursor} belongs to one thread.
 */
public final class DeleteList {
  private DeleteList() {}

  /**
   * Writes {@code n} stale versions, given as (seqno, document size) pairs in {@code pairs} in any
   * order, sorted by seqno as a level-0 delete list table of keyspace {@code ks} into {@code edit},
   * with the garbage they add to their segments ({@link VersionEdit#discards}); returns the table
   * (none if {@code n} is 0), named by nothing until the edit commits.
   */
  /**
   * As {@link #writeLevel0}, for versions newly found stale (a flush's, a trie checkpoint's): also
   * counts them in the keyspace's discarded counters in {@code edit}. Returns their bytes.
   */
  public static long writeDiscarded(
      Storage storage,
      TableCache tables,
      AtomicLong fileNumbers,
      Options options,
      int ks,
      long[] pairs,
      int n,
      VersionEdit edit,
      LongAdder bytesWritten) {
    long bytes = 0;
    for (int i = 0; i < n; i++) bytes += pairs[2 * i + 1];
    edit.addCounters(ks, Manifest.Counters.discarded(n, bytes));
    writeLevel0(storage, tables, fileNumbers, options, ks, pairs, n, edit, bytesWritten);
    return bytes;
  }

  public static List<KeyspaceFiles.DeleteTable> writeLevel0(
      Storage storage,
      TableCache tables,
      AtomicLong fileNumbers,
      Options options,
      int ks,
      long[] pairs,
      int n,
      VersionEdit edit,
      LongAdder bytesWritten) {
    if (n == 0) return List.of();
    long[] seqnos = new long[n];
    for (int i = 0; i < n; i++) seqnos[i] = pairs[2 * i];
    int[] order = WriteCache.seqnoOrder(seqnos);
    long[] sorted = new long[n];
    int[] sizes = new int[n];
    for (int j = 0; j < n; j++) {
      sorted[j] = seqnos[order[j]];
      sizes[j] = (int) pairs[2 * order[j] + 1];
    }
    Output out =
        new Output(storage, tables, fileNumbers, options, ks, 0, -1, Long.MAX_VALUE, bytesWritten);
    List<KeyspaceFiles.DeleteTable> written;
    try {
      for (int j = 0; j < n; j++) out.add(sorted[j], sizes[j]);
      written = out.finish();
    } catch (RuntimeException | Error e) {
      out.abandon();
      throw e;
    }
    for (KeyspaceFiles.DeleteTable t : written) edit.addDeleteTable(ks, t);
    edit.discards(ks, sorted, sizes);
    return written;
  }

  /** Key of the record of {@code seqno}: 8 bytes, big-endian. */
  static byte[] key(long seqno) {
    byte[] k = new byte[8];
    for (int i = 7; i >= 0; i--) {
      k[i] = (byte) seqno;
      seqno >>>= 8;
    }
    return k;
  }

  /**
   * Writes records in ascending seqno order into new delete list tables of one keyspace and level,
   * cut at {@code targetBytes}; each finished table is synced and opened, named by nothing until an
   * edit commits it.
   */
  public static final class Output {
    private final Storage storage;
    private final TableCache tables;
    private final AtomicLong fileNumbers;
    private final Options options;
    private final int keyspace;
    private final int level;
    private final long addedIn;
    private final long targetBytes;
    private final LongAdder bytesWritten;
    private final List<KeyspaceFiles.DeleteTable> finished = new ArrayList<>();
    private TableWriter writer;
    private StorageFile file;
    private long fileNumber;
    private long records;
    private long logicalBytes;
    private long minSeqno;
    private long maxSeqno;

    /** {@code addedIn}: -1 for a table whose commit sets it, else the inputs' largest. */
    Output(
        Storage storage,
        TableCache tables,
        AtomicLong fileNumbers,
        Options options,
        int keyspace,
        int level,
        long addedIn,
        long targetBytes,
        LongAdder bytesWritten) {
      this.storage = storage;
      this.tables = tables;
      this.fileNumbers = fileNumbers;
      this.options = options;
      this.keyspace = keyspace;
      this.level = level;
      this.addedIn = addedIn;
      this.targetBytes = targetBytes;
      this.bytesWritten = bytesWritten;
    }

    void add(long seqno, int docSize) {
      if (writer == null) {
        fileNumber = fileNumbers.getAndIncrement();
        storage.mkdirs(FileNames.deleteDir(keyspace));
        file = storage.create(FileNames.deleteTable(keyspace, fileNumber));
        writer =
            new TableWriter(
                file,
                TableOptions.defaults().withBlockSize(options.blockSize()).withBloomBitsPerKey(0));
        records = 0;
        logicalBytes = 0;
        minSeqno = seqno;
      }
      writer.add(key(seqno), seqno, docSize, false, -1);
      records++;
      logicalBytes += docSize;
      maxSeqno = seqno;
      if (writer.dataSize() >= targetBytes) cut();
    }

    private void cut() {
      if (writer == null) return;
      TableInfo info = writer.finish();
      file.close();
      writer = null;
      file = null;
      bytesWritten.add(info.fileSize());
      String name = FileNames.deleteTable(keyspace, fileNumber);
      finished.add(
          new KeyspaceFiles.DeleteTable(
              new Manifest.DeleteTableMeta(
                  fileNumber, level, addedIn, records, logicalBytes, minSeqno, maxSeqno),
              tables.openTable(name)));
    }

    List<KeyspaceFiles.DeleteTable> finish() {
      cut();
      return finished;
    }

    /** Closes and deletes everything written (a failure, or a stop before the commit). */
    void abandon() {
      try {
        if (file != null) {
          file.close();
          storage.delete(FileNames.deleteTable(keyspace, fileNumber));
        }
        discard(storage, tables, keyspace, finished);
      } catch (RuntimeException ignored) {
        // orphans then, deleted at the next open; the first error is the one reported
      }
    }

    public static void discard(
        Storage storage, TableCache tables, int keyspace, List<KeyspaceFiles.DeleteTable> written) {
      for (KeyspaceFiles.DeleteTable t : written) {
        tables.close(t.reader());
        storage.delete(FileNames.deleteTable(keyspace, t.meta().fileNumber()));
      }
    }
  }

  /**
   * The records of several delete list tables merged in seqno order, from {@code fromSeqno} to
   * {@code toSeqno}; a seqno two tables hold is returned once. Each record comes with the table it
   * came from.
   */
  public static final class Cursor implements AutoCloseable {
    private final PriorityQueue<Source> heap =
        new PriorityQueue<>((a, b) -> Long.compare(a.it.seqno(), b.it.seqno()));
    private final List<Source> all = new ArrayList<>();
    private final long toSeqno;
    private long seqno = -1;
    private int docSize;
    private Manifest.DeleteTableMeta table;

    private record Source(TableIterator it, Manifest.DeleteTableMeta meta) {}

    public Cursor(List<KeyspaceFiles.DeleteTable> tables, long fromSeqno, long toSeqno) {
      this.toSeqno = toSeqno;
      try {
        for (KeyspaceFiles.DeleteTable t : tables) {
          if (t.meta().maxSeqno() < fromSeqno || t.meta().minSeqno() > toSeqno) continue;
          Source s = new Source(t.reader().sequentialIterator(), t.meta());
          all.add(s);
          s.it.seek(key(fromSeqno));
          if (s.it.valid() && s.it.seqno() <= toSeqno) heap.add(s);
        }
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }

    /** Moves to the next record; false at the end. */
    public boolean next() {
      long last = seqno;
      while (!heap.isEmpty()) {
        Source s = heap.poll();
        long q = s.it.seqno();
        int size = s.it.docSize();
        s.it.next();
        if (s.it.valid() && s.it.seqno() <= toSeqno) heap.add(s);
        if (q == last) continue; // the same stale version in two tables: once
        seqno = q;
        docSize = size;
        table = s.meta;
        return true;
      }
      return false;
    }

    public long seqno() {
      return seqno;
    }

    int docSize() {
      return docSize;
    }

    Manifest.DeleteTableMeta table() {
      return table;
    }

    @Override
    public void close() {
      for (Source s : all) s.it.close();
    }
  }
}
