package io.basaltdb.ycsb;

import io.basaltdb.Basalt;
import io.basaltdb.BasaltException;
import io.basaltdb.Cursor;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * Basalt's binding for the YCSB harness ({@code -db io.basaltdb.ycsb.BasaltClient}). YCSB makes one
 * instance per client thread; all of them in a JVM share one store, opened by the first {@code
 * init()} and closed by the last {@code cleanup()}. A YCSB table is a keyspace, created on first
 * use; a record is one value holding its fields in {@link Fields}' binary form.
 *
 * <p>Properties (all optional):
 *
 * <ul>
 *   <li>{@code basalt.mode}: {@code disk} (default, the durable engine) or {@code memory} (Nitro,
 *       the in-memory engine: nothing is kept after the run);
 *   <li>{@code basalt.dir}: the store's directory, default {@code basalt-ycsb-data} under the
 *       working directory; a load phase and a later run phase share it;
 *   <li>{@code basalt.memory}: the memory quota in bytes, with an optional k, m or g suffix
 *       (default {@code 256m}, Basalt's default);
 *   <li>{@code basalt.sync}: {@code sync}, {@code periodic} (default) or {@code none} ({@link
 *       SyncMode}). Periodic fsyncs the WAL every 100 ms, the durability YCSB's RocksDB binding
 *       runs with (no fsync per write); {@code sync} acknowledges each write after its fsync.
 *   <li>{@code basalt.stats}: {@code true} prints the store's {@link io.basaltdb.Stats} when the
 *       last client closes it, one {@code [BASALT], name, value} line each, beside YCSB's own
 *       report (default {@code false}).
 *   <li>{@code basalt.options}: further {@link Options} as {@code name=value} pairs separated by
 *       commas, each set with {@link Options#set} (e.g. {@code
 *       coldSegmentMillis=60000,exactItemCounts=true}).
 *   <li>{@code basalt.settle}: {@code true} flushes and waits for compaction and garbage collection
 *       to finish (at most 10 minutes) when the last client closes the store (default {@code
 *       false}).
 *   <li>{@code basalt.batchedscans}: {@code true} (default) materialises a scan's records as a
 *       batched read: the scan's cursor takes its {@code recordcount} keys from the key index and
 *       reads their values together through the store's read transport ({@link
 *       Keyspace#scan(byte[], byte[], int)}); {@code false} uses the default cursor, whose
 *       read-ahead starts at one key and doubles up to 32. YCSB's {@code DB} API has no multi-key
 *       read, so scans are where batched reads apply.
 * </ul>
 *
 * <p>{@code update} reads the record, replaces the given fields and writes it back; updates of one
 * key from the threads of this JVM are serialized (a striped lock), so none of their fields is
 * lost. Scans walk the keys in order from the start key.
 *
 * <p>Thread-safety: YCSB gives each thread its own instance; the shared store is thread-safe.
 */
public final class BasaltClient extends DB {
  /**
   * The store all instances of this JVM share, and how many instances hold it. Guarded by the
   * class.
   */
  private static Basalt shared;

  private static int holders;

  /** basalt.stats of the instance that opened the shared store. Guarded by the class. */
  private static boolean printStats;

  private static final Map<String, Keyspace> KEYSPACES = new ConcurrentHashMap<>();
  private static final ReentrantLock[] STRIPES = new ReentrantLock[256];

  static {
    for (int i = 0; i < STRIPES.length; i++) STRIPES[i] = new ReentrantLock();
  }

  private Basalt db;

  /** basalt.settle of the instance that opened the shared store. Guarded by the class. */
  private static boolean settleOnClose;

  /**
   * basalt.batchedscans of the instance that opened the shared store; read by every instance after
   * its init.
   */
  private static volatile boolean batchedScans = true;

