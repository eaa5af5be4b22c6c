package io.basaltdb.internal.memory;

import io.basaltdb.spi.ReadBuffers;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The store's aligned buffers for reads that need them (direct reads, the io_uring transport's
 * staging): buffers of one size ({@link #bufferBytes()}: what a read of a block takes, widened to
 * whole 4 KiB pages) are pooled and reused, up to {@code limit} bytes of them; the limit is part of
 * the store's memory quota (the engine carves it from the block cache's part). A wider read, or a
 * read while every pooled buffer is taken, gets a buffer of its own, freed as soon as it is given
 * back; those are counted too ({@link #bytes()} is every buffer allocated and not yet dropped), and
 * {@link #overflows()} says how often the pool was too small.
 *
 * <p>Memory: JDK direct buffers with their address aligned to {@link ReadBuffers#ALIGNMENT}; a
 * dropped buffer is freed by its cleaner once unreachable, which it is once given back (the caller
 * keeps no reference). {@link #close} drops the idle buffers, and those given back later; {@link
 * #taken()} above 0 once no read runs is a leak (the tests check it).
 *
 * <p>Thread-safety: lock-free: a concurrent deque of idle buffers and atomic counts.
 */
public final class AlignedBuffers implements ReadBuffers {
  private final long limit;

  /** Bytes of each pooled buffer: a multiple of the alignment. */
  private final int bufferBytes;

  private final ConcurrentLinkedDeque<ByteBuffer> idle = new ConcurrentLinkedDeque<>();

  /** Bytes of pooled buffers allocated (idle or taken); at most {@code limit}. */
  private final AtomicLong pooled = new AtomicLong();

  /** Bytes of one-off buffers taken and not yet given back. */
  private final AtomicLong oneOff = new AtomicLong();

  private final AtomicLong taken = new AtomicLong();
  private final LongAdder overflows = new LongAdder();
  private volatile boolean closed;

  /**
   * Told the bytes of each pooled buffer once it is allocated: the block cache gives up that room.
   */
  private volatile java.util.function.LongConsumer onGrow;

  /**
   * A pool of at most {@code limit} bytes of buffers of {@code bufferBytes} (rounded up to whole
   * {@link ReadBuffers#ALIGNMENT} blocks); a limit of 0 makes every buffer a one-off.
   */
  public AlignedBuffers(long limit, int bufferBytes) {
    if (limit < 0) throw new IllegalArgumentException("limit must not be negative: " + limit);
    if (bufferBytes < 1 || bufferBytes > 1 << 30)
      throw new IllegalArgumentException("bufferBytes out of range: " + bufferBytes);
    this.limit = limit;
    this.bufferBytes = (bufferBytes + ALIGNMENT - 1) & -ALIGNMENT;
  }

  /**
   * The size of a pooled buffer for reads of blocks of up to {@code readBytes}: enough for such a
   * read at any offset, widened to whole pages (one page more than the read, rounded up, and one
   * for the unaligned start).
   */
  public static int bufferFor(int readBytes) {
    return (int) Math.min(1 << 30, (((long) readBytes + ALIGNMENT - 1) & -ALIGNMENT) + ALIGNMENT);
  }

  /** Bytes of a pooled buffer. */
  public int bufferBytes() {
    return bufferBytes;
  }

  /**
   * Has {@code listener} told the bytes of each buffer the pool adds, once allocated (the pool
   * grows on demand, up to its limit, and never shrinks while open).
   */
  public void onGrow(java.util.function.LongConsumer listener) {
    this.onGrow = listener;
  }

  /** Bytes of the pooled buffers allocated so far (idle or taken; one-offs not included). */
  public long pooledBytes() {
    return pooled.get();
  }

  /** Bytes the pool may keep. */
  public long limit() {
    return limit;
  }

  @Override
  public ByteBuffer take(int bytes) {
    ByteBuffer b = tryTake(bytes);
    return b != null ? b : oneOff(bytes);
  }

  @Override
  public ByteBuffer tryTake(int bytes) {
    if (bytes < 0) throw new IllegalArgumentException("bytes must not be negative: " + bytes);
    if (bytes > bufferBytes || limit < bufferBytes || closed)
      return oneOff(bytes); // waiting would gain nothing
    ByteBuffer b = idle.pollFirst();
    if (b != null) {
      taken.incrementAndGet();
      return b.clear();
    }
    long p;
    while ((p = pooled.get()) + bufferBytes <= limit) {
      if (pooled.compareAndSet(p, p + bufferBytes)) {
        try {
          b = allocate(bufferBytes);
        } catch (Throwable e) { // no direct memory: the pool's room is given back
          pooled.addAndGet(-bufferBytes);
          throw e;
        }
        java.util.function.LongConsumer grow = onGrow;
        if (grow != null)
          grow.accept(bufferBytes); // after: a failed allocation takes nothing from the cache
        taken.incrementAndGet();
        return b;
      }
    }
    return null;
  }

  /** A buffer of its own for a read the pool cannot serve, counted while taken. */
  private ByteBuffer oneOff(int bytes) {
    overflows.increment();
    int capacity =
        (int) Math.min(Integer.MAX_VALUE & -ALIGNMENT, ((long) bytes + ALIGNMENT - 1) & -ALIGNMENT);
    if (capacity <= bufferBytes)
      capacity = bufferBytes + ALIGNMENT; // a one-off never has a pooled buffer's size
    ByteBuffer b = allocate(capacity);
    oneOff.addAndGet(capacity);
    taken.incrementAndGet();
    return b;
  }

  @Override
  public void give(ByteBuffer buffer) {
    taken.decrementAndGet();
    if (buffer.capacity() != bufferBytes) { // a one-off (see take): dropped, freed by its cleaner
      oneOff.addAndGet(-buffer.capacity());
    } else if (closed) {
      pooled.addAndGet(-bufferBytes);
    } else {
      idle.offerFirst(buffer); // the most recently used first: its cache lines may still be warm
      if (closed)
        drop(); // raced with close, which may have drained the idle buffers before this one came
    }
  }

  /** Off-heap bytes of the buffers allocated and not dropped: the pool's and the one-offs taken. */
  public long bytes() {
    return pooled.get() + oneOff.get();
  }

  /** Buffers taken and not given back. */
  public long taken() {
    return taken.get();
  }

  /**
   * Takes the pool could not serve (a wider read, or every pooled buffer taken and the limit
   * reached).
   */
  public long overflows() {
    return overflows.sum();
  }

  /** Drops the idle buffers; buffers given back after this are dropped too. */
  public void close() {
    closed = true;
    drop();
  }

  /** Drops the idle buffers. */
  private void drop() {
    for (ByteBuffer b; (b = idle.pollFirst()) != null; ) pooled.addAndGet(-bufferBytes);
  }

  private static ByteBuffer allocate(int capacity) {
    return ByteBuffer.allocateDirect(capacity + ALIGNMENT)
        .alignedSlice(ALIGNMENT)
        .limit(capacity)
        .slice();
  }
}
