package io.basaltdb.internal.engine.backup;

import io.basaltdb.CorruptionException;
import io.basaltdb.MemoryLimitException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.writecache.WriteCache;
import io.basaltdb.internal.skiplist.ItemSink;
import io.basaltdb.internal.skiplist.SkipList;
import io.basaltdb.internal.skiplist.SkipListBuilder;
import io.basaltdb.internal.skiplist.Snapshot;
import io.basaltdb.internal.skiplist.UnlinkCapture;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;

/**
 * Backup and restore of the in-memory store (Nitro, seed 001 section 5; issue 17 items 1-3).
 *
 * <h2>Backup</h2>
 *
 * From a snapshot of the store's skiplist, taken under the apply lock with the seqno and the
 * keyspaces it holds: split keys cut the level-0 list into {@link #CURSORS} ranges per thread
 * ({@link SkipList#splitKeys}), and each thread scans its ranges at once, their cursors in turn
 * ({@link SkipList#scanInterleaved}), writing one shard file per range in key order ({@link
 * BackupBlocks}). In the non-intrusive mode (the default) the backup does not hold its snapshot
 * while it scans: it registers an {@link UnlinkCapture} with the skiplist's collector, activates
 * it, and releases the snapshot, so the collector goes on freeing what writes replace; the
 * collector's workers write each node of the backup's term they unlink into delta files of their
 * own. The scan skips what is no longer linked and never sees a version newer than its term, so the
 * shards and the deltas hold every item of the snapshot, some twice. Then the manifest ({@link
 * FileNames#MEMORY_BACKUP_MANIFEST}: seqno, keyspaces, shards in key order, deltas), every file
 * synced, and last the marker of {@link Backups}, as for a disk store: without it the backup is
 * incomplete and never restored.
 *
 * <h2>Restore</h2>
 *
 * One thread per shard (up to the threads asked for) builds its segment of the skiplist bottom-up
 * ({@link SkipListBuilder}), checking every block's CRC-32C and each file's size and checksum
 * against the marker; the segments are joined in shard order ({@link SkipList#load}). Then the
 * delta files are replayed, inserting the items not present (section 5.2's second phase; one file
 * after another, where the paper runs a thread per file: a key's newest delta item must win, and
 * deltas are small).
 *
 * <p>Thread-safety: static methods; a backup runs beside the store's readers and writers.
 */
public final class MemoryBackups {

  private MemoryBackups() {}

  /**
   * Hooks for tests, run by the backup's thread: before the scan (in the non-intrusive mode, after
   * the snapshot is released), and after it.
   */
  public record Hooks(Runnable beforeScan, Runnable afterScan) {
    public static final Hooks NONE = new Hooks(() -> {}, () -> {});
  }

  /** Whether {@code backup} holds an in-memory store's backup (rather than a disk store's). */
  public static boolean isMemoryBackup(Storage backup) {
    return backup.exists(FileNames.MEMORY_BACKUP_MANIFEST);
  }

  // ---- backup
  // ------------------------------------------------------------------------------------------

