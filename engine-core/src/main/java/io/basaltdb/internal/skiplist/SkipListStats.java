package io.basaltdb.internal.skiplist;

/**
 * A point-in-time view of a skiplist's counters. Summed racily over the writers' counters, so under
 * concurrent writes it may be a few operations stale; exact when the list is quiescent.
 *
 * @param items keys with a live current version
 * @param nodes nodes allocated and not yet freed (all versions, including dead ones awaiting GC)
 * @param nodesPerLevel {@code nodesPerLevel[l]}: nodes with a tower above level l (level 0 = all
 *     nodes); used to cut the list into ranges of similar size for backup
 * @param userBytes key and value bytes held in those nodes
 * @param memoryUsed bytes of the allocator's blocks held by this list (nodes and head); for a
 *     shared allocator, everything the allocator has handed out
 * @param memoryReserved bytes the allocator has taken from the operating system
 * @param currentTerm the term new versions are born in
 * @param liveSnapshots snapshots created and not yet collected
 */
public record SkipListStats(
    long items,
    long nodes,
    long[] nodesPerLevel,
    long userBytes,
    long memoryUsed,
    long memoryReserved,
    long currentTerm,
    int liveSnapshots) {

  static SkipListStats of(SkipList list) {
    long[] sum = new long[Writer.COUNTERS];
    synchronized (list.departedLock) { // a writer being folded into departed is counted once
      for (Writer w : list.writers) {
        w.addCountersTo(sum);
      }
      list.departed.addCountersTo(sum);
    }
    long items = sum[Writer.ITEMS];
    long nodes = sum[Writer.NODES];
    long userBytes = sum[Writer.USER_BYTES];
    long[] levels = java.util.Arrays.copyOfRange(sum, Writer.LEVELS, Writer.COUNTERS);
    int top = levels.length;
    while (top > 1 && levels[top - 1] == 0) top--;
    int snaps;
    synchronized (list.snapshotLock) {
      snaps = list.snapshots.size();
    }
    return new SkipListStats(
        items,
        nodes,
        java.util.Arrays.copyOf(levels, top),
        userBytes,
        list.allocator.usedBytes(),
        list.allocator.reservedBytes(),
        list.currentTerm(),
        snaps);
  }

  /** Bytes of memory in use per node beyond its key and value: header, tower, rounding. */
  public double metadataBytesPerNode() {
    return nodes == 0 ? 0 : (double) (memoryUsed - userBytes) / nodes;
  }

  @Override
  public String toString() {
    return "SkipListStats[items="
        + items
        + ", nodes="
        + nodes
        + ", levels="
        + java.util.Arrays.toString(nodesPerLevel)
        + ", userBytes="
        + userBytes
        + ", memoryUsed="
        + memoryUsed
        + ", memoryReserved="
        + memoryReserved
        + ", term="
        + currentTerm
        + ", liveSnapshots="
        + liveSnapshots
        + "]";
  }
}
