package io.basaltdb.internal.engine.writecache;

import io.basaltdb.CorruptionException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A validated write batch in the engine's terms, and its WAL record encoding (docs/format.md, "WAL
 * record"). Seqnos are assigned by the commit leader: operation i gets {@code firstSeqno + i}.
 *
 * <p>Thread-safety: built by one thread, then handed to the commit pipeline, which publishes it to
 * the leader through its lock; immutable afterwards except {@link #firstSeqno}, written once by the
 * leader.
 */
public final class Batch implements io.basaltdb.internal.wal.LogWriter.PayloadEncoder {
  public static final byte PUT = 1;
  public static final byte DELETE = 2;

  /** In the WAL only: a put whose value expires; a u64 expiry follows its value. */
  static final byte PUT_EXPIRING = 3;

  public static final int HEADER_SIZE = 13; // u64 first seqno, u32 count, u8 flags

  /** Flag: the first record of a commit group (one WAL write). */
  public static final byte GROUP_START = 1;

  /** Flag: the group was fsynced before it was acknowledged (SyncMode.SYNC). */
  public static final byte SYNCED = 2;

  /**
   * Flag: a link record, the last of a WAL file but the newest: no operations, then the u64 number
   * of the file that follows it ({@link #successor}). Replays as a no-op, like the clean-close
   * marker.
   */
  public static final byte LINK = 4;

  /** Bytes a link record adds after the header: the successor's file number. */
  public static final int SUCCESSOR_SIZE = 8;

  /**
   * A batch's key and value bytes kept after {@link #clear} up to this size; a larger array is
   * dropped.
   */
  static final int RETAINED_DATA = 1 << 20;

  private static final byte[] NO_DATA = new byte[0];

  public int[] keyspaces;
  public byte[] types;

  /**
   * Where operation i's key starts in {@link #data}; its value follows it ({@link #valueLengths}:
   * -1 for a delete).
   */
  private int[] keyOffsets;

  private int[] keyLengths;
  private int[] valueLengths;

  /** The keys and values, each operation's key then its value, in operation order. */
  private byte[] data = NO_DATA;

  private int dataLength;

  /** Each put's expiry (ms since the epoch, 0: never); null while no operation has had one. */
  long[] expiries;

  public int count;

  /** Seqno of operation 0; set by the commit leader before the batch is logged. */
  public long firstSeqno;

  /**
   * WAL record flags ({@link #GROUP_START}, {@link #SYNCED}, {@link #LINK}); set when logged or
   * decoded.
   */
  public byte flags;

  /** A link record's successor WAL file number; -1 in every other batch. */
  public long successor = -1;

  /**
   * Whether the batch skips the WAL whatever its size ({@link io.basaltdb.BulkLoad}'s full chunks);
   * not encoded, cleared by {@link #clear}.
   */
  public boolean skipsWal;

  /**
   * {@link #encodedSize}, once asked (-1 before; reset by {@link #add}): the leader asks for it of
   * every queued batch as it forms a group, and for the WAL skip's threshold.
   */
  private int encodedSize = -1;

  /**
   * Set while the batch is being written ({@link #beginWrite}): one batch is in one write at a
   * time.
   */
  private final java.util.concurrent.atomic.AtomicBoolean writing =
      new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * Set by {@link #abandon}: a write that failed with an Error may still be read by the pipeline.
   */
  private volatile boolean abandoned;

  /** Operations' metadata kept after {@link #clear} up to this many; larger arrays are dropped. */
  public static final int RETAINED_OPERATIONS = 1024;

  /** Whether every operation is a delete (an empty batch counts). */
  public boolean deletesOnly() {
    for (int i = 0; i < count; i++) if (types[i] == PUT) return false;
    return true;
  }

  /** A batch with room for {@code capacity} operations and {@code bytes} of keys and values. */
  public Batch(int capacity, int bytes) {
    this(capacity);
    data = bytes == 0 ? NO_DATA : new byte[bytes];
  }

  /** A batch with room for {@code capacity} operations (it grows as operations are added). */
  public Batch(int capacity) {
    keyspaces = new int[capacity];
    types = new byte[capacity];
    keyOffsets = new int[capacity];
    keyLengths = new int[capacity];
    valueLengths = new int[capacity];
  }

  /**
   * Adds an operation; {@code value} is null for a delete (and ignored if given). The bytes are
   * copied into the batch.
   */
  public void add(int keyspace, byte type, byte[] key, byte[] value) {
    add(keyspace, type, key, value, 0);
  }

  /**
   * As {@link #add(int, byte, byte[], byte[])}, for a put that expires at {@code expiry} (0:
   * never).
   */
  public void add(int keyspace, byte type, byte[] key, byte[] value, long expiry) {
    int at =
        addOperation(
            keyspace,
            type,
            key.length,
            type == DELETE || value == null ? -1 : value.length,
            expiry);
    System.arraycopy(key, 0, data, at, key.length);
    if (type != DELETE) System.arraycopy(value, 0, data, at + key.length, value.length);
  }

  /**
   * As {@link #add(int, byte, byte[], byte[], long)} with the bytes between each buffer's position
   * and limit ({@code value} null for a delete); the buffers' positions stay.
   */
  public void add(
      int keyspace, byte type, java.nio.ByteBuffer key, java.nio.ByteBuffer value, long expiry) {
    int klen = key.remaining();
    int vlen = type == DELETE || value == null ? -1 : value.remaining();
    int at = addOperation(keyspace, type, klen, vlen, expiry);
    key.get(key.position(), data, at, klen);
    if (type != DELETE) value.get(value.position(), data, at + klen, vlen);
  }

  /**
   * Appends an operation's metadata and room for its bytes; returns where its key goes in {@link
   * #data}.
   */
  private int addOperation(int keyspace, byte type, int keyLength, int valueLength, long expiry) {
    if (type != PUT && type != DELETE) throw new IllegalArgumentException("operation type " + type);
    if (type == PUT && valueLength < 0) throw new IllegalArgumentException("a put without a value");
    if (count == keyspaces.length) grow();
    if (expiry != 0 && expiries == null) expiries = new long[keyspaces.length];
    if (expiries != null) expiries[count] = expiry;
    int bytes = keyLength + Math.max(valueLength, 0);
    if (data.length - dataLength < bytes) {
      long want =
          Math.max(
              (long) dataLength + bytes, Math.min((long) data.length * 2, Integer.MAX_VALUE - 8));
      if (want > Integer.MAX_VALUE - 8) {
        throw new io.basaltdb.InvalidArgumentException(
            "a batch over 2 GiB of keys and values; split it");
      }
      data = java.util.Arrays.copyOf(data, (int) Math.max(want, 64));
    }
    int at = dataLength;
    encodedSize = -1;
    keyspaces[count] = keyspace;
    types[count] = type;
    keyOffsets[count] = at;
    keyLengths[count] = keyLength;
    valueLengths[count] = valueLength;
    count++;
    dataLength += bytes;
    return at;
  }

  /** Appends a copy of operation {@code i} of {@code src}: its keyspace, type, bytes and expiry. */
  public void addFrom(Batch src, int i) {
    int klen = src.keyLengths[i], vlen = src.valueLengths[i];
    int at = addOperation(src.keyspaces[i], src.types[i], klen, vlen, src.expiry(i));
    System.arraycopy(src.data, src.keyOffsets[i], data, at, klen + Math.max(vlen, 0));
  }

  private void grow() {
    int n = Math.max(4, keyspaces.length * 2);
    keyspaces = java.util.Arrays.copyOf(keyspaces, n);
    types = java.util.Arrays.copyOf(types, n);
    keyOffsets = java.util.Arrays.copyOf(keyOffsets, n);
    keyLengths = java.util.Arrays.copyOf(keyLengths, n);
    valueLengths = java.util.Arrays.copyOf(valueLengths, n);
    if (expiries != null) expiries = java.util.Arrays.copyOf(expiries, n);
  }

  /**
   * Empties the batch for reuse, keeping its arrays up to {@code retainedBytes} of keys and values
   * and {@link #RETAINED_OPERATIONS} operations (larger ones are dropped). The caller does not
   * clear a batch while it is written; an {@link #abandon abandoned} batch is left as it is.
   */
  public void clear(int retainedBytes) {
    if (abandoned) return;
    count = 0;
    dataLength = 0;
    encodedSize = -1;
    firstSeqno = 0;
    flags = 0;
    skipsWal = false;
    if (data.length > retainedBytes) data = NO_DATA;
    if (keyspaces.length > RETAINED_OPERATIONS) {
      keyspaces = new int[4];
      types = new byte[4];
      keyOffsets = new int[4];
      keyLengths = new int[4];
      valueLengths = new int[4];
      expiries = null;
    }
  }

  /** {@link #clear(int)} keeping up to {@link #RETAINED_DATA} bytes. */
  public void clear() {
    clear(RETAINED_DATA);
  }

  /** Whether the batch is in a write now. */
  public boolean isWriting() {
    return writing.get();
  }

  /**
   * Marks the batch as never to be written or cleared again: a write of it failed with an Error
   * that may have left it queued, where a leader can still read it.
   */
  public void abandon() {
    abandoned = true;
  }

  /** Whether {@link #abandon} was called: the batch must be replaced, not reused. */
  public boolean isAbandoned() {
    return abandoned;
  }

  /**
   * Marks the start of a write of this batch; false if it is already being written (by another
   * thread: a batch must not be in two writes at once, its seqnos are the write's). Pair with
   * {@link #endWrite}.
   */
  public boolean beginWrite() {
    return writing.compareAndSet(false, true);
  }

  public void endWrite() {
    if (!abandoned) writing.set(false); // an abandoned batch stays in its write for good
  }

  public int count() {
    return count;
  }

  /** Operation {@code i}'s expiry, 0 for none. */
  public long expiry(int i) {
    return expiries == null ? 0 : expiries[i];
  }

  /**
   * The array holding every key and value: operation i's key at {@link #keyOffset}, its value right
   * after.
   */
  public byte[] data() {
    return data;
  }

  public int keyOffset(int i) {
    return keyOffsets[i];
  }

  public int keyLength(int i) {
    return keyLengths[i];
  }

  public int valueOffset(int i) {
    return keyOffsets[i] + keyLengths[i];
  }

  /** Operation {@code i}'s value length, -1 for a delete. */
  public int valueLength(int i) {
    return valueLengths[i];
  }

  /** A copy of operation {@code i}'s key. */
  public byte[] key(int i) {
    return java.util.Arrays.copyOfRange(data, keyOffsets[i], keyOffsets[i] + keyLengths[i]);
  }

  /** A copy of operation {@code i}'s value; null for a delete. */
  public byte[] value(int i) {
    if (valueLengths[i] < 0) return null;
    int at = valueOffset(i);
    return java.util.Arrays.copyOfRange(data, at, at + valueLengths[i]);
  }

  /**
   * The link record ending a WAL file whose successor is file {@code successor}: a synced group
   * start with no operations and first seqno {@code firstSeqno} (one past the last seqno logged
   * before it).
   */
  public static Batch link(long firstSeqno, long successor) {
    Batch b = new Batch(0);
    b.firstSeqno = firstSeqno;
    b.flags = GROUP_START | SYNCED | LINK;
    b.successor = successor;
    return b;
  }

  public boolean isLink() {
    return (flags & LINK) != 0;
  }

  /** Bytes of the encoded WAL record. */
  public int encodedSize() {
    if (encodedSize >= 0) return encodedSize;
    int n = isLink() ? HEADER_SIZE + SUCCESSOR_SIZE : HEADER_SIZE;
    for (int i = 0; i < count; i++) {
      n += 1 + 4 + 4 + keyLengths[i] + 4 + Math.max(valueLengths[i], 0) + (expiry(i) != 0 ? 8 : 0);
    }
    encodedSize = n;
    return n;
  }

  /** Bytes of user data (keys and values). */
  public long userBytes() {
    return dataLength;
  }

  /** The WAL record, into {@code out} from its position on ({@link #encodedSize} bytes). */
  @Override
  public void encode(ByteBuffer out) {
    out.order(ByteOrder.LITTLE_ENDIAN);
    out.putLong(firstSeqno).putInt(count).put(flags);
    if (isLink()) out.putLong(successor);
    for (int i = 0; i < count; i++) {
      long expiry = expiry(i);
      out.put(expiry != 0 ? PUT_EXPIRING : types[i]).putInt(keyspaces[i]).putInt(keyLengths[i]);
      out.put(data, keyOffsets[i], keyLengths[i]);
      int vlen = valueLengths[i];
      out.putInt(vlen);
      if (vlen > 0) out.put(data, valueOffset(i), vlen);
      if (expiry != 0) out.putLong(expiry);
    }
  }

  /** Decodes a WAL record; {@code where} names file and offset for the corruption message. */
  public static Batch decode(ByteBuffer in, String file, long offset) {
    in.order(ByteOrder.LITTLE_ENDIAN);
    try {
      long first = in.getLong();
      int n = in.getInt();
      byte flags = in.get();
      if (n < 0 || n > in.remaining() / 13)
        throw new CorruptionException(file, offset, "bad operation count " + n);
      Batch b = new Batch(n);
      b.firstSeqno = first;
      b.flags = flags;
      if (b.isLink()) {
        if (n != 0)
          throw new CorruptionException(file, offset, "a link record with " + n + " operations");
        b.successor = in.getLong();
      }
      for (int i = 0; i < n; i++) {
        byte type = in.get();
        int ks = in.getInt();
        int klen = checkLen(in.getInt(), in, file, offset);
        int keyAt = in.position();
        in.position(keyAt + klen);
        int vlen = in.getInt();
        int valueAt = in.position();
        long expiry = 0;
        if (type == PUT || type == PUT_EXPIRING) {
          in.position(valueAt + checkLen(vlen, in, file, offset));
          if (type == PUT_EXPIRING) {
            expiry = in.getLong();
            if (expiry <= 0) throw new CorruptionException(file, offset, "an expiry of " + expiry);
          }
        } else if (type != DELETE || vlen != -1) {
          throw new CorruptionException(file, offset, "bad operation type " + type);
        }
        boolean put = type != DELETE;
        int at = b.addOperation(ks, put ? PUT : DELETE, klen, put ? vlen : -1, expiry);
        in.get(keyAt, b.data, at, klen);
        if (put) in.get(valueAt, b.data, at + klen, vlen);
      }
      if (in.hasRemaining())
        throw new CorruptionException(file, offset, in.remaining() + " trailing bytes in a batch");
      return b;
    } catch (java.nio.BufferUnderflowException e) {
      throw new CorruptionException(file, offset, "batch record ends early");
    }
  }

  private static int checkLen(int len, ByteBuffer in, String file, long offset) {
    if (len < 0 || len > in.remaining())
      throw new CorruptionException(file, offset, "bad length " + len);
    return len;
  }
}
