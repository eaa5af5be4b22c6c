package io.basaltdb.internal.engine;

import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * The write-ahead log's current file (Magma section 3.1): batches are framed records (docs/format.md,
 * "WAL"), written by the commit leader one group at a time with a single write, then fsynced per the
 * sync mode. A write cache switch rotates to a new file, so every WAL file but the newest holds only
 * seqnos at or below some flushed boundary and is deleted once a manifest covers it.
 *
 * <p>The WAL files form a chain: a rotation, and the start of a session after replay, end the old file
 * with a synced link record naming the new one (docs/format.md, "WAL record payload"), so a missing
 * successor is detectable ({@link WalChain}); the manifest names the session's first file (walHead).
 *
 * <p>Thread-safety: {@link #append} and {@link #rotate} are called by the commit leader only (one at a
 * time); {@link #sync} also by the periodic syncer, so file operations are synchronized on this.
 */
final class CommitLog implements AutoCloseable {
  static final String DIR = FileNames.WAL_DIR;

  private final Storage storage;

  // Guarded by this: replaced together by rotate.
  private StorageFile file;
  private LogWriter writer;
  private long number;
  /** Bytes written since the last sync. */
  private long unsynced;
  /** The last seqno appended in this session (any file), -1 before the first append. */
  private long lastLogged = -1;

  CommitLog(Storage storage, long number) {
    this.storage = storage;
    open(number);
  }

  /**
   * The WAL of a session that starts after replay: file {@code number}, reached from the previous
   * session's newest file {@code previous} by a rotation ({@link #rotate}), so that file ends with a
   * link to this one and the chain runs across sessions; a deleted file of an earlier session is then
   * named at the next open, not only noticed as a seqno gap. Without a previous file still needed
   * ({@code previous < 0}) the file is simply created. {@code lastSeqno}: the last seqno replayed.
   */
  static CommitLog startSession(Storage storage, long previous, long number, long lastSeqno) {
    if (previous < 0) return new CommitLog(storage, number);
    CommitLog log = new CommitLog(storage);
    StorageFile f = storage.open(fileName(previous));
    log.file = f;
    log.writer = new LogWriter(f, f.size()); // replay trimmed any torn tail: the file ends with a whole record
    log.number = previous;
    log.lastLogged = lastSeqno;
    try {
      log.rotate(number);
    } catch (RuntimeException | Error e) {
      log.abandon();
      throw e;
    }
    return log;
  }

  private CommitLog(Storage storage) {
    this.storage = storage;
  }

  static String fileName(long number) {
    return FileNames.wal(number);
  }

  /**
   * The name file {@code number} has while a rotation creates it, until the link naming it is durable:
   * replay does not list it, so a crash before then leaves the old file the newest (see {@link #rotate}).
   */
  static String pendingName(long number) {
    return fileName(number) + ".tmp";
  }

  /** The file number in a pending WAL file name ({@link #pendingName}), or -1. */
  static long pendingNumberOf(String name) {
    return name.endsWith(".log.tmp") ? numberOf(name.substring(0, name.length() - 4)) : -1;
  }

  /** The file number in a WAL file name, or -1. */
  static long numberOf(String name) {
    return FileNames.walNumber(name);
  }

  /** WAL file numbers present, ascending. */
  static List<Long> list(Storage storage) {
    List<Long> out = new ArrayList<>();
    for (String n : storage.list(DIR)) {
      long v = numberOf(n);
      if (v >= 0) out.add(v);
    }
    out.sort(null);
    return out;
  }

  private void open(long n) {
    file = storage.create(fileName(n));
    writer = new LogWriter(file, 0);
    number = n;
    unsynced = 0;
  }

  synchronized long number() {
    return number;
  }

  /** Writes the group's records with one write; returns bytes written. Fsyncs if {@code sync}. */
  synchronized long append(List<Batch> group, boolean sync) {
    long before = writer.offset();
    boolean first = true;
    for (Batch b : group) {
      // flags are set here, at logging time: the leader knows whether the group is synced
      b.flags = (byte) ((first ? Batch.GROUP_START : 0) | (sync ? Batch.SYNCED : 0));
      first = false;
      writer.add(b.encodedSize(), b::encode); // encoded in place: no buffer, no copy per batch
    }
    long end = writer.flush();
    unsynced += end - before;
    for (Batch b : group) lastLogged = Math.max(lastLogged, b.firstSeqno + b.count - 1);
    if (sync) syncLocked();
    return end - before;
  }

  synchronized void sync() {
    if (unsynced > 0) syncLocked();
  }

  private void syncLocked() {
    writer.sync();
    unsynced = 0;
  }

  /**
   * Starts file {@code next}, in an order that leaves every crash point recoverable:
   *
   * <ol>
   *   <li>creates it as {@link #pendingName} (durable on return), which replay does not list;</li>
   *   <li>syncs the current file, appends a link record naming {@code next}, syncs again (the first
   *       sync makes the link's SYNCED flag true, as for the close marker). A crash before the link is
   *       durable leaves the current file the newest listed, so a torn link is a torn tail;</li>
   *   <li>renames the pending file to its WAL name (atomic, durable) and switches to it. A crash between
   *       the link's sync and the rename leaves a link to a missing file and the pending file that shows
   *       the rotation was cut short: {@link WalChain#undoInterruptedRotation} removes that link.</li>
   * </ol>
   *
   * On a failure the current file stays current and the store fails.
   */
  synchronized void rotate(long next) {
    String pending = pendingName(next);
    if (storage.exists(pending)) storage.delete(pending); // from a rotation to the same number that failed
    storage.create(pending).close();
    syncLocked();
    Batch link = Batch.link(lastLogged + 1, next);
    writer.add(link.encodedSize(), link::encode);
    writer.flush();
    syncLocked();
    storage.rename(pending, fileName(next));
    StorageFile successor = storage.open(fileName(next));
    StorageFile old = file;
    file = successor;
    writer = new LogWriter(successor, 0);
    number = next;
    unsynced = 0;
    old.close();
  }

  /**
   * Closes cleanly: syncs, then appends an empty marker record (a synced group start, seqno
   * {@code lastSeqno + 1}, no operations) and syncs again. Every real record is then followed by a
   * synced group, so recovery can tell damage to any of them from a torn tail. The first sync is what
   * makes the marker's flag true: a power loss before the second may keep the marker, and recovery
   * then relies on every record before it being on the device.
   */
  synchronized void close(long lastSeqno) {
    try {
      syncLocked();
      Batch marker = new Batch(0);
      marker.firstSeqno = lastSeqno + 1;
      marker.flags = Batch.GROUP_START | Batch.SYNCED;
      writer.add(marker.encodedSize(), marker::encode);
      writer.flush();
      syncLocked();
    } finally {
      file.close();
    }
  }

  @Override
  public synchronized void close() {
    try {
      syncLocked();
    } finally {
      file.close();
    }
  }

  /** Closes without syncing (after a failure, when the file's tail may be unwritable). */
  synchronized void abandon() {
    file.close();
  }
}
