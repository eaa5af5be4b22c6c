package io.basaltdb;

import io.basaltdb.internal.engine.writecache.Batch;

/**
 * A named, ordered map of byte keys to byte values inside a {@link Basalt} store (like a vBucket or
 * a column family). Keys sort as unsigned bytes; keys are at most 64 KiB, values at most {@link
 * Options#maxValueSize}; empty keys and values are allowed.
 *
 * <p>Thread-safety: every method may be called from any thread. After the keyspace is dropped or
 * the store closed, every call throws {@link ClosedException}.
 */
public final class Keyspace {
  final Basalt db;
  final int id;
  private final String name;

  Keyspace(Basalt db, int id, String name) {
    this.db = db;
    this.id = id;
    this.name = name;
  }

  public String name() {
    return name;
  }

  /**
   * Sets {@code key} to {@code value}; durable when it returns, as {@link Options#syncMode} says.
   */
  public void put(byte[] key, byte[] value) {
    put(key, value, 0);
  }

  /**
   * Sets {@code key} to {@code value} until {@code expiresAtMillis} (ms since the epoch, by the
   * store's {@link Options#clock}; 0: never), Magma's document expiry (seed 000 section 7.1). From
   * that instant on (at it, not after) the key reads as absent: gets, scans and snapshots taken
   * from then on, and the change feed, which reports the expiry as a deletion at the put's seqno.
   * Its space is reclaimed lazily: key index compaction drops an expired record as it drops a
   * tombstone, and garbage collection then reclaims its document ({@link Options#expiryCheckMillis}
   * compacts tables whose expired share passes {@link Options#expiryCompactionRatio}; a hashed
   * keyspace's expiry sweep removes it from the trie instead). A time already past is allowed: the
   * put is then invisible at once. Keys written with an expiry are not counted by {@link
   * #itemCount}.
   *
   * @throws InvalidArgumentException if {@code expiresAtMillis} is negative, or as {@link
   *     #put(byte[], byte[])}
   */
  public void put(byte[] key, byte[] value, long expiresAtMillis) {
    Keys.checkKey(key);
    Keys.checkValue(value, db.maxValueSize);
    Keys.checkExpiry(expiresAtMillis);
    Batch b = threadBatch();
    try {
      b.add(id, Batch.PUT, key, value, expiresAtMillis);
      db.engine.write(b);
    } finally {
      b.clear(THREAD_BATCH_BYTES);
    }
  }

  /**
   * Each thread's batch for its single puts and deletes, reused so that they allocate nothing on
   * the heap.
   */
  private static final ThreadLocal<Batch> THREAD_BATCH =
      ThreadLocal.withInitial(() -> new Batch(1));

  /** Bytes of keys and values a thread's batch keeps between its operations. */
  private static final int THREAD_BATCH_BYTES = 64 * 1024;

  /**
   * This thread's batch for one operation, empty; a new one if it is in use (a write made from
   * inside one), and a fresh thread batch if a failed write abandoned the old one.
   */
  private static Batch threadBatch() {
    Batch b = THREAD_BATCH.get();
    if (b.isAbandoned()) THREAD_BATCH.set(b = new Batch(1));
    return b.count() == 0 ? b : new Batch(1);
  }

  /** Removes {@code key} (a no-op if absent); durable when it returns. */
  public void delete(byte[] key) {
    Keys.checkKey(key);
    Batch b = threadBatch();
    try {
      b.add(id, Batch.DELETE, key, null);
      db.engine.write(b);
    } finally {
      b.clear(THREAD_BATCH_BYTES);
    }
  }

  /** The current value of {@code key}, or null. */
  public byte[] get(byte[] key) {
    Keys.checkKey(key);
    return db.engine.get(id, key);
  }

