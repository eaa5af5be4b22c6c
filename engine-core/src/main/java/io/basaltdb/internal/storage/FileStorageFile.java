package io.basaltdb.internal.storage;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.spi.NativeFileCalls;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A file of {@link FileStorage}: a {@link FileChannel} opened for reading and writing.
 *
 * <p>{@link #preallocate} reserves disk blocks through a {@link NativeFileCalls} provider
 * ({@code fallocate(2)} from engine-io) when one is on the class path; without one it only extends the
 * file's length, a sparse extension that reserves no blocks, so a later write below it can still fail
 * with no space left on the device.
 *
 * <p>Interrupts: the JDK closes a channel for every user when a thread using it is interrupted. An
 * embedded store cannot let one cancelled caller break its files, so an operation that finds the
 * channel closed by an interrupt (its own or another thread's) reopens the file and retries; the
 * interrupted thread's interrupt status is set again when its operation returns. A use after
 * {@link #close()} throws {@link io.basaltdb.ClosedException}.
 *
 * <p>A failed {@link #sync()} poisons the handle: Linux may drop the dirty pages whose write-back failed
 * and report the error only once, so a later fsync could succeed without the data ever reaching the
 * device. Every later sync therefore fails too, and the store must be reopened (PostgreSQL's
 * "fsyncgate" lesson).
 *
 * <p>Thread-safety: positional reads and writes go straight to the channel, which allows them
 * concurrently. {@code channel}, {@code closed} and {@code syncFailure} are volatile so every thread sees
 * a reopen, a close or a failed sync at its next operation; reopening and closing hold this object's
 * monitor, so a reopen never resurrects a closed file or leaks a channel.
 */
final class FileStorageFile implements StorageFile {
  /** Reopens after an interrupt closed the channel, per operation, before it gives up. */
  private static final int MAX_REOPENS = 3;

  private final String name;
  private final Path path;
  /** Reserves disk blocks for preallocate; null when no provider is on the class path. */
  private final NativeFileCalls nativeCalls;
  /** Direct (O_DIRECT) reads of the file, or null: reads go through the page cache. */
  private final DirectReads direct;
  /** The open channel; replaced under this object's monitor when an interrupt closed it. */
  private volatile FileChannel channel;
  /** Set once by close(), under this object's monitor; read by every operation. */
  private volatile boolean closed;
  /** The first sync failure, set once by a failing sync(); read by every later sync. */
  private volatile StorageException syncFailure;

  FileStorageFile(String name, Path path, FileChannel channel) {
    this(name, path, channel, null);
  }

  FileStorageFile(String name, Path path, FileChannel channel, NativeFileCalls nativeCalls) {
    this(name, path, channel, nativeCalls, null);
  }

  /** As above; with {@code direct} non-null, reads bypass the page cache through it (see {@link DirectReads}). */
  FileStorageFile(String name, Path path, FileChannel channel, NativeFileCalls nativeCalls, DirectReads direct) {
    this.name = name;
    this.path = path;
    this.channel = channel;
    this.nativeCalls = nativeCalls;
    this.direct = direct;
  }

  @Override
  public boolean direct() {
    return direct != null;
  }

  /** One call on the channel; may throw ClosedChannelException if an interrupt closed it. */
  @FunctionalInterface
  private interface ChannelCall<T> {
    T on(FileChannel channel) throws IOException;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int read(long position, ByteBuffer dst) {
    checkPosition(position);
    ensureOpen();
    if (direct != null) {
      try {
        return direct.read(position, dst);
      } catch (IOException e) {
        if (closed) throw StorageErrors.closed(path.toString());
        throw failure("direct read of " + dst.remaining() + " bytes at offset " + position + " from ", e);
      }
    }
    int total = 0;
    try {
      while (dst.hasRemaining()) { // a positional read may return fewer bytes than asked before the end
        long at = position + total;
        int n = call(ch -> ch.read(dst, at));
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
        long from = at;
        int n;
        try {
          n = channel.write(src, from); // the common case straight: no lambda, no boxed count (WAL appends)
        } catch (ClosedChannelException e) {
          n = call(ch -> ch.write(src, from)); // reopens as every call does, and restores an interrupt
        }
        at += n;
      }
    } catch (IOException e) {
      throw failure("write of " + src.remaining() + " bytes at offset " + at + " to ", e);
    }
  }

  @Override
  public long size() {
    ensureOpen();
    try {
      return call(FileChannel::size);
    } catch (IOException e) {
      throw failure("size of ", e);
    }
  }

  @Override
  public void truncate(long size) {
    checkPosition(size);
    ensureOpen();
    try {
      long current = call(FileChannel::size);
      if (size < current) {
        call(ch -> ch.truncate(size));
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
      if (nativeCalls != null && nativeCalls.allocate(path, size)) {
        return;
      }
      if (size > call(FileChannel::size)) {
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
      // fdatasync: it also writes the metadata a later read needs (the length, allocated and converted
      // extents), but not timestamps; a commit's fsync took 194 us against 118 us here (fio, 104 KiB
      // appends). The directory entries are made durable separately (FileStorage.syncDirectory).
      call(ch -> {
        ch.force(false);
        return null;
      });
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
    FileChannel ch;
    synchronized (this) {
      closed = true;
      ch = channel;
    }
    try {
      ch.close();
      if (direct != null) direct.close();
    } catch (IOException e) {
      throw failure("close of ", e);
    }
  }

  @Override
  public Path path() {
    return path;
  }

  @Override
  public String toString() {
    return path.toString();
  }

  /** Extends the file to {@code size} with zeros by writing its last byte (the hole reads as zeros). */
  private void extend(long size) throws IOException {
    ByteBuffer zero = ByteBuffer.allocate(1);
    while (zero.hasRemaining()) {
      call(ch -> ch.write(zero, size - 1));
    }
  }

  /**
   * Runs {@code c} on the channel. If an interrupt closed the channel (this thread's, now or earlier,
   * or another user's), reopens the file and runs it again with this thread's interrupt status
   * cleared, and sets the status again before returning. A file closed by {@link #close()} stays closed.
   */
  private <T> T call(ChannelCall<T> c) throws IOException {
    boolean interrupted = false;
    try {
      for (int reopens = 0; ; reopens++) {
        FileChannel ch = channel;
        try {
          return c.on(ch);
        } catch (ClosedChannelException e) {
          if (e instanceof ClosedByInterruptException) {
            interrupted = true;
          }
          if (closed || reopens == MAX_REOPENS) {
            throw e;
          }
          interrupted |= Thread.interrupted(); // retry uninterrupted; the status comes back at the end
          reopen(ch);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Replaces {@code failed} with a fresh channel on the same file, unless another thread already did. */
  private synchronized void reopen(FileChannel failed) throws IOException {
    if (closed) {
      throw new ClosedChannelException();
    }
    if (channel == failed) {
      channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw StorageErrors.closed(path.toString());
    }
  }

  private RuntimeException failure(String what, IOException e) {
    if (e instanceof ClosedChannelException) {
      if (closed) { // closed by close(), maybe by another thread while this operation ran
        return StorageErrors.closed(path.toString());
      }
      return new StorageException(what + path + " failed: interrupts kept closing the file ("
          + MAX_REOPENS + " reopens); stop interrupting threads that use the store", e);
    }
    return StorageErrors.failure(what + path, e);
  }

  private static void checkPosition(long position) {
    if (position < 0) {
      throw new InvalidArgumentException("negative file position or size: " + position);
    }
  }
}
