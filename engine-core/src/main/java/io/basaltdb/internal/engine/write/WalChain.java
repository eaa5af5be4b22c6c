package io.basaltdb.internal.engine.write;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogReader;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Checks at open that no WAL file recovery needs is missing (issue 13 item 5; RocksDB's
 * track_and_verify_wals_in_manifest does the same with a list of WAL files in its manifest). A
 * deleted WAL file would otherwise replay as "nothing more was written": acknowledged writes lost
 * in silence.
 *
 * <p>Two facts name the files that must exist. The manifest's walHead is the WAL file that was
 * current when it was committed; every open commits a manifest right after creating its WAL file,
 * before writing to it. And every WAL file but the newest ends with a synced link record naming its
 * successor ({@link CommitLog#rotate}, within a session and, since {@link CommitLog#startSession},
 * from one session's last file to the next one's first; files written before that may lack the
 * cross-session link). So walHead must be present, and so must every linked successor, except the
 * one of a rotation a crash cut short, whose link {@link #undoInterruptedRotation} removes.
 *
 * <p>Cost: the link, when there is one, is the file's last 29 bytes, so a healthy chain costs one
 * small read per file. Only before failing the open is a file read whole (with {@link LogReader}),
 * to prove the link is its last record and not the tail of a user value that looks like one.
 *
 * <p>Thread-safety: stateless; runs on the opening thread.
 */
public final class WalChain {
  /** Bytes of a link record with its frame: 8 of frame header, the batch header, the successor. */
  static final int LINK_FRAME_SIZE = 8 + Batch.HEADER_SIZE + Batch.SUCCESSOR_SIZE;

  private WalChain() {}

  /**
   * Before replay, with the manifest's walStart and walHead: {@link #undoInterruptedRotation}, then
   * {@link #verify}. The one call recovery needs.
   */
  public static void check(Storage storage, long walStart, long walHead) {
    CommitLog.emptyPool(storage);
    undoInterruptedRotation(storage);
    verify(storage, walStart, walHead);
  }

  /**
   * Undoes a rotation a crash cut short ({@link CommitLog#rotate}): for each pending WAL file left
   * (a {@link CommitLog#pendingName}) whose WAL file does not exist, drops the link naming it from
   * the end of the WAL file it ends (truncated and synced; every record before a link was synced
   * before it), then deletes the pending file. The only repair here; a crash during it leaves it to
   * be redone.
   */
  static void undoInterruptedRotation(Storage storage) {
    for (String name : storage.list(CommitLog.DIR)) {
      long s = CommitLog.pendingNumberOf(name);
      if (s < 0) continue;
      if (!storage.exists(CommitLog.fileName(s))) {
        for (long n : CommitLog.list(storage)) {
          if (n < s && tailLink(storage, n) == s && endsWithLink(storage, n, s)) {
            try (StorageFile f = storage.open(CommitLog.fileName(n))) {
              f.truncate(f.size() - LINK_FRAME_SIZE);
              f.sync();
            }
          }
        }
      }
      storage.delete(CommitLog.DIR + "/" + name);
    }
  }

  /**
   * Fails with a {@link CorruptionException} naming the missing file if a WAL file recovery needs
   * is missing, checked before replay with the manifest's walStart and walHead. Only files numbered
   * {@code walStart} or above count (the rest are obsolete). A torn or damaged file is not judged
   * here; replay does that.
   *
   * <ol>
   *   <li>If {@code walHead > 0 && walHead >= walStart}: files {@code walHead} and {@code walStart}
   *       must exist (walStart is then the file the manifest's first unflushed write went to, or
   *       the first file of a new store; walHead's session links every later file). A walHead of 0
   *       (a manifest from before walHead existed) or below walStart (a rollback) skips this.
   *   <li>A file that ends with a link must link forward, to the next WAL file present: a missing
   *       successor, or a present file between the two (one in no chain), fails the open.
   * </ol>
   */
  static void verify(Storage storage, long walStart, long walHead) {
    List<Long> present = CommitLog.list(storage).stream().filter(n -> n >= walStart).toList();
    if (walHead > 0 && walHead >= walStart) {
      requirePresent(storage, present, walHead, "as the WAL file current when it was committed");
      requirePresent(storage, present, walStart, "as the first WAL file to replay");
    }
    for (int i = 0; i < present.size(); i++) {
      long n = present.get(i);
      long next = i + 1 < present.size() ? present.get(i + 1) : -1;
      long successor = tailLink(storage, n);
      if (successor < 0 || successor == next || !endsWithLink(storage, n, successor)) continue;
      String from = storage.describe(CommitLog.fileName(n));
      if (successor <= n) {
        throw new CorruptionException(
            "WAL file "
                + from
                + " ends with a link to file "
                + successor
                + ", which is not after it; restore the store from a backup");
      }
      if (next < 0 || next > successor) {
        throw new CorruptionException(
            "WAL file "
                + storage.describe(CommitLog.fileName(successor))
                + " is missing: "
                + from
                + " ends with a link to it, so it was written and may hold acknowledged"
                + " writes; restore the store from a backup");
      }
      throw new CorruptionException(
          "WAL file "
              + storage.describe(CommitLog.fileName(next))
              + " is in no chain: "
              + from
              + " links to file "
              + successor
              + ", past it (a WAL file from another"
              + " store or another time?); restore the store from a backup");
    }
  }

  private static void requirePresent(
      Storage storage, List<Long> present, long number, String role) {
    if (!present.contains(number)) {
      throw new CorruptionException(
          "the manifest names "
              + storage.describe(CommitLog.fileName(number))
              + " "
              + role
              + ", and it is missing; its acknowledged writes are lost: restore the store from a backup");
    }
  }

  /**
   * The successor named by a valid link record in the last {@link #LINK_FRAME_SIZE} bytes of WAL
   * file {@code number}, or -1. A hint only: a user value can end in bytes that frame a link.
   */
  static long tailLink(Storage storage, long number) {
    try (StorageFile f = storage.open(CommitLog.fileName(number))) {
      long at = f.size() - LINK_FRAME_SIZE;
      if (at < 0) return -1;
      ByteBuffer payload = LogReader.recordAt(f, at);
      return payload == null ? -1 : linkIn(payload);
    }
  }

  /**
   * Whether WAL file {@code number}'s last record, read from its start, is a link to {@code
   * successor}.
   */
  static boolean endsWithLink(Storage storage, long number, long successor) {
    try (StorageFile f = storage.open(CommitLog.fileName(number))) {
      LogReader r = new LogReader(f);
      long end = f.size();
      long last = -1; // the link in the last record read, if that record ends the file
      while (r.next()) last = r.recordOffset() == end - LINK_FRAME_SIZE ? linkIn(r.payload()) : -1;
      return r.stop() == LogReader.Stop.END && last == successor;
    }
  }

  /** The successor if {@code payload} decodes as a link record, else -1. */
  private static long linkIn(ByteBuffer payload) {
    if (payload.remaining() != Batch.HEADER_SIZE + Batch.SUCCESSOR_SIZE) return -1;
    try {
      Batch b = Batch.decode(payload.duplicate(), "", 0);
      return b.isLink() ? b.successor : -1;
    } catch (CorruptionException e) {
      return -1;
    }
  }
}