  /**
   * The current value of the key between {@code key}'s position and limit, copied into {@code
   * value}: the zero-copy form of {@link #get(byte[])}, for heap and direct buffers alike. Nothing
   * is allocated on the heap when the value is served from memory (the write cache, or the block
   * cache once it holds the data), keys of up to 256 bytes.
   *
   * <p>If the value fits in {@code value.remaining()}, it is copied to {@code value} at its
   * position and the limit is set to the value's end, the position staying where it was: the buffer
   * then holds exactly the value, ready to read. If it does not fit, {@code value} is left as it
   * was; the returned length tells how much room a second call needs. {@code key}'s position and
   * limit never change.
   *
   * @return the value's length, or -1 if the key is absent
   * @throws InvalidArgumentException if a buffer is null, {@code value} is read-only, or the key is
   *     too long
   */
  public int get(java.nio.ByteBuffer key, java.nio.ByteBuffer value) {
    Keys.checkKey(key);
    Keys.checkOutput(value);
    return db.engine.get(id, key, value);
  }

  /**
   * As {@link #put(byte[], byte[])} with the bytes between each buffer's position and limit (heap
   * or direct buffers; their positions and limits do not change). The bytes are copied into the
   * write before it returns, so the caller may reuse the buffers at once.
   */
  public void put(java.nio.ByteBuffer key, java.nio.ByteBuffer value) {
    put(key, value, 0);
  }

  /**
   * As {@link #put(byte[], byte[], long)} with the bytes between each buffer's position and limit.
   */
  public void put(java.nio.ByteBuffer key, java.nio.ByteBuffer value, long expiresAtMillis) {
    Keys.checkKey(key);
    Keys.checkValue(value, db.maxValueSize);
    Keys.checkExpiry(expiresAtMillis);
    Batch b = threadBatch();
    try {
      b.add(id, Batch.PUT, key, value, expiresAtMillis);
      db.engine.write(b);
    } finally {
      b.clear(THREAD_BATCH_BYTES);
    }
  }

  /** As {@link #delete(byte[])} with the bytes between {@code key}'s position and limit. */
  public void delete(java.nio.ByteBuffer key) {
    Keys.checkKey(key);
    Batch b = threadBatch();
    try {
      b.add(id, Batch.DELETE, key, null, 0);
      db.engine.write(b);
    } finally {
      b.clear(THREAD_BATCH_BYTES);
    }
  }

  /**
   * The values of {@code keys}, in their order, null where a key is absent: a batched get. The key
   * index blocks and then the documents of all the keys are read together, many reads in flight at
   * once ({@code Options.readQueueDepth}), which is much faster than one get after another when the
   * data is on disk. Each value is what {@link #get} would return; for one consistent view of all
   * keys, use a snapshot. {@link Basalt#getAll} does the same for keys of several keyspaces.
   *
   * @throws InvalidArgumentException if the list or a key is null or a key is too long; nothing is
   *     read
   */
  public java.util.List<byte[]> getAll(java.util.List<byte[]> keys) {
    if (keys == null) throw new InvalidArgumentException("keys must not be null");
    for (byte[] k : keys) Keys.checkKey(k);
    int[] ids = new int[keys.size()];
    java.util.Arrays.fill(ids, id);
    return db.engine.getAll(ids, keys);
  }

  /**
   * A cursor over the keys in {@code [from, to)} (null bounds are open) as of now; it holds a
   * snapshot of its own until closed.
   */
  public Cursor scan(byte[] from, byte[] to) {
    checkBound(from, "from");
    checkBound(to, "to");
    return new Cursor(db.engine.scan(id, from, to));
  }

  /**
   * As {@link #scan(byte[], byte[])}, reading the values of {@code readAhead} keys at a time
   * together (their documents' reads in flight at once, as {@link #getAll} reads them), for a
   * caller that knows about how many keys it will take: a scan of 100 keys with {@code readAhead}
   * 100 reads its documents in one go. The default cursor starts at 1 and doubles its read-ahead up
   * to 32 as it goes. Values the write cache holds are never read from disk, whatever the
   * read-ahead.
   *
   * @throws InvalidArgumentException if {@code readAhead} is not between 1 and 4096, or a bound is
   *     too long
   */
  public Cursor scan(byte[] from, byte[] to, int readAhead) {
    checkBound(from, "from");
    checkBound(to, "to");
    return new Cursor(db.engine.scan(id, from, to, checkReadAhead(readAhead)));
  }

