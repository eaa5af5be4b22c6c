package io.basaltdb.jmh;

import static io.basaltdb.jmh.Race.fmt;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.Stats;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.nio.file.Path;
import java.util.Map;

/**
 * Basalt for {@link Race}: its defaults at the given memory quota, the WAL fsynced per batch; the
 * checkpoint retention can be changed to see what retained checkpoints cost in space.
 *
 * <p>Thread-safety: as Basalt's; writers share it.
 */
final class BasaltStore implements Race.Store {
  final Path dir;
  final Basalt db;
  final Keyspace ks;

  /**
   * Each write expires this long after it is made ({@code --ttl-seconds}); 0: never. Set before the
   * load.
   */
  long ttlMillis;

  /**
   * {@code checkpointRetentionMillis} below 0 keeps Basalt's default (10 minutes). {@code tuning}:
   * further options as {@code name=value} pairs separated by commas (e.g. {@code
   * l0BaseRatio=0.25}), each set through the {@link Options} method of that name; empty for none.
   */
  BasaltStore(Path dir, long memory, long checkpointRetentionMillis, String tuning) {
    this.dir = dir;
    Options o = Options.defaults().memoryQuota(memory).syncMode(SyncMode.SYNC);
    if (checkpointRetentionMillis >= 0) o.checkpointRetentionMillis(checkpointRetentionMillis);
    for (String pair : tuning.split(",")) {
      if (!pair.isBlank()) set(o, pair.trim());
    }
    db = Basalt.open(dir, o);
    ks = db.keyspace("default");
  }

  /** Sets one {@code name=value} option ({@link Options#set}). */
  private static void set(Options o, String pair) {
    int eq = pair.indexOf('=');
    if (eq < 0)
      throw new IllegalArgumentException("--basalt-options wants name=value pairs, got " + pair);
    o.set(pair.substring(0, eq), pair.substring(eq + 1));
  }

  @Override
  public void write(byte[][] keys, byte[][] values) {
    WriteBatch b = new WriteBatch();
    long expiry = ttlMillis > 0 ? System.currentTimeMillis() + ttlMillis : 0;
    for (int i = 0; i < keys.length; i++) b.put(ks, keys[i], values[i], expiry);
    db.write(b);
  }

  @Override
  public byte[] get(byte[] key) {
    return ks.get(key);
  }

  @Override
  public long[] readAll(String kind) {
    long records = 0, bytes = 0;
    if (kind.equals("scan")) {
      try (io.basaltdb.Cursor c = ks.scan(null, null)) {
        while (c.next()) {
          records++;
          bytes += c.value().length;
        }
      }
      return new long[] {records, bytes};
    }
    long from = 0;
    if (kind.equals("feed-tail")) {
      try (io.basaltdb.Snapshot s = db.snapshot()) {
        from = s.seqno() - s.seqno() / 10;
      }
    } else if (!kind.equals("feed") && !kind.equals("feed-exact")) {
      throw new IllegalArgumentException("no read-all kind " + kind);
    }
    io.basaltdb.ChangeFeed.Mode mode =
        kind.equals("feed-exact")
            ? io.basaltdb.ChangeFeed.Mode.EXACT
            : io.basaltdb.ChangeFeed.Mode.FAST;
    try (io.basaltdb.ChangeFeed f = ks.changes(from, io.basaltdb.ChangeFeed.NOW, mode)) {
      while (f.next()) {
        records++;
        byte[] v = f.value();
        if (v != null) bytes += v.length;
      }
    }
    return new long[] {records, bytes};
  }

  @Override
  public int scan(byte[] from, int count) {
    int n = 0;
    try (io.basaltdb.Cursor c = ks.scan(from, null)) {
      while (n < count && c.next()) {
        if (c.value() == null) throw new IllegalStateException("a scanned key without a value");
        n++;
      }
    }
    return n;
  }

  @Override
  public void compactAll() {
    settle(); // Basalt has no manual compaction: the expiry check and collection do the work
  }

  @Override
  public void settle() {
    db.flush();
    if (!db.waitForCompactions(30 * 60_000))
      throw new IllegalStateException("compactions did not settle");
  }

  @Override
  public Map<String, String> figures() {
    Stats s = db.stats();
    Map<String, String> m = new java.util.LinkedHashMap<>();
    m.put("engineWriteAmp", fmt(s.writeAmplification()));
    m.put("engineReadsPerGet", fmt(s.readsPerGet()));
    m.put("hintMisses", Long.toString(s.get("hintMisses")));
    m.put("documentReads", Long.toString(s.get("documentReads")));
    m.put(
        "blockCacheHitRate",
        fmt(
            (double) s.get("blockCacheHits")
                / Math.max(1, s.get("blockCacheHits") + s.get("blockCacheMisses"))));
    m.put("spaceAmp", fmt(s.spaceAmplification()));
    m.put("tables", Long.toString(s.get("tables")));
    m.put("segments", Long.toString(s.get("segments")));
    return m;
  }

