package io.basaltdb.internal.segment;

import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A StorageFile over a growable byte array, for the segment tests that build many damaged copies of
 * one file image cheaply ({@link #ByteArrayFile(byte[])}, {@link #flip} with any bit mask). Crash
 * tests use MemStorage instead.
 *
 * <p>Thread-safety: every method is synchronized.
 */
final class ByteArrayFile implements StorageFile {
  private byte[] data = new byte[1024];
  private long size;
  private long preallocated;

  ByteArrayFile() {}

  ByteArrayFile(byte[] contents) {
    data = contents.clone();
    size = contents.length;
  }

  @Override
  public String name() {
    return "test/segment.log";
  }

  @Override
  public synchronized int read(long position, ByteBuffer dst) {
    int n = (int) Math.max(0, Math.min(dst.remaining(), size - position));
    dst.put(data, (int) position, n);
    return n;
  }

  @Override
  public synchronized void write(long position, ByteBuffer src) {
    long end = position + src.remaining();
    if (end > data.length) {
      data = Arrays.copyOf(data, (int) Math.max(end, 2L * data.length));
    }
    src.get(data, (int) position, src.remaining());
    size = Math.max(size, end);
  }

  @Override
  public synchronized long size() {
    return size;
  }

  @Override
  public synchronized void truncate(long newSize) {
    if (newSize > data.length) {
      data = Arrays.copyOf(data, (int) newSize);
    }
    if (newSize < size) {
      Arrays.fill(data, (int) newSize, (int) size, (byte) 0);
    }
    size = newSize;
  }

  @Override
  public synchronized void preallocate(long bytes) {
    preallocated = Math.max(preallocated, bytes);
  }

  synchronized long preallocated() {
    return preallocated;
  }

  @Override
  public void sync() {}

  @Override
  public void close() {}

  /** A copy of the contents. */
  synchronized byte[] contents() {
    return Arrays.copyOf(data, (int) size);
  }

  /** Flips bits of the byte at {@code position}. */
  synchronized void flip(long position, int mask) {
    data[(int) position] ^= (byte) mask;
  }
}
