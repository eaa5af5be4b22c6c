package io.basaltdb.internal.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A file of {@link FileStorage} written through two channels: writes of whole aligned blocks from
 * an aligned direct buffer go through one opened with O_DIRECT (the disk takes them from the
 * buffer: no copy into the page cache, no write-back later), everything else through the file's
 * ordinary channel. See {@link Storage#createUnsyncedDirect}.
 *
 * <p>The page cache stays coherent: the kernel writes back and drops cached pages of a range before
 * a direct write to it. A sync flushes the device's cache for both channels' writes, as they are
 * one file.
 *
 * <p>Thread-safety: as the ordinary file; the direct channel allows concurrent positional writes.
 * An interrupt that closes the direct channel sends the rest of the write, and every later one,
 * through the ordinary channel, which reopens.
 */
final class DirectWriteFile implements StorageFile {
  private final FileStorageFile file;
  private final FileChannel direct;
  private final int block;

  /**
   * Set when the direct channel failed as closed (an interrupt): the ordinary channel takes every
   * write.
   */
  private volatile boolean directClosed;

  DirectWriteFile(FileStorageFile file, FileChannel direct, int block) {
    this.file = file;
    this.direct = direct;
    this.block = block;
  }

  @Override
  public String name() {
    return file.name();
  }

  @Override
  public int read(long position, ByteBuffer dst) {
    return file.read(position, dst);
  }

  @Override
  public void write(long position, ByteBuffer src) {
    if (directClosed || !aligned(position, src)) {
      file.write(position, src);
      return;
    }
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
