package io.basaltdb.internal.storage;

import io.basaltdb.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A file of {@link FileStorage} written through two channels: writes of whole aligned blocks go
 * through one opened with O_DIRECT (the disk takes them from the buffer: no copy into the page
 * cache, no write-back later), everything else through the file's ordinary channel. See {@link
 * Storage#createUnsyncedDirect} and {@code Options.directWrites}.
 *
 * <p>Two kinds: a backup's file ({@code staging} null), whose writer hands over aligned direct
 * buffers itself, so only those go direct; and a store's file under {@code directWrites} (with
 * staging), where any write is staged: the whole blocks it covers, from the block holding its first
 * byte (whose earlier bytes are read back, from the page cache, which holds them: see below) up to
 * the block holding its last, are copied into an aligned buffer from the store's pool (counted in
 * its memory quota) and written direct; the bytes of its last, partial block go through the page
 * cache. So every write is in the file when it returns (readers of earlier checkpoints read it
 * through the page cache or a mapping), the file never holds padding, and an appender (a segment, a
 * table) sends all but the partial tail of each large write around the page cache. A write that
 * covers less than {@link FileStorage#minDirectWriteBytes} of whole blocks (a WAL group's), or
 * finds the pool empty, goes through the page cache whole.
 *
 * <p>The page cache stays coherent: the kernel writes back and drops cached pages of a range before
 * a direct write to it, and drops them again after. A sync flushes the device's cache for both
 * channels' writes, as they are one file.
 *
 * <p>Thread-safety: as the ordinary file for writes to different blocks; the direct channel allows
 * concurrent positional writes. Staged writes read back the start of their first block, so two
 * threads must not write into one block at once (each file here has one writer). An interrupt that
 * closes the direct channel sends the rest of the write, and every later one, through the ordinary
 * channel, which reopens.
 */
final class DirectWriteFile implements StorageFile {
  private final FileStorageFile file;
  private final FileChannel direct;
  private final int block;

  /** Where staged writes take their aligned buffer; null: only aligned direct buffers go direct. */
  private final Staging staging;

  /**
   * Set when the direct channel failed as closed (an interrupt): the ordinary channel takes every
   * write.
   */
  private volatile boolean directClosed;

  /**
   * The store's pool of staging buffers ({@link FileStorage#useWriteBuffers}), and counts of the
   * bytes written each way.
   */
  static final class Staging {
    /** Bytes of a staging buffer: the largest direct write a staged write makes at once. */
    static final int BUFFER = 256 << 10;

    volatile io.basaltdb.spi.ReadBuffers pool =
        new io.basaltdb.internal.memory.AlignedBuffers(BUFFER, BUFFER);

    final java.util.concurrent.atomic.LongAdder directBytes =
        new java.util.concurrent.atomic.LongAdder();
    final java.util.concurrent.atomic.LongAdder bufferedBytes =
        new java.util.concurrent.atomic.LongAdder();
  }

  DirectWriteFile(FileStorageFile file, FileChannel direct, int block, Staging staging) {
    this.file = file;
    this.direct = direct;
    this.block = block;
    this.staging = staging;
  }

  /**
   * Why {@code dir}'s file system takes no direct writes (the exception of a probe that opens a
   * file there with O_DIRECT and writes an aligned block), or null if it does.
   */
  static String refusal(java.nio.file.Path dir) {
    java.nio.file.Path probe = dir.resolve(".direct-write-probe");
    try {
      try (FileChannel ch =
          FileChannel.open(
              probe,
              java.nio.file.StandardOpenOption.CREATE,
              java.nio.file.StandardOpenOption.WRITE,
              com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * Storage.DIRECT_ALIGNMENT);
        b = b.alignedSlice(Storage.DIRECT_ALIGNMENT).limit(Storage.DIRECT_ALIGNMENT);
        ch.write(b, 0);
        return null;
      } finally {
        java.nio.file.Files.deleteIfExists(probe);
      }
    } catch (IOException | RuntimeException e) {
      return e.toString();
    }
  }

  @Override
  public String name() {
    return file.name();
  }

  @Override
  public int read(long position, ByteBuffer src) {
    return file.read(position, src);
  }

  @Override
  public void write(long position, ByteBuffer src) {
    if (directClosed) {
      file.write(position, src);
    } else if (aligned(position, src)) {
      writeDirect(position, src);
    } else if (staging == null || !staged(position, src)) {
      if (staging != null) staging.bufferedBytes.add(src.remaining());
      file.write(position, src);
    }
  }

  /**
   * Writes {@code src} at {@code position} through an aligned staging buffer (class comment); false
   * if it covers too few whole blocks or the pool has no buffer free, having written nothing.
   */
  private boolean staged(long position, ByteBuffer src) {
    long start = position - position % block;
    int head = (int) (position - start);
    long end = position + src.remaining();
    if (end - end % block - start < Math.max(block, FileStorage.minDirectWriteBytes))
      return false; // through the page cache
    ByteBuffer buf = staging.pool.tryTake(Staging.BUFFER);
    if (buf == null) return false;
    try {
      if (head > 0) { // the block's earlier bytes, as the file has them (the page cache, mostly)
        buf.limit(head);
        while (buf.hasRemaining()) {
          if (file.read(start + buf.position(), buf) <= 0)
            throw new StorageException(
                "write at offset " + position + " to " + file.path() + ": the file ends before it");
        }
        buf.limit(buf.capacity());
      }
      long at = start;
      while (src.hasRemaining()) {
        int n = Math.min(src.remaining(), buf.remaining());
        int limit = src.limit();
        src.limit(src.position() + n);
        buf.put(src);
        src.limit(limit);
        if (!buf.hasRemaining()) {
          buf.flip();
          writeDirect(at, buf);
          staging.directBytes.add(buf.capacity());
          at += buf.capacity();
          buf.clear();
        }
      }
      int filled = buf.position();
      int whole = filled - filled % block;
      if (whole > 0) {
        buf.flip().limit(whole);
        writeDirect(at, buf);
        staging.directBytes.add(whole);
      }
      if (filled > whole) { // the last, partial block through the page cache
        buf.limit(filled).position(whole);
        file.write(at + whole, buf);
        staging.bufferedBytes.add(filled - whole);
      }
      return true;
    } finally {
      staging.pool.give(buf);
    }
  }

  /** Writes {@code src}, whole aligned blocks, at {@code position} through the direct channel. */
  private void writeDirect(long position, ByteBuffer src) {
    long at = position;
    try {
      while (src
          .hasRemaining()) { // whole blocks in, whole blocks out: a partial write ends on a block
        at += direct.write(src, at);
      }
    } catch (ClosedChannelException e) {
      directClosed = true;
      file.write(
          at, src); // closed by an interrupt (or by close, which the ordinary channel reports)
    } catch (IOException e) {
      throw StorageErrors.failure(
          "write of " + src.remaining() + " bytes at offset " + at + " to " + file.path(), e);
    }
  }

  private boolean aligned(long position, ByteBuffer src) {
    return src.isDirect()
        && position % block == 0
        && src.remaining() % block == 0
        && src.remaining() > 0
        && src.alignmentOffset(src.position(), block) == 0;
  }

  @Override
  public boolean direct() {
    return file.direct();
  }

  @Override
  public long size() {
    return file.size();
  }

  @Override
  public void truncate(long size) {
    file.truncate(size);
  }

  @Override
  public void preallocate(long size) {
    file.preallocate(size);
  }

  @Override
  public void sync() {
    file.sync();
  }

  @Override
  public void close() {
    try {
      direct.close();
    } catch (IOException e) {
      throw StorageErrors.failure("close of " + file.path(), e);
    } finally {
      file.close();
    }
  }

  @Override
  public Path path() {
    return file.path();
  }
}
