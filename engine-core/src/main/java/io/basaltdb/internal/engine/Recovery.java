package io.basaltdb.internal.engine;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Opening a store (Magma section 5): load the newest valid manifest, open the files it names, delete
 * files no retained manifest names (a flush that crashed before its manifest), then replay the WAL from
 * the manifest's walStart, skipping what the manifest's files already hold. A torn tail of the last WAL
 * file is trimmed; a bad record anywhere else, a missing file or a gap in the seqnos fails the open
 * with a {@link CorruptionException} naming the file and offset.
 *
 * <p>Thread-safety: runs on the opening thread before the store is shared.
 */
final class Recovery {
  private Recovery() {}

  /** What {@link #load} found. */
  static final class State {
    Manifest manifest;
    final Map<Integer, KeyspaceFiles> files = new HashMap<>();
    final Map<Integer, Flusher.Tail> segmentWriters = new HashMap<>();
    final List<AutoCloseable> openFiles = new ArrayList<>();
    /** Retained manifests (checkpoints): number to creation time. */
    final TreeMap<Long, Long> checkpoints = new TreeMap<>();
    /** File numbers of the tables each retained manifest names. */
    final Map<Long, Set<Long>> checkpointTables = new HashMap<>();
    /** The keyspace of every table a retained manifest names, by file number. */
    final Map<Long, Integer> tableKeyspaces = new HashMap<>();
    long nextFileNumber;

    void closeFiles() {
      for (AutoCloseable c : openFiles) {
        try {
          c.close();
        } catch (Exception ignored) {
          // best effort on a failed open; the open's own exception is the one reported
        }
      }
      openFiles.clear();
    }
  }

  static State load(Storage storage, Options options, BlockCache cache) {
    storage.mkdirs(Manifest.DIR);
    storage.mkdirs(CommitLog.DIR);
    storage.mkdirs("keyspaces");
    State st = new State();
    try {
      loadManifests(storage, st);
      if (st.manifest == null) {
        Manifest m = new Manifest(1, System.currentTimeMillis(), 0, 2, 0, 2,
            List.of(new Manifest.KeyspaceMeta(1, "default", List.of(), List.of(), Manifest.Counters.ZERO)));
        m.commit(storage);
        st.manifest = m;
        st.checkpoints.put(1L, m.createdMillis());
        st.checkpointTables.put(1L, Set.of());
      }
      long maxFile = st.manifest.nextFileNumber() - 1;
      for (long n : CommitLog.list(storage)) maxFile = Math.max(maxFile, n);
      deleteOrphans(storage, st);
      for (Manifest.KeyspaceMeta k : st.manifest.keyspaces()) {
        openKeyspace(storage, options, cache, k, st);
        for (Manifest.TableMeta t : k.tables()) maxFile = Math.max(maxFile, t.fileNumber());
        for (SegmentState s : k.segments()) maxFile = Math.max(maxFile, s.segmentId());
      }
      st.nextFileNumber = maxFile + 1;
      return st;
    } catch (RuntimeException e) {
      st.closeFiles();
      throw e;
    }
  }

  private static void loadManifests(Storage storage, State st) {
    List<Long> numbers = new ArrayList<>();
    for (String name : storage.list(Manifest.DIR)) {
      if (name.endsWith(".tmp")) {
        storage.delete(Manifest.DIR + "/" + name); // a commit that crashed before its rename
      } else if (Manifest.numberOf(name) >= 0) {
        numbers.add(Manifest.numberOf(name));
      }
    }
    numbers.sort(null);
    CorruptionException newestError = null;
    for (int i = numbers.size() - 1; i >= 0; i--) {
      String name = Manifest.fileName(numbers.get(i)).substring(Manifest.DIR.length() + 1);
      try {
        Manifest m = Manifest.read(storage, name);
        if (st.manifest == null) st.manifest = m;
        if (m.flushedSeqno() > st.manifest.flushedSeqno()) {
          // From before a rollback whose clean-up a crash cut short (see Checkpoints): not a state to offer.
          storage.delete(Manifest.fileName(m.number()));
          continue;
        }
        st.checkpoints.put(m.number(), m.createdMillis());
        st.checkpointTables.put(m.number(), Manifest.tableNumbers(m));
        for (Manifest.KeyspaceMeta k : m.keyspaces()) {
          for (Manifest.TableMeta t : k.tables()) st.tableKeyspaces.put(t.fileNumber(), k.id());
        }
      } catch (CorruptionException e) {
        // An older valid manifest may still recover the store: the WAL seqno check below fails the open
        // if the WAL it needs is gone.
        if (newestError == null && st.manifest == null) newestError = e;
      }
    }
    if (st.manifest == null && newestError != null) throw newestError;
  }

