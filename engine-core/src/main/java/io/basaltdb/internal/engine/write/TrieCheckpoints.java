package io.basaltdb.internal.engine.write;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.hashed.HashedIndex;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.hashed.TrieCheckpoint;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.storage.Storage;

/**
 * Writes hashed keyspaces' trie checkpoints ({@link TrieCheckpoint}): after a flush (or while the
 * flusher is idle) once {@link Options#trieCheckpointBytes} were flushed to a keyspace, or swept
 * from it as expired, since its last checkpoint (and at least a quarter as many bytes as its dirty
 * pages), and at close. Runs the keyspaces' expiry sweeps ({@link HashedIndex#sweepExpired}) first.
 *
 * <p>A checkpoint is made usable in three steps, each safe to crash after: (1) the dirty pages go
 * to the double-write file, synced; (2) one commit makes the tombstones flushed since the last
 * checkpoint garbage (a level-0 delete list table) and raises the keyspace's purge seqno to the
 * newest of them, so an open may no longer use an older checkpoint (it could miss those deletions)
 * and does apply the double-write file; (3) the pages go in place, synced, and the double-write
 * file is deleted. A crash before (2) leaves the previous checkpoint and the tombstones live.
 *
 * <p>When at least half the pages are dirty (the usual case under updates: hashes land all over the
 * space) one write of the whole space costs less than two of the dirty pages: (1) every page goes
 * to a new space file, synced, renamed over the old one; (2) the commit as above. Its meta names
 * the newest tombstone it covers, and an open uses it only once the purge seqno reached that (a
 * crash between the two costs a replay of the whole log).
 *
 * <p>Thread-safety: runs on the flusher's thread (or the closer's, once the flusher stopped): the
 * trie's one writer, whose lock {@link HashedIndex#writeCheckpoint} holds throughout.
 */
final class TrieCheckpoints {
  private final Options options;
  private final Storage storage;
  private final TableCache tables;
  private final VersionSet versionSet;
  private final EngineStats stats;
  private final HashedIndexes hashed;

  TrieCheckpoints(
      Options options,
      Storage storage,
      TableCache tables,
      VersionSet versionSet,
      EngineStats stats,
      HashedIndexes hashed) {
    this.options = options;
    this.storage = storage;
    this.tables = tables;
    this.versionSet = versionSet;
    this.stats = stats;
    this.hashed = hashed;
  }

  /** Root slots one expiry sweep step passes over: a sixteenth of a default trie. */
  static final int SWEEP_SLOTS = 16;

  /**
   * After a flush's commit, and when the flusher is idle (every 100 ms): a step of each keyspace's
   * expiry sweep ({@link HashedIndex#sweepExpired}), then checkpoints for the keyspaces that are
   * due.
   */
  void maintain() {
    long interval = options.expiryCheckMillis();
    if (interval > 0) {
      long now = options.clock().getAsLong();
      for (HashedIndex index : hashed.all()) {
        // As an ordered keyspace's compaction does when it drops an expired record, the purge seqno
        // rises to the newest swept: a change feed from below it can no longer see the expiry.
        int ks = index.keyspace();
        int n =
            index.sweepExpired(
                now,
                interval,
                SWEEP_SLOTS,
                newest -> versionSet.logAndApply(new VersionEdit().purged(ks, newest)));
        if (n > 0) stats.trieExpiredRemoved.add(n);
      }
    }
    if (hashed.backupRunning()) return; // the next flush after it checkpoints
    for (HashedIndex index : hashed.all()) {
      if (index.checkpointDue(options.trieCheckpointBytes())) tryWrite(index);
    }
  }

  /** At close, once the flusher stopped: a checkpoint of every keyspace changed since its last. */
  void atClose() {
    for (HashedIndex index : hashed.all()) {
      if (index.changedSinceCheckpoint()) tryWrite(index);
    }
  }

  /**
   * Writes a checkpoint, or reports why it could not (a full disk, a failing one): a checkpoint
   * only shortens the next open, so its failure does not fail the store. Before the commit nothing
   * changed (the tombstones stay pending, the previous checkpoint stays usable); after it, the
   * double-write file completes the checkpoint at the next open, and the pages stay dirty for the
   * next attempt.
   */
  private void tryWrite(HashedIndex index) {
    try {
      write(index);
    } catch (io.basaltdb.StorageException e) {
      stats.trieCheckpointFailures.increment();
      Notifier.LOG.warn(
          "hashed keyspace {}: trie checkpoint not written ({}); the next flush tries again",
          index.keyspace(),
          e.getMessage());
    }
  }

  /**
   * A checkpoint of {@code index} now, due or not (Basalt.compactRange: the tombstones flushed
   * since the last one become garbage); a storage error is thrown. Any thread: the trie's writer
   * lock serializes it with the flusher's.
   */
  boolean writeNow(HashedIndex index) {
    if (hashed.backupRunning()) return false; // the next flush after it checkpoints
    return write(index);
  }

  private boolean write(HashedIndex index) {
    int ks = index.keyspace();
    // The commit marker could not be chosen (see below): refused before the pending garbage is
    // gathered, which the idle flusher would otherwise do every 100 ms until the next flush.
    if (versionSet.purgeSeqno(ks) >= versionSet.manifest().flushedSeqno()
        && index.hasPendingGarbage()) return false;
    int layout = versionSet.layoutCode(ks);
    return index.writeCheckpoint(
        (pending, count) -> {
          // The trie is still and, unless a WAL-skip batch is between its apply and its commit,
          // holds the flushed state as of the manifest's flushed seqno.
          long seqno = versionSet.manifest().flushedSeqno();
          if (index.appliedSeqno() > seqno) return false; // a WAL-skip batch not yet committed
          if (hashed.backupRunning()) return false; // its copy must match its manifest
          long newest = 0;
          for (int i = 0; i < count; i++) newest = Math.max(newest, pending[2 * i]);
          // The meta's marker must lie above the purge seqno, or an open would take a checkpoint
          // whose commit never ran for committed: a swept expired record's seqno may lie below it
          // (a tombstone's never does). With the purge already at the flushed seqno (a sweep with
          // no flush since the last checkpoint), the checkpoint waits for the next flush.
          if (count > 0) newest = Math.max(newest, versionSet.purgeSeqno(ks) + 1);
          if (newest > seqno) return false;
          boolean whole = TrieCheckpoint.wholeIsCheaper(storage, index);
          TrieCheckpoint.Pending p = null;
          if (whole) {
            long bytes = TrieCheckpoint.writeWhole(storage, index, layout, seqno, newest);
            stats.indexBytesWritten.add(bytes);
            stats.trieCheckpointPages.add(bytes / 4096);
          } else {
            p = TrieCheckpoint.writeDoubleWrite(storage, index, layout, seqno, newest);
          }
          if (count > 0) {
            VersionEdit edit = new VersionEdit();
            DeleteList.writeDiscarded(
                storage,
                tables,
                versionSet.nextFileNumber,
                options,
                ks,
                pending,
                count,
                edit,
                stats.deleteListBytesWritten);
            edit.purged(ks, newest);
            versionSet.logAndApply(edit);
            index.tombstonesCommitted();
          }
          if (!whole) {
            // a hashed keyspace's key index writes: its checkpoints (and its delete list tables)
            long inPlace = TrieCheckpoint.writeInPlace(storage, index, p);
            stats.indexBytesWritten.add(p.bytes() + inPlace);
            stats.trieCheckpointPages.add((p.bytes() + inPlace) / 4096);
          }
          stats.trieCheckpoints.increment();
          return true;
        });
  }
}