  /**
   * Backs up {@code snapshot} (the caller's; this closes it) of {@code list}, which holds the
   * store's writes up to {@code seqno} in the keyspaces {@code keyspaces} (whose layout codes,
   * where not 0, are in {@code layouts}), into {@code target}.
   */
  public static Backups.Result backup(
      SkipList list,
      Snapshot snapshot,
      long seqno,
      Map<Integer, String> keyspaces,
      Map<Integer, Integer> layouts,
      int nextKeyspaceId,
      Storage target,
      int threads,
      boolean lz4,
      boolean nonIntrusive,
      BooleanSupplier stopped,
      Hooks hooks) {
    UnlinkCapture capture = null;
    List<BackupBlocks.Writer> deltas = new ArrayList<>();
    BackupBlocks.Syncer syncer = new BackupBlocks.Syncer(threads);
    try (syncer) {
      Backups.checkEmpty(target, "back up into");
      target.create(Backups.INCOMPLETE).close(); // durable: create syncs the directory
      target.mkdirs(FileNames.MEMORY_BACKUP_DIR);
      long created = System.currentTimeMillis();
      long sn = snapshot.sn();
      List<byte[]> splits = list.splitKeys(threads * CURSORS);
      if (nonIntrusive) {
        AtomicInteger deltaNumber = new AtomicInteger();
        capture =
            list.capture(
                snapshot,
                () -> {
                  BackupBlocks.Writer w =
                      new BackupBlocks.Writer(
                          target,
                          FileNames.backupDelta(deltaNumber.getAndIncrement()),
                          lz4,
                          stopped);
                  synchronized (deltas) {
                    deltas.add(w);
                  }
                  return (ItemSink)
                      (keyAddr, keyLen, valueAddr, valueLen) -> {
                        if (!tombstoneAt(valueAddr, valueLen))
                          w.item(keyAddr, keyLen, valueAddr, valueLen);
                      };
                });
        capture.activate();
        snapshot.close(); // the collector goes on; what it unlinks of term sn goes to the deltas
      }
      hooks.beforeScan().run();
      byte[][] bounds =
          new byte[splits.size() + 2][]; // range i is [bounds[i], bounds[i+1]); null ends are open
      for (int i = 0; i < splits.size(); i++) bounds[i + 1] = splits.get(i);
      int ranges = splits.size() + 1;
      int tasks = Math.min(threads, ranges);
      List<Callable<List<BackupBlocks.Written>>> scans = new ArrayList<>();
      for (int t = 0; t < tasks; t++) { // each thread its run of consecutive ranges, one shard each
        int first = t * ranges / tasks, end = (t + 1) * ranges / tasks;
        scans.add(
            () ->
                scanShards(
                    list,
                    sn,
                    java.util.Arrays.copyOfRange(bounds, first, end + 1),
                    first,
                    target,
                    lz4,
                    keyspaces,
                    stopped,
                    syncer));
      }
      List<BackupBlocks.Written> shards = new ArrayList<>();
      for (List<BackupBlocks.Written> w : runAll(scans, threads, "basalt-backup-scan"))
        shards.addAll(w);
      hooks.afterScan().run();
      List<BackupBlocks.Written> deltaFiles = new ArrayList<>();
      if (capture != null) {
        capture.terminate(); // the workers have left: the delta writers are ours
        for (BackupBlocks.Writer w : deltas) deltaFiles.add(w.finish());
        deltas.clear();
      } else {
        snapshot.close();
      }
      List<MemoryBackupManifest.FileRef> shardRefs = new ArrayList<>(),
          deltaRefs = new ArrayList<>();
      for (BackupBlocks.Written w : shards)
        shardRefs.add(new MemoryBackupManifest.FileRef(w.name(), w.items()));
      for (BackupBlocks.Written w : deltaFiles)
        deltaRefs.add(new MemoryBackupManifest.FileRef(w.name(), w.items()));
      MemoryBackupManifest m =
          new MemoryBackupManifest(
              seqno, created, nextKeyspaceId, lz4, keyspaces, layouts, shardRefs, deltaRefs);
      byte[] manifest = m.encode();
      StorageFile out = target.createUnsynced(FileNames.MEMORY_BACKUP_MANIFEST);
      try {
        out.write(0, ByteBuffer.wrap(manifest));
      } finally {
        out.close();
      }
      List<Backups.FileEntry> files = new ArrayList<>();
      List<String> names = new ArrayList<>();
      CRC32C crc = new CRC32C();
      crc.update(manifest);
      files.add(
          new Backups.FileEntry(
              FileNames.MEMORY_BACKUP_MANIFEST, manifest.length, (int) crc.getValue()));
      long bytes = manifest.length;
      for (BackupBlocks.Written w : shards) {
        files.add(new Backups.FileEntry(w.name(), w.size(), w.crc()));
        bytes += w.size();
      }
      for (BackupBlocks.Written w : deltaFiles) {
        files.add(new Backups.FileEntry(w.name(), w.size(), w.crc()));
        bytes += w.size();
      }
      for (Backups.FileEntry f : files) names.add(f.name());
      syncer.close(); // a background sync's failure fails the backup here, before its marker
      Backups.sync(
          target, names); // all at the end: the disk writes back while later blocks are written
      Backups.Marker marker = new Backups.Marker(seqno, created, 0, List.copyOf(files));
      Backups.writeMarker(target, marker);
      target.delete(
          Backups.INCOMPLETE); // after the marker: a crash in between leaves both, and the marker
      // decides
      return new Backups.Result(marker, bytes, 0);
    } catch (RuntimeException | Error e) {
      try {
        if (capture != null) capture.close();
        snapshot.close();
        for (BackupBlocks.Writer w : deltas) w.abandon();
      } catch (RuntimeException | Error cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
  }

  /**
   * Cursors one backup thread scans at once, each range into a shard of its own ({@link
   * SkipList#scanInterleaved}).
   */
  static final int CURSORS = 4;

  /**
   * Scans consecutive ranges ({@code bounds}: range i is {@code [bounds[i], bounds[i+1])}) at once
   * into shards {@code firstShard, firstShard + 1, ...}, leaving out the keys of keyspaces the
   * backup does not hold (dropped).
   */
  private static List<BackupBlocks.Written> scanShards(
      SkipList list,
      long sn,
      byte[][] bounds,
      int firstShard,
      Storage target,
      boolean lz4,
      Map<Integer, String> keyspaces,
      BooleanSupplier stopped,
      BackupBlocks.Syncer syncer) {
    int n = bounds.length - 1;
    java.util.BitSet live =
        new java.util.BitSet(); // the keyspaces backed up: a bit test per item, no boxing
    for (int id : keyspaces.keySet()) live.set(id);
    BackupBlocks.Writer[] writers = new BackupBlocks.Writer[n];
    ItemSink[] sinks = new ItemSink[n];
    try {
      for (int i = 0; i < n; i++) {
        BackupBlocks.Writer w =
            new BackupBlocks.Writer(
                target, FileNames.backupShard(firstShard + i), lz4, stopped, syncer);
        writers[i] = w;
        sinks[i] =
            (keyAddr, keyLen, valueAddr, valueLen) -> {
              int ks = WriteCache.keyspaceAt(keyAddr, keyLen);
              if (ks >= 0 && live.get(ks) && !tombstoneAt(valueAddr, valueLen))
                w.item(keyAddr, keyLen, valueAddr, valueLen);
            };
      }
      list.scanInterleaved(sn, bounds, sinks);
      List<BackupBlocks.Written> out = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        BackupBlocks.Writer w = writers[i];
        writers[i] = null; // finished (or failed closing): not abandoned again
        out.add(w.finish());
      }
      return out;
    } catch (RuntimeException | Error e) {
      for (BackupBlocks.Writer w : writers) {
        if (w == null) continue;
        try {
          w.abandon();
        } catch (RuntimeException | Error closing) {
          e.addSuppressed(closing);
        }
      }
      throw e;
    }
  }

  /**
   * Whether the entry off the heap at {@code addr} is a tombstone: a deletion the store keeps for
   * its change feeds, which a backup leaves out (a restored store has forgotten its deletions).
   */
  private static boolean tombstoneAt(long addr, int len) {
    return len > 8
        && (io.basaltdb.internal.memory.Mem.lpUnsignedByte(null, addr + 8) & WriteCache.TOMBSTONE)
            != 0;
  }

  // ---- restore
  // -----------------------------------------------------------------------------------------

  /**
   * Reads and checks the marker and the manifest of the in-memory store's backup in {@code backup},
   * and that every file it lists is there at its recorded size; the contents are checked as they
   * load.
   */
  /**
   * An opened backup: its manifest, and the marker's entry (size, CRC-32C) for each of its files.
   */
  public record Opened(MemoryBackupManifest manifest, Map<String, Backups.FileEntry> files) {}

  public static Opened open(Storage backup) {
    Backups.Marker marker = Backups.readMarker(backup);
    Map<String, Backups.FileEntry> files = new HashMap<>();
    for (Backups.FileEntry f : marker.files()) {
      files.put(f.name(), f);
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
        throw BackupBlocks.corrupt(
            backup,
            f.name(),
            "has "
                + size
                + " bytes where the backup recorded "
                + f.size()
                + " (truncated or overwritten)");
      }
    }
    Backups.FileEntry mf = files.get(FileNames.MEMORY_BACKUP_MANIFEST);
    if (mf == null) {
      throw new io.basaltdb.InvalidArgumentException(
          backup.describe("")
              + " holds the backup of a store on disk; restore"
              + " it with Basalt.restore and open the result with Basalt.open");
    }
    byte[] bytes = readWhole(backup, mf);
    MemoryBackupManifest m = MemoryBackupManifest.decode(backup, bytes);
    for (MemoryBackupManifest.FileRef f : m.shards()) requireListed(backup, files, f.name());
    for (MemoryBackupManifest.FileRef f : m.deltas()) requireListed(backup, files, f.name());
    return new Opened(m, Map.copyOf(files));
  }

