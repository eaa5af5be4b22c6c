package io.basaltdb.internal.engine.version;

import io.basaltdb.BasaltException;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.base.StoreState;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one place a disk store's file set changes (LevelDB's {@code VersionSet::LogAndApply},
 * Pebble's {@code versionSet.logAndApply}; Magma section 5). Flush, compaction, keyspace creation
 * and drop hand it a {@link VersionEdit}; it writes the manifest the edit makes of the current one,
 * installs the version that reads the new files, and deletes what no version, snapshot or retained
 * checkpoint names any more. Creating a store and rolling one back commit their manifests through
 * its static methods.
 *
 * <p>Checkpoints (Magma section 5) are periodic: a committed manifest is marked to be kept once
 * superseded when {@code checkpointIntervalMillis} has passed since the last mark (or when {@code
 * Basalt.checkpoint()} asks); every other manifest is deleted as soon as the next one is durable,
 * so the tables only it named can go at once. Marked ones stay for {@code
 * checkpointRetentionMillis}, unless the files only they hold pass {@code checkpointSpaceRatio} of
 * the log: the oldest periodic ones taken in this run are then dropped early (asked-for ones, and
 * those found at open, never are). {@link Manifest#write} has no other caller.
 *
 * <h2>Concurrency</h2>
 *
 * {@link #lock} serializes commits, so each edit applies to the manifest the previous one produced,
 * and guards the manifest, the retained checkpoints and the table registry. The version is
 * installed under {@link Versions#applyLock} inside it (lock order: this lock, then the apply
 * lock).
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>Commit invariant: the manifest is durable before the version it describes is installed, and
 *       a file an edit removes is deleted only once the manifest that dropped it is durable, no
 *       live version names it (a reader or snapshot may be using it) and no retained checkpoint
 *       names it.
 *   <li>Every write with a seqno at or below the manifest's flushedSeqno is in the manifest's
 *       files; every later acknowledged write is in a WAL file numbered at or above its walStart,
 *       reachable from its walHead by the WAL's links.
 *   <li>A failed manifest write fails the store: the in-memory state may then be ahead of the disk,
 *       so nothing more is committed in this run; the next open recovers from the last durable
 *       manifest.
 * </ol>
 */
public final class VersionSet {
  private final Storage storage;
  private final Versions versions;
  private final TableCache tables;
  private final StoreState state;
  private final EngineStats stats;
  private final long retentionMillis;

  /** How often a committed manifest is marked to be kept once superseded; 0: every one. */
  private final long intervalMillis;

  /** Bytes only periodic checkpoints may hold, as a fraction of the log segments' bytes. */
  private final double spaceRatio;

  /** The next file number for WAL files, tables and segments; any thread takes numbers. */
  public final AtomicLong nextFileNumber;

  /** Package-private for tests that must see no commit between two steps. */
  public final Object lock = new Object();

  // Guarded by lock.
  /** The last committed manifest. */
  private Manifest manifest;

  /** Retained manifests (checkpoints): number to creation time. */
  private final TreeMap<Long, Long> checkpoints;

  /**
   * Names of the data files (tables, delete list tables, segments) each retained manifest names.
   */
  private final Map<Long, Set<String>> checkpointFiles;

  /**
   * Whether the flusher still holds a keyspace's tail segment writer: a dropped keyspace's segments
   * are deleted only once it does not ({@link #setTailHeld}); until the flusher is wired, always.
   */
  private volatile java.util.function.IntPredicate tailHeld = ks -> true;

  /** Committed data files this store opened, by name, until they are deleted. */
  private final Map<String, OpenFile> committed = new HashMap<>();

  /** Data files only older checkpoints named at open, so never opened. */
  private final Set<String> unopened;

  /**
   * Retained manifests that stay when superseded (periodic or asked-for checkpoints, and every
   * manifest found at open); any other manifest is deleted when the next one commits.
   */
  private final Set<Long> marked = new HashSet<>();

  /**
   * Checkpoints never dropped for space: those {@code Basalt.checkpoint()} asked for, and those
   * found at open (whether they were asked for is not recorded); they expire with their retention
   * only.
   */
  private final Set<Long> asked = new HashSet<>();

  /**
   * Checkpoints a backup is copying, by manifest number, with how many backups hold each: kept
   * (with every file they name) past their retention until released. Guarded by lock.
   */
  private final java.util.Map<Long, Integer> pinned = new java.util.HashMap<>();

  /**
   * Sizes of data files once measured (they do not change once no manifest but checkpoints names
   * them).
   */
  private final Map<String, Long> sizes = new HashMap<>();

  /** When the last manifest was marked. */
  private long lastMarkMillis;

  /** An open data file of keyspace {@code keyspace} and how to close it once deleted. */
  private record OpenFile(int keyspace, boolean segment, Runnable close) {}

  /**
   * The walStart of the manifest this process opened with. Obsolete WAL files below it are deleted,
   * never recycled: they may hold a history a rollback discarded (seqnos above the ones written
   * next), left when the rollback's clean-up was cut short.
   */
  private final long openedWalStart;

  /** Disposes of a WAL file the manifest no longer needs: into the WAL's pool, or deleted. */
  private final java.util.function.LongConsumer retireWal;

  public VersionSet(
      Storage storage,
      Versions versions,
      TableCache tables,
      StoreState state,
      EngineStats stats,
      long retentionMillis,
      long intervalMillis,
      double spaceRatio,
      Recovery.State recovered,
      java.util.function.LongConsumer retireWal) {
    this.storage = storage;
    this.retireWal = retireWal;
    this.versions = versions;
    this.tables = tables;
    this.state = state;
    this.stats = stats;
    this.retentionMillis = retentionMillis;
    this.intervalMillis = intervalMillis;
    this.spaceRatio = spaceRatio;
    this.nextFileNumber = new AtomicLong(recovered.nextFileNumber);
    this.manifest = recovered.manifest;
    this.openedWalStart = recovered.manifest.walStart();
    this.checkpoints = recovered.checkpoints;
    this.checkpointFiles = recovered.checkpointFiles;
    this.unopened = new HashSet<>();
    checkpointFiles.values().forEach(unopened::addAll);
    marked.addAll(
        checkpoints.keySet()); // whether they were checkpoints is not recorded: keep them all
    asked.addAll(
        checkpoints.keySet()); // nor whether they were asked for: never dropped for space either
    lastMarkMillis = manifest.createdMillis();
    recovered.files.forEach(
        (ks, f) -> {
          for (KeyspaceFiles.Table t : f.tables)
            register(FileNames.table(ks, t.fileNumber()), ks, t.reader());
          for (KeyspaceFiles.DeleteTable d : f.deletes)
            register(FileNames.deleteTable(ks, d.meta().fileNumber()), ks, d.reader());
          for (KeyspaceFiles.Segment s : f.segments) register(ks, s);
        });
  }

  private void register(String name, int ks, TableReader reader) {
    committed.put(name, new OpenFile(ks, false, () -> tables.close(reader)));
    unopened.remove(name);
  }

  /**
   * A segment's file is shared by its states' readers (and, while it is the tail, the flusher's
   * writer).
   */
  private void register(int ks, KeyspaceFiles.Segment s) {
    String name = FileNames.segment(ks, s.state().segmentId());
    long owner = s.reader().cacheOwner();
    committed.put(
        name,
        new OpenFile(
            ks,
            true,
            () -> {
              tables.close(s.reader().file());
              tables.blockCache().removeOwner(owner);
              tables.blockCache().removeOwner(owner + 1);
            }));
    unopened.remove(name);
  }

  /**
   * The chunk size of keyspace {@code id}'s HB+-trie tables, 0 if it keeps block tables (or is
   * gone): what a flush or compaction writes for it.
   */
  public int trieChunkBytes(int id) {
    return KeyspaceLayout.trieChunkBytes(layoutCode(id));
  }

  /** Keyspace {@code id}'s layout code ({@link KeyspaceLayout}); 0 if it is gone. */
  public int layoutCode(int id) {
    for (Manifest.KeyspaceMeta k : manifest().keyspaces()) {
      if (k.id() == id) return k.trieChunkBytes();
    }
    return 0;
  }

  /** The last committed manifest. */
  public Manifest manifest() {
    synchronized (lock) {
      return manifest;
    }
  }

  /** Keyspace {@code ks}'s purge seqno in the current manifest (0 for an unknown keyspace). */
  public long purgeSeqno(int ks) {
    for (Manifest.KeyspaceMeta k : manifest().keyspaces()) {
      if (k.id() == ks) return k.purgeSeqno();
    }
    return 0;
  }

  /** The retained checkpoints' manifests, oldest first, the current one last. */
  public List<Manifest> checkpoints() {
    synchronized (lock) {
      List<Manifest> out = new ArrayList<>();
      for (long n : checkpoints.keySet())
        out.add(n == manifest.number() ? manifest : Manifest.read(storage, n));
      return out;
    }
  }

  /**
   * Commits {@code edit}: writes the manifest it makes of the current one, installs the version
   * reading the new files, deletes what became obsolete. Returns the committed manifest. Throws
   * (and fails the store) if the manifest cannot be written; refuses an edit once the store has
   * failed.
   */
  public Manifest logAndApply(VersionEdit edit) {
    synchronized (lock) {
      state.checkWritable();
      Manifest next =
          edit.applyTo(
              manifest, manifest.number() + 1, System.currentTimeMillis(), nextFileNumber.get());
      // Built before the manifest is written (files change only under this lock), so an edit that
      // breaks
      // the layout's rules (overlapping tables of a leveled level, a table straddling a guard key)
      // fails
      // the store before it is durable.
      Map<Integer, KeyspaceFiles> files;
      try {
        files = filesOf(next, edit, versions.current());
      } catch (IllegalStateException e) {
        BasaltException f =
            new BasaltException(
                "refused a commit that breaks the key index's layout: " + e.getMessage(), e);
        state.fail(f);
        throw f;
      }
      edit.beforeCommit.run(); // after the checks: a refused commit tells no listener of its drops
      try {
        stats.manifestBytesWritten.add(write(storage, next));
      } catch (BasaltException e) {
        state.fail(e);
        throw e;
      }
      long superseded = manifest.number();
      manifest = next;
      checkpoints.put(next.number(), next.createdMillis());
      checkpointFiles.put(next.number(), Manifest.fileNames(next));
      if (intervalMillis == 0 || next.createdMillis() - lastMarkMillis >= intervalMillis)
        mark(next);
      if (!marked.contains(superseded) && deleteQuietly(FileNames.manifest(superseded))) {
        checkpoints.remove(superseded); // not a checkpoint: the files only it named can go below
        checkpointFiles.remove(superseded);
      }
      edit.changes.forEach(
          (ks, c) -> {
            c.openedTables.forEach((n, t) -> register(FileNames.table(ks, n), ks, t.reader()));
            c.openedDeletes.forEach(
                (n, d) -> register(FileNames.deleteTable(ks, n), ks, d.reader()));
            c.openedSegments.values().forEach(seg -> register(ks, seg));
          });
      versions.applyLock.lock();
      try {
        Version cur = versions.current();
        versions.install(
            versions.newVersion(cur.active, edit.writeCacheFlushed ? null : cur.immutable, files));
        edit.onInstall.run();
      } finally {
        versions.applyLock.unlock();
      }
      deleteObsolete();
      return next;
    }
  }

  private void mark(Manifest m) {
    marked.add(m.number());
    lastMarkMillis = m.createdMillis();
  }

  /**
   * As {@link #markCheckpoint}, and keeps the checkpoint and its files past their retention until
   * {@link #unpin} (a backup copying them).
   */
  public Manifest pinCheckpoint() {
    synchronized (lock) {
      Manifest m = markCheckpoint();
      pinned.merge(m.number(), 1, Integer::sum);
      return m;
    }
  }

  /** Releases a {@link #pinCheckpoint}; an expired checkpoint goes at the next sweep. */
  public void unpin(long number) {
    synchronized (lock) {
      pinned.computeIfPresent(number, (n, c) -> c == 1 ? null : c - 1);
    }
  }

  /**
   * Keeps the current manifest as a checkpoint once superseded ({@code Basalt.checkpoint()});
   * returns it.
   */
  public Manifest markCheckpoint() {
    synchronized (lock) {
      mark(manifest);
      asked.add(manifest.number());
      return manifest;
    }
  }

  /**
   * Bytes of the data files (tables, delete list tables, segments) that only retained checkpoints
   * name: no live version, snapshot or current manifest does (what rollback keeps on disk).
   */
  public long checkpointOnlyBytes() {
    synchronized (lock) {
      return checkpointOnlyBytesLocked(versions.namedFiles());
    }
  }

  /** {@code namedByVersions}: the files live versions name (not changed here). */
  private long checkpointOnlyBytesLocked(Set<String> namedByVersions) {
    Set<String> live = new HashSet<>(namedByVersions);
    live.addAll(checkpointFiles.get(manifest.number())); // the current manifest's files
    long bytes = 0;
    Set<String> counted = new HashSet<>();
    for (Set<String> named : checkpointFiles.values()) {
      for (String n : named) {
        if (live.contains(n) || !counted.add(n)) continue;
        Long size = sizes.get(n);
        if (size == null) {
          try {
            size = storage.size(n);
            sizes.put(n, size);
          } catch (BasaltException e) {
            continue; // deleted meanwhile, or unreadable: the gauge undercounts
          }
        }
        bytes += size;
      }
    }
    return bytes;
  }

  /**
   * Drops the oldest periodic checkpoints while the bytes only checkpoints hold exceed {@code
   * spaceRatio} of the log segments' bytes (Options#checkpointSpaceRatio). Caller holds lock.
   */
  private void dropCheckpointsForSpace(Set<String> namedByVersions) {
    if (spaceRatio >= 100 || checkpoints.size() <= 1) return;
    long log = 0;
    for (Manifest.KeyspaceMeta k : manifest.keyspaces()) {
      for (SegmentState s : k.segments()) log += s.tailOffset();
    }
    long limit = (long) (spaceRatio * log);
    while (checkpointOnlyBytesLocked(namedByVersions) > limit) {
      Long victim = null;
      for (long n : checkpoints.keySet()) { // oldest first
        if (n != manifest.number() && !asked.contains(n)) {
          victim = n;
          break;
        }
      }
      if (victim == null || !deleteQuietly(FileNames.manifest(victim))) return;
      checkpoints.remove(victim);
      checkpointFiles.remove(victim);
      stats.checkpointsDroppedForSpace.increment();
    }
  }

  /** The files of the version after {@code edit}: untouched keyspaces keep their files object. */
  private static Map<Integer, KeyspaceFiles> filesOf(Manifest next, VersionEdit edit, Version cur) {
    Map<Integer, KeyspaceFiles> out = new HashMap<>();
    for (Manifest.KeyspaceMeta k : next.keyspaces()) {
      VersionEdit.Change c = edit.changes.get(k.id());
      if (c == null) {
        KeyspaceFiles f = cur.files.get(k.id());
        if (f != null) out.put(k.id(), f);
        continue;
      }
      KeyspaceFiles old = cur.files(k.id());
      Map<Long, KeyspaceFiles.Table> byNumber = new HashMap<>();
      for (KeyspaceFiles.Table t : old.tables) byNumber.put(t.fileNumber(), t);
      byNumber.putAll(c.openedTables);
      List<KeyspaceFiles.Table> ts = new ArrayList<>();
      for (Manifest.TableMeta m : k.tables()) {
        KeyspaceFiles.Table t = byNumber.get(m.fileNumber());
        if (t == null)
          throw new IllegalStateException("no open reader for table " + m.fileNumber());
        ts.add(
            t.level() == m.level()
                ? t
                : new KeyspaceFiles.Table(m.fileNumber(), m.level(), t.reader()));
      }
      Map<Long, KeyspaceFiles.Segment> byId = new HashMap<>();
      for (KeyspaceFiles.Segment s : old.segments) byId.put(s.state().segmentId(), s);
      byId.putAll(c.openedSegments);
      List<KeyspaceFiles.Segment> ss = new ArrayList<>();
      for (SegmentState s : k.segments()) {
        KeyspaceFiles.Segment seg = byId.get(s.segmentId());
        if (seg == null)
          throw new IllegalStateException("no open reader for segment " + s.segmentId());
        ss.add(seg);
      }
      Map<Long, KeyspaceFiles.DeleteTable> deletes = new HashMap<>();
      for (KeyspaceFiles.DeleteTable d : old.deletes) deletes.put(d.meta().fileNumber(), d);
      deletes.putAll(c.openedDeletes);
      List<KeyspaceFiles.DeleteTable> ds = new ArrayList<>();
      for (Manifest.DeleteTableMeta m : k.deletes()) {
        KeyspaceFiles.DeleteTable d = deletes.get(m.fileNumber());
        if (d == null)
          throw new IllegalStateException("no open reader for delete list table " + m.fileNumber());
        ds.add(
            new KeyspaceFiles.DeleteTable(
                m, d.reader())); // the manifest's entry: addedIn is set at commit
      }
      out.put(
          k.id(),
          new KeyspaceFiles(ts, ss, ds, k.garbage(), next.guardedKeyIndex() ? k.guards() : null));
    }
    return out;
  }

  /**
   * A version of {@code v}'s tables only (no write caches), for a compaction job. Made under the
   * lock, so the obsolete-file sweep, which runs under it too, sees it or still sees {@code v},
   * which the caller releases only afterwards: the job's inputs stay on disk.
   */
  public Version pinTables(Version v) {
    synchronized (lock) {
      return versions.newVersion(null, null, v.files);
    }
  }

  /** A version of the files and the number of the manifest that names them. */
  public record Pinned(Version version, long manifestNumber) {}

  /**
   * A version of the current files only (no write caches) and the manifest number they are as of,
   * for a garbage collection job; the caller releases the version.
   */
  public Pinned pinFiles() {
    synchronized (lock) {
      return new Pinned(
          versions.newVersion(null, null, versions.current().files), manifest.number());
    }
  }

  /**
   * Tells the sweep which dropped keyspaces' tail segments the flusher may still append to; their
   * segments are kept until it lets go of them.
   */
  public void setTailHeld(java.util.function.IntPredicate held) {
    this.tailHeld = held;
  }

  /** Deletes what became obsolete after versions were freed; called by a background thread. */
  public void deleteObsoleteFiles() {
    synchronized (lock) {
      if (state.failure() == null && !state.isClosed()) deleteObsolete();
    }
  }

  /**
   * WAL files the manifest covers, expired checkpoints, and data files (key index and delete list
   * tables, segments) no live version and no retained checkpoint names. Caller holds lock.
   */
  private void deleteObsolete() {
    for (long n : FileNames.walNumbers(storage)) {
      if (n < openedWalStart) {
        deleteQuietly(FileNames.wal(n));
      } else if (n < manifest.walStart()) {
        try {
          retireWal.accept(n); // kept for reuse, or deleted
        } catch (BasaltException e) {
          stats.obsoleteDeleteFailures.increment();
        }
      }
    }
    long cutoff = System.currentTimeMillis() - retentionMillis;
    var it = checkpoints.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      if (e.getKey() != manifest.number()
          && e.getValue() <= cutoff // retention 0: only the current one stays
          && !pinned.containsKey(e.getKey())
          && deleteQuietly(FileNames.manifest(e.getKey()))) {
        it.remove();
      }
    }
    checkpointFiles.keySet().retainAll(checkpoints.keySet());
    Set<String> named =
        versions.namedFiles(); // once per sweep: it names every file of every live version
    dropCheckpointsForSpace(named);
    marked.retainAll(checkpoints.keySet());
    asked.retainAll(checkpoints.keySet());
    for (Set<String> s : checkpointFiles.values()) named.addAll(s);
    Set<Integer> keyspaces = new HashSet<>();
    for (Manifest.KeyspaceMeta k : manifest.keyspaces()) keyspaces.add(k.id());
    var open = committed.entrySet().iterator();
    while (open.hasNext()) {
      var e = open.next();
      // A dropped keyspace's segments stay while the flusher may still append to its tail: until
      // the first flush after the drop lets go of the tail's writer (Flusher#holdsTail).
      if (e.getValue().segment()
          && !keyspaces.contains(e.getValue().keyspace())
          && tailHeld.test(e.getValue().keyspace())) continue;
      if (named.contains(e.getKey()) || !deleteData(e.getKey())) continue;
      e.getValue().close().run();
      open.remove();
      sizes.remove(e.getKey());
    }
    var closed = unopened.iterator();
    while (closed.hasNext()) {
      String n = closed.next();
      if (!named.contains(n) && deleteData(n)) {
        closed.remove();
        sizes.remove(n);
      }
    }
  }

  /**
   * Deletes an obsolete WAL file or expired manifest; false if that failed (counted in {@code
   * obsoleteDeleteFailures}, tried again at the next cleanup). The commit that made it obsolete
   * stands.
   */
  private boolean deleteQuietly(String name) {
    try {
      storage.delete(name);
      return true;
    } catch (BasaltException e) {
      stats.obsoleteDeleteFailures.increment();
      return false;
    }
  }

  /**
   * Deletes an obsolete data file; false if that failed (counted in {@code obsoleteDeleteFailures},
   * tried again at the next cleanup, and by the next open's orphan sweep). Nothing depends on it,
   * so the deletion need not be durable ({@link Storage#deleteGarbage}): a file a crash brings back
   * is named by no manifest, and the next open's orphan sweep deletes it.
   */
  private boolean deleteData(String name) {
    try {
      storage.deleteGarbage(name);
      return true;
    } catch (BasaltException e) {
      stats.obsoleteDeleteFailures.increment();
      return false;
    }
  }

  // ---- offline commits: a new store, a rollback
  // --------------------------------------------------------

  /**
   * Commits the first manifest of a new store: keyspace "default" (id 1), nothing flushed; {@code
   * flags}: its {@link Manifest#flags} (guards, item counts).
   */
  static Manifest createStore(Storage storage, int flags) {
    Manifest empty = new Manifest(0, 0, 0, 2, 0, 0, 1, List.of(), flags);
    return commitOffline(storage, empty, new VersionEdit().createKeyspace(1, "default"), 1, 2);
  }

  /**
   * Commits the manifest {@code edit} makes of {@code base} as number {@code number}, on a store no
   * process has open (the caller holds its lock). The commit is atomic at the manifest's rename.
   */
  static Manifest commitOffline(
      Storage storage, Manifest base, VersionEdit edit, long number, long nextFileNumber) {
    Manifest next = edit.applyTo(base, number, System.currentTimeMillis(), nextFileNumber);
    write(storage, next);
    return next;
  }

  private static int write(Storage storage, Manifest m) {
    return m.write(storage);
  }
}
