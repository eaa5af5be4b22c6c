package io.basaltdb.internal.engine.backup;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.engine.version.Checkpoints;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Online backups of a disk store and their restore (issue 17 item 4; RocksDB's {@code Checkpoint}
 * and {@code BackupEngine} are the conventions users arrive with).
 *
 * <h2>Backup</h2>
 *
 * The store flushes and pins a checkpoint (its manifest T and every file T names stay on disk while
 * the backup copies them, whatever the retention says). Into the empty target directory go, with
 * the store's own layout: T's key index and delete list tables (hard links where the file system
 * allows: they are never written again), T's log segments up to the tail offset T records (copies,
 * since the store goes on appending to the last one; a segment an earlier backup holds at the same
 * length is linked to that backup's copy instead: an incremental backup), and T's manifest. Then,
 * in the target, the checkpoint is rolled back to ({@link Checkpoints#rollback}): a new manifest
 * naming T's files, with a WAL start above every WAL file, so the target opens as the store was at
 * T without any WAL. A hashed keyspace's trie checkpoint files are copied while its trie is still
 * (no flush or checkpoint changes them meanwhile): the restored store loads that checkpoint if it
 * is consistent with T (at or below T's flushed seqno, at or above its purge seqno; a checkpoint
 * taken after T is not) and replays T's log after it, else replays T's whole log. Last, the marker
 * file {@link #MARKER} lists every file with its size and CRC-32C, and its own CRC, written under a
 * temporary name, synced and renamed: a backup without a valid marker is incomplete (a crash, a
 * full disk) and is never restored. Every file is synced before the marker is written (all at the
 * end of the copies, so the disk writes back while later files are copied: twice the rate of a sync
 * per file).
 *
 * <h2>Restore</h2>
 *
 * Reads the marker, checks every file it lists (present, its size, its CRC-32C) before anything is
 * written, then copies them into an empty target: a damaged or truncated backup fails with a {@link
 * CorruptionException} naming the file, and writes nothing.
 *
 * <p>Thread-safety: static methods; a backup runs beside the store's readers and writers (the
 * pinned checkpoint's files are immutable below the offsets it records).
 */
public final class Backups {
  private Backups() {}

  /**
   * The marker file of a complete backup, at the backup's root (a store refuses to open where it
   * is).
   */
  public static final String MARKER = "BACKUP";

  static final String MARKER_TEMP = "BACKUP.tmp";

  /**
   * Made first, durably, and deleted once the marker is in place: a backup that did not finish is
   * known as one (a store refuses to open it, and a backup or restore to write into it).
   */
  public static final String INCOMPLETE = "BACKUP.incomplete";

  private static final long MAGIC = 0x42534C54424B5031L; // "BSLTBKP1"
  private static final int VERSION = 1;
  private static final int COPY_STEP = 1 << 20;

  /**
   * Each thread's buffer for copies and checksums: direct, so file channels move the bytes without
   * a temporary buffer of their own (a thread that backs up keeps 1 MiB of native memory, outside
   * the quota).
   */
  private static final ThreadLocal<ByteBuffer> COPY_BUFFER =
      ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(COPY_STEP));

  /** One file of a backup: its name in the store's layout, its size and its CRC-32C. */
  public record FileEntry(String name, long size, int crc) {}

  /** A backup's marker: the seqno and creation time of its checkpoint, and its files. */
  public record Marker(long seqno, long createdMillis, long checkpoint, List<FileEntry> files) {
    public long bytes() {
      long n = 0;
      for (FileEntry f : files) n += f.size();
      return n;
    }
  }

  /** What a backup did: its marker, and the bytes it copied and linked. */
  public record Result(Marker marker, long bytesCopied, long bytesLinked) {}

  /**
   * Backs up checkpoint {@code t} of the store in {@code source} (pinned by the caller) into {@code
   * target}, which must hold no store and no backup; {@code previous} is an earlier complete backup
   * to share unchanged segments with, or null. {@code whileStill} runs its action with keyspace
   * {@code ks}'s trie still (or not at all, if the keyspace is gone).
   */
  public static Result backup(
      Storage source,
      Manifest t,
      Storage target,
      Storage previous,
      java.util.function.BooleanSupplier stopped,
      java.util.function.BiConsumer<Integer, Runnable> whileStill) {
    checkEmpty(target, "back up into");
    target.create(INCOMPLETE).close(); // durable: create syncs the directory
    Map<String, FileEntry> earlier = new HashMap<>();
    if (previous != null) {
      for (FileEntry f : readMarker(previous).files()) earlier.put(f.name(), f);
    }
    Map<String, FileEntry> files = new LinkedHashMap<>();
    Map<String, Long> toCopy = new LinkedHashMap<>();
    long copied = 0, linked = 0;
    for (Manifest.KeyspaceMeta k : t.keyspaces()) {
      for (String dir : FileNames.dataDirs(k.id())) target.mkdirs(dir);
      List<String> immutable = new ArrayList<>();
      for (Manifest.TableMeta m : k.tables())
        immutable.add(FileNames.table(k.id(), m.fileNumber()));
      for (Manifest.DeleteTableMeta d : k.deletes())
        immutable.add(FileNames.deleteTable(k.id(), d.fileNumber()));
      for (String name : immutable) {
        long size = source.size(name);
        FileEntry before = earlier.get(name);
        if (before != null
            && before.size() == size
            && crcOf(source, name, size) == before.crc()
            && target.link(previous, name, name)) {
          files.put(
              name,
              before); // the same bytes (a previous backup may be of another store, or from before
          // a rollback)
          linked += size;
        } else if (target.link(source, name, name)) {
          files.put(name, new FileEntry(name, size, crcOf(target, name, size)));
          linked += size;
        } else {
          toCopy.put(name, size);
          copied += size;
        }
      }
      for (SegmentState s : k.segments()) {
        String name = FileNames.segment(k.id(), s.segmentId());
        FileEntry before = earlier.get(name);
        // The same name and length are not enough: after a rollback a store writes over a segment's
        // tail
        // again, and a previous backup may be another store's. Its bytes are read (a read, not a
        // write).
        if (before != null
            && before.size() == s.tailOffset()
            && crcOf(source, name, s.tailOffset()) == before.crc()
            && target.link(previous, name, name)) {
          files.put(name, before);
          linked += s.tailOffset();
        } else {
          toCopy.put(name, s.tailOffset());
          copied += s.tailOffset();
        }
      }
    }
    target.mkdirs(FileNames.MANIFEST_DIR);
    String manifest = FileNames.manifest(t.number());
    toCopy.put(manifest, source.size(manifest));
    files.putAll(copyAll(source, target, toCopy, stopped));
    for (Manifest.KeyspaceMeta k : t.keyspaces()) {
      if (!KeyspaceLayout.isHashed(k.trieChunkBytes())) continue;
      String dir = FileNames.trieDir(k.id());
      whileStill.accept(
          k.id(),
          () -> {
            if (!source.exists(dir)) return;
            Map<String, Long> trie = new LinkedHashMap<>();
            for (String n : source.list(dir)) {
              String name = n.contains("/") ? n : dir + "/" + n;
              trie.put(name, source.size(name));
            }
            target.mkdirs(dir);
            files.putAll(copyAll(source, target, trie, stopped));
            toCopy.putAll(trie);
          });
    }
    sync(
        target,
        new ArrayList<>(
            toCopy.keySet())); // all at the end: the disk writes back while later files are copied
    Checkpoints.rollback(
        target, t.number()); // the backup's own manifest: T's files, no WAL to replay
    for (long n : Checkpoints.numbers(target)) {
      String name = FileNames.manifest(n);
      long size = target.size(name);
      files.put(name, new FileEntry(name, size, crcOf(target, name, size)));
    }
    Marker marker =
        new Marker(t.flushedSeqno(), t.createdMillis(), t.number(), List.copyOf(files.values()));
    writeMarker(target, marker);
    target.delete(
        INCOMPLETE); // after the marker: a crash in between leaves both, and the marker decides
    return new Result(marker, copied, linked);
  }

  /**
   * Checks every file of the complete backup in {@code backup} (present, size, CRC-32C) and returns
   * its marker; writes nothing.
   *
   * @throws CorruptionException naming the marker or the file if the backup is incomplete or
   *     damaged
   */
  public static Marker verify(Storage backup) {
    Marker m = readMarker(backup);
    for (FileEntry f : m.files()) {
      if (!backup.exists(f.name())) {
        throw new CorruptionException(
            "the backup in "
                + backup.describe("")
                + " lists "
                + backup.describe(f.name())
                + ", which is missing; the backup cannot be restored");
      }
      long size = backup.size(f.name());
      if (size != f.size()) {
        throw new CorruptionException(
            "the backup file "
                + backup.describe(f.name())
                + " has "
                + size
                + " bytes where the backup recorded "
                + f.size()
                + " (truncated or overwritten); the backup cannot be restored");
      }
      int crc = crcOf(backup, f.name(), size);
      if (crc != f.crc()) {
        throw new CorruptionException(
            "the backup file "
                + backup.describe(f.name())
                + " fails its checksum (CRC-32C "
                + Integer.toHexString(crc)
                + ", recorded "
                + Integer.toHexString(f.crc())
                + "); the backup cannot be restored");
      }
    }
    return m;
  }

  /**
   * Restores the backup in {@code backup} into {@code target}, which must hold no store and no
   * backup: checks every file first ({@link #verify}), then copies each, synced. Returns the
   * backup's marker.
   */
  public static Marker restore(Storage backup, Storage target) {
    Marker m = verify(backup);
    if (MemoryBackups.isMemoryBackup(backup)) {
      throw new InvalidArgumentException(
          backup.describe("")
              + " holds the backup of an in-memory store; open it with"
              + " Basalt.openInMemory(options, directory)");
    }
    checkEmpty(target, "restore into");
    Map<String, Long> sizes = new LinkedHashMap<>();
    for (FileEntry f : m.files()) {
      int slash = f.name().lastIndexOf('/');
      if (slash > 0) target.mkdirs(f.name().substring(0, slash));
      sizes.put(f.name(), f.size());
    }
    Map<String, FileEntry> copied = copyAll(backup, target, sizes, () -> false);
    for (FileEntry f : m.files()) {
      if (copied.get(f.name()).crc() != f.crc()) { // changed between the check and the copy
        throw new CorruptionException(
            "the backup file "
                + backup.describe(f.name())
                + " changed while it was restored"
                + " (its checksum no longer matches); restore again into an empty directory");
      }
    }
    sync(target, new ArrayList<>(sizes.keySet()));
    return m;
  }

  /** Refuses a target that holds a store, a backup, or a backup that did not finish. */
  static void checkEmpty(Storage target, String what) {
    if (target.exists(MARKER)
        || target.exists(MARKER_TEMP)
        || target.exists(INCOMPLETE)
        || !target.list(FileNames.MANIFEST_DIR).isEmpty()
        || !target.list(FileNames.WAL_DIR).isEmpty()) {
      throw new InvalidArgumentException(
          "cannot "
              + what
              + " "
              + target.describe("")
              + ": it already holds a store or"
              + " a backup (complete or not); give an empty or new directory");
    }
  }

  /**
   * Threads a backup or a restore copies files with (each file by one thread, from start to end).
   */
  static final int COPY_THREADS = 2;

  /**
   * Copies each file of {@code sizes} (name to bytes) from {@code from} to {@code to}, unsynced, on
   * {@link #COPY_THREADS} threads; returns their entries. On a failure every copy still running
   * ends before this throws, so nothing writes to {@code to} after it returns.
   */
  private static Map<String, FileEntry> copyAll(
      Storage from,
      Storage to,
      Map<String, Long> sizes,
      java.util.function.BooleanSupplier stopped) {
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(
            COPY_THREADS,
            r -> {
              Thread th = new Thread(r, "basalt-backup-copy");
              th.setDaemon(true);
              return th;
            });
    try {
      Map<String, java.util.concurrent.Future<FileEntry>> running = new LinkedHashMap<>();
      for (Map.Entry<String, Long> e : sizes.entrySet()) {
        running.put(
            e.getKey(), pool.submit(() -> copy(from, e.getKey(), to, e.getValue(), stopped)));
      }
      Map<String, FileEntry> out = new LinkedHashMap<>();
      for (Map.Entry<String, java.util.concurrent.Future<FileEntry>> e : running.entrySet()) {
        try {
          out.put(e.getKey(), e.getValue().get());
        } catch (java.util.concurrent.ExecutionException x) {
          Throwable c = x.getCause();
          if (c instanceof RuntimeException r) throw r;
          if (c instanceof Error err) throw err;
          throw new StorageException(
              "the copy of " + from.describe(e.getKey()) + " failed: " + c, c);
        } catch (InterruptedException x) {
          Thread.currentThread().interrupt();
          throw new StorageException("interrupted while copying " + from.describe(e.getKey()), x);
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
      awaitTermination(pool); // no copy may write after this returns
    }
  }

  /**
   * Waits for {@code pool}, shut down, to finish every task, however long and whatever interrupts:
   * a backup's or a restore's tasks touch files and memory the caller frees once this returns. The
   * interrupt status is kept.
   */
  static void awaitTermination(java.util.concurrent.ExecutorService pool) {
    boolean interrupted = false;
    while (true) {
      try {
        if (pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES)) break;
      } catch (InterruptedException x) {
        interrupted = true;
      }
    }
    if (interrupted) Thread.currentThread().interrupt();
  }

  /**
   * Syncs each of {@code names} in {@code storage}, then the directories holding them: the copies
   * were made unsynced and their names not yet durable, so the disk writes back while later files
   * are copied (a sync per file, or a directory sync per created file, which on ext4 commits the
   * journal and with it the data written so far, halve the rate).
   */
  static void sync(Storage storage, List<String> names) {
    java.util.Set<String> dirs = new java.util.TreeSet<>();
    for (String name : names) {
      StorageFile f = storage.open(name);
      try {
        f.sync();
      } finally {
        f.close();
      }
      int slash = name.lastIndexOf('/');
      dirs.add(slash < 0 ? "" : name.substring(0, slash));
    }
    for (String dir : dirs) storage.syncDirectory(dir);
  }

  /**
   * Copies {@code size} bytes of {@code name} from {@code from} to a new file of that name in
   * {@code to}, not synced.
   */
  private static FileEntry copy(
      Storage from,
      String name,
      Storage to,
      long size,
      java.util.function.BooleanSupplier stopped) {
    CRC32C crc = new CRC32C();
    StorageFile in = from.openForReading(name);
    try {
      StorageFile out =
          to.createUnsynced(name); // its name made durable by sync(), before the marker
      try {
        ByteBuffer buf =
            COPY_BUFFER
                .get(); // direct: the file channels read and write it without a copy of their own
        if (buf.capacity() > size) buf = ByteBuffer.allocate((int) Math.max(size, 1));
        for (long at = 0; at < size; ) {
          if (stopped.getAsBoolean()) {
            throw new io.basaltdb.ClosedException(
                "the store was closed during the backup, which is abandoned (what it"
                    + " wrote is deleted, or left without its marker)");
          }
          buf.clear().limit((int) Math.min(buf.capacity(), size - at));
          int n = in.read(at, buf);
          if (n < buf.limit()) {
            throw new StorageException(
                "the copy of "
                    + from.describe(name)
                    + " ended at offset "
                    + (at + Math.max(n, 0))
                    + " of the "
                    + size
                    + " bytes to copy");
          }
          buf.flip();
          crc.update(buf.duplicate());
          out.write(at, buf);
          at += n;
        }
      } finally {
        out.close();
      }
    } finally {
      in.close();
    }
    return new FileEntry(name, size, (int) crc.getValue());
  }

  /**
   * The CRC-32C of the first {@code size} bytes of {@code name}; a file shorter than that is
   * corrupt.
   */
  private static int crcOf(Storage storage, String name, long size) {
    CRC32C crc = new CRC32C();
    StorageFile in = storage.openForReading(name);
    try {
      ByteBuffer buf = COPY_BUFFER.get();
      if (buf.capacity() > size) buf = ByteBuffer.allocate((int) Math.max(size, 1));
      for (long at = 0; at < size; ) {
        buf.clear().limit((int) Math.min(buf.capacity(), size - at));
        int n = in.read(at, buf);
        if (n < buf.limit()) {
          throw new CorruptionException(
              "the backup file "
                  + storage.describe(name)
                  + " ends at offset "
                  + (at + Math.max(n, 0))
                  + ", before its recorded "
                  + size
                  + " bytes");
        }
        buf.flip();
        crc.update(buf);
        at += n;
      }
    } finally {
      in.close();
    }
    return (int) crc.getValue();
  }

  /**
   * Writes the marker under a temporary name, syncs it, and renames it into place (the backup's
   * commit).
   */
  static void writeMarker(Storage target, Marker m) {
    byte[][] names = new byte[m.files().size()][];
    int size = 8 + 4 + 8 + 8 + 8 + 4 + 4;
    for (int i = 0; i < names.length; i++) {
      names[i] = m.files().get(i).name().getBytes(StandardCharsets.UTF_8);
      size += 2 + names[i].length + 8 + 4;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(MAGIC)
        .putInt(VERSION)
        .putLong(m.seqno())
        .putLong(m.createdMillis())
        .putLong(m.checkpoint())
        .putInt(names.length);
    for (int i = 0; i < names.length; i++) {
      FileEntry f = m.files().get(i);
      b.putShort((short) names[i].length).put(names[i]).putLong(f.size()).putInt(f.crc());
    }
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, b.position());
    b.putInt((int) crc.getValue()).flip();
    if (target.exists(MARKER_TEMP)) target.delete(MARKER_TEMP);
    StorageFile out = target.create(MARKER_TEMP);
    try {
      out.write(0, b);
      out.sync();
    } finally {
      out.close();
    }
    target.rename(MARKER_TEMP, MARKER);
  }

  /**
   * The marker of the complete backup in {@code backup}.
   *
   * @throws CorruptionException if there is none (not a backup, or one that did not finish) or it
   *     is damaged
   */
  static Marker readMarker(Storage backup) {
    if (!backup.exists(MARKER)) {
      throw new CorruptionException(
          backup.describe("")
              + " holds no complete backup: its marker "
              + backup.describe(MARKER)
              + " is missing (not a backup, or one a crash or an error cut short; take it again)");
    }
    long size = backup.size(MARKER);
    if (size < 44 || size > (64L << 20)) {
      throw new CorruptionException(
          "the backup marker " + backup.describe(MARKER) + " has a bad size of " + size + " bytes");
    }
    ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    StorageFile in = backup.openForReading(MARKER);
    try {
      if (in.read(0, b) != size) {
        throw new CorruptionException(
            "the backup marker " + backup.describe(MARKER) + " could not be read whole");
      }
    } finally {
      in.close();
    }
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, (int) size - 4);
    if ((int) crc.getValue() != b.getInt((int) size - 4)) {
      throw new CorruptionException(
          "the backup marker "
              + backup.describe(MARKER)
              + " fails its checksum; the backup"
              + " cannot be trusted");
    }
    b.flip().limit((int) size - 4);
    try {
      if (b.getLong() != MAGIC)
        throw new CorruptionException(backup.describe(MARKER) + " is not a Basalt backup marker");
      int version = b.getInt();
      if (version != VERSION) {
        throw new CorruptionException(
            "the backup marker "
                + backup.describe(MARKER)
                + " has format "
                + version
                + "; this build reads format "
                + VERSION);
      }
      long seqno = b.getLong(), created = b.getLong(), checkpoint = b.getLong();
      int n = b.getInt();
      if (n < 0 || n > b.remaining() / 14)
        throw new CorruptionException("the backup marker lists " + n + " files");
      List<FileEntry> files = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        byte[] name = new byte[Short.toUnsignedInt(b.getShort())];
        b.get(name);
        files.add(new FileEntry(new String(name, StandardCharsets.UTF_8), b.getLong(), b.getInt()));
      }
      if (b.hasRemaining())
        throw new CorruptionException("the backup marker has " + b.remaining() + " trailing bytes");
      return new Marker(seqno, created, checkpoint, List.copyOf(files));
    } catch (java.nio.BufferUnderflowException e) {
      throw new CorruptionException("the backup marker " + backup.describe(MARKER) + " ends early");
    }
  }
}