  /**
   * What a restore loaded: the live items per keyspace, the write cache bytes, the highest seqno
   * seen.
   */
  public record Loaded(Map<Integer, Long> items, long bytes, long maxSeqno) {}

  /**
   * Loads the backup into {@code list}, which must be empty and not yet shared: the shards
   * bottom-up on up to {@code threads} threads, then the deltas. On failure nothing is left in the
   * list's memory.
   *
   * @throws CorruptionException naming the file, if a file is damaged, truncated or out of order
   * @throws MemoryLimitException if the backup does not fit the list's memory quota
   */
  public static Loaded load(Storage backup, Opened opened, SkipList list, int threads) {
    return load(backup, opened, list, threads, true);
  }

  /**
   * As {@link #load(Storage, Opened, SkipList, int)}; with {@code bottomUp} false, each shard's
   * items are put into the list one by one, the shards concurrently: the paper's baseline (section
   * 5.2), for the benchmark that compares the two.
   */
  public static Loaded load(
      Storage backup, Opened opened, SkipList list, int threads, boolean bottomUp) {
    MemoryBackupManifest m = opened.manifest();
    Map<String, Backups.FileEntry> files = opened.files();
    List<SkipListBuilder> builders = new ArrayList<>();
    for (int i = 0; i < m.shards().size(); i++) builders.add(list.builder());
    List<Counts> counts = new ArrayList<>();
    List<Callable<SkipListBuilder.Segment>> builds = new ArrayList<>();
    for (int i = 0; i < m.shards().size(); i++) {
      MemoryBackupManifest.FileRef f = m.shards().get(i);
      SkipListBuilder b = builders.get(i);
      Counts c = new Counts(m.keyspaces());
      counts.add(c);
      builds.add(
          () -> {
            long n =
                BackupBlocks.read(
                    backup,
                    f.name(),
                    files.get(f.name()).size(),
                    files.get(f.name()).crc(),
                    (buf, k, kl, e, el) -> {
                      if (!c.accept(backup, f.name(), buf, k, kl, e, el)) return;
                      try {
                        if (bottomUp) b.add(buf, k, kl, buf, e, el);
                        else list.put(buf, k, kl, buf, e, el);
                      } catch (io.basaltdb.InvalidArgumentException tooLarge) {
                        throw tooLarge(backup, f.name(), tooLarge);
                      } catch (IllegalArgumentException outOfOrder) {
                        throw BackupBlocks.corrupt(backup, f.name(), "holds keys out of order");
                      }
                    });
            if (n != f.items())
              throw BackupBlocks.corrupt(
                  backup, f.name(), "holds " + n + " items where the manifest says " + f.items());
            return b.finish();
          });
    }
    boolean loaded = false;
    try {
      List<SkipListBuilder.Segment> segments = runAll(builds, threads, "basalt-restore");
      try {
        if (bottomUp)
          list.load(segments); // by inserts, the segments are empty: the items are in the list
      } catch (IllegalArgumentException e) {
        throw new CorruptionException(
            "the shards of the backup in "
                + backup.describe("")
                + " overlap or are out of"
                + " key order; the backup cannot be restored (docs/operations.md, \"Backup\")");
      }
      loaded = true;
    } catch (MemoryLimitException e) {
      throw new MemoryLimitException(
          "the backup in "
              + backup.describe("")
              + " does not fit the store's memory quota"
              + " (Options.memoryQuota); restore it with a larger one. Nothing was restored");
    } finally {
      if (!loaded) for (SkipListBuilder b : builders) b.discard();
    }
    // The deltas, one file after the other: a key's item is put unless the list holds it already
    // (the
    // scan passed it before the collector unlinked it) or a newer one of the snapshot
    // (UnlinkCapture#offer).
    Counts replayed = new Counts(m.keyspaces());
    counts.add(replayed);
    try {
      for (MemoryBackupManifest.FileRef f : m.deltas()) {
        long n =
            BackupBlocks.read(
                backup,
                f.name(),
                files.get(f.name()).size(),
                files.get(f.name()).crc(),
                (buf, k, kl, e, el) -> {
                  if (!replayed.wouldAccept(backup, f.name(), buf, k, kl, e, el)) return;
                  byte[] key = java.util.Arrays.copyOfRange(buf, k, k + kl);
                  byte[] present = list.get(key);
                  long seqno = seqnoAt(buf, e);
                  if (seqno > m.seqno())
                    throw BackupBlocks.corrupt(
                        backup, f.name(), "holds an item newer than the backup");
                  if (present != null && WriteCache.seqnoOf(present) >= seqno) return;
                  try {
                    list.put(key, 0, kl, buf, e, el);
                  } catch (io.basaltdb.InvalidArgumentException tooLarge) {
                    throw tooLarge(backup, f.name(), tooLarge);
                  }
                  if (present == null) replayed.accept(backup, f.name(), buf, k, kl, e, el);
                });
        if (n != f.items())
          throw BackupBlocks.corrupt(
              backup, f.name(), "holds " + n + " items where the manifest says " + f.items());
      }
    } catch (MemoryLimitException e) {
      throw new MemoryLimitException(
          "the backup in "
              + backup.describe("")
              + " does not fit the store's memory quota"
              + " (Options.memoryQuota); restore it with a larger one. Nothing was restored");
    }
    Map<Integer, Long> items = new HashMap<>();
    long bytes = 0, maxSeqno = 0;
    for (Counts c : counts) {
      c.flush();
      for (Map.Entry<Integer, Long> e : c.items.entrySet())
        items.merge(e.getKey(), e.getValue(), Long::sum);
      bytes += c.bytes;
      maxSeqno = Math.max(maxSeqno, c.maxSeqno);
    }
    return new Loaded(items, bytes, maxSeqno);
  }