  private static void openKeyspace(Storage storage, Options options, BlockCache cache, Manifest.KeyspaceMeta k,
      State st) {
    List<KeyspaceFiles.Table> tables = new ArrayList<>();
    for (Manifest.TableMeta t : k.tables()) {
      String name = KeyspaceFiles.tableName(k.id(), t.fileNumber());
      StorageFile f = openNamed(storage, name);
      try {
        TableReader r = TableReader.open(f, storage.describe(name), cache);
        st.openFiles.add(r);
        tables.add(new KeyspaceFiles.Table(t.fileNumber(), t.level(), r));
      } catch (RuntimeException e) {
        f.close();
        throw e;
      }
    }
    List<KeyspaceFiles.Segment> segments = new ArrayList<>();
    for (int i = 0; i < k.segments().size(); i++) {
      SegmentState s = k.segments().get(i);
      String name = KeyspaceFiles.segmentName(k.id(), s.segmentId());
      StorageFile f = openNamed(storage, name);
      st.openFiles.add(f);
      long owner = cache.newOwners(2); // index pages, documents
      segments.add(new KeyspaceFiles.Segment(s, new SegmentReader(f, s, cache, owner)));
      if (i == k.segments().size() - 1 && s.tailOffset() < options.segmentSize()) {
        st.segmentWriters.put(k.id(), new Flusher.Tail(SegmentWriter.reopen(f, s, Flusher.segmentOptions(options)), f,
            owner));
      }
    }
    st.files.put(k.id(), new KeyspaceFiles(tables, segments));
  }

  private static StorageFile openNamed(Storage storage, String name) {
    if (!storage.exists(name)) {
      throw new CorruptionException("the manifest names " + storage.describe(name)
          + ", which is missing; restore the store from a backup");
    }
    return storage.open(name);
  }

  /** Deletes table and segment files that no retained manifest names. */
  private static void deleteOrphans(Storage storage, State st) {
    List<Manifest> retained = new ArrayList<>();
    for (long n : st.checkpoints.keySet()) {
      retained.add(n == st.manifest.number() ? st.manifest
          : Manifest.read(storage, Manifest.fileName(n).substring(Manifest.DIR.length() + 1)));
    }
    Checkpoints.deleteUnnamed(storage, retained, st.manifest.nextKeyspaceId());
  }

  /**
   * The bytes of the store's files as {@code storage} lists them now: manifests, WAL files, and every
   * table and segment file of each keyspace id {@code current} has handed out (dropped keyspaces'
   * files until the orphan sweep deletes them). The root's empty LOCK file is not opened: closing any
   * channel of it would release the process lock. Best effort, for stats: a file deleted while it is
   * measured (an obsolete table, a covered WAL file) or that cannot be listed or opened counts 0.
   */
  static long diskBytes(Storage storage, Manifest current) {
    List<String> dirs = new ArrayList<>(List.of(Manifest.DIR, CommitLog.DIR));
    for (int ks = 1; ks < current.nextKeyspaceId(); ks++) {
      dirs.add(KeyspaceFiles.indexDir(ks));
      dirs.add(KeyspaceFiles.logDir(ks));
    }
    long total = 0;
    for (String dir : dirs) {
      List<String> names;
      try {
        names = storage.list(dir);
      } catch (io.basaltdb.BasaltException e) {
        continue; // a failing disk: the store reports its failure elsewhere, the gauge undercounts
      }
      for (String name : names) {
        try {
          total += storage.size(dir + "/" + name);
        } catch (io.basaltdb.BasaltException e) {
          // gone since the listing, or unreadable: as above
        }
      }
    }
    return total;
  }

  /**
   * Replays the WAL into the engine's active write cache, flushing inline whenever it fills. Sets the
   * engine's lastSeqno.
   */
  static void replay(Engine engine, Manifest m) {
    Storage storage = engine.storage;
    List<Long> files = new ArrayList<>();
    for (long n : CommitLog.list(storage)) {
      if (n >= m.walStart()) files.add(n);
    }
    long last = m.flushedSeqno();
    long half = engine.options.writeCacheSize() / 2;
    for (int i = 0; i < files.size(); i++) {
      long number = files.get(i);
      String name = CommitLog.fileName(number);
      String desc = storage.describe(name);
      try (StorageFile f = storage.open(name)) {
        LogReader r = new LogReader(f);
        while (r.next()) {
          Batch b = Batch.decode(r.payload(), desc, r.recordOffset());
          long end = b.firstSeqno + b.count - 1;
          if (end <= last) continue;
          if (b.firstSeqno != last + 1) {
            throw new CorruptionException(desc, r.recordOffset(), "the WAL skips from seqno " + last + " to "
                + b.firstSeqno + " (a WAL file is missing or the newest manifest is damaged)");
          }
          for (int op = 0; op < b.count; op++) {
            int ks = b.keyspaces[op];
            if (!engine.isLive(ks) && ks >= engine.manifest.nextKeyspaceId()) {
              throw new CorruptionException(desc, r.recordOffset(), "a write to keyspace #" + ks
                  + ", which the manifest does not know");
            }
          }
          engine.pipeline.apply(engine.current().active, b);
          last = end;
          engine.lastSeqno = last;
          if (engine.current().active.bytes() >= half) flushInline(engine, number);
        }
        if (r.stop() == LogReader.Stop.TORN) {
          if (i < files.size() - 1 || syncedGroupFollows(f, r.stopOffset(), last)) {
            throw new CorruptionException(desc, r.stopOffset(), r.stopReason() + " (acknowledged writes follow it)");
          }
          f.truncate(r.stopOffset());
        }
        // What was replayed may be only in the page cache (a process that died before its fsync): make
        // it durable before the store acknowledges writes numbered after it, or a power loss would leave
        // a seqno gap that fails every later open.
        f.sync();
      }
    }
    engine.lastSeqno = last;
  }

