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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A file of {@link FileStorage}: a {@link FileChannel} opened for reading and writing.
 *
 * <p>{@link #preallocate} reserves disk blocks through a {@link NativeFileCalls} provider ({@code
 * fallocate(2)} from engine-io) when one is on the class path; without one it only extends the
 * file's length, a sparse extension that reserves no blocks, so a later write below it can still
 * fail with no space left on the device.
 *
 * <p>Interrupts: the JDK closes a channel for every user when a thread using it is interrupted. An
 * embedded store cannot let one cancelled caller break its files, so an operation that finds the
 * channel closed by an interrupt (its own or another thread's) reopens the file and retries; the
 * interrupted thread's interrupt status is set again when its operation returns. A use after {@link
 * #close()} throws {@link io.basaltdb.ClosedException}.
 *
 * <p>A failed {@link #sync()} poisons the handle: Linux may drop the dirty pages whose write-back
 * failed and report the error only once, so a later fsync could succeed without the data ever
 * reaching the device. Every later sync therefore fails too, and the store must be reopened
 * (PostgreSQL's "fsyncgate" lesson).
 *
 * <p>Thread-safety: positional reads and writes go straight to the channel, which allows them
 * concurrently. {@code channel}, {@code closed} and {@code syncFailure} are volatile so every
 * thread sees a reopen, a close or a failed sync at its next operation; reopening and closing hold
 * this object's monitor, so a reopen never resurrects a closed file or leaks a channel.
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

  /**
   * The file mapped for reads ({@link Mapping}), made by the first read that finds none and
   * replaced when the file has grown well past it; null until then, when reads are not mapped, and
   * once closed.
   */
  private volatile Mapping mapping;

  /**
   * Whether reads may go through a mapping: buffered reads, unless turned off or a mapping failed.
   */
  private volatile boolean mapped;

  /** Until when ({@link System#nanoTime}) the file is cold: reads skip the mapping. */
  private volatile long coldUntil = System.nanoTime();

  /**
   * How long the last cold spell lasted; 0 after a window with few slow copies. Written by one
   * judge at a time.
   */
  private volatile long coldFor;

  private final AtomicInteger windowReads = new AtomicInteger();
  private final AtomicInteger slowReads = new AtomicInteger();
  private final LongAdder coldSpells = new LongAdder();

  FileStorageFile(String name, Path path, FileChannel channel) {
    this(name, path, channel, null);
  }

  FileStorageFile(String name, Path path, FileChannel channel, NativeFileCalls nativeCalls) {
    this(name, path, channel, nativeCalls, null);
  }

  /**
   * As above; with {@code direct} non-null, reads bypass the page cache through it (see {@link
   * DirectReads}).
   */
  FileStorageFile(
      String name,
      Path path,
      FileChannel channel,
      NativeFileCalls nativeCalls,
      DirectReads direct) {
    this(name, path, channel, nativeCalls, direct, true);
  }

  /** As above; {@code mappedReads} false keeps buffered reads off a mapping of the file. */
  FileStorageFile(
      String name,
      Path path,
      FileChannel channel,
      NativeFileCalls nativeCalls,
      DirectReads direct,
      boolean mappedReads) {
    this.name = name;
    this.path = path;
    this.channel = channel;
    this.nativeCalls = nativeCalls;
    this.direct = direct;
    this.mapped = mappedReads && direct == null;
  }

  @Override
  public boolean direct() {
    return direct != null;
  }

  /**
   * Opened with O_DSYNC ({@link FileStorage#openLog}): every write is durable, with the length a
   * read needs, when it returns, so a sync has nothing to do but after a truncate or a
   * preallocation. Set once, before the file is used.
   */
  private volatile boolean synchronous;

  /** A truncate or a preallocation since the last sync: the next one forces the file. */
  private volatile boolean metadataChanged;

  /** Marks the file as opened with O_DSYNC (its channel, and every reopen of it). */
  void synchronous() {
    synchronous = true;
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
        throw failure(
            "direct read of " + dst.remaining() + " bytes at offset " + position + " from ", e);
      }
    }
    if (mapped) {
      int n = readMapped(position, dst);
      if (n >= 0) return n;
    }
    int total = 0;
    try {
      while (dst
          .hasRemaining()) { // a positional read may return fewer bytes than asked before the end
        long at = position + total;
        int n = call(ch -> ch.read(dst, at));
        if (n < 0) {
          break;
        }
        total += n;
      }
    } catch (IOException e) {
      throw failure(
          "read of " + dst.remaining() + " bytes at offset " + (position + total) + " from ", e);
    }
    return total;
  }

  @Override
  public boolean readsInPlace() {
    return mapped;
  }

  @Override
  public int readInPlace(long position, ByteBuffer dst) {
    checkPosition(position);
    ensureOpen();
    return mapped ? readMapped(position, dst) : -1;
  }

  /** Files larger than this are read with pread only: one mapping is one MappedByteBuffer. */
  private static final long MAX_MAPPING = Integer.MAX_VALUE;

  /**
   * A mapped file is mapped again for a read past its mapping once it has grown by this much (or a
   * quarter).
   */
  private static final long REMAP_GROWTH = 1 << 20;

  /**
   * Mapped reads judged together: if more than {@link #SLOW_PER_WINDOW} of them were slow, the file
   * is cold.
   */
  static final int WINDOW = 1024;

  static final int SLOW_PER_WINDOW = 16;

  /**
   * A copy slower than this (plus a nanosecond a byte) waited for the device: a page fault read a
   * page in.
   */
  private static final long SLOW_COPY_NANOS = 30_000;

  /**
   * How long a cold file is read with pread first, doubling each time it is found cold again, up to
   * the most.
   */
  static final long COLD_NANOS = 1_000_000_000L;

  private static final long MAX_COLD_NANOS = 64 * COLD_NANOS;

  /**
   * Mappings live in this process at most: each takes an entry of the kernel's {@code
   * vm.max_map_count} (65,530 by default), which the JVM's own threads and heap need too. Beyond it
   * files are read with pread.
   */
  static final int MAX_LIVE_MAPPINGS = 16_384;

  private static final AtomicInteger LIVE_MAPPINGS = new AtomicInteger();

  /**
   * A read-only mapping of the file's first {@code size} bytes, shared by its readers. Each read
   * holds a reference while it copies. The thread that drops the mapping (close, truncate, a remap)
   * retires it: no read acquires it from then on, and that thread waits for the reads holding it to
   * finish before it unmaps it (copies take microseconds) and, for a truncate, before the file
   * shrinks. So no read touches unmapped memory or a page past the end of the file, and no reader
   * thread ever unmaps.
   */
  private static final class Mapping {
    private static final int RETIRED = 1 << 30;
    final java.nio.MappedByteBuffer buffer;
    final long size;

    /** Reads holding the mapping, plus {@link #RETIRED} once it is dropped. */
    private final AtomicInteger refs = new AtomicInteger();

    Mapping(java.nio.MappedByteBuffer buffer, long size) {
      this.buffer = buffer;
      this.size = size;
    }

    boolean acquire() {
      for (int r = refs.get(); (r & RETIRED) == 0; r = refs.get()) {
        if (refs.compareAndSet(r, r + 1)) return true;
      }
      return false;
    }

    void release() {
      refs.decrementAndGet();
    }

    /** No read acquires it from now on; waits for those holding it, then unmaps it. Called once. */
    void retire() {
      refs.getAndAdd(RETIRED);
      for (int spins = 0; refs.get() != RETIRED; spins++) {
        if (spins < 100) Thread.onSpinWait();
        else Thread.yield();
      }
      net.openhft.chronicle.core.UnsafeMemory.UNSAFE.invokeCleaner(buffer);
      LIVE_MAPPINGS.decrementAndGet();
    }
  }

  /**
   * Copies {@code dst.remaining()} bytes at {@code position} from the mapping: the bytes copied, or
   * -1 having copied nothing (the file is cold, the read is past the mapping, or no mapping could
   * be made), and the caller reads them another way. The page cache cannot be asked cheaply what it
   * holds ({@code mincore} costs more than the {@code pread} it would spare), so the copy is timed
   * instead: a file whose copies often wait for the device is cold, and read another way for a
   * while ({@link #judge}). A page the device fails to read raises SIGBUS, which the JVM turns into
   * an {@link InternalError}; it is reported as a {@link StorageException} when it surfaces in the
   * copy.
   */
  private int readMapped(long position, ByteBuffer dst) {
    int want = dst.remaining();
    if (want == 0) return -1;
    Mapping m = mapping;
    if (m == null || position > m.size - want) m = remap(m, position, want);
    if (m == null || position > m.size - want || !m.acquire()) return -1;
    long start = System.nanoTime(); // times the copy alone: a page fault, not the mapping's making
    try {
      if (start - coldUntil < 0) return -1; // a cold file: read another way for now
      dst.put(dst.position(), m.buffer, (int) position, want);
      dst.position(dst.position() + want);
    } catch (InternalError e) {
      throw StorageErrors.failure(
          "mapped read of " + want + " bytes at offset " + position + " from " + path,
          new IOException(e.getMessage(), e));
    } finally {
      m.release();
    }
    judge(System.nanoTime() - start > SLOW_COPY_NANOS + want);
    return want;
  }

  /**
   * Counts a mapped read, slow or not; at the end of each window of {@link #WINDOW} reads, a file
   * with more than {@link #SLOW_PER_WINDOW} slow ones goes cold for {@link #COLD_NANOS}, twice as
   * long as last time if it went cold in its last window too. A thread descheduled mid-copy makes a
   * warm file's copy slow now and then; a file the page cache does not hold makes most of them
   * slow. Counted without locks: a lost count only moves a window's end.
   */
  void judge(boolean slow) {
    if (slow) slowReads.incrementAndGet();
    if (windowReads.incrementAndGet() % WINDOW != 0) return;
    int slowInWindow = slowReads.getAndSet(0);
    if (slowInWindow > SLOW_PER_WINDOW) {
      coldFor = coldFor == 0 ? COLD_NANOS : Math.min(MAX_COLD_NANOS, coldFor * 2);
      coldUntil = System.nanoTime() + coldFor;
      coldSpells.increment();
    } else {
      coldFor = 0;
    }
  }

  /**
   * The mapping a read of {@code want} bytes at {@code position} should use: a new one of the whole
   * file if there is none or the file has grown well past {@code old} (by {@link #REMAP_GROWTH} or
   * a quarter); else the current one (null if none). A file that cannot be mapped (over 2 GiB, or a
   * failed mapping) is read with pread from then on; an interrupt that closed the channel only
   * skips the mapping for this read.
   */
  private synchronized Mapping remap(Mapping old, long position, long want) {
    Mapping m = mapping;
    if (m != old || closed || !mapped)
      return m; // another reader mapped it again, or no mapping at all
    long size;
    try {
      size = call(FileChannel::size);
    } catch (IOException e) {
      return m; // pread reports it
    }
    if (size > MAX_MAPPING) {
      mapped = false;
      return m;
    }
    if (size == 0 || position > size - want) return m; // past the end: pread reads what there is
    if (m != null && size - m.size < Math.max(REMAP_GROWTH, m.size / 4)) return m;
    if (LIVE_MAPPINGS.incrementAndGet() > MAX_LIVE_MAPPINGS) {
      LIVE_MAPPINGS.decrementAndGet();
      return m;
    }
    Mapping next;
    long length = size;
    try {
      next = new Mapping(call(ch -> ch.map(FileChannel.MapMode.READ_ONLY, 0, length)), length);
    } catch (ClosedChannelException e) {
      LIVE_MAPPINGS.decrementAndGet();
      return m; // interrupts kept closing the channel: pread reports it
    } catch (IOException | RuntimeException | OutOfMemoryError e) {
      LIVE_MAPPINGS.decrementAndGet();
      mapped = false; // the kernel refused the mapping (ENOMEM, say): pread from now on
      return m;
    }
    mapping = next;
    if (m != null) m.retire();
    return next;
  }

  /**
   * Drops the mapping and waits until no read uses it (the file closes or shrinks). Holds the
   * monitor.
   */
  private void unmap() {
    Mapping m = mapping;
    mapping = null;
    if (m != null) m.retire();
  }

  /** Reads served by the mapping (tests). */
  long mappedReads() {
    return windowReads.get(); // every mapped read is judged
  }

  /** Times the file was found cold (tests). */
  long coldSpells() {
    return coldSpells.sum();
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
          n =
              channel.write(
                  src, from); // the common case straight: no lambda, no boxed count (WAL appends)
        } catch (ClosedChannelException e) {
          n =
              call(
                  ch ->
                      ch.write(src, from)); // reopens as every call does, and restores an interrupt
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
    metadataChanged = true;
    try {
      long current = call(FileChannel::size);
      if (size < current) {
        synchronized (this) { // no read maps the file again between the two
          Mapping m = mapping;
          if (m != null && m.size > size)
            unmap(); // waits for the reads using it: a page past the end would fault
          call(ch -> ch.truncate(size));
        }
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
    metadataChanged = true;
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
    if (synchronous && !metadataChanged) return; // each write was durable when it returned
    metadataChanged = false; // before the force: a change during it is forced by the next sync
    try {
      // fdatasync: it also writes the metadata a later read needs (the length, allocated and
      // converted
      // extents), but not timestamps; a commit's fsync took 194 us against 118 us here (fio, 104
      // KiB
      // appends). The directory entries are made durable separately (FileStorage.syncDirectory).
      call(
          ch -> {
            ch.force(false);
            return null;
          });
    } catch (IOException e) {
      RuntimeException failed = failure("sync of ", e);
      if (failed
          instanceof StorageException storageFailure) { // a racing close is no write-back failure
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
      unmap();
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

  /**
   * Extends the file to {@code size} with zeros by writing its last byte (the hole reads as zeros).
   */
  private void extend(long size) throws IOException {
    ByteBuffer zero = ByteBuffer.allocate(1);
    while (zero.hasRemaining()) {
      call(ch -> ch.write(zero, size - 1));
    }
  }

  /**
   * Runs {@code c} on the channel. If an interrupt closed the channel (this thread's, now or
   * earlier, or another user's), reopens the file and runs it again with this thread's interrupt
   * status cleared, and sets the status again before returning. A file closed by {@link #close()}
   * stays closed.
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
          interrupted |=
              Thread.interrupted(); // retry uninterrupted; the status comes back at the end
          reopen(ch);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Replaces {@code failed} with a fresh channel on the same file, unless another thread already
   * did.
   */
  private synchronized void reopen(FileChannel failed) throws IOException {
    if (closed) {
      throw new ClosedChannelException();
    }
    if (channel == failed) {
      channel =
          synchronous
              ? FileChannel.open(
                  path, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.DSYNC)
              : FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
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
      return new StorageException(
          what
              + path
              + " failed: interrupts kept closing the file ("
              + MAX_REOPENS
              + " reopens); stop interrupting threads that use the store",
          e);
    }
    return StorageErrors.failure(what + path, e);
  }

  private static void checkPosition(long position) {
    if (position < 0) {
      throw new InvalidArgumentException("negative file position or size: " + position);
    }
  }
}