  private static long seqnoAt(byte[] buf, int entry) {
    long seqno = 0;
    for (int i = 0; i < 8; i++) seqno = seqno << 8 | (buf[entry + i] & 0xFF);
    return seqno;
  }

  private static io.basaltdb.InvalidArgumentException tooLarge(
      Storage backup, String name, RuntimeException e) {
    return new io.basaltdb.InvalidArgumentException(
        "the backup file "
            + backup.describe(name)
            + " holds an item this"
            + " store's options refuse ("
            + e.getMessage()
            + "); open the backup with the Options.maxValueSize it was made"
            + " with. Nothing was restored");
  }

  /**
   * One loader's tally of what it restored; checks each entry's shape. Items of one keyspace come
   * together in a shard (the keyspace is the key's prefix), so the last keyspace's answer and count
   * are kept in fields: no map lookup or boxing per item.
   */
  private static final class Counts {
    final Map<Integer, String> keyspaces;
    final Map<Integer, Long> items = new HashMap<>();
    long bytes;
    long maxSeqno;
    private int lastKeyspace = Integer.MIN_VALUE;
    private boolean lastKnown;
    private long lastItems;

    Counts(Map<Integer, String> keyspaces) {
      this.keyspaces = keyspaces;
    }

    /**
     * Whether the item belongs to a keyspace of the backup (checked as {@link #accept} does,
     * counting nothing).
     */
    boolean wouldAccept(Storage backup, String name, byte[] buf, int k, int kl, int e, int el) {
      if (el < WriteCache.VALUE_HEADER || kl < 1)
        throw BackupBlocks.corrupt(backup, name, "holds an item too short to be an entry");
      int ks = WriteCache.keyspaceOf(buf, k, kl);
      if (ks != lastKeyspace) {
        flush();
        lastKeyspace = ks;
        lastKnown = keyspaces.containsKey(ks);
      }
      return lastKnown;
    }

