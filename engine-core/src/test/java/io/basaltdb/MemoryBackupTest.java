package io.basaltdb;

import static io.basaltdb.BackupTest.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Backup and restore of the in-memory store (Nitro, seed 001 section 5): a backup taken while a
 * writer runs restores exactly the writes up to its seqno, in both modes; the non-intrusive mode's
 * delta files hold every item of the backup's snapshot that the collector unlinked before the scan
 * reached it (the tests force collection between the release of the snapshot and the scan, and
 * between the scan and the end), and memory stays flat during a long backup under writes, where the
 * snapshot-holding mode grows; damage or truncation of every kind of backup file is refused, naming
 * the file, with nothing left allocated; and a crash at every storage operation of a backup leaves
 * no backup or a whole one.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class MemoryBackupTest {
  @TempDir Path tmp;

  static Options memory(int threads, boolean nonIntrusive, boolean lz4) {
    return Options.defaults()
        .memoryQuota(256L << 20)
        .exactItemCounts(true)
        .backupThreads(threads)
        .nonIntrusiveBackup(nonIntrusive)
        .backupCompression(lz4);
  }

  /** Every key of {@code ks} with its value, read through a cursor. */
  static Map<String, byte[]> contents(Keyspace ks) {
    Map<String, byte[]> m = new TreeMap<>();
    try (Cursor c = ks.scan(null, null)) {
      while (c.next())
        m.put(new String(c.key(), java.nio.charset.StandardCharsets.UTF_8), c.value());
    }
    return m;
  }

  static void assertSame(Map<String, byte[]> expected, Map<String, byte[]> actual, String what) {
    if (!expected.keySet().equals(actual.keySet())) {
      java.util.Set<String> missing = new java.util.TreeSet<>(expected.keySet()),
          extra = new java.util.TreeSet<>(actual.keySet());
      missing.removeAll(actual.keySet());
      extra.removeAll(expected.keySet());
      fail(
          what
              + ": "
              + missing.size()
              + " keys missing (first "
              + missing.stream().limit(5).toList()
              + "), "
              + extra.size()
              + " extra (first "
              + extra.stream().limit(5).toList()
              + ") of "
              + expected.size());
    }
    for (Map.Entry<String, byte[]> e : expected.entrySet())
      assertArrayEquals(e.getValue(), actual.get(e.getKey()), what + ": " + e.getKey());
  }

  /** One write of the single writer: key and value (null: a delete). */
  record Write(String key, byte[] value) {}

  @Test
  void aBackupTakenWhileWritingRestoresExactlyItsSnapshot_inBothModes() throws Exception {
    backupWhileWriting(memory(3, true, true), "non-intrusive, LZ4");
    backupWhileWriting(memory(2, false, false), "snapshot held, raw");
  }

  private void backupWhileWriting(Options o, String mode) throws Exception {
    Path dir = tmp.resolve("backup-" + o.nonIntrusiveBackup());
    List<Write> writes = new ArrayList<>();
    Backup backup;
    long base;
    Map<String, byte[]> other;
    try (Basalt db = Basalt.openInMemory(o)) {
      Keyspace ks = db.keyspace("default");
      Keyspace ks2 = db.createKeyspace("other");
      Keyspace dropped = db.createKeyspace("dropped");
      for (int i = 0; i < 500; i++) ks2.put(b("o" + i), b("other " + i));
      for (int i = 0; i < 100; i++) dropped.put(b("d" + i), b("gone"));
      db.dropKeyspace("dropped");
      other = contents(ks2);
      base = db.stats().get("lastSeqno");
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong acknowledged = new AtomicLong();
      Thread writer =
          new Thread(
              () -> {
                for (int i = 0; !stop.get() || i < 20_000; i++) {
                  String k = "k" + (i * 7 % 3000);
                  byte[] v = i % 11 == 0 ? null : b("v" + i + "-" + "x".repeat(i % 150));
                  synchronized (writes) {
                    writes.add(new Write(k, v)); // in seqno order: one writer, one seqno per write
                  }
                  if (v == null) ks.delete(b(k));
                  else ks.put(b(k), v);
                  acknowledged.set(i + 1);
                }
              });
      writer.start();
      while (acknowledged.get() < 8000) Thread.sleep(1);
      long before = acknowledged.get();
      db.engine.setBackupHooks(
          () -> {}, db.engine::quiesceMemory); // collection runs between the scan and the end
      backup = db.backup(dir);
      stop.set(true);
      writer.join();
      assertTrue(
          backup.seqno() >= base + before,
          mode + ": the backup holds every write acknowledged before it: " + backup);
      assertTrue(backup.seqno() <= base + writes.size(), mode);
      db.createKeyspace("after"); // not in the backup
    }
    Map<String, byte[]> expected = new TreeMap<>();
    for (int i = 0; i < backup.seqno() - base; i++) {
      Write w = writes.get(i);
      if (w.value() == null) expected.remove(w.key());
      else expected.put(w.key(), w.value());
    }
    assertEquals(backup.seqno(), Basalt.verifyBackup(dir).seqno());
    for (int round = 0; round < 2; round++) { // a backup is only read: it opens again
      try (Basalt db = Basalt.openInMemory(o, dir)) {
        assertEquals(List.of("default", "other"), db.keyspaceNames(), mode);
        Keyspace ks = db.keyspace("default");
        assertSame(expected, contents(ks), mode + ", restored");
        assertSame(other, contents(db.keyspace("other")), mode + ", the other keyspace");
        assertEquals(expected.size(), ks.itemCount(), mode + ": item counts");
        assertEquals(backup.seqno(), db.stats().get("lastSeqno"), mode);
        ks.put(b("k1"), b("after restore")); // it takes writes, after the backup's seqno
        assertArrayEquals(b("after restore"), ks.get(b("k1")));
        assertEquals(backup.seqno() + 1, db.stats().get("lastSeqno"));
        Keyspace fresh = db.createKeyspace("new");
        fresh.put(b("a"), b("b"));
        assertNull(ks.get(b("a")), "a new keyspace has an id of its own");
      }
    }
  }

  /**
   * Collection runs after the backup released its snapshot and before it scans: every item of the
   * snapshot is replaced or deleted and unlinked, so the scan finds none of them and the restore
   * has them all from the delta files. The snapshot-holding mode keeps them linked instead.
   */
  /** A hashed keyspace comes back from an in-memory backup hashed, with its data and refusals. */
  @Test
  void aHashedKeyspaceKeepsItsKind() {
    Path dir = tmp.resolve("backup-hashed");
    KeyspaceOptions hashed =
        KeyspaceOptions.defaults().kind(KeyspaceOptions.Kind.HASHED).branching(16);
    try (Basalt db = Basalt.openInMemory(memory(2, true, false))) {
      Keyspace h = db.createKeyspace("h", hashed);
      for (int i = 0; i < 300; i++) h.put(b("h" + i), b("v" + i));
      db.keyspace("default").put(b("plain"), b("p"));
      db.backup(dir);
    }
    try (Basalt db = Basalt.openInMemory(memory(2, true, false), dir)) {
      assertEquals(KeyspaceOptions.Kind.HASHED, db.keyspaceOptions("h").kind());
      assertEquals(KeyspaceOptions.Kind.ORDERED, db.keyspaceOptions("default").kind());
      Keyspace h = db.keyspace("h");
      for (int i = 0; i < 300; i++) assertArrayEquals(b("v" + i), h.get(b("h" + i)));
      assertThrows(UnsupportedOperationException.class, () -> h.scan(null, null));
      assertArrayEquals(b("p"), db.keyspace("default").get(b("plain")));
    }
  }

  @Test
  void deltaFilesCatchEveryItemUnlinkedBeforeTheScanReachesIt() throws Exception {
    for (boolean nonIntrusive : new boolean[] {true, false}) {
      Path dir = tmp.resolve("delta-" + nonIntrusive);
      Map<String, byte[]> expected;
      long usedAtBackup;
      long[] usedAfterCollection = new long[1];
      try (Basalt db = Basalt.openInMemory(memory(2, nonIntrusive, false))) {
        Keyspace ks = db.keyspace("default");
        for (int i = 0; i < 4000; i++) ks.put(b("k" + i), b("first " + i + "y".repeat(200)));
        expected = contents(ks);
        db.engine.quiesceMemory();
        usedAtBackup = db.stats().memoryInUse();
        db.engine.setBackupHooks(
            () -> {
              for (int i = 0; i < 4000; i++) {
                if (i % 3 == 0) ks.delete(b("k" + i));
                else ks.put(b("k" + i), b("second " + i + "z".repeat(200)));
              }
              db.engine.quiesceMemory();
              usedAfterCollection[0] = db.stats().memoryInUse();
            },
            () -> {});
        db.backup(dir);
      }
      List<String> deltas = names(dir.resolve("memory"), "delta-");
      try (Basalt db = Basalt.openInMemory(memory(2, true, false), dir)) {
        assertSame(expected, contents(db.keyspace("default")), "non-intrusive " + nonIntrusive);
        assertEquals(4000, db.keyspace("default").itemCount());
      }
      if (nonIntrusive) {
        assertTrue(!deltas.isEmpty(), "the collector wrote no delta file");
        // the first versions were freed during the backup: it did not hold them
        assertTrue(
            usedAfterCollection[0] < usedAtBackup * 1.5,
            usedAfterCollection[0] + " bytes in use, " + usedAtBackup + " at the backup");
      } else {
        assertTrue(deltas.isEmpty(), "a backup holding its snapshot wrote delta files: " + deltas);
        assertTrue(
            usedAfterCollection[0] > usedAtBackup * 1.5,
            "the held snapshot kept the first versions: "
                + usedAfterCollection[0]
                + " bytes in use, "
                + usedAtBackup
                + " at the backup");
      }
    }
  }

  /**
   * A long backup under writes: while it is paused after releasing its snapshot, every key is
   * rewritten 15 times with collection running. The non-intrusive backup's memory stays within
   * twice its start; one holding its snapshot keeps every superseded version of the snapshot's
   * term, and grows.
   */
  @Test
  void memoryStaysFlatDuringALongBackupUnderWrites() {
    long[] peak = new long[2];
    for (int mode = 0; mode < 2; mode++) {
      boolean nonIntrusive = mode == 0;
      try (Basalt db = Basalt.openInMemory(memory(2, nonIntrusive, true))) {
        Keyspace ks = db.keyspace("default");
        for (int i = 0; i < 2000; i++) ks.put(b("k" + i), b("v" + "a".repeat(500)));
        db.engine.quiesceMemory();
        long start = db.stats().memoryInUse();
        int m = mode;
        db.engine.setBackupHooks(
            () -> {
              for (int round = 0; round < 15; round++) {
                for (int i = 0; i < 2000; i++) ks.put(b("k" + i), b("r" + round + "a".repeat(500)));
                db.engine.quiesceMemory();
                peak[m] = Math.max(peak[m], db.stats().memoryInUse());
              }
            },
            () -> {});
        db.backup(tmp.resolve("flat-" + mode));
        double growth = (double) peak[mode] / start;
        if (nonIntrusive) {
          assertTrue(growth < 2, "non-intrusive backup: memory grew " + growth + "x");
        } else {
          assertTrue(
              growth > 4,
              "the snapshot-holding control did not grow ("
                  + growth
                  + "x): the test measures nothing");
        }
      }
    }
  }

  @Test
  void damageOrTruncationOfEveryFileKindIsRefused_namingTheFile() throws Exception {
    Path good = tmp.resolve("good");
    try (Basalt db = Basalt.openInMemory(memory(2, true, true))) {
      Keyspace ks = db.keyspace("default");
      // about 2 MB of keys and values, 1.1 MB of them in the odd keys the backup's changes leave
      // alone:
      // well above the 1 MiB quota the last check restores them into (near it, at 0.6 MB, the
      // threads'
      // allocation counts not yet added to the quota let the restore fit now and then)
      for (int i = 0; i < 3000; i++)
        ks.put(b("k" + i), b("value " + i + " " + "q".repeat(400 + i % 600)));
      db.engine.setBackupHooks(
          () -> {
            for (int i = 0; i < 3000; i += 2) ks.put(b("k" + i), b("changed"));
            db.engine.quiesceMemory();
          },
          () -> {});
      db.backup(good);
    }
    List<String> shards = prefixed("memory/", names(good.resolve("memory"), "shard-"));
    List<String> deltas = prefixed("memory/", names(good.resolve("memory"), "delta-"));
    assertTrue(!deltas.isEmpty() && shards.size() >= 2, shards + " " + deltas);
    // every kind of file: the marker, the manifest, the first and the last shard, a delta file
    List<String> files =
        List.of(
            Backups.MARKER,
            "memory/MANIFEST",
            shards.get(0),
            shards.get(shards.size() - 1),
            deltas.get(0));
    int n = 0;
    for (String file : files) {
      for (boolean truncate : new boolean[] {false, true}) {
        Path copy = tmp.resolve("damaged-" + n++);
        BackupTest.copyTree(good, copy);
        Path f = copy.resolve(file);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
          long at = raf.length() / 2;
          if (truncate) {
            raf.setLength(at);
          } else {
            raf.seek(at);
            int x = raf.read();
            raf.seek(at);
            raf.write(x ^ 0x10);
          }
        }
        String what = file + (truncate ? " truncated" : " damaged");
        CorruptionException e =
            assertThrows(
                CorruptionException.class,
                () -> Basalt.openInMemory(memory(2, true, true), copy).close(),
                what);
        String named = file.equals(Backups.MARKER) ? "BACKUP" : file;
        assertTrue(e.getMessage().contains(named), what + ": " + e.getMessage());
        assertThrows(CorruptionException.class, () -> Basalt.verifyBackup(copy), what);
      }
    }
    Path incomplete = tmp.resolve("incomplete");
    BackupTest.copyTree(good, incomplete);
    Files.delete(incomplete.resolve(Backups.MARKER));
    CorruptionException e =
        assertThrows(
            CorruptionException.class,
            () -> Basalt.openInMemory(memory(2, true, true), incomplete));
    assertTrue(e.getMessage().contains("holds no complete backup"), e.getMessage());
    // a backup of the other kind is refused with a pointer to the right call
    assertThrows(
        InvalidArgumentException.class, () -> Basalt.restore(good, tmp.resolve("as-disk")));
    Path disk = tmp.resolve("disk"), diskBackup = tmp.resolve("disk-backup");
    try (Basalt db = Basalt.open(disk, ChangeFeedTest.tiny())) {
      db.keyspace("default").put(b("a"), b("b"));
      db.backup(diskBackup);
    }
    assertThrows(
        InvalidArgumentException.class,
        () -> Basalt.openInMemory(memory(2, true, true), diskBackup));
    // a store whose options refuse the backup's values: refused, naming the option, nothing left
    // allocated
    InvalidArgumentException small =
        assertThrows(
            InvalidArgumentException.class,
            () -> Basalt.openInMemory(memory(2, true, true).maxValueSize(64), good));
    assertTrue(small.getMessage().contains("maxValueSize"), small.getMessage());
    // a backup larger than the quota: refused, and nothing left allocated
    MemoryLimitException full =
        assertThrows(
            MemoryLimitException.class,
            () -> Basalt.openInMemory(memory(2, true, true).memoryQuota(1L << 20), good));
    assertTrue(full.getMessage().contains("memoryQuota"), full.getMessage());
  }

  /**
   * Closing the store during a backup: close waits for it, it throws ClosedException, and nothing
   * of it is left.
   */
  @Test
  void closingTheStoreDuringABackupStopsIt() throws Exception {
    Path dir = tmp.resolve("closed");
    Basalt db = Basalt.openInMemory(memory(2, true, false));
    Keyspace ks = db.keyspace("default");
    for (int i = 0; i < 3000; i++) ks.put(b("k" + i), b("v" + i));
    java.util.concurrent.CountDownLatch scanning = new java.util.concurrent.CountDownLatch(1);
    db.engine.setBackupHooks(
        () -> {
          scanning.countDown();
          while (!db.engine.isClosed())
            Thread.onSpinWait(); // close has begun, and waits for this backup
        },
        () -> {});
    Throwable[] failure = new Throwable[1];
    Thread backup =
        new Thread(
            () -> {
              try {
                db.backup(dir);
              } catch (Throwable t) {
                failure[0] = t;
              }
            });
    backup.start();
    scanning.await();
    db.close();
    backup.join(30_000);
    assertTrue(failure[0] instanceof ClosedException, "the backup ended with " + failure[0]);
    assertTrue(!Files.exists(dir.resolve(Backups.MARKER)), "a stopped backup left a marker");
  }

  /**
   * A crash at every storage operation of a backup leaves a backup refused for want of its marker,
   * or a whole one.
   */
  @Test
  void aCrashAtEveryStorageOperationOfABackupLeavesNoBackupOrACompleteOne() {
    Options o =
        memory(
            2, false, false); // holding the snapshot: no delta files, the same operations each time
    try (Basalt db = Basalt.openInMemory(o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 3000; i++) ks.put(b("k" + i), b("v" + i + "w".repeat(100)));
      Map<String, byte[]> expected = contents(ks);
      MemStorage clean = new MemStorage(21);
      db.backup(clean, null);
      long ops = clean.mutationCount();
      assertTrue(ops > 8, "the backup made " + ops + " storage operations");
      int complete = 0, refused = 0;
      for (int crashAt = 0; crashAt <= ops; crashAt++) {
        for (MemStorage.CrashMode mode : MemStorage.CrashMode.values()) {
          MemStorage target = new MemStorage(crashAt * 5L + mode.ordinal());
          target.crashAfterMutations(crashAt);
          try {
            db.backup(target, null);
          } catch (BasaltException e) {
            if (e instanceof InvalidArgumentException) throw e;
            if (crashAt == ops)
              throw new AssertionError(
                  "the backup failed with every storage operation allowed: " + e, e);
          }
          target.crash(mode);
          try (Basalt again = Basalt.openInMemory(o, target)) {
            assertSame(
                expected, contents(again.keyspace("default")), "crash at " + crashAt + ", " + mode);
            complete++;
          } catch (CorruptionException e) {
            if (!e.getMessage().contains("holds no complete backup")) {
              fail(
                  "crash at mutation "
                      + crashAt
                      + ", "
                      + mode
                      + ": a backup with its marker is damaged: "
                      + e,
                  e);
            }
            refused++;
          }
        }
      }
      assertTrue(complete > 0 && refused > 0, "complete " + complete + ", refused " + refused);
    }
  }

  static List<String> names(Path dir, String prefix) throws IOException {
    if (!Files.isDirectory(dir)) return List.of();
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith(prefix))
          .sorted()
          .toList();
    }
  }

  static List<String> prefixed(String prefix, List<String> names) {
    return names.stream().map(n -> prefix + n).toList();
  }

  /**
   * Shards of several MiB: their full 1 MiB buffers go to the file through the background writer,
   * with O_DIRECT where the file system takes it, and their tails through the page cache; the
   * restore reads back every item, and each shard file is exactly the size the marker records.
   */
  @Test
  void largeShards_writtenThroughTheBackgroundWriter_restoreExactly() throws Exception {
    Path dir = tmp.resolve("large");
    Map<String, byte[]> expected;
    java.util.Random r = new java.util.Random(9);
    try (Basalt db = Basalt.openInMemory(memory(1, true, false))) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 6_000; i++) { // about 9 MB: four shards of over 2 MB each
        byte[] v = new byte[1000 + r.nextInt(1000)];
        r.nextBytes(v);
        ks.put(String.format("key-%08d", i * 7919 % 6_000).getBytes(), v);
      }
      expected = contents(ks);
      db.backup(dir);
    }
    long shardBytes;
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(dir)) {
      shardBytes =
          files
              .filter(f -> f.getFileName().toString().startsWith("shard"))
              .mapToLong(f -> f.toFile().length())
              .max()
              .orElse(0);
    }
    assertTrue(
        shardBytes > 2 << 20,
        "a shard of " + shardBytes + " bytes: more than two full write buffers");
    Basalt.verifyBackup(dir);
    try (Basalt db = Basalt.openInMemory(memory(2, true, false), dir)) {
      assertSame(expected, contents(db.keyspace("default")), "restored");
    }
  }
}
