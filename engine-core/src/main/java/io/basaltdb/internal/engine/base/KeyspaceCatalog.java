package io.basaltdb.internal.engine.base;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The live keyspaces (Magma's vBuckets; RocksDB's column families): name to id and back. The stores
 * decide what creating and dropping mean (a manifest edit on disk); the catalog only records it.
 *
 * <p>Thread-safety: mutations come from one thread at a time (the store serializes them); reads
 * take no lock (concurrent maps: a reader sees a keyspace before or after a change, never half of
 * it).
 */
public final class KeyspaceCatalog {
  private final Map<String, Integer> idsByName = new ConcurrentHashMap<>();
  private final Map<Integer, String> namesById = new ConcurrentHashMap<>();

  /** The hashed keyspaces' ids (seed 004): they refuse scans and cursors. */
  private final java.util.Set<Integer> hashed = ConcurrentHashMap.newKeySet();

  public void add(int id, String name) {
    idsByName.put(name, id);
    namesById.put(id, name);
  }

  /** Adds a keyspace whose manifest layout code is {@code layout} ({@link KeyspaceLayout}). */
  public void add(int id, String name, int layout) {
    if (KeyspaceLayout.isHashed(layout)) hashed.add(id);
    add(id, name);
  }

  public boolean isHashed(int id) {
    return hashed.contains(id);
  }

  /**
   * Refuses {@code what} (scans, cursors) on a hashed keyspace, whose key index keeps no key order.
   */
  public void checkOrdered(int id, String what) {
    if (hashed.contains(id)) {
      throw new UnsupportedOperationException(
          "keyspace '"
              + describe(id)
              + "' is HASHED: its key index keeps no key order, so it has no "
              + what
              + " (create an ORDERED keyspace for range access)");
    }
  }

  public void remove(int id) {
    hashed.remove(id);
    String name = namesById.remove(id);
    if (name != null) idsByName.remove(name);
  }

  /** The id of a live keyspace, or -1. */
  public int id(String name) {
    Integer id = idsByName.get(name);
    return id == null ? -1 : id;
  }

  /** The id of a live keyspace; throws if there is none of that name. */
  public int existing(String name) {
    int id = id(name);
    if (id < 0) throw new InvalidArgumentException("keyspace '" + name + "' does not exist");
    return id;
  }

  /** A keyspace's name for messages ("#id" once dropped). */
  public String describe(int id) {
    return namesById.getOrDefault(id, "#" + id);
  }

  public boolean isLive(int id) {
    return namesById.containsKey(id);
  }

  /** The live keyspaces, id to name, as of the call. */
  public java.util.Map<Integer, String> byId() {
    return java.util.Map.copyOf(namesById);
  }

  public int size() {
    return namesById.size();
  }

  public List<String> names() {
    List<String> names = new ArrayList<>(idsByName.keySet());
    Collections.sort(names);
    return names;
  }

  public void checkLive(int id) {
    if (!isLive(id)) {
      throw new ClosedException(
          "keyspace #" + id + " was dropped or never existed in this store; get a new handle");
    }
  }

  /** Refuses a name in use, or one that is empty or too long. */
  public void checkNew(String name) {
    if (name == null || name.isEmpty() || name.length() > 255) {
      throw new InvalidArgumentException(
          "keyspace name must be 1 to 255 characters, was "
              + (name == null ? "null" : "'" + name + "'"));
    }
    if (idsByName.containsKey(name))
      throw new InvalidArgumentException("keyspace '" + name + "' already exists");
  }
}