    /**
     * Counts the item if its keyspace is one of the backup's; false for an item of a dropped
     * keyspace.
     */
    boolean accept(Storage backup, String name, byte[] buf, int k, int kl, int e, int el) {
      if (!wouldAccept(backup, name, buf, k, kl, e, el)) return false;
      if ((buf[e + 8] & WriteCache.TOMBSTONE) == 0) lastItems++;
      long seqno = seqnoAt(buf, e);
      if (seqno > maxSeqno) maxSeqno = seqno;
      bytes +=
          WriteCache.accounted(
              kl - WriteCache.prefixLength(lastKeyspace), el - WriteCache.VALUE_HEADER);
      return true;
    }

    /** Moves the last keyspace's count into {@link #items}; call before reading it. */
    void flush() {
      if (lastItems != 0) items.merge(lastKeyspace, lastItems, Long::sum);
      lastItems = 0;
    }
  }

  // ---- helpers
  // -----------------------------------------------------------------------------------------

  /**
   * Runs {@code tasks} on up to {@code threads} threads and returns their results in order. On a
   * failure the rest are cancelled, every task still running ends before this throws, and the first
   * failure is thrown.
   */
  private static <T> List<T> runAll(List<Callable<T>> tasks, int threads, String name) {
    int n = Math.max(1, Math.min(threads, tasks.size()));
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newFixedThreadPool(
            n,
            r -> {
              Thread t = new Thread(r, name);
              t.setDaemon(true);
              return t;
            });
    try {
      List<java.util.concurrent.Future<T>> running = new ArrayList<>();
      for (Callable<T> t : tasks) running.add(pool.submit(t));
      List<T> out = new ArrayList<>();
      for (java.util.concurrent.Future<T> f : running) {
        try {
          out.add(f.get());
        } catch (java.util.concurrent.ExecutionException x) {
          Throwable c = x.getCause();
          if (c instanceof RuntimeException r) throw r;
          if (c instanceof Error err) throw err;
          throw new StorageException(name + " failed: " + c, c);
        } catch (InterruptedException x) {
          Thread.currentThread().interrupt();
          throw new StorageException("interrupted during " + name, x);
        }
      }
      return out;
    } finally {
      pool.shutdownNow();
      Backups.awaitTermination(pool); // no task may touch the list or the files after this returns
    }
  }

  private static void requireListed(
      Storage backup, Map<String, Backups.FileEntry> files, String name) {
    if (!files.containsKey(name)) {
      throw new CorruptionException(
          "the backup manifest "
              + backup.describe(FileNames.MEMORY_BACKUP_MANIFEST)
              + " names "
              + name
              + ", which the marker does not list; the backup cannot be restored");
    }
  }

  private static byte[] readWhole(Storage backup, Backups.FileEntry f) {
    if (f.size() > (64L << 20))
      throw BackupBlocks.corrupt(backup, f.name(), "has a bad size of " + f.size() + " bytes");
    ByteBuffer b = ByteBuffer.allocate((int) f.size());
    StorageFile in = backup.openForReading(f.name());
    try {
      while (b.hasRemaining()) {
        int n = in.read(b.position(), b);
        if (n <= 0) throw BackupBlocks.corrupt(backup, f.name(), "ends at offset " + b.position());
      }
    } finally {
      in.close();
    }
    CRC32C crc = new CRC32C();
    crc.update(b.array());
    if ((int) crc.getValue() != f.crc())
      throw BackupBlocks.corrupt(backup, f.name(), "fails its checksum");
    return b.array();
  }
}
