package io.basaltdb.internal.engine.version;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.internal.segment.SegmentReader;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Opening a store (Magma section 5): load the newest valid manifest, open the files it names,
 * delete files no retained manifest names (a flush or compaction that crashed before its manifest,
 * or an obsolete file whose unsynced deletion a crash undid: {@code Storage#deleteGarbage}), the
 * WAL is then replayed from the manifest's walStart by {@link
 * io.basaltdb.internal.engine.write.WalReplay}. A missing file fails the open with a {@link
 * CorruptionException} naming it.
 *
 * <p>Thread-safety: runs on the opening thread before the store is shared.
 */
public final class Recovery {
  private Recovery() {}

  /** What {@link #load} found. */
  public static final class State {
    public Manifest manifest;
    public final Map<Integer, KeyspaceFiles> files = new HashMap<>();
    public final Map<Integer, SegmentTail> segmentWriters = new HashMap<>();

    /** Retained manifests (checkpoints): number to creation time. */
    final TreeMap<Long, Long> checkpoints = new TreeMap<>();

    /** Names of the data files each retained manifest names. */
    final Map<Long, Set<String>> checkpointFiles = new HashMap<>();

    long nextFileNumber;
  }

  /**
   * Loads the newest valid manifest (creating a store's first one), deletes orphans, opens the
   * files it names through {@code tables} (which closes them all if this throws).
   */
  public static State load(Storage storage, Options options, TableCache tables) {
    storage.mkdirs(FileNames.MANIFEST_DIR);
    storage.mkdirs(FileNames.WAL_DIR);
    storage.mkdirs(FileNames.KEYSPACES_DIR);
    State st = new State();
    try {
      loadManifests(storage, st);
      if (st.manifest == null) {
        Manifest m =
            VersionSet.createStore(
                storage,
                (options.keyIndexGuards() ? Manifest.FLAG_GUARDS : 0)
                    | (options.exactItemCounts() ? Manifest.FLAG_ITEM_COUNTS : 0));
        st.manifest = m;
        st.checkpoints.put(1L, m.createdMillis());
        st.checkpointFiles.put(1L, Set.of());
      }
      checkLayout(st.manifest, options);
      long maxFile = st.manifest.nextFileNumber() - 1;
      for (long n : FileNames.walNumbers(storage)) maxFile = Math.max(maxFile, n);
      deleteOrphans(storage, st);
      for (Manifest.KeyspaceMeta k : st.manifest.keyspaces()) {
        openKeyspace(options, tables, k, st);
        for (Manifest.TableMeta t : k.tables()) maxFile = Math.max(maxFile, t.fileNumber());
        for (SegmentState s : k.segments()) maxFile = Math.max(maxFile, s.segmentId());
        for (Manifest.DeleteTableMeta d : k.deletes()) maxFile = Math.max(maxFile, d.fileNumber());
      }
      st.nextFileNumber = maxFile + 1;
      return st;
    } catch (RuntimeException e) {
      tables.closeAll();
      throw e;
    }
  }

  private static void loadManifests(Storage storage, State st) {
    List<Long> numbers = new ArrayList<>();
    for (String name : storage.list(FileNames.MANIFEST_DIR)) {
      if (FileNames.isManifestTemp(name)) {
        storage.delete(
            FileNames.MANIFEST_DIR + "/" + name); // a commit that crashed before its rename
      } else if (FileNames.manifestNumber(name) >= 0) {
        numbers.add(FileNames.manifestNumber(name));
      }
    }
    numbers.sort(null);
    CorruptionException newestError = null;
    for (int i = numbers.size() - 1; i >= 0; i--) {
      try {
        Manifest m = Manifest.read(storage, numbers.get(i));
        if (st.manifest == null) st.manifest = m;
        if (m.flushedSeqno() > st.manifest.flushedSeqno()) {
          // From before a rollback whose clean-up a crash cut short (see Checkpoints): not a state
          // to offer.
          storage.delete(FileNames.manifest(m.number()));
          continue;
        }
        st.checkpoints.put(m.number(), m.createdMillis());
        st.checkpointFiles.put(m.number(), Manifest.fileNames(m));
      } catch (CorruptionException e) {
        // An older valid manifest may still recover the store: the WAL seqno check below fails the
        // open
        // if the WAL it needs is gone.
        if (newestError == null && st.manifest == null) newestError = e;
      }
    }
    if (st.manifest == null && newestError != null) throw newestError;
  }

  private static void openKeyspace(
      Options options, TableCache tables, Manifest.KeyspaceMeta k, State st) {
    List<KeyspaceFiles.Table> ts = new ArrayList<>();
    for (Manifest.TableMeta t : k.tables()) {
      ts.add(
          new KeyspaceFiles.Table(
              t.fileNumber(), t.level(), tables.openTable(k.id(), t.fileNumber())));
    }
    List<KeyspaceFiles.Segment> segments = new ArrayList<>();
    for (int i = 0; i < k.segments().size(); i++) {
      SegmentState s = k.segments().get(i);
      StorageFile f = tables.openExisting(FileNames.segment(k.id(), s.segmentId()));
      tables.track(f);
      long owner = tables.blockCache().newOwners(2); // index pages, documents
      segments.add(
          new KeyspaceFiles.Segment(s, new SegmentReader(f, s, tables.blockCache(), owner)));
      if (i == k.segments().size() - 1 && s.tailOffset() < options.segmentSize()) {
        st.segmentWriters.put(
            k.id(),
            new SegmentTail(
                SegmentWriter.reopen(f, s, SegmentTail.segmentOptions(options)), f, owner));
      }
    }
    List<KeyspaceFiles.DeleteTable> deletes = new ArrayList<>();
    for (Manifest.DeleteTableMeta d : k.deletes()) {
      deletes.add(
          new KeyspaceFiles.DeleteTable(
              d, tables.openTable(FileNames.deleteTable(k.id(), d.fileNumber()))));
    }
    try {
      st.files.put(
          k.id(),
          new KeyspaceFiles(
              ts,
              segments,
              deletes,
              k.garbage(),
              st.manifest.guardedKeyIndex() ? k.guards() : null));
    } catch (IllegalStateException e) { // overlapping tables of a level, a table across a guard key
      throw new io.basaltdb.CorruptionException(
          "manifest "
              + st.manifest.number()
              + " lists the key index of keyspace '"
              + k.name()
              + "' inconsistently: "
              + e.getMessage()
              + ". Restore the store from a backup");
    }
  }

  /**
   * Refuses, before any file is written (a crashed commit's temporary manifest may be gone), to
   * open a store with the other key index layout than the one it was created with: reads and
   * compaction would follow the store's, and a benchmark or a deployment would then measure or run
   * what it did not ask for.
   */
  private static void checkLayout(Manifest m, Options options) {
    if (m.guardedKeyIndex() == options.keyIndexGuards()) return;
    boolean was = m.guardedKeyIndex();
    throw new io.basaltdb.InvalidArgumentException(
        "the store was created with Options.keyIndexGuards("
            + was
            + "): its key index "
            + (was ? "keeps guards (manifest format 5)" : "is leveled")
            + ". Open it with"
            + " keyIndexGuards("
            + was
            + "); a store keeps the key index layout it was created with");
  }

  /** Deletes table, delete list table and segment files that no retained manifest names. */
  private static void deleteOrphans(Storage storage, State st) {
    List<Manifest> retained = new ArrayList<>();
    for (long n : st.checkpoints.keySet()) {
      retained.add(n == st.manifest.number() ? st.manifest : Manifest.read(storage, n));
    }
    Checkpoints.deleteUnnamed(storage, retained, st.manifest.nextKeyspaceId());
  }
}
