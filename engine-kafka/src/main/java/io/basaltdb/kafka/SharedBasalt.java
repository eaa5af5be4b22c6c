package io.basaltdb.kafka;

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
 * shared Basalt, and when the store itself opens again.
 *
 * <p>Thread-safety: thread-safe; the registry under a global lock, keyspace creation and drops
 * under the instance's.
 */
final class SharedBasalt {
  private static final Logger log = LoggerFactory.getLogger(SharedBasalt.class);

  /** The keyspace of every store's bookkeeping. */
  static final String META = "__meta";

  /** The open instances, by canonical directory. */
  private static final Map<Path, SharedBasalt> OPEN = new HashMap<>();

  private final Path dir;
  private final Basalt db;
  private final Keyspace meta;
  private int refs;

  private SharedBasalt(Path dir, Basalt db, Keyspace meta) {
    this.dir = dir;
    this.db = db;
    this.meta = meta;
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
          s = new SharedBasalt(key, db, meta);
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

  /** Whether keyspace {@code name} exists. */
  synchronized boolean exists(String name) {
    return db.keyspaceNames().contains(name);
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
   * Drops the keyspaces of every store whose marker file is gone or names another incarnation, and
   * their bookkeeping.
   */
  private void sweep() {
    java.util.Set<String> owners = new java.util.TreeSet<>();
    for (String ks : db.keyspaceNames()) {
      if (!ks.equals(META)) owners.add(StoreState.ownerOf(ks));
    }
    owners.addAll(StoreState.ownersIn(meta));
    for (String owner : owners) {
      if (StoreState.markerValid(meta, owner)) continue;
      log.info("dropping the keyspaces of {}: its task directory was deleted", owner);
      dropAll(owner);
      StoreState.clear(db, meta, owner);
    }
  }
}
