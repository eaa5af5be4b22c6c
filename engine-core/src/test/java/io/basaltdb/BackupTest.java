package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.engine.backup.Backups;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Online backups of a disk store and their restore: a backup taken while a writer runs (and
 * flushes, compaction and garbage collection with it) restores exactly the writes up to its seqno;
 * an incremental backup shares the unchanged segments with the earlier one and each stays whole on
 * its own; damage or truncation of any file of a backup is refused at restore, naming the file,
 * with nothing written; and a crash at every storage operation of a backup leaves either no backup
 * or a complete one.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class BackupTest {
  static final int KEYS = 300;

  @TempDir Path tmp;

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** One write of the single writer: its key, and its value (null: a delete). */
  record Write(String key, byte[] value) {}

  /** What the first {@code n} writes leave, key to value. */
  static Map<String, byte[]> apply(List<Write> writes, long n) {
    Map<String, byte[]> m = new TreeMap<>();
    for (int i = 0; i < n; i++) {
      Write w = writes.get(i);
      if (w.value() == null) m.remove(w.key());
      else m.put(w.key(), w.value());
    }
    return m;
  }

  static void check(Keyspace ks, Map<String, byte[]> expected, String what) {
    for (int i = 0; i < KEYS; i++) {
      String k = "k" + i;
      byte[] v = ks.get(b(k));
      if (expected.containsKey(k)) {
        assertArrayEquals(expected.get(k), v, what + ": " + k);
      } else {
        assertNull(v, what + ": " + k + " should be absent");
      }
    }
  }

  @Test
  void aBackupTakenWhileWritingRestoresExactlyTheWritesUpToItsSeqno() throws Exception {
    Options o = ChangeFeedTest.tiny();
    Path store = tmp.resolve("store"),
        backupDir = tmp.resolve("backup"),
        restored = tmp.resolve("restored");
    List<Write> writes = new ArrayList<>();
    Backup backup;
    long base;
    try (Basalt db = Basalt.open(store, o)) {
      Keyspace ks = db.keyspace("default");
      base = db.stats().get("lastSeqno");
      AtomicBoolean stop = new AtomicBoolean();
      int[] acknowledged = new int[1];
      Thread writer =
          new Thread(
              () -> {
                for (int i = 0; !stop.get() || i < 3000; i++) {
                  String k = "k" + (i * 7 % KEYS);
                  byte[] v = i % 11 == 0 ? null : b("v" + i + "-" + "x".repeat(i % 200));
                  synchronized (writes) {
                    writes.add(new Write(k, v)); // in seqno order: one writer, one seqno per write
                  }
                  if (v == null) ks.delete(b(k));
                  else ks.put(b(k), v);
                  synchronized (writes) {
                    acknowledged[0] = i + 1;
                  }
                }
              });
      writer.start();
      while (true) { // until the writer is well under way (flushes and collection have run)
        synchronized (writes) {
          if (acknowledged[0] >= 2000) break;
        }
        Thread.sleep(1);
      }
      int before;
      synchronized (writes) {
        before = acknowledged[0];
      }
      backup = db.backup(backupDir);
      stop.set(true);
      writer.join();
      assertTrue(
          backup.seqno() >= base + before,
          "the backup holds every write acknowledged before it began: "
              + backup
              + ", "
              + before
              + " acknowledged after seqno "
              + base);
      assertTrue(backup.seqno() <= base + writes.size());
      assertTrue(
          db.stats().get("gcRuns") > 0 || db.stats().get("compactions") > 0,
          "background work ran: " + db.stats());
      assertTrue(backup.bytesCopied() > 0 && backup.files() > 2, backup.toString());
      check(ks, apply(writes, writes.size()), "the store after the backup");
    }
    Map<String, byte[]> expected = apply(writes, backup.seqno() - base);
    Backup verified = Basalt.verifyBackup(backupDir);
    assertEquals(
        List.of(backup.seqno(), (long) backup.files(), backup.bytes()),
        List.of(verified.seqno(), (long) verified.files(), verified.bytes()));
    Backup r = Basalt.restore(backupDir, restored);
    assertEquals(backup.seqno(), r.seqno());
    try (Basalt db = Basalt.open(restored, o)) {
      Keyspace ks = db.keyspace("default");
      check(ks, expected, "the restored store");
      assertEquals(backup.seqno(), db.stats().get("lastSeqno"));
      ks.put(b("k0"), b("after restore")); // it takes writes, and keeps them
    }
    try (Basalt db = Basalt.open(restored, o)) {
      assertArrayEquals(b("after restore"), db.keyspace("default").get(b("k0")));
    }
    Basalt.verifyBackup(backupDir); // the restored store's writes did not touch the backup
    InvalidArgumentException inPlace =
        assertThrows(InvalidArgumentException.class, () -> Basalt.open(backupDir, o));
    assertTrue(inPlace.getMessage().contains("restore it"), inPlace.getMessage());
    assertThrows(InvalidArgumentException.class, () -> Basalt.rollback(backupDir, 1));
    assertThrows(InvalidArgumentException.class, () -> Basalt.checkpoints(backupDir));
    InvalidArgumentException notEmpty =
        assertThrows(InvalidArgumentException.class, () -> Basalt.restore(backupDir, restored));
    assertTrue(notEmpty.getMessage().contains("not empty"), notEmpty.getMessage());
  }

  @Test
  void anIncrementalBackupSharesUnchangedSegments_andEachStandsAlone() throws Exception {
    Options o =
        ChangeFeedTest.tiny()
            .fragmentationThreshold(1.0); // no collection: old segments stay as they are
    Path store = tmp.resolve("store"), first = tmp.resolve("first"), second = tmp.resolve("second");
    Map<String, byte[]> atFirst, atSecond;
    Backup b1, b2;
    try (Basalt db = Basalt.open(store, o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 2000; i++) ks.put(b("k" + (i % KEYS)), b("one-" + i + "y".repeat(100)));
      atFirst = snapshot(ks);
      b1 = db.backup(first);
      for (int i = 0; i < 500; i++) ks.put(b("k" + (i % 50)), b("two-" + i));
      ks.delete(b("k299"));
      atSecond = snapshot(ks);
      b2 = db.backup(second, first);
    }
    assertTrue(b2.bytesLinked() > 0 && b2.bytesCopied() < b2.bytes(), b2.toString());
    int shared = 0;
    try (Stream<Path> files = Files.walk(second)) {
      for (Path f :
          files.filter(Files::isRegularFile).filter(p -> p.toString().endsWith(".seg")).toList()) {
        Path same = first.resolve(second.relativize(f));
        if (Files.exists(same) && Files.isSameFile(same, f)) shared++;
      }
    }
    assertTrue(shared > 0, "no segment of the second backup is the first's");
    deleteTree(first); // the second stands alone
    Basalt.restore(second, tmp.resolve("r2"));
    try (Basalt db = Basalt.open(tmp.resolve("r2"), o)) {
      check(db.keyspace("default"), atSecond, "the incremental backup");
    }
    assertThrows(InvalidArgumentException.class, () -> Basalt.verifyBackup(first));
    assertTrue(b1.seqno() < b2.seqno());
    assertFalse(
        atFirst.keySet().equals(atSecond.keySet()), "the second backup's writes changed the keys");
  }

  /**
   * After a rollback a store writes over a segment's tail again: a segment can then have the name
   * and the length an earlier backup recorded for it with other bytes. The incremental backup
   * compares checksums, so it copies that segment instead of linking the earlier backup's stale
   * copy.
   */
  @Test
  void anIncrementalBackupAfterARollbackLinksNoStaleSegment() throws Exception {
    Options o =
        ChangeFeedTest.tiny()
            .fragmentationThreshold(1.0)
            .segmentSize(1 << 20)
            .checkpointRetentionMillis(600_000);
    Path store = tmp.resolve("store");
    long checkpoint;
    try (Basalt db = Basalt.open(store, o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(b("k" + i), b("one-" + String.format("%04d", i)));
      checkpoint = db.checkpoint().id();
      for (int i = 0; i < 100; i++) ks.put(b("k" + i), b("two-" + String.format("%04d", i)));
      db.backup(tmp.resolve("before-rollback")); // the segment's tail as the second writes left it
    }
    Basalt.rollback(store, checkpoint);
    Map<String, byte[]> now;
    Backup after;
    try (Basalt db = Basalt.open(store, o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++)
        ks.put(b("k" + i), b("thr-" + String.format("%04d", i))); // same sizes, same seqnos
      now = snapshot(ks);
      after = db.backup(tmp.resolve("after-rollback"), tmp.resolve("before-rollback"));
    }
    Basalt.restore(tmp.resolve("after-rollback"), tmp.resolve("restored"));
    try (Basalt db = Basalt.open(tmp.resolve("restored"), o)) {
      check(db.keyspace("default"), now, "the incremental backup after a rollback (" + after + ")");
    }
  }

  static Map<String, byte[]> snapshot(Keyspace ks) {
    Map<String, byte[]> m = new TreeMap<>();
    for (int i = 0; i < KEYS; i++) {
      byte[] v = ks.get(b("k" + i));
      if (v != null) m.put("k" + i, v);
    }
    return m;
  }

  /**
   * Damage and truncation of each kind of file a backup holds: refused at restore, naming the file,
   * nothing written.
   */
  @Test
  void aDamagedOrTruncatedBackupIsRefusedNamingTheFile() throws Exception {
    Options o = ChangeFeedTest.tiny();
    Path backupDir = tmp.resolve("backup");
    try (Basalt db = Basalt.open(tmp.resolve("store"), o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 1500; i++) ks.put(b("k" + (i % KEYS)), b("v" + i + "z".repeat(80)));
      db.backup(backupDir);
    }
    List<Path> files;
    try (Stream<Path> all = Files.walk(backupDir)) {
      files = all.filter(Files::isRegularFile).sorted().toList();
    }
    Map<String, Path> oneOfEachKind = new TreeMap<>();
    for (Path f : files) {
      String n = f.getFileName().toString();
      String kind =
          n.equals("BACKUP")
              ? "marker"
              : n.startsWith("MANIFEST-")
                  ? "manifest"
                  : n.endsWith(".seg")
                      ? "segment"
                      : f.getParent().getFileName().toString().equals("deletes")
                          ? "delete table"
                          : n.endsWith(".sst") ? "table" : "other " + n;
      oneOfEachKind.putIfAbsent(kind, backupDir.relativize(f));
    }
    assertTrue(
        oneOfEachKind.keySet().containsAll(List.of("marker", "manifest", "segment", "table")),
        oneOfEachKind.toString());
    int cases = 0;
    for (Map.Entry<String, Path> e : oneOfEachKind.entrySet()) {
      for (boolean truncate : new boolean[] {false, true}) {
        Path copy = tmp.resolve("damaged-" + cases);
        copyTree(backupDir, copy);
        Path victim = copy.resolve(e.getValue());
        long size = Files.size(victim);
        try (RandomAccessFile f = new RandomAccessFile(victim.toFile(), "rw")) {
          if (truncate) {
            f.setLength(size / 2);
          } else {
            f.seek(size / 2);
            int x = f.read();
            f.seek(size / 2);
            f.write(x ^ 0x40);
          }
        }
        Path target = tmp.resolve("target-" + cases++);
        CorruptionException c =
            assertThrows(
                CorruptionException.class,
                () -> Basalt.restore(copy, target),
                e.getKey() + (truncate ? " truncated" : " damaged"));
        assertTrue(c.getMessage().contains(victim.getFileName().toString()), c.getMessage());
        assertFalse(Files.exists(target), "a refused restore wrote " + target);
        assertThrows(CorruptionException.class, () -> Basalt.verifyBackup(copy));
      }
    }
    Path noMarker = tmp.resolve("no-marker");
    copyTree(backupDir, noMarker);
    Files.delete(noMarker.resolve("BACKUP"));
    CorruptionException c =
        assertThrows(CorruptionException.class, () -> Basalt.restore(noMarker, tmp.resolve("t")));
    assertTrue(c.getMessage().contains("no complete backup"), c.getMessage());
  }

  /**
   * A crash at every storage operation of a backup, in each crash mode, leaves in the target either
   * no complete backup (restore refuses it) or a complete one that restores the store's contents
   * exactly.
   */
  @Test
  void aCrashAtEveryStorageOperationOfABackupLeavesNoBackupOrACompleteOne() {
    Options o = ChangeFeedTest.tiny();
    try (Basalt db = Basalt.open(new MemStorage(11), o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 600; i++) ks.put(b("k" + (i % KEYS)), b("v" + i + "w".repeat(60)));
      Map<String, byte[]> expected = snapshot(ks);
      db.flush();
      assertTrue(db.waitForCompactions(30_000)); // the store's files stay as they are from here on
      MemStorage clean = new MemStorage(12);
      db.backup(clean, null);
      long ops = clean.mutationCount();
      MemStorage second = new MemStorage(13);
      db.backup(second, null);
      assertEquals(
          ops,
          second.mutationCount(),
          "two backups of the same files made different numbers of operations");
      assertTrue(ops > 10, "the backup made " + ops + " storage operations");
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
          MemStorage restored = new MemStorage(7);
          try {
            Backups.restore(target, restored);
          } catch (CorruptionException e) {
            // Refused only for want of its marker: a committed marker whose files fail their checks
            // would
            // be a backup that looks complete and is not.
            if (!e.getMessage().contains("holds no complete backup")) {
              fail(
                  "crash at mutation "
                      + crashAt
                      + " of the backup, "
                      + mode
                      + ": a backup with its marker is damaged: "
                      + e,
                  e);
            }
            if (target.exists(
                Backups.INCOMPLETE)) { // an unfinished backup is not opened as a store either
              assertThrows(InvalidArgumentException.class, () -> Basalt.open(target, o).close());
            }
            refused++;
            continue;
          }
          try (Basalt again = Basalt.open(restored, o)) {
            check(again.keyspace("default"), expected, "crash at " + crashAt + ", " + mode);
          } catch (BasaltException | AssertionError e) {
            fail(
                "crash at mutation "
                    + crashAt
                    + " of the backup, "
                    + mode
                    + ": the backup passed its checks but"
                    + " does not restore the store: "
                    + e,
                e);
          }
          complete++;
        }
      }
      assertTrue(complete > 0 && refused > 0, "complete " + complete + ", refused " + refused);
    }
  }

  /**
   * Closing a store while backups run: close waits for them to stop, each either completes or
   * throws ClosedException.
   */
  @Test
  void closingTheStoreStopsRunningBackups() throws Exception {
    Basalt db = Basalt.open(new MemStorage(21), ChangeFeedTest.tiny());
    Keyspace ks = db.keyspace("default");
    for (int i = 0; i < 2000; i++) ks.put(b("k" + (i % KEYS)), b("v" + i + "q".repeat(300)));
    List<MemStorage> completed = new ArrayList<>();
    List<Throwable> failures = new ArrayList<>();
    Thread backups =
        new Thread(
            () -> {
              for (int i = 0; ; i++) {
                MemStorage target = new MemStorage(100 + i);
                try {
                  db.backup(target, null);
                  completed.add(target);
                } catch (ClosedException e) {
                  return;
                } catch (Throwable e) {
                  failures.add(e);
                  return;
                }
              }
            });
    backups.start();
    Thread.sleep(50);
    db.close();
    backups.join(30_000);
    assertFalse(backups.isAlive(), "a backup kept running after close");
    assertTrue(failures.isEmpty(), "backups failed otherwise than closed: " + failures);
    for (MemStorage t : completed) Backups.verify(t);
    assertThrows(ClosedException.class, () -> db.backup(new MemStorage(99), null));
  }

  @Test
  void anInMemoryStoreAndBadTargetsAreRefused() throws IOException {
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20))) {
      db.backup(tmp.resolve("mem")); // full backups only: MemoryBackupTest
      assertThrows(
          InvalidArgumentException.class, () -> db.backup(tmp.resolve("mem2"), tmp.resolve("mem")));
    }
    Path full = Files.createDirectories(tmp.resolve("full"));
    Files.writeString(full.resolve("something"), "x");
    try (Basalt db = Basalt.open(tmp.resolve("store"), ChangeFeedTest.tiny())) {
      assertThrows(InvalidArgumentException.class, () -> db.backup(full));
      assertTrue(Files.exists(full.resolve("something")), "a refused backup touched the directory");
      assertThrows(InvalidArgumentException.class, () -> db.backup(null));
      assertThrows(
          InvalidArgumentException.class,
          () -> db.backup(tmp.resolve("b"), tmp.resolve("no such backup")));
    }
    assertThrows(
        InvalidArgumentException.class,
        () -> Basalt.restore(tmp.resolve("nothing"), tmp.resolve("t")));
  }

  static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : all.sorted().toList()) {
        Path dst = to.resolve(from.relativize(p));
        if (Files.isDirectory(p)) Files.createDirectories(dst);
        else Files.copy(p, dst);
      }
    }
  }

  static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }
}
