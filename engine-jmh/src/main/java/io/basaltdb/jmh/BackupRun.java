package io.basaltdb.jmh;

import io.basaltdb.Backup;
import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * The cost of a disk store's backup and restore (issue 17): loads {@code --keys} keys with random
 * {@code --value-bytes}-byte values (incompressible, so the files hold what was written) and closes
 * the store (its files synced, so the backup does not share the disk with their write-back),
 * reopens it and times a full backup while it is open, an update of {@code --update-share} of the
 * keys, an incremental backup on top of the first, a verification, and a restore. Prints each
 * phase's time and MB/s (of the bytes the phase copied, or read for a verification), and the
 * backups' sizes against the store's live data. The directories go under {@code --dir} (default: a
 * temporary directory), deleted at the end unless {@code --keep}. Compare the copy rate with the
 * disk's own sequential write rate on the same file system, e.g. {@code dd if=/dev/zero of=<dir>/dd
 * bs=1M count=2048 conv=fsync}.
 *
 * <p>Run: {@code java @jvm.flags -cp engine-jmh/target/benchmarks.jar io.basaltdb.jmh.BackupRun
 * --keys 4000000}
 */
public final class BackupRun {
  private BackupRun() {}

  public static void main(String[] args) throws IOException {
    long keys = 4_000_000;
    int valueBytes = 400;
    double updateShare = 0.1;
    Path dir = null;
    boolean keep = false;
    for (int i = 0; i < args.length; i += 2) {
      switch (args[i]) {
        case "--keep" -> {
          keep = true;
          i--;
        }
        case "--keys" -> keys = Long.parseLong(args[i + 1]);
        case "--value-bytes" -> valueBytes = Integer.parseInt(args[i + 1]);
        case "--update-share" -> updateShare = Double.parseDouble(args[i + 1]);
        case "--dir" -> dir = Path.of(args[i + 1]);
        default ->
            throw new IllegalArgumentException(
                "unknown option "
                    + args[i]
                    + " (--keys N, --value-bytes N, --update-share F, --dir D, --keep)");
      }
    }
    Path root =
        dir == null ? Files.createTempDirectory("basalt-backup-run") : Files.createDirectories(dir);
    Path store = root.resolve("store"),
        full = root.resolve("full"),
        incremental = root.resolve("incremental");
    Path restored = root.resolve("restored");
    try {
      Options o = Options.defaults().memoryQuota(512L << 20).syncMode(SyncMode.NONE);
      SplittableRandom r = new SplittableRandom(17);
      byte[] value = new byte[valueBytes];
      WriteBatch batch = new WriteBatch();
      long t0 = System.nanoTime();
      long live;
      try (Basalt db =
          Basalt.open(store, o)) { // the load, closed so the disk has written it all back
        Keyspace ks = db.keyspace("default");
        ByteBuffer key = ByteBuffer.allocate(16);
        for (long i = 0; i < keys; i++) {
          r.nextBytes(value);
          batch.put(ks, key.clear().putLong(i).putLong(~i).flip(), ByteBuffer.wrap(value));
          if (batch.size() == 100) {
            db.write(batch);
            batch.clear();
          }
          if ((i + 1) % 1_000_000 == 0) System.out.printf("loaded %,d keys%n", i + 1);
        }
        db.write(batch);
        batch.clear();
        db.flush();
        db.waitForCompactions(600_000);
        live = db.stats().get("liveDataBytes");
      }
      System.out.printf(
          "load: %,d keys of %d bytes in %.1f s; live data %,d bytes, store directory %,d bytes%n",
          keys, valueBytes, (System.nanoTime() - t0) / 1e9, live, directoryBytes(store));
      try (Basalt db = Basalt.open(store, o)) {
        Keyspace ks = db.keyspace("default");
        ByteBuffer key = ByteBuffer.allocate(16);

        Backup b1 = timed("full backup", () -> db.backup(full));
        System.out.printf(
            "  %s: directory %,d bytes (%.2f of live data), %,d copied, %,d linked%n",
            b1,
            directoryBytes(full),
            directoryBytes(full) / (double) live,
            b1.bytesCopied(),
            b1.bytesLinked());

        long updates = (long) (keys * updateShare);
        for (long i = 0; i < updates; i++) {
          long k = r.nextLong(keys);
          r.nextBytes(value);
          batch.put(ks, key.clear().putLong(k).putLong(~k).flip(), ByteBuffer.wrap(value));
          if (batch.size() == 100) {
            db.write(batch);
            batch.clear();
          }
        }
        db.write(batch);
        System.out.printf("updated %,d random keys%n", updates);
        Backup b2 = timed("incremental backup", () -> db.backup(incremental, full));
        System.out.printf("  %s: %,d copied, %,d linked%n", b2, b2.bytesCopied(), b2.bytesLinked());
      }
      timed("verify of the incremental backup", () -> Basalt.verifyBackup(incremental));
      Backup back =
          timed("restore of the incremental backup", () -> Basalt.restore(incremental, restored));
      System.out.printf("  restored %,d files, %,d bytes%n", back.files(), back.bytes());
    } finally {
      if (keep) System.out.println("kept " + root);
      else deleteTree(root);
    }
  }

  private static Backup timed(String what, java.util.function.Supplier<Backup> phase) {
    long t0 = System.nanoTime();
    Backup b = phase.get();
    double s = (System.nanoTime() - t0) / 1e9;
    long moved = b.bytesCopied() > 0 ? b.bytesCopied() : b.bytes();
    System.out.printf("%s: %.2f s, %,d bytes, %.1f MB/s%n", what, s, moved, moved / s / 1e6);
    return b;
  }

  /**
   * Bytes of the regular files under {@code dir} (a hard-linked file counts in each directory that
   * has it).
   */
  static long directoryBytes(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      return all.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
    }
  }

  static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }
}
