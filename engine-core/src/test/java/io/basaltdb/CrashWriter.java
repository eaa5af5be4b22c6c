package io.basaltdb;

import io.basaltdb.internal.engine.DiscardAccounting;
import io.basaltdb.internal.storage.FileStorage;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The writer JVM of {@code bin/crashtest}: opens the store in {@code <dir>/db}, checks it against
 * the oracle {@code <dir>/oracle} (the numbers of the operations the store acknowledged, one per
 * line, appended after each acknowledgement; a SIGKILL cannot lose it, the kernel holds it), then
 * goes on writing numbered operations until it is killed. Operation {@code i} is a pure function of
 * {@code i} (a put, a delete or a batch of puts), so expected state is recomputed from the oracle
 * alone. Before opening, it also checks the key index accounting the last manifest persists against
 * its tables ({@link DiscardAccounting}): a kill between a compaction's discards and their commit
 * must neither lose nor repeat a count.
 *
 * <p>Exit status: 0 when {@code --verify-only} passes, 1 on any lost or out-of-order write or wrong
 * count, 2 on a usage error. Thread-safety: a single-threaded program.
 */
public final class CrashWriter {
  static final int KEYS = 2000;

  private CrashWriter() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      System.err.println("usage: CrashWriter <dir> [--verify-only]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    boolean verifyOnly = args.length > 1 && args[1].equals("--verify-only");
    Files.createDirectories(dir);
    Path oracle = dir.resolve("oracle");
    long acked = lastAcked(oracle);
    // Small levels and segments and a low collection threshold, so a kill often lands in the middle
    // of
    // a compaction or a garbage collection as well as a flush.
    Options options =
        Options.defaults()
            .memoryQuota(32L << 20)
            .writeCacheSize(1L << 20)
            .segmentSize(128L << 10)
            .l0CompactionTrigger(2)
            .level1Bytes(16L << 10)
            .levelMultiplier(4)
            .tableTargetBytes(8L << 10)
            .fragmentationThreshold(0.2)
            // half the writers write their files around the page cache, and collect on two
            // threads: each store is killed in both settings and reopened in the other
            .directWrites(java.util.concurrent.ThreadLocalRandom.current().nextBoolean())
            .gcThreads(java.util.concurrent.ThreadLocalRandom.current().nextBoolean() ? 2 : 1);
    String accounting = DiscardAccounting.checkStore(new FileStorage(dir.resolve("db")));
    if (accounting != null) {
      System.err.println(
          "WRONG key index accounting after "
              + (acked + 1)
              + " acknowledged operations: "
              + accounting);
      System.exit(1);
    }
    try (Basalt db = Basalt.open(dir.resolve("db"), options)) {
      Keyspace ks = db.keyspace("default");
      String problem = verify(ks, acked);
      if (problem != null) {
        System.err.println("LOSS after " + (acked + 1) + " acknowledged operations: " + problem);
        System.exit(1);
      }
      System.out.println(
          "verified " + (acked + 1) + " acknowledged operations and the key index accounting");
      if (verifyOnly) return;
      try (FileOutputStream out = new FileOutputStream(oracle.toFile(), true)) {
        for (long i = acked + 1; ; i++) {
          apply(db, ks, i);
          out.write((i + "\n").getBytes(StandardCharsets.US_ASCII));
        }
      }
    }
  }

  /**
   * The highest operation number in the oracle, or -1; a torn last line (killed mid-write) is
   * ignored.
   */
  static long lastAcked(Path oracle) throws IOException {
    if (!Files.exists(oracle)) return -1;
    List<String> lines = Files.readAllLines(oracle, StandardCharsets.US_ASCII);
    long last = -1;
    for (String l : lines) {
      if (l.isEmpty()) continue;
      try {
        long v = Long.parseLong(l);
        if (v != last + 1) break; // a torn line; anything after it was never acknowledged
        last = v;
      } catch (NumberFormatException e) {
        break;
      }
    }
    return last;
  }

  static byte[] key(long op, int part) {
    long h = (op * 0x9E3779B97F4A7C15L + part * 0xC2B2AE3D27D4EB4FL) >>> 1;
    return ("key-" + (h % KEYS)).getBytes(StandardCharsets.US_ASCII);
  }

  static byte[] value(long op, int part) {
    int len = (int) ((op * 31 + part) % 700);
    byte[] v = new byte[len + 8];
    for (int i = 0; i < v.length; i++) v[i] = (byte) (op >>> (8 * (i % 8)));
    return v;
  }

  /**
   * Applies operation {@code i}: every 7th a delete, every 5th a batch of four puts, else a put.
   */
  static void apply(Basalt db, Keyspace ks, long i) {
    if (i % 7 == 3) {
      ks.delete(key(i, 0));
    } else if (i % 5 == 1) {
      WriteBatch b = new WriteBatch();
      for (int p = 0; p < 4; p++) b.put(ks, key(i, p), value(i, p));
      db.write(b);
    } else {
      ks.put(key(i, 0), value(i, 0));
    }
  }

  static void model(TreeMap<String, byte[]> m, long i) {
    if (i % 7 == 3) {
      m.remove(new String(key(i, 0), StandardCharsets.US_ASCII));
    } else if (i % 5 == 1) {
      for (int p = 0; p < 4; p++)
        m.put(new String(key(i, p), StandardCharsets.US_ASCII), value(i, p));
    } else {
      m.put(new String(key(i, 0), StandardCharsets.US_ASCII), value(i, 0));
    }
  }

  /**
   * Null if the store equals the model after operation {@code acked} or after {@code acked + 1}.
   */
  static String verify(Keyspace ks, long acked) {
    TreeMap<String, byte[]> expect = new TreeMap<>();
    for (long i = 0; i <= acked; i++) model(expect, i);
    TreeMap<String, byte[]> actual = new TreeMap<>();
    try (Cursor c = ks.scan(null, null)) {
      while (c.next()) actual.put(new String(c.key(), StandardCharsets.US_ASCII), c.value());
    }
    String diff = diff(expect, actual);
    if (diff == null) return null;
    TreeMap<String, byte[]> plus = new TreeMap<>(expect);
    model(plus, acked + 1);
    return diff(plus, actual) == null ? null : diff;
  }

  private static String diff(Map<String, byte[]> expect, Map<String, byte[]> actual) {
    for (var e : expect.entrySet()) {
      byte[] v = actual.get(e.getKey());
      if (v == null) return "key " + e.getKey() + " is missing";
      if (!Arrays.equals(v, e.getValue())) return "key " + e.getKey() + " has a wrong value";
    }
    for (String k : actual.keySet()) {
      if (!expect.containsKey(k)) return "key " + k + " is present but should not be";
    }
    return null;
  }
}