  /** Bytes of the damaged tail {@link #syncedGroupFollows} reads at a time. */
  private static final int SCAN_CHUNK = 1 << 20;

  /**
   * Whether the damaged record at {@code offset} of the last WAL file is followed by an intact record
   * that starts a commit group written in SYNC mode. Such a group is written only after the previous
   * group was fsynced, so the damaged record was durable: that is corruption, not a torn tail.
   * {@code last} is the last seqno replayed before the damage.
   */
  private static boolean syncedGroupFollows(StorageFile f, long offset, long last) {
    long len = LogReader.frameLengthAt(f, offset);
    if (len > 0) { // the common case: the damaged record's length is intact and the next group follows it
      java.nio.ByteBuffer next = LogReader.recordAt(f, offset + len);
      if (next != null && next.remaining() >= Batch.HEADER_SIZE && isSyncedGroupStart(next.get(Batch.HEADER_SIZE - 1))) {
        return true;
      }
      // An intact record that starts no synced group (the rest of the damaged record's group, say)
      // proves nothing either way: look further.
    }
    // The damaged record's length may itself be damaged: look for a synced group start at every later
    // offset. Cheap header checks come first: the flags, and a first seqno after the last one replayed
    // that the bytes in between could have used up (every operation takes at least 13 bytes), which
    // random bytes pass about never, so a garbage tail costs one pass and no checksums. The tail is
    // read a chunk at a time, so its length does not matter (an unsynced tail can be as long as the
    // write cache is big).
    long rest = f.size() - offset;
    int need = 8 + Batch.HEADER_SIZE; // a candidate's frame header and batch header
    java.nio.ByteBuffer chunk = java.nio.ByteBuffer.allocate((int) Math.max(need, Math.min(rest, SCAN_CHUNK)))
        .order(java.nio.ByteOrder.LITTLE_ENDIAN);
    long chunkStart = 0; // offset - of the damaged record - of chunk's first byte
    chunk.limit(0);
    for (long p = 1; p + need <= rest; p++) {
      if (p + need > chunkStart + chunk.limit()) { // the candidate's headers leave the chunk: read on from p
        chunk.clear();
        chunkStart = p;
        f.read(offset + p, chunk);
        chunk.flip();
        if (chunk.limit() < need) return false; // the file shrank since its size was read
      }
      int i = (int) (p - chunkStart);
      int length = chunk.getInt(i);
      if (length < Batch.HEADER_SIZE || p + 8L + length > rest) continue;
      if (!isSyncedGroupStart(chunk.get(i + 8 + Batch.HEADER_SIZE - 1))) continue;
      long first = chunk.getLong(i + 8);
      if (first <= last || first > last + 1 + p) continue;
      if (LogReader.recordAt(f, offset + p) != null) return true;
    }
    return false;
  }

  private static boolean isSyncedGroupStart(byte flags) {
    return (flags & Batch.GROUP_START) != 0 && (flags & Batch.SYNCED) != 0;
  }

  private static void flushInline(Engine engine, long walFile) {
    Version v;
    engine.applyLock.lock();
    try {
      Version cur = engine.current();
      cur.active.switchSeqno = engine.lastSeqno;
      cur.active.walAfter = walFile;
      Memtable fresh = engine.newMemtable();
      engine.install(engine.newVersion(fresh, cur.active, cur.files));
      fresh.release();
      v = engine.acquire();
    } finally {
      engine.applyLock.unlock();
    }
    try {
      engine.flusher.flush(v);
    } finally {
      v.release();
    }
  }

  /** Deletes WAL files the manifest covers and manifests older than the checkpoint retention. */
  static void deleteObsolete(Storage storage, Manifest current, TreeMap<Long, Long> checkpoints,
      long retentionMillis) {
    for (long n : CommitLog.list(storage)) {
      if (n < current.walStart()) storage.delete(CommitLog.fileName(n));
    }
    long cutoff = System.currentTimeMillis() - retentionMillis;
    var it = checkpoints.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      if (e.getKey() != current.number() && e.getValue() <= cutoff) { // retention 0: only the current one stays
        storage.delete(Manifest.fileName(e.getKey()));
        it.remove();
      }
    }
  }
}
