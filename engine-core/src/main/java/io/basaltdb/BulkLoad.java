package io.basaltdb;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Writes many puts and deletes into a store at a fraction of the cost of batches through the
 * write-ahead log: a restore, an import, a first load. Made by {@link Basalt#bulkLoad}.
 *
 * <p>The load gathers its writes into chunks of {@code chunkBytes}: their keys and values, and
 * {@value #OPERATION_OVERHEAD} bytes each for the heap a write takes beside them. A full chunk is
 * sorted by key on the caller's thread (keeping the newest write of each key), then handed to the
 * load's own thread, which writes it straight to its keyspaces' log segments (in key order) and to
 * a new level-0 table of the key index, then commits them (the path of a batch over {@link
 * Options#walSkipBytes}, Magma section 8.1): no WAL record, no write cache, no flush. Meanwhile the
 * caller fills the next chunk; it waits only when that one is full too. The last, partial chunk is
 * written by {@link #flush} as a {@link WriteBatch} of the same writes would be (through the WAL,
 * unless it is over {@link Options#walSkipBytes}).
 *
 * <p><b>What readers see.</b> Each chunk is one atomic write, as a {@link WriteBatch}: a reader or
 * snapshot sees all of it or none, and it is newer than every write committed before it. Within the
 * load, a later write of a key wins. Chunks are applied one at a time, in order: the load as a
 * whole is not atomic, and its writes become visible chunk by chunk. Writes of other threads made
 * while a load runs are ordered with its chunks as the store commits them (a chunk first waits for
 * the write caches to be flushed, so concurrent writers make a load slower, not wrong).
 *
 * <p><b>Acknowledgement.</b> A put or delete here acknowledges nothing: {@link #flush} (or {@link
 * #close}) returning does, for every write made before it, durable as {@link Options#syncMode}
 * makes any write (a full chunk's files are synced before it is committed). If a chunk's write
 * fails, the chunks before it stay applied and every write after it is not; the failing chunk
 * itself is applied whole or not at all ({@link #inDoubtWrites}: its write may fail after its files
 * were committed). The failure is thrown by the next call, {@link #appliedWrites} then says how
 * many of the load's writes were surely applied (the first that many, in the order they were made),
 * and the load can only be closed.
 *
 * <p>Memory: up to three chunks' worth on the Java heap: the one filling, the one being written,
 * and that one's sorted entries (a chunk is copied in key order as it is handed over).
 *
 * <p>Thread-safety: one thread uses a load at a time. The store must outlive it: closing the store
 * first fails the load's next chunk with {@link ClosedException}.
 */
public final class BulkLoad implements AutoCloseable {
  /** The default {@code chunkBytes} of {@link Basalt#bulkLoad()}: 8 MiB. */
  public static final long DEFAULT_CHUNK_BYTES = 8L << 20;

  /** The least {@code chunkBytes}: 64 KiB. */
  public static final long MIN_CHUNK_BYTES = 64L << 10;

  /** The most {@code chunkBytes}: 1 GiB (a chunk is one batch, which holds at most 2 GiB). */
  public static final long MAX_CHUNK_BYTES = 1L << 30;

  private final Basalt db;
  private final long chunkBytes;

  /** The chunk being filled, sized as the last one so it fills without growing; null if none. */
  private WriteBatch filling;

  /** Operations of the last full chunk: the next one's room. */
  private int chunkOps = 1024;

  /** Writes made since the load began, and of them the ones applied by the chunks written. */
  private long made;

  private volatile long applied;

  /** Writes of the chunk whose write failed (0 if none): applied all or none. */
  private volatile long inDoubt;

  /** The chunk being written, or null. */
  private Future<?> inFlight;

  /** The load's writer thread: one chunk at a time; it exits a second after its last chunk. */
  private ThreadPoolExecutor writer;

  /** A chunk's write failed: thrown by every call but {@link #close}. */
  private BasaltException failure;

  private boolean closed;

  BulkLoad(Basalt db, long chunkBytes) {
    if (chunkBytes < MIN_CHUNK_BYTES || chunkBytes > MAX_CHUNK_BYTES) {
      throw new InvalidArgumentException(
          "a bulk load's chunkBytes of "
              + chunkBytes
              + " is outside ["
              + MIN_CHUNK_BYTES
              + ", "
              + MAX_CHUNK_BYTES
              + "]");
    }
    this.db = db;
    this.chunkBytes = chunkBytes;
  }

  private WriteBatch chunk() {
    if (filling == null) filling = newChunk();
    return filling;
  }

  /** An empty chunk with room for {@link #chunkOps} operations and a little over chunkBytes. */
  private WriteBatch newChunk() {
    return new WriteBatch(chunkOps, chunkBytes + chunkBytes / 16);
  }

  /** Puts {@code value} under {@code key} in {@code keyspace}; both arrays are copied now. */
  public BulkLoad put(Keyspace keyspace, byte[] key, byte[] value) {
    return put(keyspace, key, value, 0);
  }

  /**
   * As {@link #put(Keyspace, byte[], byte[])}, a value that expires at {@code expiresAtMillis} (ms
   * since the epoch by {@link Options#clock}; 0: never), as {@link Keyspace#put(byte[], byte[],
   * long)}.
   *
   * @throws InvalidArgumentException for a null or oversized key or value, a negative expiry, or a
   *     keyspace of another store: nothing is added
   */
  public BulkLoad put(Keyspace keyspace, byte[] key, byte[] value, long expiresAtMillis) {
    checkUsable();
    checkKeyspace(keyspace);
    Keys.checkValue(value, db.maxValueSize);
    chunk().put(keyspace, key, value, expiresAtMillis);
    added();
    return this;
  }

  /** Deletes {@code key} from {@code keyspace}. */
  public BulkLoad delete(Keyspace keyspace, byte[] key) {
    checkUsable();
    checkKeyspace(keyspace);
    chunk().delete(keyspace, key);
    added();
    return this;
  }

  /**
   * Writes what the load holds and waits until every write made before the call is applied and
   * durable (see the class comment).
   *
   * @throws BasaltException if a chunk's write failed (now or before): see {@link #appliedWrites}
   */
  public void flush() {
    checkUsable();
    if (filling != null && filling.size() > 0) submit(false);
    awaitInFlight();
    if (failure != null) throw failed();
  }

  /**
   * How many of the load's writes are applied (the first that many, in the order they were made):
   * all before the last {@link #flush} that returned, and after a failure, exactly those of the
   * chunks written before the one that failed.
   */
  public long appliedWrites() {
    return applied;
  }

  /**
   * After a failure, the writes of the chunk that failed (the {@link #appliedWrites} after the
   * first {@code appliedWrites}): the store holds all of them or none. A chunk's write can fail
   * after its files were committed (as a {@link WriteBatch} that skips the WAL can), and a reopen
   * then finds it; 0 without a failure.
   */
  public long inDoubtWrites() {
    return inDoubt;
  }

  /** Writes made to the load so far (applied or not). */
  public long writes() {
    return made;
  }

  /**
   * {@link #flush}es the load and ends it; its thread exits. A load that failed is ended and its
   * failure thrown again, so no caller takes a failed load's close for success. A second close does
   * nothing.
   *
   * @throws BasaltException as {@link #flush}
   */
  @Override
  public void close() {
    if (closed) return;
    try {
      flush();
    } finally {
      closed = true;
      filling = null;
      awaitInFlight(); // a flush that threw may leave none; a failed check may leave one
      if (writer != null) writer.shutdown();
    }
  }

  /**
   * Heap a write takes beyond its key and value while its chunk is held and written (its slots in
   * the chunk and its sorted copy, and the entry the writer builds for it), counted toward {@code
   * chunkBytes}: a chunk of small records holds fewer of them.
   */
  public static final int OPERATION_OVERHEAD = 96;

  private void added() {
    made++;
    if (filling.bytes() + (long) OPERATION_OVERHEAD * filling.size() >= chunkBytes) submit(true);
  }

  /**
   * Hands the filling chunk to the writer thread, once the chunk before it is written; {@code
   * full}: it skips the WAL whatever its size.
   */
  private void submit(boolean full) {
    // Sorted here, on the caller's thread, while the writer writes the chunk before: the writer
    // then takes the operations in order (a chunk's writes get their seqnos in key order).
    int writes = filling.size(); // the chunk's writes, overwritten ones included
    WriteBatch chunk = filling.newestInKeyOrder();
    if (full) chunkOps = Math.max(chunkOps, writes + writes / 16);
    filling = null;
    chunk.batch.skipsWal = full;
    awaitInFlight();
    if (failure != null) throw failed();
    if (writer == null) {
      writer =
          new ThreadPoolExecutor(
              1,
              1,
              1,
              TimeUnit.SECONDS,
              new LinkedBlockingQueue<>(),
              r -> {
                Thread t = new Thread(r, "basalt-bulk-load");
                t.setDaemon(true);
                return t;
              });
      writer.allowCoreThreadTimeOut(true);
    }
    inFlight =
        writer.submit(
            () -> {
              try {
                db.write(chunk);
              } catch (RuntimeException | Error e) {
                inDoubt = writes;
                throw e;
              }
              applied += writes; // only this thread writes it, one chunk at a time
            });
  }

  /** Waits for the chunk in flight, if any; its failure becomes the load's. */
  private void awaitInFlight() {
    Future<?> f = inFlight;
    if (f == null) return;
    boolean interrupted = false;
    try {
      while (true) {
        try {
          f.get();
          break;
        } catch (InterruptedException e) {
          interrupted = true; // the chunk's write is bounded: finish waiting, keep the interrupt
        } catch (ExecutionException e) {
          Throwable c = e.getCause();
          if (c instanceof ClosedException closedStore) {
            failure = closedStore;
          } else if (c instanceof BasaltException b) {
            failure = b;
          } else {
            failure = new BasaltException("a bulk load's chunk failed: " + c, c);
          }
          break;
        }
      }
    } finally {
      inFlight = null;
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  private void checkUsable() {
    if (closed) throw new InvalidArgumentException("the bulk load is closed");
    if (failure != null) throw failed();
  }

  /** The load's failure, thrown on the caller's thread: the same kind, this call's stack. */
  private BasaltException failed() {
    String m =
        "a chunk of this bulk load failed, after "
            + applied
            + " of its writes were applied: "
            + failure.getMessage();
    BasaltException e =
        failure instanceof ClosedException ? new ClosedException(m) : new BasaltException(m);
    e.initCause(failure);
    return e;
  }

  private void checkKeyspace(Keyspace keyspace) {
    if (keyspace != null && keyspace.db != db) {
      throw new InvalidArgumentException(
          "keyspace '" + keyspace.name() + "' belongs to another store; nothing was added");
    }
  }
}
