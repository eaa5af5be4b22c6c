package io.basaltdb.internal.engine.version;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Garbage the delete list does not know of yet: per key index table above the bottom of its key
 * range, an estimate of the document bytes of older versions its records supersede that no
 * compaction has dropped yet. Level 0 is tiered ({@link
 * io.basaltdb.internal.engine.index.CompactionPicker}) and a keyspace whose index outgrows the base
 * level keeps a tenth of it one level up, so a record can wait a while before a merge meets the
 * versions below it and reports them; meanwhile they are garbage that fragmentation does not count.
 * The flusher estimates each new table's share with the older tables' key ranges and bloom filters
 * (a record whose key some older table may hold supersedes a version of about its own size); a
 * compaction's outputs inherit their inputs' estimate less what it discarded, spread by output
 * bytes, unless the job wrote the bottom of its range (then every older version met the merge).
 * Garbage collection adds the estimate to the detected garbage when it decides whether a keyspace
 * is over its threshold (it still rewrites only segments whose garbage is known), so a deeper level
 * 0 does not let the log grow past the threshold. In memory only: after a reopen the tables found
 * count 0.
 *
 * <p>Thread-safety: a concurrent map; the flusher and compaction threads write it, any thread
 * reads.
 */
public final class ShadowedBytes {
  /** Estimated bytes by table file number; absent means 0. */
  private final ConcurrentHashMap<Long, Long> byTable = new ConcurrentHashMap<>();

  /** The estimate for a table the flusher just wrote. */
  public void flushed(long table, long bytes) {
    if (bytes > 0) byTable.put(table, bytes);
  }

  /**
   * A compaction committed: its inputs are gone; unless it wrote the bottom of its key range, its
   * outputs inherit their inputs' estimate less the bytes it discarded, in proportion to their
   * bytes.
   */
  public void compacted(
      List<KeyspaceFiles.Table> inputs,
      List<KeyspaceFiles.Table> outputs,
      long discardedBytes,
      boolean bottom) {
    long inherited = 0;
    for (KeyspaceFiles.Table t : inputs) {
      Long b = byTable.remove(t.fileNumber());
      if (b != null) inherited += b;
    }
    inherited -= discardedBytes;
    if (bottom || inherited <= 0 || outputs.isEmpty()) return;
    long total = 0;
    for (KeyspaceFiles.Table t : outputs) total += t.bytes();
    for (KeyspaceFiles.Table t : outputs) {
      long share =
          total == 0 ? inherited / outputs.size() : (long) ((double) inherited * t.bytes() / total);
      if (share > 0) byTable.put(t.fileNumber(), share);
    }
  }

  /**
   * A revealing level-0 merge committed ({@link io.basaltdb.internal.engine.index.Compactor}): its
   * inputs are gone, and its outputs hide only the tombstones it found below them ({@code
   * unreported} document bytes, spread by output bytes): it reported every other version they
   * supersede.
   */
  public void revealed(
      List<KeyspaceFiles.Table> inputs, List<KeyspaceFiles.Table> outputs, long unreported) {
    for (KeyspaceFiles.Table t : inputs) byTable.remove(t.fileNumber());
    if (unreported <= 0 || outputs.isEmpty()) return;
    long total = 0;
    for (KeyspaceFiles.Table t : outputs) total += t.bytes();
    for (KeyspaceFiles.Table t : outputs) {
      long share =
          total == 0
              ? unreported / outputs.size()
              : (long) ((double) unreported * t.bytes() / total);
      if (share > 0) byTable.put(t.fileNumber(), share);
    }
  }

  /**
   * Forgets the estimates of tables not in {@code live} (a dropped keyspace's; a table flushed but
   * not yet committed loses its estimate too, which only delays collection a little).
   */
  public void retainOnly(java.util.Set<Long> live) {
    byTable.keySet().retainAll(live);
  }

  /** The tables with an estimate, for tests. */
  public java.util.Set<Long> tables() {
    return java.util.Set.copyOf(byTable.keySet());
  }

  /** The estimate for a keyspace's tables, at most its segments' bytes not yet known stale. */
  public long pending(KeyspaceFiles f, long notStale) {
    long sum = 0;
    for (KeyspaceFiles.Table t : f.tables) {
      Long b = byTable.get(t.fileNumber());
      if (b != null) sum += b;
    }
    return Math.max(0, Math.min(sum, notStale));
  }
}