  @Override
  public void init() throws DBException {
    synchronized (BasaltClient.class) {
      if (shared == null) {
        try {
          shared = open(getProperties());
          printStats =
              Boolean.parseBoolean(getProperties().getProperty("basalt.stats", "false").trim());
          settleOnClose =
              Boolean.parseBoolean(getProperties().getProperty("basalt.settle", "false").trim());
          batchedScans =
              Boolean.parseBoolean(
                  getProperties().getProperty("basalt.batchedscans", "true").trim());
        } catch (BasaltException e) {
          throw new DBException("cannot open the Basalt store: " + e.getMessage(), e);
        }
        KEYSPACES.clear();
      }
      holders++;
      db = shared;
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (BasaltClient.class) {
      if (db == null) return;
      db = null;
      if (--holders == 0) {
        Basalt s = shared;
        shared = null;
        KEYSPACES.clear();
        try {
          if (settleOnClose) { // the phase's compactions and garbage collection finish before the
            // stats
            s.flush();
            s.waitForCompactions(600_000);
          }
          if (printStats) {
            io.basaltdb.Stats st = s.stats();
            StringBuilder b = new StringBuilder();
            st.asMap()
                .forEach(
                    (k, v) -> b.append("[BASALT], ").append(k).append(", ").append(v).append('\n'));
            b.append("[BASALT], readsPerGet, ")
                .append(String.format("%.3f", st.readsPerGet()))
                .append('\n');
            b.append("[BASALT], writeAmplification, ")
                .append(String.format("%.3f", st.writeAmplification()))
                .append('\n');
            System.out.print(b);
          }
          s.close();
        } catch (BasaltException e) {
          throw new DBException("closing the Basalt store failed: " + e.getMessage(), e);
        }
      }
    }
  }

  /** Opens the store the properties describe. */
  static Basalt open(Properties p) {
    String mode = p.getProperty("basalt.mode", "disk").trim().toLowerCase();
    Options o =
        Options.defaults()
            .memoryQuota(parseBytes(p.getProperty("basalt.memory", "256m")))
            .syncMode(parseSync(p.getProperty("basalt.sync", "periodic")));
    for (String pair :
        p.getProperty("basalt.options", "").split(",")) { // name=value,... (Options.set)
      if (pair.isBlank()) continue;
      int eq = pair.indexOf('=');
      if (eq < 0)
        throw new InvalidArgumentException(
            "basalt.options wants name=value pairs, got '" + pair + "'");
      o.set(pair.substring(0, eq).trim(), pair.substring(eq + 1));
    }
    switch (mode) {
      case "memory":
        return Basalt.openInMemory(o);
      case "disk":
        return Basalt.open(Path.of(p.getProperty("basalt.dir", "basalt-ycsb-data")), o);
      default:
        throw new InvalidArgumentException(
            "basalt.mode must be disk or memory, was '" + mode + "'");
    }
  }

  /**
   * A byte count with an optional k, m or g suffix ({@code basalt.memory}); also used by the
   * RocksDB peer.
   */
  public static long parseBytes(String s) {
    String t = s.trim().toLowerCase();
    long unit = 1;
    if (t.endsWith("k")) unit = 1L << 10;
    if (t.endsWith("m")) unit = 1L << 20;
    if (t.endsWith("g")) unit = 1L << 30;
    if (unit != 1) t = t.substring(0, t.length() - 1);
    try {
      return Math.multiplyExact(Long.parseLong(t.trim()), unit);
    } catch (NumberFormatException | ArithmeticException e) {
      throw new InvalidArgumentException(
          "basalt.memory must be a byte count like 268435456 or 256m, was '" + s + "'");
    }
  }

  static SyncMode parseSync(String s) {
    try {
      return SyncMode.valueOf(s.trim().toUpperCase());
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(
          "basalt.sync must be sync, periodic or none, was '" + s + "'");
    }
  }

  private Keyspace keyspace(String table) {
    Keyspace ks = KEYSPACES.get(table);
    if (ks != null) return ks;
    synchronized (BasaltClient.class) {
      return KEYSPACES.computeIfAbsent(
          table, t -> db.keyspaceNames().contains(t) ? db.keyspace(t) : db.createKeyspace(t));
    }
  }

  private static byte[] key(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public Status read(
      String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] v = keyspace(table).get(key(key));
      if (v == null) return Status.NOT_FOUND;
      Fields.decode(v, fields, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return error(e);
    }
  }

  @Override
  public Status scan(
      String table,
      String startkey,
      int recordcount,
      Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    Keyspace ks = keyspace(table);
    try (Cursor c =
        batchedScans && recordcount >= 1
            ? ks.scan(key(startkey), null, Math.min(recordcount, 4096))
            : ks.scan(key(startkey), null)) {
      for (int i = 0; i < recordcount && c.next(); i++) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        Fields.decode(c.value(), fields, row);
        result.add(row);
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return error(e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    byte[] k = key(key);
    ReentrantLock lock = STRIPES[(key.hashCode() & 0x7FFF_FFFF) % STRIPES.length];
    lock.lock();
    try {
      Keyspace ks = keyspace(table);
      byte[] old = ks.get(k);
      if (old == null) return Status.NOT_FOUND;
      ks.put(k, Fields.merge(old, values));
      return Status.OK;
    } catch (RuntimeException e) {
      return error(e);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      keyspace(table).put(key(key), Fields.encodeValues(values));
      return Status.OK;
    } catch (RuntimeException e) {
      return error(e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      keyspace(table).delete(key(key));
      return Status.OK;
    } catch (RuntimeException e) {
      return error(e);
    }
  }

  /**
   * YCSB counts statuses, it does not print exceptions: the first few go to stderr so a failing run
   * says why.
   */
  private static Status error(RuntimeException e) {
    if (ERRORS_PRINTED.getAndIncrement() < 10) {
      System.err.println("basalt: " + e);
    }
    return Status.ERROR;
  }

  private static final java.util.concurrent.atomic.AtomicInteger ERRORS_PRINTED =
      new java.util.concurrent.atomic.AtomicInteger();
}
