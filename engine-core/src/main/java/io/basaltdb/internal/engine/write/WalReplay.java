package io.basaltdb.internal.engine.write;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.ItemCounter;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * WAL replay at open (Magma section 5): every record of the WAL files from the manifest's walStart
 * on, skipping the seqnos the manifest's files already hold, goes into the write cache, flushed
 * inline when it fills. A torn tail of the last WAL file is trimmed; a bad record anywhere else, a
 * record after a damaged one that proves the damage was durable, or a gap in the seqnos fails the
 * open with a {@link CorruptionException} naming the file and offset.
 *
 * <p>Thread-safety: runs on the opening thread before the store is shared.
 */
public final class WalReplay {
  private WalReplay() {}

  /**
   * Replays the WAL from {@code m}'s walStart into the active write cache, flushing inline through
   * {@code flusher} whenever it fills; publishes the last seqno replayed in {@code versions}.
   */
  public static void replay(
      Storage storage,
      Options options,
      Manifest m,
      Versions versions,
      KeyspaceCatalog catalog,
      EngineStats stats,
      Flusher flusher) {
    List<Long> files = new ArrayList<>();
    for (long n : CommitLog.list(storage)) {
      if (n >= m.walStart()) files.add(n);
    }
    long last = m.flushedSeqno();
    long switchAt = DiskWrites.switchBytes(options);
    for (int i = 0; i < files.size(); i++) {
      long number = files.get(i);
      String name = FileNames.wal(number);
      String desc = storage.describe(name);
      try (StorageFile f = storage.open(name)) {
        LogReader r = new LogReader(f);
        long previousFirst = -1, staleAt = -1;
        while (r.next()) {
          Batch b = Batch.decode(r.payload(), desc, r.recordOffset());
          // Seqnos ascend within a file: a lower one is a recycled file's old content (CommitLog),
          // where
          // the file's new records end or one was lost in a crash. As a torn record, below.
          if (b.firstSeqno < previousFirst) {
            staleAt = r.recordOffset();
            break;
          }
          previousFirst = b.firstSeqno;
          long end = b.firstSeqno + b.count - 1;
          if (end <= last) continue;
          if (b.firstSeqno != last + 1) {
            throw new CorruptionException(
                desc,
                r.recordOffset(),
                "the WAL skips from seqno "
                    + last
                    + " to "
                    + b.firstSeqno
                    + " (a WAL file is missing or the newest manifest is damaged)");
          }
          for (int op = 0; op < b.count; op++) {
            int ks = b.keyspaces[op];
            if (!catalog.isLive(ks) && ks >= m.nextKeyspaceId()) {
              throw new CorruptionException(
                  desc,
                  r.recordOffset(),
                  "a write to keyspace #" + ks + ", which the manifest does not know");
            }
          }
          // Exact item counts: each batch counted against what replay has rebuilt so far, as its
          // leader did.
          ItemCounter.Counted counted =
              versions.items() == null
                  ? null
                  : versions.items().deltas(versions.current(), List.of(b));
          CommitPipeline.apply(
              versions.current().active,
              b,
              counted == null ? null : counted.below()[0],
              catalog,
              stats);
          if (counted != null) versions.items().add(counted);
          last = end;
          versions.publish(last);
          if (versions.current().active.bytes() >= switchAt) flushInline(versions, flusher, number);
        }
        long stop = staleAt >= 0 ? staleAt : r.stop() == LogReader.Stop.TORN ? r.stopOffset() : -1;
        if (stop >= 0) {
          String why = staleAt >= 0 ? "a record older than the one before it" : r.stopReason();
          if (i < files.size() - 1 || syncedGroupFollows(f, stop, last)) {
            throw new CorruptionException(desc, stop, why + " (acknowledged writes follow it)");
          }
          f.truncate(stop);
        }
        // What was replayed may be only in the page cache (a process that died before its fsync):
        // make
        // it durable before the store acknowledges writes numbered after it, or a power loss would
        // leave
        // a seqno gap that fails every later open.
        f.sync();
      }
    }
    versions.publish(last);
  }

  /** Bytes of the damaged tail {@link #syncedGroupFollows} reads at a time. */
  private static final int SCAN_CHUNK = 1 << 20;

  /**
   * Whether the damaged record at {@code offset} of the last WAL file is followed by an intact
   * record that starts a commit group written in SYNC mode. Such a group is written only after the
   * previous group was fsynced, so the damaged record was durable: that is corruption, not a torn
   * tail. {@code last} is the last seqno replayed before the damage.
   */
  private static boolean syncedGroupFollows(StorageFile f, long offset, long last) {
    long len = LogReader.frameLengthAt(f, offset);
    if (len
        > 0) { // the common case: the damaged record's length is intact and the next group follows
      // it
      ByteBuffer next = LogReader.recordAt(f, offset + len);
      // Its seqno counts too: the old records of a recycled file (CommitLog) can follow a torn one.
      if (next != null
          && next.remaining() >= Batch.HEADER_SIZE
          && isSyncedGroupStart(next.get(Batch.HEADER_SIZE - 1))
          && next.getLong(0) > last) {
        return true;
      }
      // An intact record that starts no synced group (the rest of the damaged record's group, say)
      // proves nothing either way: look further.
    }
    // The damaged record's length may itself be damaged: look for a synced group start at every
    // later
    // offset. Cheap header checks come first: the flags, and a first seqno after the last one
    // replayed
    // that the bytes in between could have used up (every operation takes at least 13 bytes), which
    // random bytes pass about never, so a garbage tail costs one pass and no checksums. The tail is
    // read a chunk at a time, so its length does not matter (an unsynced tail can be as long as the
    // write cache is big).
    long rest = f.size() - offset;
    int need = 8 + Batch.HEADER_SIZE; // a candidate's frame header and batch header
    ByteBuffer chunk =
        ByteBuffer.allocate((int) Math.max(need, Math.min(rest, SCAN_CHUNK)))
            .order(ByteOrder.LITTLE_ENDIAN);
    long chunkStart = 0; // offset - of the damaged record - of chunk's first byte
    chunk.limit(0);
    for (long p = 1; p + need <= rest; p++) {
      if (p + need
          > chunkStart + chunk.limit()) { // the candidate's headers leave the chunk: read on from p
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

  private static void flushInline(Versions versions, Flusher flusher, long walFile) {
    Version v;
    WriteCache fresh = versions.newWriteCache();
    versions.applyLock.lock();
    try {
      versions.switchWriteCache(walFile, fresh);
      v = versions.acquire();
    } finally {
      fresh.release(); // the new version holds it
      versions.applyLock.unlock();
    }
    try {
      flusher.flush(v);
    } finally {
      v.release();
    }
  }
}
