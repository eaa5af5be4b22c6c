package io.basaltdb.internal.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The reads of one file that bypass the page cache (O_DIRECT; {@code Options.directReads}): a read
 * is widened to whole {@link Storage#DIRECT_ALIGNMENT}-byte blocks, read into an aligned direct
 * buffer of the calling thread, and the asked bytes copied out. Every read goes to the disk, so a
 * store serves from its own caches and its measured reads are real ones. Writes of the file go
 * through its ordinary channel; the kernel keeps the two coherent (it writes back a range's dirty
 * pages before a direct read of it).
 *
 * <p>Memory: a read stages through an aligned buffer taken from the store's pool for the call
 * ({@link io.basaltdb.spi.ReadBuffers}: counted in its memory quota); until the store gives its
 * pool (a storage used on its own), from a pool of {@value #OWN_POOL} bytes of the storage's own.
 *
 * <p>Thread-safety: concurrent reads; an interrupt that closes the channel reopens it, as {@link
 * FileStorageFile} does for its own.
 */
final class DirectReads {
  static final int A = Storage.DIRECT_ALIGNMENT;
  static final int OWN_POOL = 256 << 10;
  private static final int MAX_REOPENS = 3;

  /**
   * A storage's source of buffers for its direct reads: the store's pool once given, else its own.
   */
  static final class Buffers {
    volatile io.basaltdb.spi.ReadBuffers pool =
        new io.basaltdb.internal.memory.AlignedBuffers(OWN_POOL, 16 << 10);
  }

  private final Path path;
  private final Buffers buffers;
  private volatile FileChannel channel;
  private volatile boolean closed;

  private DirectReads(Path path, FileChannel channel, Buffers buffers) {
    this.path = path;
    this.channel = channel;
    this.buffers = buffers;
  }

  /** Opens {@code path} for direct reads staged through {@code buffers}. */
  static DirectReads open(Path path, Buffers buffers) throws IOException {
    return new DirectReads(path, openChannel(path), buffers);
  }

  private static FileChannel openChannel(Path path) throws IOException {
    try {
      return FileChannel.open(
          path, StandardOpenOption.READ, com.sun.nio.file.ExtendedOpenOption.DIRECT);
    } catch (UnsupportedOperationException e) {
      throw new IOException("direct I/O (O_DIRECT) is not supported here: " + e.getMessage(), e);
    }
  }

  /**
   * Whether the file system of {@code dir} takes direct reads; false with the reason in {@code
   * why}.
   */
  static String refusal(Path dir) {
    Path probe = dir.resolve(".direct-io-probe");
    try {
      java.nio.file.Files.write(probe, new byte[A]);
      try (FileChannel ch = openChannel(probe)) {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * A).alignedSlice(A);
        b.limit(A);
        ch.read(b, 0);
        return null;
      } finally {
        java.nio.file.Files.deleteIfExists(probe);
      }
    } catch (IOException | RuntimeException e) {
      return e.toString();
    }
  }

  /**
   * As {@link StorageFile#read}: fills {@code dst} from {@code position} or up to the end of the
   * file.
   */
  int read(long position, ByteBuffer dst) throws IOException {
    int len = dst.remaining();
    if (len == 0) return 0;
    long start = position & -(long) A;
    long end = (position + len + A - 1) & -(long) A;
    int span = Math.toIntExact(end - start);
    io.basaltdb.spi.ReadBuffers pool = buffers.pool;
    ByteBuffer buf = pool.take(span);
    try {
      buf.limit(span);
      int got = 0;
      while (got < span) {
        int n = readAt(buf, start + got);
        if (n <= 0) break;
        got += n;
        if ((got & (A - 1)) != 0) break; // a read short of a block boundary: the end of the file
      }
      int skip = (int) (position - start);
      int n = Math.max(0, Math.min(len, got - skip));
      if (n > 0) dst.put(buf.duplicate().limit(skip + n).position(skip));
      return n;
    } finally {
      pool.give(buf);
    }
  }

  private int readAt(ByteBuffer buf, long at) throws IOException {
    boolean interrupted = false;
    try {
      for (int reopens = 0; ; reopens++) {
        FileChannel ch = channel;
        try {
          return ch.read(buf, at);
        } catch (ClosedChannelException e) {
          if (e instanceof ClosedByInterruptException) interrupted = true;
          if (closed || reopens == MAX_REOPENS) throw e;
          Thread.interrupted(); // clear it for the retry; set again below
          reopen(ch);
        }
      }
    } finally {
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  private synchronized void reopen(FileChannel failed) throws IOException {
    if (closed) throw new ClosedChannelException();
    if (channel == failed) channel = openChannel(path);
  }

  synchronized void close() throws IOException {
    closed = true;
    channel.close();
  }
}
