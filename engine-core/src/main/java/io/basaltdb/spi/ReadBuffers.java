package io.basaltdb.spi;

import java.nio.ByteBuffer;

/**
 * Where a read transport and direct reads take their aligned off-heap buffers: each store keeps a
 * pool of them inside its memory quota (carved from the block cache's part), so the bytes its reads
 * stage are counted like the rest of its memory ({@code readBufferBytes} in its stats).
 *
 * <p>Thread-safety: {@link #take} and {@link #give} may be called from any thread.
 */
public interface ReadBuffers {
  /** The alignment of every buffer's address and capacity: what O_DIRECT asks of a read. */
  int ALIGNMENT = 4096;

  /**
   * A direct buffer of at least {@code bytes} bytes (rounded up to whole {@link #ALIGNMENT}
   * blocks), its address aligned, position 0, limit its capacity. Give it back when done with it.
   */
  ByteBuffer take(int bytes);

  /**
   * As {@link #take}, but null rather than a buffer beyond the pool when every pooled buffer is
   * taken and the pool is full: a transport with other reads in flight waits for one of theirs
   * instead. A read no pooled buffer would fit gets a buffer of its own, as from {@link #take}.
   * This default never returns null.
   */
  default ByteBuffer tryTake(int bytes) {
    return take(bytes);
  }

  /**
   * Gives back a buffer {@link #take} or {@link #tryTake} returned; the caller must not use it
   * again.
   */
  void give(ByteBuffer buffer);
}
