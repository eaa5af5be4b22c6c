package io.basaltdb.kafka;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.basaltdb.Basalt;
import io.basaltdb.BasaltException;
import io.basaltdb.Keyspace;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Basalt shared by every state store of a Streams application instance that lives in the same
 * directory: one write-ahead log, one memory quota, one set of background threads, each store
 * partition a keyspace of it. Opened by the first store that needs it, closed when the last one
 * closes (stores are counted).
 *
 * <p>Each store keeps its bookkeeping (changelog offsets, IQ position, open/closed status, and the
 * marker that ties the keyspace to its task directory) in the {@value #META} keyspace ({@link
 * StoreState}). When a store's marker file is gone (Streams deleted or wiped the task directory:
 * the task migrated away and its directory was cleaned, or a corrupted task was wiped under
 * exactly-once, or {@code KafkaStreams.cleanUp()}), its keyspaces are dropped: at every open of the
 * shared Basalt, every {@code basalt.sweepIntervalMs} while it is open, and when the store itself
 * opens again. A store that is open is never swept.
 *
 * <p>Thread-safety: thread-safe; the registry under a global lock, keyspace creation and drops
 * under the instance's.
 */
final class SharedBasalt {
  private static final Logger log = LoggerFactory.getLogger(SharedBasalt.class);

  /**
   * The chunk size of a restore's bulk load starting now, reserved ({@link #releaseRestoreChunk}
   * gives it back): a third of what the restore buffer has left, between {@link
   * io.basaltdb.BulkLoad#MIN_CHUNK_BYTES} and {@link BasaltConfig#MAX_RESTORE_CHUNK}; 0 if the
   * buffer is 0 (restores write through the log).
   */
  synchronized long reserveRestoreChunk() {
    if (restoreBuffer == 0) return 0;
    long chunk = (restoreBuffer - restoreReserved) / 3;
    chunk =
        Math.max(
            io.basaltdb.BulkLoad.MIN_CHUNK_BYTES, Math.min(BasaltConfig.MAX_RESTORE_CHUNK, chunk));
    restoreReserved += 3 * chunk;
    return chunk;
  }

  synchronized void releaseRestoreChunk(long chunk) {
    restoreReserved -= 3 * chunk;
  }

  /** The keyspace of every store's bookkeeping. */
  static final String META = "__meta";

  /** The open instances, by canonical directory. */
  private static final Map<Path, SharedBasalt> OPEN = new HashMap<>();

  private final Path dir;
  private final Basalt db;
  private final Keyspace meta;
  private int refs;

  /**
   * The owners of the stores open on this instance, with how many store objects have each open:
   * never swept, whatever their markers say.
   */
  private final Map<String, Integer> claimed = new HashMap<>();

  /**
   * {@link BasaltConfig#restoreBufferBytes}, and the heap the restores under way reserved of it.
   */
  private final long restoreBuffer;

  private long restoreReserved;

  /** Sweeps every {@link BasaltConfig#sweepIntervalMillis}; stopped when the Basalt closes. */
  private final java.util.concurrent.ScheduledExecutorService sweeper;

