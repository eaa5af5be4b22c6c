package io.basaltdb.internal.storage;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * A file of {@link FileStorage}: a {@link FileChannel} opened for reading and writing.
 *
 * <p>{@link #preallocate} only extends the file's length (a sparse extension on Linux file systems):
 * it reserves the size but no disk blocks, so a later write below it can still fail with no space left
 * on the device. Real reservation needs {@code fallocate(2)}, which the engine-io module will supply.
 *
 * <p>A thread interrupted inside a channel operation closes the channel for every user (a JDK rule);
 * that surfaces as a StorageException saying so, and the file must be reopened. A use after
 * {@link #close()} throws {@link io.basaltdb.ClosedException}.
 *
 * <p>A failed {@link #sync()} poisons the handle: Linux may drop the dirty pages whose write-back failed
 * and report the error only once, so a later fsync could succeed without the data ever reaching the
 * device. Every later sync therefore fails too, and the store must be reopened (PostgreSQL's
 * "fsyncgate" lesson).
 *
 * <p>Thread-safety: positional reads and writes go straight to the channel, which allows them
 * concurrently. {@code closed} and {@code syncFailure} are volatile so every thread sees a close or a
 * failed sync at its next operation; a use racing with close gets the same message from the channel's
 * own check.
 */
final class FileStorageFile implements StorageFile {
  private final String name;
  private final Path path;
  private final FileChannel channel;
  /** Set once by close(); read by every operation. */
  private volatile boolean closed;
  /** The first sync failure, set once by a failing sync(); read by every later sync. */
  private volatile StorageException syncFailure;

  FileStorageFile(String name, Path path, FileChannel channel) {
    this.name = name;
    this.path = path;
    this.channel = channel;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int read(long position, ByteBuffer dst) {
    checkPosition(position);
    ensureOpen();
    int total = 0;
    try {
      while (dst.hasRemaining()) { // a positional read may return fewer bytes than asked before the end
        int n = channel.read(dst, position + total);
        if (n < 0) {
          break;
        }
        total += n;
      }
    } catch (IOException e) {
      throw failure("read of " + dst.remaining() + " bytes at offset " + (position + total) + " from ", e);
    }
    return total;
  }

  @Override
  public void write(long position, ByteBuffer src) {
    checkPosition(position);
    ensureOpen();
    long at = position;
    try {
      while (src.hasRemaining()) { // a write may be partial; loop until every byte is in
        at += channel.write(src, at);
      }
    } catch (IOException e) {
      throw failure("write of " + src.remaining() + " bytes at offset " + at + " to ", e);
    }
  }

  @Override
  public long size() {
    ensureOpen();
    try {
      return channel.size();
    } catch (IOException e) {
      throw failure("size of ", e);
    }
  }

  @Override
  public void truncate(long size) {
    checkPosition(size);
    ensureOpen();
    try {
      long current = channel.size();
      if (size < current) {
        channel.truncate(size);
      } else if (size > current) {
        extend(size);
      }
    } catch (IOException e) {
      throw failure("truncate to " + size + " bytes of ", e);
    }
  }

  @Override
  public void preallocate(long size) {
    checkPosition(size);
    ensureOpen();
    try {
      if (size > channel.size()) {
        extend(size);
      }
    } catch (IOException e) {
      throw failure("preallocate of " + size + " bytes for ", e);
    }
  }

  @Override
  public void sync() {
    ensureOpen();
    StorageException earlier = syncFailure;
    if (earlier != null) {
      throw StorageErrors.syncRefused(path.toString(), earlier);
    }
    try {
      channel.force(true);
    } catch (IOException e) {
      RuntimeException failed = failure("sync of ", e);
      if (failed instanceof StorageException storageFailure) { // a racing close is no write-back failure
        syncFailure = storageFailure;
      }
      throw failed;
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      channel.close();
    } catch (IOException e) {
      throw failure("close of ", e);
    }
  }

  @Override
  public String toString() {
    return path.toString();
  }

  /** Extends the file to {@code size} with zeros by writing its last byte (the hole reads as zeros). */
  private void extend(long size) throws IOException {
    ByteBuffer zero = ByteBuffer.allocate(1);
    while (zero.hasRemaining()) {
      channel.write(zero, size - 1);
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw StorageErrors.closed(path.toString());
    }
  }

  private RuntimeException failure(String what, IOException e) {
    if (e instanceof ClosedByInterruptException) {
      return new StorageException(what + path + " was interrupted, which closed the file; reopen it", e);
    }
    if (e instanceof ClosedChannelException) {
      if (closed) { // closed by close(), maybe by another thread while this operation ran
        return StorageErrors.closed(path.toString());
      }
      return new StorageException(what + path + " failed: an earlier interrupt of a thread using the file"
          + " closed it; reopen it", e);
    }
    return StorageErrors.failure(what + path, e);
  }

  private static void checkPosition(long position) {
    if (position < 0) {
      throw new InvalidArgumentException("negative file position or size: " + position);
    }
  }
}
