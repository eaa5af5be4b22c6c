package io.basaltdb.internal.engine.version;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.storage.Storage;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Checkpoints and rollback (Magma section 5: "each checkpoint is a point-in-time snapshot of the
 * database to which we can revert"). A checkpoint is a retained manifest: the files it names hold
 * every write up to its flushedSeqno, and the store keeps them while the manifest is retained
 * ({@link io.basaltdb.Options#checkpointRetentionMillis}). Which manifests are retained once
 * superseded is the {@link VersionSet}'s choice (periodic, or asked for).
 *
 * <p>A rollback to checkpoint T, on a closed store, commits one new manifest R (numbered above
 * every other) that names T's keyspaces, tables and segments with T's tail offsets, T's
 * flushedSeqno, and a walStart above every WAL file present, so no WAL record is replayed. R is the
 * manifest of the {@link VersionEdit} that turns the newest manifest into T, committed through
 * {@link VersionSet#commitOffline}. R's rename is the atomic point: before it the store is
 * unchanged, after it the store is T. Then the manifests after T, the WAL files and the table and
 * segment files no retained manifest names are deleted. The next open reopens each keyspace's last
 * segment at T's tail offset and appends over what followed it; seqnos after T's are handed out
 * again.
 *
 * <p>Invariant: apart from rollbacks, manifest numbers and flushedSeqnos grow together. So a
 * manifest with a flushedSeqno above the newest manifest's is from before a rollback whose clean-up
 * a crash cut short; its segment tails may since have been overwritten, so {@link Recovery} deletes
 * it.
 *
 * <p>Thread-safety: static methods on a storage the caller holds the store's process lock for.
 */
public final class Checkpoints {
  private Checkpoints() {}

  /** The valid manifests in {@code storage}, oldest first; damaged ones are left out. */
  public static List<Manifest> list(Storage storage) {
    List<Manifest> out = new ArrayList<>();
    for (long n : numbers(storage)) {
      try {
        out.add(Manifest.read(storage, n));
      } catch (CorruptionException e) {
        // a damaged checkpoint is not offered; the open reports a damaged newest manifest
      }
    }
    // What Recovery would delete at the next open (a rollback's unfinished clean-up) is not a
    // checkpoint.
    if (!out.isEmpty()) {
      long newest = out.get(out.size() - 1).flushedSeqno();
      out.removeIf(m -> m.flushedSeqno() > newest);
    }
    return out;
  }

  /**
   * Rolls the store back to the checkpoint numbered {@code id}: afterwards it holds exactly the
   * writes that checkpoint holds, its later checkpoints are gone, and its earlier ones remain.
   * Throws {@link InvalidArgumentException} if there is no such checkpoint, {@link
   * CorruptionException} if it is damaged or a file it names is missing; nothing changes then.
   */
  public static Manifest rollback(Storage storage, long id) {
    List<Manifest> valid = list(storage);
    Manifest target = null;
    for (Manifest m : valid) {
      if (m.number() == id) target = m;
    }
    if (target == null) {
      if (numbers(storage).contains(id)) Manifest.read(storage, id); // throws the damage found
      List<Long> ids = new ArrayList<>();
      for (Manifest m : valid) ids.add(m.number());
      throw new InvalidArgumentException(
          "the store has no checkpoint "
              + id
              + "; its checkpoints are "
              + ids
              + " (expired ones are deleted after checkpointRetentionMillis)");
    }
    for (Manifest.KeyspaceMeta k : target.keyspaces()) {
      for (Manifest.TableMeta t : k.tables())
        mustExist(storage, target, FileNames.table(k.id(), t.fileNumber()));
      for (SegmentState s : k.segments())
        mustExist(storage, target, FileNames.segment(k.id(), s.segmentId()));
      for (Manifest.DeleteTableMeta d : k.deletes())
        mustExist(storage, target, FileNames.deleteTable(k.id(), d.fileNumber()));
    }
    long maxFile = 0;
    long maxManifest = 0;
    int nextKeyspaceId = target.nextKeyspaceId();
    for (long n : numbers(storage)) maxManifest = Math.max(maxManifest, n);
    for (Manifest m : valid) {
      maxFile = Math.max(maxFile, m.nextFileNumber() - 1);
      nextKeyspaceId =
          Math.max(nextKeyspaceId, m.nextKeyspaceId()); // ids are never handed out twice
    }
    for (long n : FileNames.walNumbers(storage)) maxFile = Math.max(maxFile, n);
    for (int ks = 1; ks < nextKeyspaceId; ks++) {
      for (String dir : FileNames.dataDirs(ks)) {
        for (String f : storage.list(dir)) maxFile = Math.max(maxFile, FileNames.dataFileNumber(f));
      }
    }
    long walStart = maxFile + 1; // above every WAL file: nothing is replayed
    Manifest newest = valid.get(valid.size() - 1);
    Manifest base =
        new Manifest(
            newest.number(),
            newest.createdMillis(),
            newest.flushedSeqno(),
            newest.nextFileNumber(),
            newest.walStart(),
            newest.walHead(),
            nextKeyspaceId,
            newest.keyspaces(),
            newest.flags());
    Manifest rolled =
        VersionSet.commitOffline(
            storage, base, backTo(base, target, walStart), maxManifest + 1, walStart);

    // The store is now the target. What follows is clean-up; the next open finishes it after a
    // crash.
    List<Manifest> retained = new ArrayList<>();
    for (long n : numbers(storage)) {
      if (n > target.number() && n < rolled.number()) storage.delete(FileNames.manifest(n));
    }
    for (Manifest m : valid) {
      if (m.number() <= target.number()) retained.add(m);
    }
    retained.add(rolled);
    for (long n : FileNames.walNumbers(storage)) {
      if (n < walStart) storage.delete(FileNames.wal(n));
    }
    deleteUnnamed(storage, retained, nextKeyspaceId);
    return rolled;
  }

  /**
   * The edit that turns {@code newest} into {@code target}: keyspaces only one of them has are
   * dropped or created, the others get the target's tables, segments and counters; the flushed
   * seqno is the target's, the WAL starts at {@code walStart} (no file yet) and the head names no
   * file.
   */
  private static VersionEdit backTo(Manifest newest, Manifest target, long walStart) {
    VersionEdit edit =
        new VersionEdit()
            .flushedSeqno(target.flushedSeqno())
            .walStart(walStart)
            .resetWalHead(0)
            .flag(
                Manifest.FLAG_ITEM_COUNTS,
                target.itemsCounted()); // the counts restored are exact only if they were
    java.util.Map<Integer, Manifest.KeyspaceMeta> now = new java.util.HashMap<>();
    for (Manifest.KeyspaceMeta k : newest.keyspaces()) now.put(k.id(), k);
    for (Manifest.KeyspaceMeta t : target.keyspaces()) {
      Manifest.KeyspaceMeta k = now.remove(t.id());
      if (k == null) {
        edit.createKeyspace(t.id(), t.name(), t.trieChunkBytes());
        edit.addCounters(t.id(), t.counters());
      } else {
        for (Manifest.TableMeta m : k.tables()) edit.removeTable(t.id(), m.fileNumber());
        for (SegmentState s : k.segments()) edit.removeSegment(t.id(), s.segmentId());
        edit.addCounters(t.id(), t.counters().minus(k.counters()));
        edit.keyIndexFormat(t.id(), t.trieChunkBytes()); // the target's tables were written in it
      }
      for (Manifest.TableMeta m : t.tables()) edit.addTable(t.id(), m);
      for (SegmentState s : t.segments()) edit.putSegment(t.id(), s);
      edit.restoreGarbageState(t.id(), t.deletes(), t.garbage());
      edit.restoreGuards(
          t.id(), t.guards()); // or the target's tables could straddle guards added since
      edit.restorePurgeSeqno(t.id(), t.purgeSeqno());
    }
    for (int id : now.keySet()) edit.dropKeyspace(id);
    return edit;
  }

  /**
   * Deletes the table, delete list and segment files of keyspace ids below {@code nextKeyspaceId}
   * that no manifest of {@code retained} names, and the trie checkpoints of keyspaces none of them
   * has.
   */
  static void deleteUnnamed(Storage storage, List<Manifest> retained, int nextKeyspaceId) {
    Set<String> keep = new HashSet<>();
    for (Manifest m : retained) keep.addAll(Manifest.fileNames(m));
    // Storage lists files only; keyspace ids are dense from 1, so visit each id the store ever
    // used.
    Set<Integer> named = new HashSet<>();
    for (Manifest m : retained) {
      for (Manifest.KeyspaceMeta k : m.keyspaces()) named.add(k.id());
    }
    for (int ks = 1; ks < nextKeyspaceId; ks++) {
      for (String dir : FileNames.dataDirs(ks)) {
        for (String f : storage.list(dir)) {
          if (!keep.contains(dir + "/" + f)) storage.delete(dir + "/" + f);
        }
      }
      // a dropped hashed keyspace's trie checkpoint files
      if (!named.contains(ks)) {
        for (String f : storage.list(FileNames.trieDir(ks))) {
          storage.delete(FileNames.trieDir(ks) + "/" + f);
        }
      }
    }
  }

  private static void mustExist(Storage storage, Manifest target, String name) {
    if (!storage.exists(name)) {
      throw new CorruptionException(
          "checkpoint "
              + target.number()
              + " names "
              + storage.describe(name)
              + ", which is missing; roll back to another checkpoint or restore the store from a backup");
    }
  }

  /** Manifest numbers present, ascending (damaged files included). */
  public static List<Long> numbers(Storage storage) {
    List<Long> out = new ArrayList<>();
    for (String name : storage.list(FileNames.MANIFEST_DIR)) {
      long n = FileNames.manifestNumber(name);
      if (n >= 0) out.add(n);
    }
    out.sort(null);
    return out;
  }
}
