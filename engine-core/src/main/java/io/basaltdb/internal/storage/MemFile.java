package io.basaltdb.internal.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The contents of one {@link MemStorage} file (an inode: a rename moves it, open handles keep it): the
 * durable image as of the last sync, the writes and truncates since then, and the current view.
 *
 * <p>Concurrency: not thread-safe; every access holds the owning MemStorage's monitor.
 *
 * <p>Invariants:
 * <ol>
 *   <li>{@code current} equals {@code durable} with every operation of {@code pending} applied in order.</li>
 *   <li>A pending write owns its byte array (a copy of the caller's buffer); nothing else changes it
 *       except {@link #flipByte}, which keeps invariant 1.</li>
 * </ol>
 */
final class MemFile {
  /** Largest file size the in-memory storage supports (array index limit, with headroom). */
  static final long MAX_SIZE = Integer.MAX_VALUE - 64;

  /** One unsynced operation: a write of {@code bytes} at {@code position}, or a truncate to {@code size}. */
  private record Pending(long position, byte[] bytes, long size) {
    boolean isWrite() {
      return bytes != null;
    }
  }

  private final Image durable = new Image();
  private final Image current = new Image();
  private final List<Pending> pending = new ArrayList<>();

  long size() {
    return current.size;
  }

  long durableSize() {
    return durable.size;
  }

  int read(long position, ByteBuffer dst) {
    if (position >= current.size) {
      return 0;
    }
    int n = (int) Math.min(dst.remaining(), current.size - position);
    dst.put(current.data, (int) position, n);
    return n;
  }

  void write(long position, ByteBuffer src) {
    byte[] bytes = new byte[src.remaining()];
    src.get(bytes);
    current.write(position, bytes, bytes.length);
    pending.add(new Pending(position, bytes, 0));
  }

  void truncate(long size) {
    current.setSize(size);
    pending.add(new Pending(0, null, size));
  }

  void sync() {
    for (Pending p : pending) {
      durable.apply(p, p.isWrite() ? p.bytes.length : 0);
    }
    pending.clear();
  }

  /** Replaces the current view by what a power loss leaves on the device (see MemStorage#crash). */
  void crash(MemStorage.CrashMode mode, Random random) {
    int n = pending.size();
    boolean[] keep = new boolean[n];
    switch (mode) {
      case KEEP_NONE:
        break;
      case KEEP_ALL:
        Arrays.fill(keep, true);
        break;
      default:
        if (n > 0 && random.nextBoolean()) { // the device wrote back in order, up to some point
          Arrays.fill(keep, 0, random.nextInt(n + 1), true);
        } else { // the device wrote back any subset
          for (int i = 0; i < n; i++) {
            keep[i] = random.nextBoolean();
          }
        }
    }
    int last = n - 1;
    while (last >= 0 && !keep[last]) {
      last--;
    }
    for (int i = 0; i <= last; i++) {
      if (keep[i]) {
        Pending p = pending.get(i);
        int length = p.isWrite() ? p.bytes.length : 0;
        if (i == last && mode == MemStorage.CrashMode.RANDOM && length > 0 && random.nextBoolean()) {
          length = random.nextInt(length); // a torn write: only a prefix reached the device
        }
        if (!p.isWrite() || length > 0) {
          durable.apply(p, length);
        }
      }
    }
    pending.clear();
    current.copyFrom(durable);
  }

  /** A copy of the current contents. */
  byte[] contents() {
    return Arrays.copyOf(current.data, (int) current.size);
  }

  /**
   * Inverts the byte at {@code offset} in the durable image and in every pending write covering it,
   * then rebuilds the current view; returns false if the offset is in neither image.
   */
  boolean flipByte(long offset) {
    if (offset >= current.size && offset >= durable.size) {
      return false;
    }
    if (offset < durable.size) {
      durable.data[(int) offset] ^= (byte) 0xFF;
    }
    for (Pending p : pending) {
      if (p.isWrite() && offset >= p.position && offset < p.position + p.bytes.length) {
        p.bytes[(int) (offset - p.position)] ^= (byte) 0xFF;
      }
    }
    current.copyFrom(durable);
    for (Pending p : pending) {
      current.apply(p, p.isWrite() ? p.bytes.length : 0);
    }
    return true;
  }

  /** A growable byte array with a logical size; bytes at and past {@code size} are always zero. */
  private static final class Image {
    byte[] data = new byte[0];
    long size;

    void apply(Pending p, int length) {
      if (p.isWrite()) {
        write(p.position, p.bytes, length);
      } else {
        setSize(p.size);
      }
    }

    void write(long position, byte[] bytes, int length) {
      long end = position + length;
      ensureCapacity(end);
      System.arraycopy(bytes, 0, data, (int) position, length);
      size = Math.max(size, end);
    }

    void setSize(long newSize) {
      if (newSize < size) {
        Arrays.fill(data, (int) newSize, (int) size, (byte) 0);
      } else {
        ensureCapacity(newSize);
      }
      size = newSize;
    }

    void copyFrom(Image other) {
      data = Arrays.copyOf(other.data, (int) other.size);
      size = other.size;
    }

    private void ensureCapacity(long needed) {
      if (needed > data.length) {
        long grown = Math.max(needed, Math.min(MAX_SIZE, Math.max(64, 2L * data.length)));
        data = Arrays.copyOf(data, (int) grown);
      }
    }
  }
}
