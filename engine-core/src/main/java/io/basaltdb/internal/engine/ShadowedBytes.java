package io.basaltdb.internal.engine;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Garbage the delete list does not know of yet: per level-0 table, an estimate of the document bytes
 * of older versions its records supersede. Level 0 is tiered ({@link CompactionPicker}), so a record
 * can wait there for a while before the merge into the base level drops the versions below it and
 * reports them; meanwhile they are garbage that fragmentation does not count. The flusher estimates
 * each new table's share with the older tables' bloom filters (a record whose key some older table may
 * hold shadows a version of about its own size); a level-0 merge's output inherits its inputs' estimate
 * less what the merge itself discarded; a merge into the base level ends it. Garbage collection adds
 * the estimate to the detected garbage when it decides whether a keyspace is over its threshold (it
 * still rewrites only segments whose garbage is known), so a deeper level 0 does not let the log grow
 * past the threshold. In memory only: after a reopen the tables found in level 0 count 0 until merged.
 *
 * <p>Thread-safety: a concurrent map; the flusher and compaction threads write it, any thread reads.
 */
final class ShadowedBytes {
  /** Estimated bytes by level-0 table file number; absent means 0. */
  private final ConcurrentHashMap<Long, Long> byTable = new ConcurrentHashMap<>();

  /** The estimate for a table the flusher just wrote. */
  void flushed(long table, long bytes) {
    if (bytes > 0) byTable.put(table, bytes);
  }

  /**
   * A compaction committed: its inputs are gone; a level-0 output (a level-0 merge writes one) inherits
   * their estimate less the bytes the merge discarded.
   */
  void compacted(List<KeyspaceFiles.Table> inputs, List<KeyspaceFiles.Table> outputs, long discardedBytes) {
    long inherited = 0;
    for (KeyspaceFiles.Table t : inputs) {
      Long b = byTable.remove(t.fileNumber());
      if (b != null) inherited += b;
    }
    inherited -= discardedBytes;
    for (KeyspaceFiles.Table t : outputs) {
      if (t.level() != 0 || inherited <= 0) continue;
      byTable.put(t.fileNumber(), inherited);
      inherited = 0;
    }
  }

  /** The estimate for a keyspace's level 0, at most its segments' bytes that are not yet known stale. */
  long pending(KeyspaceFiles f, long notStale) {
    long sum = 0;
    for (KeyspaceFiles.Table t : f.level(0)) {
      Long b = byTable.get(t.fileNumber());
      if (b != null) sum += b;
    }
    return Math.max(0, Math.min(sum, notStale));
  }
}
