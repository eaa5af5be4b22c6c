package io.basaltdb.internal.engine.write;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.gc.DeleteList;
import io.basaltdb.internal.engine.hashed.HashedIndex;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.hashed.TrieImage;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.TableCache;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.storage.Storage;

/**
 * Writes hashed keyspaces' trie images ({@link TrieImage}): after a flush once {@link
 * Options#trieCheckpointBytes} were flushed to a keyspace since its last image, and at close.
 *
 * <p>An image is made usable in three steps, each safe to crash after: (1) the image is written
 * under a temporary name and synced; (2) one commit makes the tombstones flushed since the last
 * image garbage (a level-0 delete list table) and raises the keyspace's purge seqno to the newest
 * of them, so an open may no longer use an older image (it could miss those deletions); (3) the
 * image is renamed into place and the directory synced. A crash before (2) leaves the old image and
 * the tombstones live; between (2) and (3), no usable image, so the open replays the whole log.
 *
 * <p>Thread-safety: runs on the flusher's thread (or the closer's, once the flusher stopped): the
 * trie's one writer, whose lock {@link HashedIndex#writeImage} holds throughout.
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

  /** After a flush's commit: images for the keyspaces that are due. */
  void afterFlush() {
    for (HashedIndex index : hashed.all()) {
      if (index.imageDue(options.trieCheckpointBytes())) tryWrite(index);
    }
  }

  /** At close, once the flusher stopped: an image for every keyspace changed since its last. */
  void atClose() {
    for (HashedIndex index : hashed.all()) {
      if (index.changedSinceImage()) tryWrite(index);
    }
  }

  /**
   * Writes an image, or reports why it could not (a full disk, a failing one): an image only
   * shortens the next open, so its failure does not fail the store. Before the commit nothing
   * changed (the tombstones stay pending, the old image stays usable); after it, the open replays
   * the whole log until the next image.
   */
  private void tryWrite(HashedIndex index) {
    try {
      write(index);
    } catch (io.basaltdb.StorageException e) {
      stats.trieImageFailures.increment();
      Notifier.LOG.warn(
          "hashed keyspace {}: trie image not written ({}); the next flush tries again",
          index.keyspace(),
          e.getMessage());
    }
  }

  private void write(HashedIndex index) {
    int ks = index.keyspace();
    int layout = versionSet.layoutCode(ks);
    index.writeImage(
        (pending, count) -> {
          // The trie is still and holds the flushed state as of the manifest's flushed seqno: it
          // changes only in flushes, on this thread, applied before their commits.
          long seqno = versionSet.manifest().flushedSeqno();
          String temp = TrieImage.write(storage, index, layout, seqno);
          // a hashed keyspace's key index writes: its images (and its delete list tables)
          stats.indexBytesWritten.add(storage.size(temp));
          if (count > 0) {
            VersionEdit edit = new VersionEdit();
            long newest = 0;
            for (int i = 0; i < count; i++) newest = Math.max(newest, pending[2 * i]);
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
          }
          try {
            TrieImage.publish(storage, temp);
            stats.trieImages.increment();
            for (String old : TrieImage.list(storage, ks)) {
              long s = FileNames.trieImageSeqno(old);
              if (s >= 0 && s < seqno) storage.delete(old);
            }
          } catch (io.basaltdb.StorageException e) {
            // The commit made the tombstones garbage: they are no longer pending. The open will
            // find no image at or above the purge seqno and replay the whole log.
            stats.trieImageFailures.increment();
            Notifier.LOG.warn(
                "hashed keyspace {}: trie image not put in place ({})", ks, e.getMessage());
          }
        });
  }
}
