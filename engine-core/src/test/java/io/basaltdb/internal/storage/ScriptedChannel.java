package io.basaltdb.internal.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A real {@link FileChannel} whose positional reads and writes move at most {@code maxTransfer}
 * bytes per call (as a kernel may), and whose next writes or forces fail with scripted
 * IOExceptions, so the tests can drive {@link FileStorageFile}'s loops and error paths that a
 * healthy disk never takes.
 *
 * <p>Thread-safety: one test thread.
 */
final class ScriptedChannel extends FileChannel {
  private final FileChannel real;
  private final int maxTransfer;

  /** Errors the next write calls throw, in order; then writes go through. */
  final Deque<IOException> writeErrors = new ArrayDeque<>();

  /** Errors the next force calls throw, in order; then forces go through. */
  final Deque<IOException> forceErrors = new ArrayDeque<>();

  int reads;
  int writes;

  ScriptedChannel(Path path, int maxTransfer) throws IOException {
    this.real =
        FileChannel.open(
            path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
    this.maxTransfer = maxTransfer;
  }

  @Override
  public int read(ByteBuffer dst, long position) throws IOException {
    reads++;
    ByteBuffer part = dst.slice(dst.position(), Math.min(maxTransfer, dst.remaining()));
    int n = real.read(part, position);
    if (n > 0) {
      dst.position(dst.position() + n);
    }
    return n;
  }

  @Override
  public int write(ByteBuffer src, long position) throws IOException {
    writes++;
    IOException error = writeErrors.poll();
    if (error != null) {
      throw error;
    }
    ByteBuffer part = src.slice(src.position(), Math.min(maxTransfer, src.remaining()));
    int n = real.write(part, position);
    src.position(src.position() + n);
    return n;
  }

  @Override
  public void force(boolean metaData) throws IOException {
    IOException error = forceErrors.poll();
    if (error != null) {
      throw error;
    }
    real.force(metaData);
  }

  @Override
  public long size() throws IOException {
    return real.size();
  }

  @Override
  public FileChannel truncate(long size) throws IOException {
    real.truncate(size);
    return this;
  }

  @Override
  protected void implCloseChannel() throws IOException {
    real.close();
  }

  // ---- not used by FileStorageFile ----

  @Override
  public int read(ByteBuffer dst) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long read(ByteBuffer[] dsts, int offset, int length) {
    throw new UnsupportedOperationException();
  }

  @Override
  public int write(ByteBuffer src) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long position() {
    throw new UnsupportedOperationException();
  }

  @Override
  public FileChannel position(long newPosition) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long transferTo(long position, long count, WritableByteChannel target) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long transferFrom(ReadableByteChannel src, long position, long count) {
    throw new UnsupportedOperationException();
  }

  @Override
  public MappedByteBuffer map(MapMode mode, long position, long size) {
    throw new UnsupportedOperationException();
  }

  @Override
  public FileLock lock(long position, long size, boolean shared) {
    throw new UnsupportedOperationException();
  }

  @Override
  public FileLock tryLock(long position, long size, boolean shared) {
    throw new UnsupportedOperationException();
  }
}
