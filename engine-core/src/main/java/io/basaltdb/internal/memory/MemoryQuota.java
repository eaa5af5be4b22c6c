package io.basaltdb.internal.memory;

import io.basaltdb.MemoryLimitException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A limit on the bytes that one or more {@link SlabAllocator}s may reserve together. The write
 * cache gives each generation (skiplist) its own allocator over one quota: when a generation is
 * freed its allocator returns whole chunks, whatever size classes its blocks had, so blocks freed
 * in one class can never strand the quota that another class needs (issue 13, item 4).
 *
 * <p>Thread-safety: all methods may be called from any thread; {@code reserved} is CAS-updated so
 * it never passes the limit, {@code used} is a striped counter, which each allocator's thread
 * caches update in steps of up to {@link SlabAllocator#FLUSH_BYTES}; {@link #usedBytes} adds the
 * steps not yet taken, read racily.
 */
public final class MemoryQuota {
  private final long limit;

  /** Bytes reserved by the allocators that share this quota; never above {@link #limit}. */
  private final AtomicLong reserved = new AtomicLong();

  /** Bytes of blocks handed out by those allocators; updated with each allocator's own count. */
  final LongAdder used = new LongAdder();

  /**
   * The open allocators over this quota, whose thread caches hold counts not yet in {@link #used}.
   */
  final java.util.concurrent.CopyOnWriteArrayList<SlabAllocator> members =
      new java.util.concurrent.CopyOnWriteArrayList<>();

  public MemoryQuota(long limit) {
    this.limit = limit;
  }

  public long limit() {
    return limit;
  }

  public long reservedBytes() {
    return reserved.get();
  }

  /**
   * Bytes of blocks handed out by the allocators over this quota: exact when none is allocating or
   * freeing.
   */
  public long usedBytes() {
    long sum = used.sum();
    for (SlabAllocator a : members) sum += a.unflushed();
    return sum;
  }

  /** Bytes still free to reserve: {@code limit - reserved}. */
  public long available() {
    return limit - reserved.get();
  }

  /**
   * Takes {@code bytes} from the quota, or throws and takes nothing.
   *
   * @throws MemoryLimitException if the quota does not have them
   */
  public void reserve(long bytes, String allocator) {
    long r;
    do {
      r = reserved.get();
      if (r + bytes > limit) {
        throw new MemoryLimitException(
            "allocator "
                + allocator
                + " would exceed its memory quota of "
                + limit
                + " bytes (reserved "
                + r
                + ", used "
                + used.sum()
                + ", requested "
                + bytes
                + "); close snapshots, let garbage collection catch up, or raise the quota");
      }
    } while (!reserved.compareAndSet(r, r + bytes));
  }

  /** Gives back bytes {@link #reserve} took. */
  public void release(long bytes) {
    reserved.addAndGet(-bytes);
  }
}
