package io.basaltdb.io;

import io.basaltdb.ClosedException;
import io.basaltdb.StorageException;
import io.basaltdb.spi.ReadBuffers;
import io.basaltdb.spi.ReadTarget;
import io.basaltdb.spi.ReadTransport;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.unix.Buffer;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoEvent;
import io.netty.channel.uring.IoUringIoHandle;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringIoHandlerConfig;
import io.netty.channel.uring.IoUringIoOps;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Batched reads through io_uring (netty 4.2's {@link IoUringIoHandler}): a batch's reads become
 * IORING_OP_READ submissions written into the ring by one task on the transport's event-loop thread
 * and passed to the kernel with one {@code io_uring_enter}; completions come back on that thread,
 * which completes each read's future. Up to {@code queueDepth} reads are in the kernel at once;
 * more wait in order. Magma's async reads (seed 000 section 6) are this: many reads in flight from
 * one thread.
 *
 * <p><b>Files.</b> io_uring reads a file descriptor, and the JDK does not expose a channel's, so
 * the transport opens each target's file itself, read-only, by its {@link ReadTarget#path() path},
 * the first time a read names that target, and keeps the descriptor for later reads of the same
 * target object. Basalt's data files are immutable once written and never replaced under their
 * name, so the two descriptors see the same file. A descriptor is closed when its file has been
 * deleted (checked about once a second, so deleted segments free their disk space), when more than
 * {@value #MAX_FILES} are open (the least recently used idle one), and at {@link #close()}. A
 * target without a path (an in-memory file) is read on the calling thread through {@link
 * ReadTarget#read}.
 *
 * <p><b>Buffers.</b> The kernel writes into a direct buffer: a direct destination directly, a heap
 * one through an aligned direct buffer taken from the store's {@link ReadBuffers} (its pool,
 * counted in its memory quota) and given back once copied out on completion. A target that reads
 * {@link ReadTarget#direct() around the page cache} (the store's {@code directReads}) is opened
 * with O_DIRECT and read in whole 4 KiB blocks into an aligned buffer, the asked bytes copied out.
 * As with the built-in transport, the destination's position advances by the bytes read, and fewer
 * bytes than asked mean the file ended.
 *
 * <p><b>Reads the page cache holds</b> (targets not read around it) are made on the submitting
 * thread: each is first tried with {@code preadv2(RWF_NOWAIT)}, which copies what the page cache
 * holds and fails with EAGAIN instead of waiting for the disk; a read it completes never goes to
 * the ring, and the rest go to the ring as above. A batch whose blocks are cached (a scan of a
 * store the page cache holds) so costs what blocking reads on its own thread cost, not two thread
 * hand-offs per read; a batch that needs the disk still has its reads in flight together. These
 * reads use descriptors of their own, shared by submitting threads and counted while in use, closed
 * (after their last read) when their file is deleted, beyond {@value #MAX_FILES}, and at {@link
 * #close()}. A kernel without RWF_NOWAIT, or {@code -D}{@value #INLINE_PROPERTY}{@code =false},
 * sends every read to the ring.
 *
 * <p><b>Failures</b> complete only their read: a file that cannot be opened, or a read the kernel
 * fails (a {@link StorageException} naming the file, the offset and the error). A read cut short
 * before the end of the file is continued. Reads submitted after {@link #close()} fail with a
 * {@link ClosedException}.
 *
 * <p>Thread-safety: {@link #submit} and {@link #close} may be called from any thread. The ring, the
 * queue, the staging buffers of reads in flight and the ring's descriptors belong to the event-loop
 * thread; the shared descriptors of reads made on submitting threads live in a concurrent map, each
 * counted while in use.
 */
public final class UringReadTransport implements ReadTransport {
  /** {@code -Dbasalt.io.uring=false} keeps the engine on its built-in transport. */
  public static final String ENABLED_PROPERTY = "basalt.io.uring";

  /**
   * {@code -Dbasalt.io.uring.inline=false} sends even the reads the page cache holds through the
   * ring.
   */
  public static final String INLINE_PROPERTY = "basalt.io.uring.inline";

  /** preadv2's flag: fail with EAGAIN rather than wait for the disk. */
  private static final int RWF_NOWAIT = 8;

  private static final int EINVAL = 22;
  private static final int ENOSYS = 38;
  private static final int EOPNOTSUPP = 95;
  private static final byte IORING_OP_READ = 22;
  private static final int O_RDONLY = 0;
  private static final int O_CLOEXEC = 02000000;

  /**
   * O_DIRECT: 040000 on x86-64, 0200000 on arm64 (and the other architectures Linux gives it that
   * value).
   */
  private static final int O_DIRECT =
      "amd64".equals(System.getProperty("os.arch"))
              || "x86_64".equals(System.getProperty("os.arch"))
          ? 040000
          : 0200000;

  /** The alignment of a direct read's offset, length and buffer. */
  private static final int ALIGN = 4096;

  private static final int EINTR = 4;
  private static final int EAGAIN = 11;

  /** Descriptors kept open at most; idle ones beyond it are closed, least recently used first. */
  static final int MAX_FILES = 256;

  private static final long SWEEP_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final int queueDepth;
  private final ReadBuffers buffers;
  private final MultiThreadIoEventLoopGroup group;
  private final IoEventLoop loop;
  private final IoRegistration registration;
  private volatile boolean closed;

  /**
   * Reads are first tried on the submitting thread with RWF_NOWAIT; cleared if the kernel refuses
   * it.
   */
  private volatile boolean inline;

  /** Descriptors of the reads made on submitting threads, by target. */
  private final ConcurrentHashMap<ReadTarget, SharedFile> shared = new ConcurrentHashMap<>();

  private final AtomicLong nextSharedSweep = new AtomicLong(System.nanoTime() + SWEEP_NANOS);

  // ---- owned by the event-loop thread ----
  private final ArrayDeque<Op> waiting = new ArrayDeque<>();
  private final Op[] inFlight;
  private final int[] freeTags;
  private int freeTop;

  /** Reads accepted and not yet completed: waiting or in flight. */
  private int outstanding;

  /** Reads in flight that hold a staging buffer: each gives it back on completion. */
  private int bouncing;

  /** Open descriptors by target, least recently used first. */
  private final LinkedHashMap<ReadTarget, OpenFile> files = new LinkedHashMap<>(16, 0.75f, true);

  private long nextSweep = System.nanoTime() + SWEEP_NANOS;
  private boolean closing;
  private final CompletableFuture<Void> drained = new CompletableFuture<>();

  /**
   * Starts a transport with {@code queueDepth} reads in flight at most.
   *
   * @throws UnsupportedOperationException naming the reason where io_uring cannot start here (not
   *     Linux, an old kernel, io_uring disabled in the kernel or by {@value #ENABLED_PROPERTY}, or
   *     no native library)
   */
  public static UringReadTransport open(int queueDepth, ReadBuffers buffers) {
    return open(queueDepth, buffers, !"false".equals(System.getProperty(INLINE_PROPERTY)));
  }

  /**
   * As {@link #open(int, ReadBuffers)}, trying reads on the submitting thread first only if {@code
   * inline}.
   */
  static UringReadTransport open(int queueDepth, ReadBuffers buffers, boolean inline) {
    if (buffers == null) throw new IllegalArgumentException("buffers must not be null");
    if (queueDepth < 1 || queueDepth > 4096) {
      throw new IllegalArgumentException("queue depth must be 1 to 4096, was " + queueDepth);
    }
    if ("false".equals(System.getProperty(ENABLED_PROPERTY))) {
      throw new UnsupportedOperationException(
          "io_uring reads are turned off (-D" + ENABLED_PROPERTY + "=false)");
    }
    if (!IoUring.isAvailable()) {
      throw new UnsupportedOperationException(
          "io_uring is not available here: " + IoUring.unavailabilityCause(),
          IoUring.unavailabilityCause());
    }
    if (Libc.UNAVAILABLE != null)
      throw new UnsupportedOperationException(
          "io_uring reads need libc (open, close) through jffi, which did not load",
          Libc.UNAVAILABLE);
    return new UringReadTransport(queueDepth, buffers, inline);
  }

  private UringReadTransport(int queueDepth, ReadBuffers buffers, boolean inline) {
    this.queueDepth = queueDepth;
    this.buffers = buffers;
    this.inline = inline;
    this.inFlight = new Op[queueDepth];
    this.freeTags = new int[queueDepth];
    for (int i = queueDepth - 1; i >= 0; i--) freeTags[freeTop++] = i;
    int ring =
        Math.max(
            32, Integer.highestOneBit(queueDepth - 1 | 1) << 1); // a power of two >= queueDepth
    group =
        new MultiThreadIoEventLoopGroup(
            1,
            r -> {
              Thread t = new Thread(r, "basalt-uring-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            },
            IoUringIoHandler.newFactory(new IoUringIoHandlerConfig().setRingSize(ring)));
    try {
      loop = (IoEventLoop) group.next();
      registration = loop.register(new Handle()).syncUninterruptibly().getNow();
    } catch (RuntimeException | Error e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).syncUninterruptibly();
      throw e;
    }
  }

  @Override
  public String name() {
    return "io_uring";
  }

  /** The most reads this transport has in the kernel at once. */
  public int queueDepth() {
    return queueDepth;
  }

  @Override
  public void submit(List<Read> reads) {
    List<Read> local = null;
    List<Op> ops = new ArrayList<>(reads.size());
    for (Read r : reads) {
      if (r.target().path() == null) {
        if (local == null) local = new ArrayList<>();
        local.add(r);
      } else if (!inline || r.target().direct() || closed || !readCached(r)) {
        ops.add(new Op(r));
      }
    }
    if (!ops.isEmpty()) {
      if (closed) {
        for (Op op : ops) op.read.result().completeExceptionally(closedFailure());
      } else {
        try {
          loop.execute(() -> accept(ops));
        } catch (RejectedExecutionException e) {
          for (Op op : ops) op.read.result().completeExceptionally(closedFailure());
        }
      }
    }
    if (local != null) {
      for (Read r : local) r.readNow();
    }
  }

  /**
   * Makes {@code r} on this thread if the page cache holds all of its bytes, and completes it;
   * false, having completed nothing, when it does not (or the read cannot be tried here): the ring
   * makes it.
   */
  private boolean readCached(Read r) {
    ByteBuffer dst = r.dst();
    int want = dst.remaining();
    if (want == 0) return false;
    SharedFile f = sharedFile(r.target());
    if (f == null) return false;
    long n;
    try {
      ByteBuffer stage;
      try {
        stage = dst.isDirect() ? null : buffers.tryTake(want);
      } catch (RuntimeException
          | OutOfMemoryError e) { // no direct memory for it: the ring fails this read alone
        return false;
      }
      if (stage == null && !dst.isDirect())
        return false; // the pool is busy: the ring waits for a buffer
      try {
        long address =
            stage != null
                ? Buffer.memoryAddress(stage)
                : Buffer.memoryAddress(dst) + dst.position();
        n = Libc.preadv2(f.fd, address, want, r.position(), RWF_NOWAIT);
        if (n != want) {
          if (n < 0) {
            int errno = Libc.errno();
            if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
              inline = false; // not on this kernel
          }
          return false; // not all cached (EAGAIN), cut short by the end of the file, or failed: the
          // ring reads it
        }
        if (stage != null) dst.put(stage.duplicate().limit(want).position(0));
        else dst.position(dst.position() + want);
      } finally {
        if (stage != null) buffers.give(stage);
      }
    } catch (LinkageError e) { // jffi refused the call
      inline = false;
      return false;
    } finally {
      f.release();
    }
    r.result().complete(want);
    return true;
  }

  /**
   * {@code target}'s shared descriptor, acquired (release it), or null when none can be had now.
   */
  private SharedFile sharedFile(ReadTarget target) {
    long now = System.nanoTime();
    long sweepAt = nextSharedSweep.get();
    if (now - sweepAt >= 0 && nextSharedSweep.compareAndSet(sweepAt, now + SWEEP_NANOS))
      sweepShared();
    SharedFile f = shared.get(target);
    if (f == null) {
      Path path = target.path();
      int fd = openReadOnly(path.toAbsolutePath().toString(), false);
      if (fd < 0) return null; // the ring's own open reports the error with the read
      SharedFile made = new SharedFile(fd, path);
      f = shared.putIfAbsent(target, made);
      if (f == null) {
        f = made;
        if (shared.size() > MAX_FILES) evictShared(target);
      } else {
        made.release(); // another thread opened it first
      }
      if (closed) { // close() may have swept the map before the put: leave nothing open after it
        dropShared(target, f);
        return null;
      }
    }
    return f.acquire() ? f : null;
  }

  /**
   * Closes shared descriptors of deleted files (after their last read), so their space is freed.
   */
  private void sweepShared() {
    shared.forEach(
        (target, f) -> {
          if (!Files.exists(f.path)) dropShared(target, f);
        });
  }

  /** Drops shared descriptors until at most {@value #MAX_FILES} are open, never {@code keep}'s. */
  private void evictShared(ReadTarget keep) {
    for (var it = shared.entrySet().iterator(); shared.size() > MAX_FILES && it.hasNext(); ) {
      var e = it.next();
      if (!e.getKey().equals(keep)) dropShared(e.getKey(), e.getValue());
    }
  }

  private void dropShared(ReadTarget target, SharedFile f) {
    if (shared.remove(target, f)) f.release();
  }

  /**
   * Stops taking reads, waits for those taken to complete, then closes every descriptor and the
   * ring.
   */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    shared.forEach(this::dropShared);
    try {
      loop.execute(
          () -> {
            closing = true;
            if (outstanding == 0) drained.complete(null);
          });
      drained.get(30, TimeUnit.SECONDS);
    } catch (RejectedExecutionException
        | java.util.concurrent.ExecutionException
        | java.util.concurrent.TimeoutException e) {
      // the loop is gone (its thread died) or a read hangs: shut down regardless
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      loop.submit(
              () -> {
                for (OpenFile f : files.values()) Libc.close(f.fd);
                files.clear();
                registration.cancel();
              })
          .syncUninterruptibly();
    } catch (RejectedExecutionException e) {
      // the loop is gone; its descriptors close with the process
    }
    group.shutdownGracefully(0, 5, TimeUnit.SECONDS).syncUninterruptibly();
  }

  private static ClosedException closedFailure() {
    return new ClosedException("the io_uring read transport is closed");
  }

  // ---- the event-loop thread
  // ---------------------------------------------------------------------------

  private void accept(List<Op> ops) {
    if (closing) {
      for (Op op : ops) op.read.result().completeExceptionally(closedFailure());
      return;
    }
    outstanding += ops.size();
    waiting.addAll(ops);
    pump();
    long now = System.nanoTime();
    if (now - nextSweep >= 0) {
      nextSweep = now + SWEEP_NANOS;
      sweep();
    }
  }

  /**
   * Starts waiting reads while there is room in the queue and, for those that stage through a
   * buffer, a pooled buffer to stage through: while reads in flight hold buffers, a read waits for
   * one of them to give its buffer back rather than take one beyond the pool; with none, it takes
   * one regardless, so reads always go on.
   */
  private void pump() {
    while (freeTop > 0 && !waiting.isEmpty()) {
      Op op = waiting.peek();
      boolean empty = !op.read.dst().hasRemaining();
      if (!empty && op.bounce == null) {
        layout(op);
        if (!op.read.dst().isDirect() || op.read.target().direct()) { // it stages through a buffer
          try {
            op.bounce = bouncing > 0 ? buffers.tryTake(op.span) : buffers.take(op.span);
          } catch (RuntimeException
              | Error e) { // no memory for it: this read fails, the rest go on
            waiting.poll();
            fail(op, e);
            continue;
          }
          if (op.bounce == null) return; // a read in flight gives its buffer back and pumps again
        }
      }
      waiting.poll();
      if (empty) { // nothing to read: no file, no slot
        done(op);
        op.read.result().complete(0);
        continue;
      }
      try {
        op.file = file(op.read.target());
      } catch (RuntimeException | Error e) { // cannot open: this read fails, the rest go on
        fail(op, e);
        continue;
      }
      op.file.reads++;
      try {
        start(op);
      } catch (RuntimeException
          | Error e) { // never leave a read uncompleted: it would hang its caller
        if (op.tag >= 0) release(op);
        else op.file.reads--;
        op.tag = -2; // counted back already
        fail(op, e);
      }
    }
  }

  /**
   * Where {@code op} reads: its asked bytes, or for a direct target (opened with O_DIRECT, as
   * {@link #file} opens it) the whole aligned blocks around them, the asked bytes {@code skip} in.
   */
  private static void layout(Op op) {
    op.want = op.read.dst().remaining();
    if (op.read.target().direct()) {
      op.start = op.read.position() & -(long) ALIGN;
      op.skip = (int) (op.read.position() - op.start);
      op.span = (op.skip + op.want + ALIGN - 1) & -ALIGN;
    } else {
      op.start = op.read.position();
      op.span = op.want;
    }
  }

  /** Takes {@code op}'s slot and issues its read, into its staging buffer if it has one. */
  private void start(Op op) {
    ByteBuffer dst = op.read.dst();
    op.address =
        op.bounce != null
            ? Buffer.memoryAddress(op.bounce)
            : Buffer.memoryAddress(dst) + dst.position();
    op.tag = freeTags[--freeTop];
    inFlight[op.tag] = op;
    if (op.bounce != null) {
      op.holds = true;
      bouncing++;
    }
    issue(op);
  }

  /**
   * Writes the read of the rest of {@code op} into the ring (the kernel gets it when this task
   * ends).
   */
  private void issue(Op op) {
    long id =
        registration.submit(
            new IoUringIoOps(
                IORING_OP_READ,
                (byte) 0,
                (short) 0,
                op.file.fd,
                op.start + op.done,
                op.address + op.done,
                op.span - op.done,
                0,
                op.tag,
                (short) 0,
                (short) 0,
                0,
                0L));
    if (id == 0) { // the registration is gone: only after close, which waits for reads first
      release(op);
      fail(op, closedFailure());
    }
  }

  private void completed(int tag, int res) {
    Op op = tag >= 0 && tag < inFlight.length ? inFlight[tag] : null;
    if (op == null) return; // not a read of ours
    try {
      completed(op, res);
    } catch (RuntimeException
        | Error e) { // never leave a read uncompleted: it would hang its caller
      if (inFlight[tag] == op) {
        release(op);
        op.tag = -2;
        fail(op, e);
      }
      pump();
    }
  }

  private void completed(Op op, int res) {
    if (res == -EINTR || res == -EAGAIN) {
      issue(op);
      return;
    }
    if (res < 0) {
      release(op);
      fail(
          op,
          new StorageException(
              "io_uring "
                  + (op.file.direct ? "direct " : "")
                  + "read of "
                  + (op.span - op.done)
                  + " bytes at offset "
                  + (op.start + op.done)
                  + " of "
                  + op.file.path
                  + " failed: "
                  + Libc.strerror(-res)
                  + " (errno "
                  + -res
                  + ")"));
    } else if (res > 0
        && op.done + res < op.span
        && (!op.file.direct || (op.done + res) % ALIGN == 0)) {
      op.done += res; // cut short before the end: read the rest
      issue(op);
    } else {
      op.done += res; // all of it, or the end of the file
      release(op);
      complete(op);
    }
    pump();
  }

  /** Frees the read's slot, descriptor use and bounce buffer (after copying from it). */
  private void release(Op op) {
    inFlight[op.tag] = null;
    freeTags[freeTop++] = op.tag;
    op.file.reads--;
  }

  private void complete(Op op) {
    ByteBuffer dst = op.read.dst();
    int n =
        Math.max(
            0,
            Math.min(
                op.want, op.done - op.skip)); // a direct read past the end may stop short of skip
    if (op.bounce != null) {
      dst.put(op.bounce.duplicate().limit(op.skip + n).position(op.skip));
      recycle(op);
    } else {
      dst.position(dst.position() + n);
    }
    done(op);
    op.read.result().complete(n);
  }

  private void fail(Op op, Throwable t) {
    if (op.bounce != null) recycle(op);
    if (op.file != null && op.tag == -1) op.file.reads--; // failed before it was issued
    done(op);
    op.read.result().completeExceptionally(t);
  }

  private void recycle(Op op) {
    ByteBuffer b = op.bounce;
    op.bounce = null;
    if (op.holds) {
      op.holds = false;
      bouncing--;
    }
    buffers.give(b);
  }

  private void done(Op op) {
    outstanding--;
    if (closing && outstanding == 0) drained.complete(null);
  }

  /** The open descriptor of {@code target}, opening its file on first use. */
  private OpenFile file(ReadTarget target) {
    OpenFile f = files.get(target);
    if (f != null) return f;
    Path path = target.path();
    String p = path.toAbsolutePath().toString();
    boolean direct = target.direct();
    int fd = openReadOnly(p, direct);
    if (fd < 0) {
      int errno = Libc.errno();
      throw new StorageException(
          "open of "
              + p
              + " for io_uring "
              + (direct ? "direct " : "")
              + "reads failed: "
              + Libc.strerror(errno)
              + " (errno "
              + errno
              + ")");
    }
    f = new OpenFile(fd, path, direct);
    files.put(target, f);
    if (files.size() > MAX_FILES) {
      Iterator<OpenFile> it = files.values().iterator();
      while (files.size() > MAX_FILES && it.hasNext()) {
        OpenFile old = it.next();
        if (old.reads == 0 && old != f) {
          Libc.close(old.fd);
          it.remove();
        }
      }
    }
    return f;
  }

  /** A read-only descriptor of {@code path} (O_DIRECT if {@code direct}), or -1 with errno set. */
  private static int openReadOnly(String path, boolean direct) {
    int fd;
    do {
      fd = Libc.open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    } while (fd < 0 && Libc.errno() == EINTR);
    return fd;
  }

  /** Closes the idle descriptors of files that have been deleted, so their disk space is freed. */
  private void sweep() {
    for (Iterator<OpenFile> it = files.values().iterator(); it.hasNext(); ) {
      OpenFile f = it.next();
      if (f.reads == 0 && !Files.exists(f.path)) {
        Libc.close(f.fd);
        it.remove();
      }
    }
  }

  /** Descriptors open now (for tests; exact only when no batch is being accepted). */
  int openFiles() {
    return loop.submit(files::size).syncUninterruptibly().getNow();
  }

  /** Runs the sweep now (for tests). */
  void sweepNow() {
    loop.submit(this::sweep).syncUninterruptibly();
    sweepShared();
  }

  /**
   * Whether reads are still tried on submitting threads (off by request, or where the kernel
   * refused).
   */
  boolean inlineReads() {
    return inline;
  }

  /** Descriptors open now for reads made on submitting threads (for tests). */
  int sharedFiles() {
    return shared.size();
  }

  /** One read; every field but {@code read} belongs to the event-loop thread. */
  private static final class Op {
    final Read read;
    OpenFile file;
    ByteBuffer bounce;
    long address;

    /**
     * Bytes asked; the file offset and length read (aligned for a direct file); bytes before the
     * asked ones.
     */
    int want;

    long start;
    int span;
    int skip;

    /** Bytes read into the buffer so far. */
    int done;

    int tag = -1;

    /** Counted in {@code bouncing}: in flight with its staging buffer. */
    boolean holds;

    Op(Read read) {
      this.read = read;
    }
  }

  /**
   * A descriptor that submitting threads read through: counted while in use, closed by the last
   * release once the map has let go of it, so no read ever goes to a closed (or reused) descriptor.
   */
  private static final class SharedFile {
    final int fd;
    final Path path;

    /** The map's hold (1) plus reads using it; 0 once closed. */
    private final AtomicInteger refs = new AtomicInteger(1);

    SharedFile(int fd, Path path) {
      this.fd = fd;
      this.path = path;
    }

    boolean acquire() {
      for (int n = refs.get(); n > 0; n = refs.get()) {
        if (refs.compareAndSet(n, n + 1)) return true;
      }
      return false;
    }

    void release() {
      if (refs.decrementAndGet() == 0) Libc.close(fd);
    }
  }

  private static final class OpenFile {
    final int fd;
    final Path path;

    /** Opened with O_DIRECT: reads of whole aligned blocks into aligned buffers only. */
    final boolean direct;

    /** Reads in flight on it: it is not closed while any is. */
    int reads;

    OpenFile(int fd, Path path, boolean direct) {
      this.fd = fd;
      this.path = path;
      this.direct = direct;
    }
  }

  /** The ring's completions for this transport, on the event-loop thread. */
  private final class Handle implements IoUringIoHandle {
    @Override
    public void handle(IoRegistration reg, IoEvent event) {
      IoUringIoEvent e = (IoUringIoEvent) event; // reused by netty: read it now
      completed((int) e.userData(), e.res());
    }

    @Override
    public void close() {
      // netty calls this when the loop shuts down with the handle registered; close() cancelled it
      // before
    }
  }
}