  /**
   * A cursor over the keys in {@code [from, to)} (null bounds are open; empty if {@code from >=
   * to}) in descending order, as of now: the first key it returns is the greatest below {@code to},
   * the last the least at or above {@code from}. It holds a snapshot of its own until closed, as
   * {@link #scan(byte[], byte[])}.
   *
   * @throws InvalidArgumentException if a bound is too long
   */
  public Cursor reverseScan(byte[] from, byte[] to) {
    checkBound(from, "from");
    checkBound(to, "to");
    return new Cursor(db.engine.reverseScan(id, from, to, 0));
  }

  /**
   * As {@link #reverseScan(byte[], byte[])}, reading the values of {@code readAhead} keys at a time
   * together, as {@link #scan(byte[], byte[], int)} does.
   *
   * @throws InvalidArgumentException if {@code readAhead} is not between 1 and 4096, or a bound is
   *     too long
   */
  public Cursor reverseScan(byte[] from, byte[] to, int readAhead) {
    checkBound(from, "from");
    checkBound(to, "to");
    return new Cursor(db.engine.reverseScan(id, from, to, checkReadAhead(readAhead)));
  }

  private static int checkReadAhead(int readAhead) {
    if (readAhead < 1 || readAhead > 4096) {
      throw new InvalidArgumentException("readAhead must be between 1 and 4096, was " + readAhead);
    }
    return readAhead;
  }

  /**
   * The number of keys this keyspace holds, exactly: every write acknowledged before the call
   * counted (Magma section 7.2). Kept with {@link Options#exactItemCounts} (off by default: a key
   * lookup per write), durable across crashes.
   *
   * @throws UnsupportedOperationException if the store was opened with {@code
   *     exactItemCounts(false)}
   */
  public long itemCount() {
    return db.engine.itemCount(id);
  }

  /**
   * The number of keys this keyspace holds, estimated without a key lookup, as RocksDB's {@code
   * rocksdb.estimate-num-keys} is: exact with {@link Options#exactItemCounts}; otherwise exact for
   * a keyspace only ever inserted into, high by the keys written more than once that no compaction
   * has merged yet, low by deletes of absent keys and of keys put shortly before (a tombstone
   * counts -1 until compaction drops it at the bottom level). Costs no I/O and nothing on the write
   * path.
   */
  public long approximateItemCount() {
    return db.engine.approximateItemCount(id);
  }

  /**
   * This keyspace's changes with seqnos from {@code fromSeqno} to {@code toSeqno} (both included;
   * {@link ChangeFeed#NOW} for "up to now"), in seqno order, as of a snapshot the feed takes and
   * releases on close: {@link ChangeFeed.Mode#FAST}. See {@link ChangeFeed} for what it guarantees.
   *
   * @throws InvalidArgumentException if a seqno is negative or {@code fromSeqno} is past the
   *     store's last write plus one
   * @throws ChangesPurgedException if deletions from {@code fromSeqno} on may have been purged
   */
  public ChangeFeed changes(long fromSeqno, long toSeqno) {
    return changes(fromSeqno, toSeqno, ChangeFeed.Mode.FAST);
  }

  /** As {@link #changes(long, long)}, in the given mode. */
  public ChangeFeed changes(long fromSeqno, long toSeqno, ChangeFeed.Mode mode) {
    if (mode == null) throw new InvalidArgumentException("mode must not be null");
    return new ChangeFeed(
        db.engine.changes(null, id, fromSeqno, toSeqno, mode == ChangeFeed.Mode.EXACT));
  }

  /**
   * Hands each change of {@link #changes(long, long)} to {@code consumer}, in seqno order, and
   * returns the feed's {@link ChangeFeed#endSeqno()}: the next call starts at that plus one. An
   * exception the consumer throws stops the feed and propagates; the consumer's last seqno is then
   * its resume point.
   */
  public long forEachChange(
      long fromSeqno, long toSeqno, java.util.function.Consumer<? super Change> consumer) {
    if (consumer == null) throw new InvalidArgumentException("consumer must not be null");
    try (ChangeFeed feed = changes(fromSeqno, toSeqno)) {
      while (feed.next()) consumer.accept(feed.change());
      return feed.endSeqno();
    }
  }

  static void checkBound(byte[] bound, String what) {
    if (bound != null && bound.length > Options.MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          what + " bound of " + bound.length + " bytes is over the key size limit");
    }
  }

  @Override
  public String toString() {
    return "Keyspace[" + name + "]";
  }
}