  private SharedBasalt(Path dir, Basalt db, Keyspace meta, long sweepMillis, long restoreBuffer) {
    this.restoreBuffer = restoreBuffer;
    this.dir = dir;
    this.db = db;
    this.meta = meta;
    this.sweeper =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "basalt-kafka-sweeper");
              t.setDaemon(true);
              return t;
            });
    sweeper.scheduleWithFixedDelay(this::sweepQuietly, sweepMillis, sweepMillis, MILLISECONDS);
  }

  private void sweepQuietly() {
    try {
      sweep();
    } catch (RuntimeException e) {
      if (!db.isClosed()) log.warn("sweeping the keyspaces of deleted task directories failed", e);
    }
  }

  /**
   * The instance in {@code dir}, opened with {@code config}'s options if no store has it open; the
   * caller must {@link #release} it once.
   */
  static SharedBasalt acquire(Path dir, BasaltConfig config) {
    Path key;
    try {
      Files.createDirectories(dir);
      key = dir.toRealPath();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the Basalt directory " + dir, e);
    }
    synchronized (OPEN) {
      SharedBasalt s = OPEN.get(key);
      if (s == null) {
        Basalt db = Basalt.open(key, config.options());
        try {
          Keyspace meta =
              db.keyspaceNames().contains(META) ? db.keyspace(META) : db.createKeyspace(META);
          s =
              new SharedBasalt(
                  key, db, meta, config.sweepIntervalMillis(), config.restoreBufferBytes());
          s.sweep();
        } catch (RuntimeException | Error e) {
          db.close();
          throw e;
        }
        OPEN.put(key, s);
        log.info("opened the shared Basalt in {} ({} keyspaces)", key, db.keyspaceNames().size());
      }
      s.refs++;
      return s;
    }
  }

  /**
   * Gives back one {@link #acquire}; the last one closes the Basalt, under the registry's lock: a
   * store of another stream thread opening meanwhile waits for the close and opens the directory
   * afresh, rather than finding it still locked by the closing instance.
   */
  void release() {
    synchronized (OPEN) {
      if (--refs > 0) return;
      OPEN.remove(dir);
      sweeper.shutdownNow();
      try {
        db.close();
        log.info("closed the shared Basalt in {}", dir);
      } catch (BasaltException e) {
        log.error("closing the shared Basalt in {} failed", dir, e);
        throw e;
      }
    }
  }

  /** How many instances are open in this JVM (tests check that stores give theirs back). */
  static int openInstances() {
    synchronized (OPEN) {
      return OPEN.size();
    }
  }

  Basalt db() {
    return db;
  }

  private volatile io.basaltdb.Stats stats;
  private volatile long statsAt;

  /**
   * The Basalt's stats, taken at most once a second for the metrics reporters; null once it is
   * closed.
   */
  io.basaltdb.Stats cachedStats() {
    long now = System.nanoTime();
    io.basaltdb.Stats s = stats;
    if (s == null || now - statsAt > 1_000_000_000L) {
      if (db.isClosed()) return null;
      s = db.stats();
      stats = s;
      statsAt = now;
    }
    return s;
  }

  Keyspace meta() {
    return meta;
  }

  Path dir() {
    return dir;
  }

  /** The keyspace {@code name}, created if it does not exist. */
  synchronized Keyspace keyspace(String name) {
    return db.keyspaceNames().contains(name) ? db.keyspace(name) : db.createKeyspace(name);
  }

  /** Drops keyspace {@code name} if it exists. */
  synchronized void drop(String name) {
    if (db.keyspaceNames().contains(name)) db.dropKeyspace(name);
  }

  /** Drops every keyspace of {@code owner}: its own and its segments' ({@code owner/...}). */
  synchronized void dropAll(String owner) {
    for (String ks : db.keyspaceNames()) {
      if (ks.equals(owner) || ks.startsWith(owner + "/")) db.dropKeyspace(ks);
    }
  }

  /** Keyspaces of {@code owner}'s segments ({@code owner/<id>}), in name order. */
  synchronized java.util.List<String> segmentsOf(String owner) {
    java.util.List<String> out = new java.util.ArrayList<>();
    for (String ks : db.keyspaceNames()) if (ks.startsWith(owner + "/")) out.add(ks);
    return out;
  }

  /**
   * Marks {@code owner}'s store open: the sweep leaves it alone until {@link #unclaim}. A store
   * checks its marker and claims its owner in one {@code synchronized (shared)} block, so no sweep
   * runs between a new incarnation's bookkeeping and its marker file.
   */
  synchronized void claim(String owner) {
    claimed.merge(owner, 1, Integer::sum);
  }

  synchronized void unclaim(String owner) {
    claimed.computeIfPresent(owner, (o, n) -> n == 1 ? null : n - 1);
  }

  /**
   * Drops the keyspaces of every store that is not open and whose marker file is gone or names
   * another incarnation, and their bookkeeping: at open, and every {@code basalt.sweepIntervalMs}
   * (Streams deletes a migrated task's directory {@code state.cleanup.delay.ms} after it left).
   */
  synchronized void sweep() {
    java.util.Set<String> owners = new java.util.TreeSet<>();
    for (String ks : db.keyspaceNames()) {
      if (!ks.equals(META)) owners.add(StoreState.ownerOf(ks));
    }
    owners.addAll(StoreState.ownersIn(meta));
    for (String owner : owners) {
      if (claimed.containsKey(owner) || StoreState.markerValid(meta, owner)) continue;
      log.info("dropping the keyspaces of {}: its task directory was deleted", owner);
      dropAll(owner);
      StoreState.clear(db, meta, owner);
    }
  }
}