  @Override
  public Path directory() {
    return dir;
  }

  @Override
  public Map<String, Long> counters() {
    Map<String, Long> m = new java.util.HashMap<>(db.stats().asMap());
    m.put("checkpoints", (long) db.checkpoints().size());
    return m;
  }

  /**
   * Bytes written in the phase (MiB) by garbage collection ({@code gcWrittenMiB}), key index
   * compaction, the delete list, the log segments (flushes), the WAL and key index flushes; the
   * engine's own write amplification of the phase; what garbage collection read and reclaimed, its
   * runs and writer stalls; and at its end the fragmentation, the segments' bytes and their stale
   * part, the checkpoints and the bytes only they hold, the preallocated segment tails, and {@link
   * Stats#spaceAmplification()}.
   */
  @Override
  public Map<String, String> phaseFigures(Map<String, Long> before, Map<String, Long> after) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    String[][] written = {
      {"gcBytesWritten", "gcWrittenMiB"},
      {"compactionBytesWritten", "compactionWrittenMiB"},
      {"deleteListBytesWritten", "deleteListWrittenMiB"},
      {"segmentBytesWritten", "segmentWrittenMiB"},
      {"walBytesWritten", "walWrittenMiB"},
      {"indexBytesWritten", "indexWrittenMiB"}
    };
    long engineWritten = 0;
    for (String[] w : written) {
      long d = after.get(w[0]) - before.get(w[0]);
      engineWritten += d;
      m.put(w[1], Phase.mib(d));
    }
    engineWritten += after.get("manifestBytesWritten") - before.get("manifestBytesWritten");
    long user = after.get("userBytesWritten") - before.get("userBytesWritten");
    if (user > 0) m.put("engineWriteAmp", fmt((double) engineWritten / user));
    m.put("gcReadMiB", Phase.mib(after.get("gcBytesRead") - before.get("gcBytesRead")));
    m.put(
        "gcReclaimedMiB",
        Phase.mib(after.get("gcBytesReclaimed") - before.get("gcBytesReclaimed")));
    for (String c :
        new String[] {
          "gcRuns",
          "gcStalls",
          "gcSlowdowns",
          "compactions",
          "l0Merges",
          "trivialMoves",
          "guardPushes",
          "guardMerges",
          "flushes",
          "stalls",
          "slowdowns",
          "l0Stalls"
        }) {
      m.put(c, Long.toString(after.get(c) - before.get(c)));
    }
    m.put(
        "stallMs", Long.toString((after.get("stallNanos") - before.get("stallNanos")) / 1_000_000));
    m.put(
        "slowdownMs",
        Long.toString((after.get("slowdownNanos") - before.get("slowdownNanos")) / 1_000_000));
    m.put(
        "gcSlowdownMs",
        Long.toString((after.get("gcSlowdownNanos") - before.get("gcSlowdownNanos")) / 1_000_000));
    m.put(
        "gcStallMs",
        Long.toString((after.get("gcStallNanos") - before.get("gcStallNanos")) / 1_000_000));
    m.put(
        "l0StallMs",
        Long.toString((after.get("l0StallNanos") - before.get("l0StallNanos")) / 1_000_000));
    m.put("fragmentationPermille", Long.toString(after.get("fragmentationPermille")));
    m.put("guards", Long.toString(after.get("guards")));
    m.put("maxGuardTables", Long.toString(after.get("maxGuardTables")));
    m.put("segmentMiB", Phase.mib(after.get("segmentBytes")));
    m.put("segmentStaleMiB", Phase.mib(after.get("segmentStaleBytes")));
    m.put("pendingGarbageMiB", Phase.mib(after.get("pendingGarbageBytes")));
    m.put("checkpoints", Long.toString(after.get("checkpoints")));
    m.put("checkpointOnlyMiB", Phase.mib(after.get("checkpointOnlyBytes")));
    m.put("preallocatedMiB", Phase.mib(after.get("preallocatedBytes")));
    m.put("deleteListMiB", Phase.mib(after.get("deleteListBytes")));
    long live = after.get("segmentBytes") - after.get("segmentStaleBytes");
    if (live > 0) {
      m.put(
          "engineSpaceAmp",
          fmt((double) (after.get("diskBytes") - after.get("preallocatedBytes")) / live));
    }
    m.put("segments", Long.toString(after.get("segments")));
    m.put("tables", Long.toString(after.get("tables")));
    return m;
  }

  @Override
  public void close() {
    db.close();
  }
}
