package io.basaltdb.internal.sstable;

import java.util.Arrays;

/**
 * A growable byte array that blocks are encoded into: varints (LEB128, 7 bits per byte, low group
 * first, high bit set on every byte but the last) and little-endian fixed-width integers.
 *
 * <p>Thread-safety: not thread-safe; owned by one writer.
 */
final class Output {
  private byte[] buf;
  private int size;

  Output(int capacity) {
    buf = new byte[Math.max(16, capacity)];
  }

  byte[] array() {
    return buf;
  }

  int size() {
    return size;
  }

  void reset() {
    size = 0;
  }

  private void ensure(int more) {
    if (buf.length - size < more) {
      long want = Math.max((long) buf.length * 2, (long) size + more);
      buf = Arrays.copyOf(buf, (int) Math.min(want, Integer.MAX_VALUE - 8));
    }
  }

  void putByte(int b) {
    ensure(1);
    buf[size++] = (byte) b;
  }

  void putBytes(byte[] b, int off, int len) {
    ensure(len);
    System.arraycopy(b, off, buf, size, len);
    size += len;
  }

  /** {@code v} as an unsigned varint: 1 to 10 bytes. */
  void putVarint(long v) {
    ensure(10);
    while ((v & ~0x7FL) != 0) {
      buf[size++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[size++] = (byte) v;
  }

  void putIntLE(int v) {
    ensure(4);
    Format.putIntLE(buf, size, v);
    size += 4;
  }

  void putLongLE(long v) {
    ensure(8);
    Format.putLongLE(buf, size, v);
    size += 8;
  }
}
