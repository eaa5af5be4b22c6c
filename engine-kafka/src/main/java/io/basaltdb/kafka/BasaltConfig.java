package io.basaltdb.kafka;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The Basalt settings of a Kafka Streams application: every Streams config whose name starts with
 * {@value #PREFIX}. {@code basalt.dir} names the directory of the application instance's Basalt;
 * every other {@code basalt.<option>} sets the Basalt {@link Options} of that name ({@code
 * basalt.memoryQuota=536870912}, {@code basalt.syncMode=PERIODIC}), through {@link Options#set}.
 *
 * <p>Defaults differ from a standalone Basalt's where a state store's needs differ (docs
 * kafka-streams.md): {@link #DEFAULT_MEMORY_QUOTA} of memory for all the stores of an instance;
 * {@link SyncMode#NONE}, since every store's data is in its changelog topic (a process crash loses
 * nothing; a power loss is recovered from the changelog, as with Kafka's RocksDB store, which has
 * no write-ahead log at all); writes wait in a WAL buffer of {@link #DEFAULT_WAL_BUFFER_BYTES}
 * until the next commit, which writes them out; only restore batches over {@link #WAL_SKIP_FRACTION
 * 1/8} of the write cache skip the log; no exact item counts ({@code approximateNumEntries} is an
 * estimate, as RocksDB's is, and costs writes nothing); no checkpoints kept (a store is rebuilt
 * from its changelog, not rolled back), so dropped stores and segments free their space at once.
 *
 * <p>Thread-safety: immutable.
 */
public final class BasaltConfig {
  /** The prefix of Basalt's configs among an application's Streams configs. */
  public static final String PREFIX = "basalt.";

  /** The config naming the directory of the instance's Basalt. */
  public static final String DIR = PREFIX + "dir";

  /** The config setting how often deleted task directories' keyspaces are looked for, in ms. */
  public static final String SWEEP_INTERVAL = PREFIX + "sweepIntervalMs";

  /**
   * The config bounding the Java heap the restores under way on an instance hold in their bulk
   * loads' chunks, in bytes ({@link #restoreBufferBytes}).
   */
  public static final String RESTORE_BUFFER = PREFIX + "restoreBufferBytes";

  /** The largest chunk a restore's bulk load takes: 64 MiB. */
  public static final long MAX_RESTORE_CHUNK = 64L << 20;

  /** Memory for every store of an application instance together, unless basalt.memoryQuota says. */
  public static final long DEFAULT_MEMORY_QUOTA = 256L << 20;

  /**
   * Bytes of writes the write-ahead log buffers between commits ({@link Options#walBufferBytes}):
   * each store's commit writes them out, so a put costs no system call.
   */
  public static final long DEFAULT_WAL_BUFFER_BYTES = 1L << 20;

  /**
   * Unless {@code basalt.walSkipBytes} says otherwise, a restore or putAll batch skips the
   * write-ahead log only when it takes at least this fraction (1/8) of the write cache: a skipped
   * batch is flushed on its own (a level-0 table and a sync each), which costs more than logging it
   * with the WAL buffered and unsynced; a batch that large would crowd the write cache instead.
   * docs/benchmarks.md, "Scans and bulk writes (issue 52)", measures it.
   */
  public static final int WAL_SKIP_FRACTION = 8;

  private final Path dir;
  private final long sweepMillis;
  private final long restoreBufferBytes;
  private final Options options;

  private BasaltConfig(Path dir, long sweepMillis, long restoreBufferBytes, Options options) {
    this.dir = dir;
    this.sweepMillis = sweepMillis;
    this.restoreBufferBytes = restoreBufferBytes;
    this.options = options;
  }

  /**
   * The settings among {@code configs} (all of an application's, or those the prefix selected, with
   * or without it).
   *
   * @throws InvalidArgumentException naming the config whose value is not one of its option's
   */
  public static BasaltConfig from(Map<String, ?> configs) {
    Map<String, String> given = new TreeMap<>();
    for (Map.Entry<String, ?> e : configs.entrySet()) {
      if (e.getValue() == null) continue;
      String name = e.getKey();
      if (name.startsWith(PREFIX))
        given.put(name.substring(PREFIX.length()), e.getValue().toString());
    }
    Options o =
        Options.defaults()
            .memoryQuota(DEFAULT_MEMORY_QUOTA)
            .syncMode(SyncMode.NONE)
            .walBufferBytes(DEFAULT_WAL_BUFFER_BYTES)
            .exactItemCounts(false)
            .checkpointRetentionMillis(0)
            .jmx(false);
    Path dir = null;
    long sweep = 60_000;
    long restoreBuffer = Math.min(3 * MAX_RESTORE_CHUNK, Runtime.getRuntime().maxMemory() / 4);
    for (Map.Entry<String, String> e : given.entrySet()) {
      if (e.getKey().equals("dir")) {
        dir = Path.of(e.getValue());
        continue;
      }
      if (e.getKey().equals("sweepIntervalMs")) {
        try {
          sweep = Long.parseLong(e.getValue().trim());
        } catch (NumberFormatException bad) {
          sweep = -1;
        }
        if (sweep < 1) {
          throw new InvalidArgumentException(
              "Streams config "
                  + SWEEP_INTERVAL
                  + " wants a positive number of ms, not '"
                  + e.getValue()
                  + "'");
        }
        continue;
      }
      if (e.getKey().equals("restoreBufferBytes")) {
        try {
          restoreBuffer = Long.parseLong(e.getValue().trim());
        } catch (NumberFormatException bad) {
          restoreBuffer = -1;
        }
        if (restoreBuffer < 0) {
          throw new InvalidArgumentException(
              "Streams config "
                  + RESTORE_BUFFER
                  + " wants a number of bytes, 0 or more, not '"
                  + e.getValue()
                  + "'");
        }
        continue;
      }
      try {
        o.set(e.getKey(), e.getValue());
      } catch (InvalidArgumentException bad) {
        throw new InvalidArgumentException(
            "Streams config " + PREFIX + e.getKey() + ": " + bad.getMessage());
      }
    }
    if (!given.containsKey("walSkipBytes"))
      o.walSkipBytes(Math.max(4096, o.writeCacheSize() / WAL_SKIP_FRACTION));
    o.validate();
    return new BasaltConfig(dir, sweep, restoreBuffer, o);
  }

  /** The directory {@code basalt.dir} names, or null if it is not set. */
  public Path dir() {
    return dir;
  }

  /** How often the shared Basalt looks for keyspaces of deleted task directories (default 60 s). */
  public long sweepIntervalMillis() {
    return sweepMillis;
  }

  /**
   * The Java heap the restores under way on the instance may hold in their bulk loads' chunks
   * ({@code basalt.restoreBufferBytes}; default a quarter of the maximum heap, at most 192 MiB): a
   * key-value store starting a restore takes a chunk of a third of what is left, at most {@link
   * #MAX_RESTORE_CHUNK} and at least {@link io.basaltdb.BulkLoad#MIN_CHUNK_BYTES}, and holds up to
   * three chunks' worth until its restore ends. 0: restores write their batches through the log.
   */
  public long restoreBufferBytes() {
    return restoreBufferBytes;
  }

  /** The options a Basalt opened with these settings gets (a copy). */
  public Options options() {
    return options.copy();
  }
}
