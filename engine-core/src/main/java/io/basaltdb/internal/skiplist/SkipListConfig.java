package io.basaltdb.internal.skiplist;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.memory.SlabAllocator;

/**
 * Configuration of a {@link SkipList}. Immutable; the {@code with*} methods return modified copies.
 *
 * @param allocator the allocator nodes come from; null (the default) gives the skiplist its own,
 *     sized by {@code memoryQuota}, closed with it
 * @param memoryQuota bytes the skiplist's own allocator may reserve; default 1 GiB; ignored when an
 *     allocator is given
 * @param maxValueSize largest value accepted, in bytes; default 20 MiB
 * @param gcWorkers garbage collection and reclamation threads; 0 (the default): as many as the
 *     threads that write to the skiplist, from 1 up to the processors, checked at each tick (Nitro
 *     section 4: one collector could not keep up with many writers)
 * @param gcBacklog dead nodes in the writers' lists that make the collector take an internal
 *     snapshot so they can be collected; default 65,536
 * @param gcIntervalMillis period of the collector's tick, which hands idle writers' retired nodes
 *     to reclamation and checks the backlog; default 100 ms
 * @param retireBatch unlinked nodes handed to one barrier session; default 4,096
 */
public record SkipListConfig(
    SlabAllocator allocator,
    long memoryQuota,
    int maxValueSize,
    int gcWorkers,
    int gcBacklog,
    long gcIntervalMillis,
    int retireBatch) {

  public static SkipListConfig defaults() {
    return new SkipListConfig(null, 1L << 30, 20 << 20, 0, 65_536, 100, 4096);
  }

  public SkipListConfig withAllocator(SlabAllocator a) {
    return new SkipListConfig(
        a, memoryQuota, maxValueSize, gcWorkers, gcBacklog, gcIntervalMillis, retireBatch);
  }

  public SkipListConfig withMemoryQuota(long q) {
    return new SkipListConfig(
        allocator, q, maxValueSize, gcWorkers, gcBacklog, gcIntervalMillis, retireBatch);
  }

  public SkipListConfig withMaxValueSize(int m) {
    return new SkipListConfig(
        allocator, memoryQuota, m, gcWorkers, gcBacklog, gcIntervalMillis, retireBatch);
  }

  public SkipListConfig withGcWorkers(int n) {
    return new SkipListConfig(
        allocator, memoryQuota, maxValueSize, n, gcBacklog, gcIntervalMillis, retireBatch);
  }

  public SkipListConfig withGcBacklog(int n) {
    return new SkipListConfig(
        allocator, memoryQuota, maxValueSize, gcWorkers, n, gcIntervalMillis, retireBatch);
  }

  public SkipListConfig withGcIntervalMillis(long ms) {
    return new SkipListConfig(
        allocator, memoryQuota, maxValueSize, gcWorkers, gcBacklog, ms, retireBatch);
  }

  public SkipListConfig withRetireBatch(int n) {
    return new SkipListConfig(
        allocator, memoryQuota, maxValueSize, gcWorkers, gcBacklog, gcIntervalMillis, n);
  }

  /** Throws {@link InvalidArgumentException} naming the first field out of range. */
  public void validate() {
    if (allocator == null && memoryQuota < (1 << 20)) {
      throw new InvalidArgumentException("memoryQuota must be at least 1 MiB, was " + memoryQuota);
    }
    if (maxValueSize < 0)
      throw new InvalidArgumentException("maxValueSize must not be negative, was " + maxValueSize);
    if (gcWorkers < 0 || gcWorkers > 1024)
      throw new InvalidArgumentException(
          "gcWorkers must be between 0 (one per writer) and 1024, was " + gcWorkers);
    if (gcBacklog < 1)
      throw new InvalidArgumentException("gcBacklog must be at least 1, was " + gcBacklog);
    if (gcIntervalMillis < 1)
      throw new InvalidArgumentException(
          "gcIntervalMillis must be at least 1, was " + gcIntervalMillis);
    if (retireBatch < 1)
      throw new InvalidArgumentException("retireBatch must be at least 1, was " + retireBatch);
  }
}
