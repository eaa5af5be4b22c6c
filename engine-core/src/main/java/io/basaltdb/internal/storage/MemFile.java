package io.basaltdb.internal.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The contents of one {@link MemStorage} file (an inode: a rename moves it, open handles keep it):
 * the durable image (what the device holds), the writes and truncates since the last sync, and the
 * current view (what reads see: the page cache).
 *
 * <p>Write-back model (what a power loss or a failed sync leaves on the device, see {@link
 * #writeBack}): either the device wrote the unsynced operations back in order up to some point, the
 * last one it reached possibly cut short at any byte; or it wrote back any subset of them in any
 * order, and each write it reached may itself be torn into a subset of its {@link #SECTOR}-byte
 * sectors (aligned to file offsets, as the page cache writes them back), with the file's new size
 * reaching the device even where the data did not (the lost sectors then read as their old bytes,
 * zeros past the old end).
 *
 * <p>Concurrency: not thread-safe; every access holds the owning MemStorage's monitor.
 *
 * <p>Invariants:
 *
 * <ol>
 *   <li>{@code current} equals {@code durable} with every operation of {@code pending} applied in
 *       order, except for the bytes of writes lost by a failed sync ({@link #failSync}): the device
 *       never got them, the current view keeps them until they are overwritten or a crash.
 *   <li>A pending write owns its byte array (a copy of the caller's buffer); nothing else changes
 *       it except {@link #flipByte}.
 *   <li>Bytes of an image at and past its size are zero.
 * </ol>
 */
final class MemFile {
  /** Largest file size the in-memory storage supports (array index limit, with headroom). */
  static final long MAX_SIZE = Integer.MAX_VALUE - 64;

  /**
   * Unit of a torn reordered write-back: a write keeps or loses whole sectors of this many bytes.
   */
  static final int SECTOR = 512;

  /**
   * One unsynced operation: a write of {@code bytes} at {@code position}, or a truncate to {@code
   * size}.
   */
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
    if (!src.hasRemaining()) {
      return; // an empty write changes nothing, not even the size (as FileChannel.write)
    }
    byte[] bytes = new byte[src.remaining()];
    src.get(bytes);
    current.write(position, bytes, 0, bytes.length);
    pending.add(new Pending(position, bytes, 0));
  }

  void truncate(long size) {
    current.setSize(size);
    pending.add(new Pending(0, null, size));
  }

  void sync() {
    for (Pending p : pending) {
      apply(durable, p);
    }
    pending.clear();
  }

  /** Replaces the current view by what a power loss leaves on the device (see MemStorage#crash). */
  void crash(MemStorage.CrashMode mode, Random random) {
    writeBack(mode, random);
    current.copyFrom(durable);
  }

  /**
   * A sync that failed: the device got a random part of the unsynced operations before the error,
   * and will never get the rest (Linux marks the failed pages clean), yet reads still see them.
   */
  void failSync(Random random) {
    writeBack(MemStorage.CrashMode.RANDOM, random);
  }

  /**
   * Applies to the durable image what {@code mode} says reached the device, and forgets the rest.
   */
  private void writeBack(MemStorage.CrashMode mode, Random random) {
    int n = pending.size();
    if (mode == MemStorage.CrashMode.KEEP_ALL) {
      sync();
    } else if (mode == MemStorage.CrashMode.RANDOM && n > 0) {
      if (random.nextBoolean()) { // in order, up to some point
        int kept = random.nextInt(n + 1);
        for (int i = 0; i < kept; i++) {
          Pending p = pending.get(i);
          if (i == kept - 1 && p.isWrite() && random.nextBoolean()) {
            durable.write(p.position, p.bytes, 0, random.nextInt(p.bytes.length)); // cut short
          } else {
            apply(durable, p);
          }
        }
      } else { // any subset, each write whole or torn into sectors
        for (Pending p : pending) {
          if (!random.nextBoolean()) {
            continue;
          }
          if (p.isWrite() && random.nextBoolean()) {
            writeTorn(p, random);
          } else {
            apply(durable, p);
          }
        }
      }
    }
    pending.clear();
  }

  /** Writes a random subset of the sectors {@code p} covers; the size may cover the whole write. */
  private void writeTorn(Pending p, Random random) {
    long end = p.position + p.bytes.length;
    if (random.nextBoolean() && end > durable.size) {
      durable.setSize(end); // the size update reached the device, maybe not the data
    }
    for (long at = p.position; at < end; ) {
      long next = Math.min(end, (at / SECTOR + 1) * SECTOR);
      if (random.nextBoolean()) {
        durable.write(at, p.bytes, (int) (at - p.position), (int) (next - at));
      }
      at = next;
    }
  }

  private static void apply(Image image, Pending p) {
    if (p.isWrite()) {
      image.write(p.position, p.bytes, 0, p.bytes.length);
    } else {
      image.setSize(p.size);
    }
  }

  /** A copy of the current contents. */
  byte[] contents() {
    return Arrays.copyOf(current.data, (int) current.size);
  }

  /**
   * Inverts the byte at {@code offset} in the durable image, in every pending write covering it,
   * and in the current view where that byte came from one of them (not from a truncate's zeros);
   * returns false if the offset is in neither image.
   */
  boolean flipByte(long offset) {
    if (offset >= current.size && offset >= durable.size) {
      return false;
    }
    boolean flipCurrent = offset < current.size && offset < durable.size;
    boolean decided = false;
    for (int i = pending.size() - 1; i >= 0; i--) {
      Pending p = pending.get(i);
      boolean covers = p.isWrite() && offset >= p.position && offset < p.position + p.bytes.length;
      if (covers) {
        p.bytes[(int) (offset - p.position)] ^= (byte) 0xFF;
      }
      if (!decided && (covers || (!p.isWrite() && p.size <= offset))) {
        flipCurrent =
            covers && offset < current.size; // the newest operation that set the byte decides
        decided = true;
      }
    }
    if (offset < durable.size) {
      durable.data[(int) offset] ^= (byte) 0xFF;
    }
    if (flipCurrent) {
      current.data[(int) offset] ^= (byte) 0xFF;
    }
    return true;
  }

  /** A growable byte array with a logical size; bytes at and past {@code size} are always zero. */
  private static final class Image {
    byte[] data = new byte[0];
    long size;

    /** Writes {@code bytes[from, from + length)} at {@code position}. */
    void write(long position, byte[] bytes, int from, int length) {
      if (length == 0) {
        return;
      }
      long end = position + length;
      ensureCapacity(end);
      System.arraycopy(bytes, from, data, (int) position, length);
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
