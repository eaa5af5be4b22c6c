package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.internal.segment.SegmentOptions;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.skiplist.Snapshot;
import io.basaltdb.internal.skiplist.SnapshotIterator;
import io.basaltdb.internal.sstable.TableInfo;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes an immutable write cache out (Magma section 3.2): for each keyspace, its documents in seqno
 * order to the keyspace's tail log segment (rolling to a new segment at {@link
 * io.basaltdb.Options#segmentSize}), then its key index records, in key order, to a new level-0 table;
 * then the segments' checkpoints are synced and a manifest naming the new files and the flushed seqno,
 * with the records and document bytes each new table adds to its keyspace's {@link Manifest.Counters},
 * is committed; then the WAL files the manifest covers are deleted.
 *
 * <p>Thread-safety: one background thread runs flushes; {@link #switchMemtable} is called by the
 * commit leader (or the opening thread during recovery). The segment writers and the list of open
 * files belong to the flushing thread, except that {@link #closeFiles} runs after {@link #stop}.
 */
final class Flusher {
  private final Engine engine;
  /** Tail segment writer of each keyspace and its file; flushing thread only. */
  private final Map<Integer, Tail> writers;

  /** A keyspace's tail segment: its writer and the file it shares with the segment's readers. */
  /** The segment being appended to, its file, and the file's block cache owner (for its index pages). */
  record Tail(SegmentWriter writer, StorageFile file, long cacheOwner) {}
  /** Files to close with the store (segment files are shared by writer and readers). Synchronized. */
  private final List<AutoCloseable> openFiles;
  private final Thread thread;
  private final Object signal = new Object();
  /** Guarded by signal. */
  private boolean stopping;

  Flusher(Engine engine, Map<Integer, Tail> writers, List<AutoCloseable> openFiles) {
    this.engine = engine;
    this.writers = new HashMap<>(writers);
    this.openFiles = java.util.Collections.synchronizedList(new ArrayList<>(openFiles));
    this.thread = new Thread(this::run, "basalt-flusher");
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /**
   * Turns the active write cache immutable and starts a new one with a new WAL file (under the apply
   * lock, so no write is half in either); the flusher thread picks it up.
   */
  void switchMemtable() {
    engine.applyLock.lock();
    try {
      Version v = engine.current();
      if (v.immutable != null) throw new IllegalStateException("a flush is already pending");
      long walNumber = engine.nextFileNumber.getAndIncrement();
      engine.wal.rotate(walNumber);
      v.active.switchSeqno = engine.lastSeqno;
      v.active.walAfter = walNumber;
      Memtable fresh = engine.newMemtable();
      engine.install(engine.newVersion(fresh, v.active, v.files));
      fresh.release();
    } catch (BasaltException e) {
      engine.fail(e);
      throw e;
    } finally {
      engine.applyLock.unlock();
    }
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  private void run() {
    while (true) {
      Version v;
      synchronized (signal) {
        while (!stopping && engine.current().immutable == null) {
          try {
            signal.wait(100);
          } catch (InterruptedException e) {
            return;
          }
        }
        if (stopping) return;
      }
      v = engine.acquire();
      try {
        flush(v);
      } catch (BasaltException e) {
        engine.fail(e);
        return;
      } catch (RuntimeException | Error e) {
        engine.fail(new BasaltException("flush failed: " + e, e));
        return;
      } finally {
        v.release();
      }
    }
  }

  /** Flushes {@code v.immutable} and installs the version without it. */
  void flush(Version v) {
    Memtable imm = v.immutable;
    Map<Integer, KeyspaceFiles> files = new HashMap<>(v.files);
    List<Integer> touched = new ArrayList<>();
    Map<Integer, KeyspaceFiles.Table> newTables = new HashMap<>();
    Map<Integer, Manifest.Counters> flushed = new HashMap<>(); // committed with the tables they count
    try (Snapshot snap = imm.list.snapshot(); SnapshotIterator it = snap.iterator()) {
      it.seekFirst();
      List<byte[]> keys = new ArrayList<>();
      List<byte[]> entries = new ArrayList<>();
      int ks = -1;
      while (true) {
        byte[] sk = it.valid() ? it.key() : null;
        int k = sk == null ? -1 : Memtable.keyspaceOf(sk);
        if (k != ks && !keys.isEmpty()) {
          if (engine.isLive(ks)) {
            KeyspaceFiles f = flushKeyspace(ks, keys, entries, files.getOrDefault(ks, KeyspaceFiles.EMPTY), flushed);
            files.put(ks, f);
            newTables.put(ks, f.level(0).get(0));
            touched.add(ks);
          }
          keys.clear();
          entries.clear();
        }
        if (sk == null) break;
        ks = k;
        keys.add(Memtable.userKey(sk));
        entries.add(it.value());
        it.next();
      }
    }
    for (int k : touched) {
      files.put(k, files.get(k).withSegment(checkpoint(writers.get(k))));
    }
    synchronized (engine.manifestLock) {
      // Compactions may have changed the tables since this flush began: add the new level-0 tables to
      // the current ones. Segments change only here, so this flush's segment lists are current.
      Map<Integer, KeyspaceFiles> now = new HashMap<>(engine.current().files);
      for (int k : touched) {
        KeyspaceFiles base = now.getOrDefault(k, KeyspaceFiles.EMPTY);
        KeyspaceFiles.Table t = newTables.get(k);
        now.put(k, new KeyspaceFiles(base.withTable(t).tables, files.get(k).segments));
        engine.openTables.put(t.fileNumber(), new Engine.OpenTable(k, t));
      }
      engine.commitManifest(engine.nextManifest(now, flushed, imm.switchSeqno, imm.walAfter));
      engine.applyLock.lock();
      try {
        Version cur = engine.current();
        engine.install(engine.newVersion(cur.active, null, now));
      } finally {
        engine.applyLock.unlock();
      }
      engine.deleteObsolete();
    }
    engine.stats.flushes.increment();
    if (engine.compactor != null) engine.compactor.wake();
    engine.pipeline.wakeStalled();
  }

  /**
   * The indexes of {@code seqnos} (distinct) in seqno order. A write cache's seqnos span less than 2^31,
   * so each is packed with its index into one long (offset from the smallest above, index below) and the
   * longs are sorted as primitives: no boxing, no comparator (a boxed sort took a fifth of the flusher's
   * time). A wider span falls back to a boxed sort.
   */
  static int[] seqnoOrder(long[] seqnos) {
    int n = seqnos.length;
    long min = Long.MAX_VALUE;
    long max = Long.MIN_VALUE;
    for (long q : seqnos) {
      min = Math.min(min, q);
      max = Math.max(max, q);
    }
    int[] order = new int[n];
    if (n > 0 && max - min >= (1L << 31)) {
      Integer[] boxed = new Integer[n];
      for (int i = 0; i < n; i++) boxed[i] = i;
      Arrays.sort(boxed, (a, b) -> Long.compare(seqnos[a], seqnos[b]));
      for (int i = 0; i < n; i++) order[i] = boxed[i];
      return order;
    }
    long[] packed = new long[n];
    for (int i = 0; i < n; i++) packed[i] = (seqnos[i] - min) << 32 | i;
    Arrays.sort(packed);
    for (int i = 0; i < n; i++) order[i] = (int) packed[i];
    return order;
  }

  /** Writes one keyspace's documents and its level-0 table; puts what the table holds in {@code flushed}. */
  private KeyspaceFiles flushKeyspace(int ks, List<byte[]> keys, List<byte[]> entries, KeyspaceFiles files,
      Map<Integer, Manifest.Counters> flushed) {
    int n = keys.size();
    long[] seqnos = new long[n];
    for (int i = 0; i < n; i++) seqnos[i] = Memtable.seqnoOf(entries.get(i));
    int[] order = seqnoOrder(seqnos);
    long[] hints = new long[n];
    int[] sizes = new int[n];
    Tail tail = writers.get(ks);
    for (int j = 0; j < n; j++) {
      int i = order[j];
      if (tail == null || tail.writer.size() >= engine.options.segmentSize()) {
        if (tail != null) files = files.withSegment(checkpoint(tail));
        tail = newSegment(ks, seqnos[i]);
      }
      SegmentWriter w = tail.writer;
      byte[] e = entries.get(i);
      boolean tomb = Memtable.isTombstone(e);
      long before = w.size();
      hints[i] = w.append(seqnos[i], keys.get(i), Memtable.valueOf(e), tomb);
      sizes[i] = w.lastDocumentSize();
      engine.stats.segmentBytes.add(w.size() - before);
    }
    long number = engine.nextFileNumber.getAndIncrement();
    String name = KeyspaceFiles.tableName(ks, number);
    engine.storage.mkdirs("keyspaces/" + ks + "/index");
    TableInfo info;
    long docBytes = 0;
    try (StorageFile f = engine.storage.create(name)) {
      TableWriter tw = new TableWriter(f, TableOptions.defaults().withBlockSize(engine.options.blockSize())
          .withBloomBitsPerKey(engine.options.bloomBitsPerKey()));
      for (int i = 0; i < n; i++) {
        byte[] e = entries.get(i);
        tw.add(keys.get(i), seqnos[i], sizes[i], Memtable.isTombstone(e), hints[i]);
        docBytes += sizes[i];
      }
      info = tw.finish();
    }
    engine.stats.tableBytes.add(info.fileSize());
    flushed.put(ks, Manifest.Counters.flushed(info.entryCount(), docBytes));
    return files.withTable(new KeyspaceFiles.Table(number, 0, openTable(name)));
  }

  private Tail newSegment(int ks, long startSeqno) {
    long number = engine.nextFileNumber.getAndIncrement();
    if (number > Integer.MAX_VALUE) throw new BasaltException("file numbers exhausted");
    String name = KeyspaceFiles.segmentName(ks, number);
    engine.storage.mkdirs("keyspaces/" + ks + "/log");
    StorageFile f = engine.storage.create(name);
    openFiles.add(f);
    Tail t = new Tail(SegmentWriter.create(f, number, startSeqno, segmentOptions(engine.options)), f,
        engine.blockCache.newOwners(2));
    writers.put(ks, t);
    return t;
  }

  static SegmentOptions segmentOptions(io.basaltdb.Options o) {
    return SegmentOptions.defaults().withBlockSize(o.blockSize()).withMaxSegmentSize(o.segmentSize())
        .withPreallocateBytes(o.segmentSize());
  }

  /** Seals what the writer holds, syncs it and returns a reader of that state. */
  private KeyspaceFiles.Segment checkpoint(Tail t) {
    SegmentWriter w = t.writer;
    long before = w.size();
    SegmentState state = w.checkpoint();
    engine.stats.segmentBytes.add(w.size() - before);
    w.sync();
    return new KeyspaceFiles.Segment(state, new SegmentReader(t.file, state, engine.blockCache, t.cacheOwner));
  }

  /** Stops the thread; a flush in progress completes first. */
  void stop() {
    synchronized (signal) {
      stopping = true;
      signal.notifyAll();
    }
    if (thread.isAlive() && thread != Thread.currentThread()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Opens a table just written, to be closed with the store (or when it is deleted). */
  TableReader openTable(String name) {
    StorageFile rf = engine.storage.open(name);
    TableReader reader;
    try {
      reader = TableReader.open(rf, engine.storage.describe(name), engine.blockCache);
    } catch (RuntimeException e) {
      rf.close();
      throw e;
    }
    openFiles.add(reader);
    return reader;
  }

  /** Stops tracking {@code c}, which its owner closed (a deleted table). */
  void forget(AutoCloseable c) {
    openFiles.remove(c);
  }

  void closeFiles() {
    synchronized (openFiles) {
      for (AutoCloseable c : openFiles) {
        try {
          c.close();
        } catch (Exception ignored) {
          // closing a file after a failure may fail again; the first error was already reported
        }
      }
      openFiles.clear();
    }
  }
}
