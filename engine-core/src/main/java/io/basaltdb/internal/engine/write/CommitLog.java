package io.basaltdb.internal.engine.write;

import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogWriter;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The write-ahead log's current file (Magma section 3.1): batches are framed records
 * (docs/format.md, "WAL"), written by the commit leader one group at a time with a single write,
 * then fsynced per the sync mode. A write cache switch rotates to a new file, so every WAL file but
 * the newest holds only seqnos at or below some flushed boundary and is deleted once a manifest
 * covers it.
 *
 * <p>The WAL files form a chain: a rotation, and the start of a session after replay, end the old
 * file with a synced link record naming the new one (docs/format.md, "WAL record payload"), so a
 * missing successor is detectable ({@link WalChain}); the manifest names the session's first file
 * (walHead).
 *
 * <h2>Recycled files</h2>
 *
 * An obsolete file is not deleted but {@link #retire retired} into a pool of at most {@link
 * #POOL_SIZE} (RocksDB's {@code recycle_log_file_num}), and a rotation takes its next file from the
 * pool when it can: a commit then overwrites blocks already written, so its {@code fdatasync}
 * changes no metadata and needs no file-system journal commit, which the flusher's and collection's
 * writes would otherwise share (the update race's commits ran 6-10% faster). Its old records stay
 * behind the new ones. They are harmless: every one was flushed before the file was retired, so its
 * seqno is at or below the flushed seqno of every later manifest and replay skips it; a torn
 * boundary between new and old records is a torn tail (replay's check for a synced group behind
 * damage counts only seqnos above the last one replayed). Two rules keep the chain's checks ({@link
 * WalChain}) true: a retired file loses a link at its end, and a rotation truncates the current
 * file at its written end before it appends the link, so a link is still a file's last record. Only
 * files this process saw written or replayed are recycled (VersionSet deletes those below the
 * walStart it opened with: a rollback whose clean-up was cut short leaves a discarded history
 * there, with seqnos above the ones written next), and the pool is emptied at open.
 *
 * <p>Thread-safety: {@link #append} and {@link #rotate} are called by the commit leader only (one
 * at a time); {@link #sync} by the periodic syncer. File operations are synchronized on this, but
 * the syncer's fsync runs outside the monitor, under {@link #syncLock}: the leader appends
 * meanwhile (RocksDB's SyncWAL does not hold its write queue either). Before, every periodic fsync
 * held the monitor, and the next group's write waited for it: with the WAL synced every 100 ms,
 * writers stood still for the length of each fsync of 100 ms of writes. Whoever closes or replaces
 * the file (rotate, close, abandon) takes {@link #syncLock} first, so no file is closed under a
 * sync. Lock order: {@link #syncLock}, then this. {@link #retire} runs on other threads; the pool
 * is files in {@link #DIR}, moved by atomic renames.
 */
public final class CommitLog implements AutoCloseable {
  static final String DIR = FileNames.WAL_DIR;

  /** Obsolete WAL files kept for reuse, at most. */
  static final int POOL_SIZE = 2;

  private static final String POOL_PREFIX = "recycle-";

  private final Storage storage;

  // Guarded by this: replaced together by rotate.
  private StorageFile file;
  private LogWriter writer;
  private long number;

  /** Bytes written since the last sync. */
  private long unsynced;

  /** Held across a sync made outside the monitor, and by whoever closes or replaces the file. */
  private final java.util.concurrent.locks.ReentrantLock syncLock =
      new java.util.concurrent.locks.ReentrantLock();

  /** The last seqno appended in this session (any file), -1 before the first append. */
  private long lastLogged = -1;

  /**
   * Set, under the monitor, once a write or sync of the log failed, or a group could not be framed:
   * from then on nothing more is written (a group whose writers were told it failed stays in the
   * buffer, and must never reach the file). Guarded by this.
   */
  private boolean failed;

  /** Where the bytes written to the log are counted ({@link #countWritesIn}), or null. */
  private java.util.concurrent.atomic.LongAdder bytesWritten;

  /** Counts every byte written to the log from now on in {@code counter}. */
  synchronized void countWritesIn(java.util.concurrent.atomic.LongAdder counter) {
    bytesWritten = counter;
  }

  /** Whether a write or sync of the log failed ({@link #failed}). */
  public synchronized boolean failed() {
    return failed;
  }

  /**
   * Writes what the writer holds; every write of the log goes through here. After a failure it
   * refuses, and a failure marks the log failed.
   */
  private long flushWriter() {
    checkNotFailed();
    long before = writer.offset();
    long end;
    try {
      end = writer.flush();
    } catch (RuntimeException | Error e) {
      failed = true;
      throw e;
    }
    unsynced += end - before;
    if (bytesWritten != null) bytesWritten.add(end - before);
    return end - before;
  }

  /** Refuses, naming the earlier failure, once the log failed; under the monitor. */
  private void checkNotFailed() {
    if (failed) {
      throw new io.basaltdb.StorageException(
          "the write-ahead log failed earlier; nothing more is written to it until the store is"
              + " reopened");
    }
  }

  /**
   * Fsyncs the writer's file, marking the log failed if that fails; inside the monitor or outside
   * it ({@link #sync}'s fsync).
   */
  private void syncWriter(LogWriter w) {
    try {
      w.sync();
    } catch (RuntimeException | Error e) {
      synchronized (this) {
        failed = true;
      }
      throw e;
    }
  }

  CommitLog(Storage storage, long number) {
    this(storage, number, false);
  }

  /**
   * The log in file {@code number}, created; with {@code synchronous}, its files are opened so that
   * each write is durable when it returns ({@link Storage#openLog}).
   */
  CommitLog(Storage storage, long number, boolean synchronous) {
    this.storage = storage;
    this.synchronous = synchronous;
    open(number);
  }

  /**
   * Whether the files are opened with O_DSYNC (SyncMode.SYNC with Options.directWrites): a write
   * and its sync are one system call (docs/benchmarks.md, "Direct writes").
   */
  private final boolean synchronous;

  /**
   * Opens WAL file {@code name} for appending ({@link Storage#openLog}: through the page cache,
   * synchronously if the log's files are).
   */
  private StorageFile openForAppend(String name) {
    return storage.openLog(name, synchronous);
  }

  /**
   * The WAL of a session that starts after replay: file {@code number}, reached from the previous
   * session's newest file {@code previous} by a rotation ({@link #rotate}), so that file ends with
   * a link to this one and the chain runs across sessions; a deleted file of an earlier session is
   * then named at the next open, not only noticed as a seqno gap. Without a previous file still
   * needed ({@code previous < 0}) the file is simply created. {@code lastSeqno}: the last seqno
   * replayed.
   */
  public static CommitLog startSession(
      Storage storage, long previous, long number, long lastSeqno) {
    return startSession(storage, previous, number, lastSeqno, false);
  }

  /**
   * As {@link #startSession(Storage, long, long, long)}; with {@code synchronous}, the log's files
   * are opened so that each write is durable when it returns.
   */
  public static CommitLog startSession(
      Storage storage, long previous, long number, long lastSeqno, boolean synchronous) {
    if (previous < 0) return new CommitLog(storage, number, synchronous);
    CommitLog log = new CommitLog(storage, synchronous);
    StorageFile f = log.openForAppend(fileName(previous));
    log.file = f;
    log.writer =
        new LogWriter(
            f, f.size()); // replay trimmed any torn tail: the file ends with a whole record
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

  private CommitLog(Storage storage, boolean synchronous) {
    this.storage = storage;
    this.synchronous = synchronous;
  }

  static String fileName(long number) {
    return FileNames.wal(number);
  }

  /**
   * The name file {@code number} has while a rotation creates it, until the link naming it is
   * durable: replay does not list it, so a crash before then leaves the old file the newest (see
   * {@link #rotate}).
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

  /**
   * Disposes of obsolete WAL file {@code number} (no manifest needs it): into the pool while it has
   * room, without a link at its end; deleted otherwise. Any thread but the commit leader's
   * rotation.
   */
  public static void retire(Storage storage, long number) {
    String name = fileName(number);
    if (pooled(storage).size() >= POOL_SIZE) {
      storage.delete(name);
      return;
    }
    boolean linked = WalChain.tailLink(storage, number) >= 0;
    try (StorageFile f = storage.open(name)) {
      if (linked) f.truncate(f.size() - WalChain.LINK_FRAME_SIZE);
      // Zeros where the first record goes: if the file's first new record is lost in a crash
      // (unsynced,
      // SyncMode.NONE or PERIODIC), replay meets an invalid frame there, as in a fresh file, and
      // not an
      // old record it would skip before reading on to later new records past the hole.
      f.write(0, ByteBuffer.allocate((int) Math.min(f.size(), 8)));
      f.sync(); // before the rename: a crash must not bring the link or the old first record back
    }
    storage.rename(name, DIR + "/" + POOL_PREFIX + number + ".log");
  }

  /** Deletes the pool's files (at open: a rollback may have lowered the seqnos written next). */
  static void emptyPool(Storage storage) {
    for (String n : pooled(storage)) storage.delete(n);
  }

  /** The pool's files, as storage names. */
  public static List<String> pooled(Storage storage) {
    List<String> out = new ArrayList<>();
    if (!storage.exists(DIR)) return out;
    for (String n : storage.list(DIR)) if (n.startsWith(POOL_PREFIX)) out.add(DIR + "/" + n);
    return out;
  }

  private static String firstPooled(Storage storage) {
    List<String> p = pooled(storage);
    return p.isEmpty() ? null : p.get(0);
  }

  /** WAL file numbers present, ascending ({@link FileNames#walNumbers}). */
  public static List<Long> list(Storage storage) {
    return FileNames.walNumbers(storage);
  }

  private void open(long n) {
    storage.create(fileName(n)).close(); // the name durable; then opened as the log's files are
    file = openForAppend(fileName(n));
    writer = new LogWriter(file, 0);
    number = n;
    unsynced = 0;
  }

  public synchronized long number() {
    return number;
  }

  /**
   * Writes the group's records with one write, or, while the buffer holds fewer than {@code
   * bufferBytes} ({@link io.basaltdb.Options#walBufferBytes}) and no sync is asked for, leaves them
   * buffered; returns bytes written. Fsyncs if {@code sync}.
   */
  synchronized long append(List<Batch> group, boolean sync) {
    return append(group, sync, 0);
  }

  synchronized long append(List<Batch> group, boolean sync, long bufferBytes) {
    checkNotFailed();
    long written;
    try {
      for (int i = 0; i < group.size(); i++) { // indexed: a group's logging allocates nothing
        Batch b = group.get(i);
        // flags are set here, at logging time: the leader knows whether the group is synced
        b.flags = (byte) ((i == 0 ? Batch.GROUP_START : 0) | (sync ? Batch.SYNCED : 0));
        writer.add(b.encodedSize(), b); // encoded in place: no buffer, no copy per batch
      }
      written = sync || writer.pending() >= bufferBytes ? flushWriter() : 0;
    } catch (RuntimeException | Error e) {
      failed = true; // the group may be half framed: it must never be written
      throw e;
    }
    for (int i = 0; i < group.size(); i++) {
      Batch b = group.get(i);
      lastLogged = Math.max(lastLogged, b.firstSeqno + b.count - 1);
    }
    if (sync) syncLocked();
    return written;
  }

  /**
   * Writes the records the buffer holds ({@link #append}); returns bytes written. Any thread.
   *
   * @throws io.basaltdb.StorageException if the write fails, or the log failed earlier
   */
  synchronized long writeBuffered() {
    return flushWriter();
  }

  /**
   * Makes what was appended so far durable, buffered records first. The fsync runs outside the
   * monitor, so the commit leader goes on appending: a group written meanwhile may or may not be
   * covered, and the next sync covers it (a periodic sync promises durability within an interval,
   * not of a given group).
   */
  void sync() {
    syncLock.lock();
    try {
      LogWriter w;
      long pending;
      synchronized (this) {
        writeBuffered();
        if (unsynced <= 0) return;
        w = writer;
        pending = unsynced;
      }
      syncWriter(w); // its file stays open: closing or replacing it takes syncLock
      synchronized (this) {
        // What arrived during the fsync stays counted. append(sync = true) zeroes the count, but
        // SYNC mode
        // runs no periodic syncer, so the two never overlap.
        if (writer == w) unsynced = Math.max(0, unsynced - pending);
      }
    } finally {
      syncLock.unlock();
    }
  }

  /** Writes the buffered records, then fsyncs; under the monitor. */
  private void syncLocked() {
    flushWriter();
    syncWriter(writer);
    unsynced = 0;
  }

  /**
   * Starts file {@code next}, in an order that leaves every crash point recoverable:
   *
   * <ol>
   *   <li>creates it as {@link #pendingName} (durable on return), which replay does not list;
   *   <li>syncs the current file, appends a link record naming {@code next}, syncs again (the first
   *       sync makes the link's SYNCED flag true, as for the close marker). A crash before the link
   *       is durable leaves the current file the newest listed, so a torn link is a torn tail;
   *   <li>renames the pending file to its WAL name (atomic, durable) and switches to it. A crash
   *       between the link's sync and the rename leaves a link to a missing file and the pending
   *       file that shows the rotation was cut short: {@link WalChain#undoInterruptedRotation}
   *       removes that link.
   * </ol>
   *
   * On a failure the current file stays current and the store fails.
   */
  void rotate(long next) {
    replacingFile(() -> rotateLocked(next));
  }

  /**
   * Runs {@code change}, which closes or replaces the file, under {@link #syncLock} and then this
   * monitor: no sync outside the monitor is then in flight on the file.
   */
  private void replacingFile(Runnable change) {
    syncLock.lock();
    try {
      synchronized (this) {
        change.run();
      }
    } finally {
      syncLock.unlock();
    }
  }

  private void rotateLocked(long next) {
    checkNotFailed(); // before anything changes
    String pending = pendingName(next);
    if (storage.exists(pending))
      storage.delete(pending); // from a rotation to the same number that failed
    String pooled = firstPooled(storage);
    if (pooled != null) storage.rename(pooled, pending);
    else storage.create(pending).close();
    if (file.size() > writer.offset())
      file.truncate(writer.offset()); // a recycled file's old records go
    syncLocked();
    Batch link = Batch.link(lastLogged + 1, next);
    writer.add(link.encodedSize(), link::encode);
    syncLocked();
    storage.rename(pending, fileName(next));
    StorageFile successor = openForAppend(fileName(next));
    StorageFile old = file;
    file = successor;
    writer = new LogWriter(successor, 0);
    number = next;
    unsynced = 0;
    old.close();
  }

  /**
   * Seqnos up to {@code last} were committed without the WAL (a batch that skipped it, made durable
   * in the segments and the manifest): the next link record starts after them. Commit leader only.
   */
  synchronized void skipped(long last) {
    lastLogged = Math.max(lastLogged, last);
  }

  /**
   * Closes cleanly: syncs, then appends an empty marker record (a synced group start, seqno {@code
   * lastSeqno + 1}, no operations) and syncs again. Every real record is then followed by a synced
   * group, so recovery can tell damage to any of them from a torn tail. The first sync is what
   * makes the marker's flag true: a power loss before the second may keep the marker, and recovery
   * then relies on every record before it being on the device.
   */
  void close(long lastSeqno) {
    replacingFile(() -> closeWithMarker(lastSeqno));
  }

  private void closeWithMarker(long lastSeqno) {
    try {
      syncLocked();
      Batch marker = new Batch(0);
      marker.firstSeqno = lastSeqno + 1;
      marker.flags = Batch.GROUP_START | Batch.SYNCED;
      writer.add(marker.encodedSize(), marker::encode);
      syncLocked();
    } finally {
      file.close();
    }
  }

  @Override
  public void close() {
    replacingFile(
        () -> {
          try {
            syncLocked();
          } finally {
            file.close();
          }
        });
  }

  /** Closes without syncing (after a failure, when the file's tail may be unwritable). */
  public void abandon() {
    replacingFile(() -> file.close());
  }
}
