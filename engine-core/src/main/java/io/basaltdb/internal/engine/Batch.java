package io.basaltdb.internal.engine;

import io.basaltdb.CorruptionException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A validated write batch in the engine's terms, and its WAL record encoding (docs/format.md, "WAL
 * record"). Seqnos are assigned by the commit leader: operation i gets {@code firstSeqno + i}.
 *
 * <p>Thread-safety: built by one thread, then handed to the commit pipeline, which publishes it to
 * the leader through its lock; immutable afterwards except {@link #firstSeqno}, written once by the leader.
 */
public final class Batch {
  public static final byte PUT = 1;
  public static final byte DELETE = 2;
  /** In the WAL only: a put whose value expires; a u64 expiry follows its value. */
  static final byte PUT_EXPIRING = 3;
  static final int HEADER_SIZE = 13; // u64 first seqno, u32 count, u8 flags
  /** Flag: the first record of a commit group (one WAL write). */
  static final byte GROUP_START = 1;
  /** Flag: the group was fsynced before it was acknowledged (SyncMode.SYNC). */
  static final byte SYNCED = 2;
  /**
   * Flag: a link record, the last of a WAL file but the newest: no operations, then the u64 number of
   * the file that follows it ({@link #successor}). Replays as a no-op, like the clean-close marker.
   */
  static final byte LINK = 4;
  /** Bytes a link record adds after the header: the successor's file number. */
  static final int SUCCESSOR_SIZE = 8;

  final int[] keyspaces;
  final byte[] types;
  final byte[][] keys;
  final byte[][] values;
  /** Each put's expiry (ms since the epoch, 0: never); null while no operation has one. */
  long[] expiries;
  int count;
  /** Seqno of operation 0; set by the commit leader before the batch is logged. */
  long firstSeqno;
  /** WAL record flags ({@link #GROUP_START}, {@link #SYNCED}, {@link #LINK}); set when logged or decoded. */
  byte flags;
  /** A link record's successor WAL file number; -1 in every other batch. */
  long successor = -1;
  /**
   * {@link #encodedSize}, once asked (-1 before; reset by {@link #add}): the leader asks for it of every
   * queued batch as it forms a group, and for the WAL skip's threshold.
   */
  private int encodedSize = -1;

  /** Whether every operation is a delete (an empty batch counts). */
  boolean deletesOnly() {
    for (int i = 0; i < count; i++) if (types[i] == PUT) return false;
    return true;
  }

  public Batch(int capacity) {
    keyspaces = new int[capacity];
    types = new byte[capacity];
    keys = new byte[capacity][];
    values = new byte[capacity][];
  }

  /** Adds an operation; {@code value} is null for a delete. The arrays are not copied. */
  public void add(int keyspace, byte type, byte[] key, byte[] value) {
    add(keyspace, type, key, value, 0);
  }

  /** As {@link #add(int, byte, byte[], byte[])}, for a put that expires at {@code expiry} (0: never). */
  public void add(int keyspace, byte type, byte[] key, byte[] value, long expiry) {
    if (expiry != 0) {
      if (expiries == null) expiries = new long[keyspaces.length];
      expiries[count] = expiry;
    }
    encodedSize = -1;
    keyspaces[count] = keyspace;
    types[count] = type;
    keys[count] = key;
    values[count] = value;
    count++;
  }

  public int count() {
    return count;
  }

  /** Operation {@code i}'s expiry, 0 for none. */
  long expiry(int i) {
    return expiries == null ? 0 : expiries[i];
  }

  /**
   * The link record ending a WAL file whose successor is file {@code successor}: a synced group start
   * with no operations and first seqno {@code firstSeqno} (one past the last seqno logged before it).
   */
  static Batch link(long firstSeqno, long successor) {
    Batch b = new Batch(0);
    b.firstSeqno = firstSeqno;
    b.flags = GROUP_START | SYNCED | LINK;
    b.successor = successor;
    return b;
  }

  boolean isLink() {
    return (flags & LINK) != 0;
  }

  /** Bytes of the encoded WAL record. */
  int encodedSize() {
    if (encodedSize >= 0) return encodedSize;
    int n = isLink() ? HEADER_SIZE + SUCCESSOR_SIZE : HEADER_SIZE;
    for (int i = 0; i < count; i++) {
      n += 1 + 4 + 4 + keys[i].length + 4 + (values[i] == null ? 0 : values[i].length) + (expiry(i) != 0 ? 8 : 0);
    }
    encodedSize = n;
    return n;
  }

  /** Bytes of user data (keys and values). */
  long userBytes() {
    long n = 0;
    for (int i = 0; i < count; i++) n += keys[i].length + (values[i] == null ? 0 : values[i].length);
    return n;
  }

  void encode(ByteBuffer out) {
    out.order(ByteOrder.LITTLE_ENDIAN);
    out.putLong(firstSeqno).putInt(count).put(flags);
    if (isLink()) out.putLong(successor);
    for (int i = 0; i < count; i++) {
      long expiry = expiry(i);
      out.put(expiry != 0 ? PUT_EXPIRING : types[i]).putInt(keyspaces[i]).putInt(keys[i].length).put(keys[i]);
      byte[] v = values[i];
      out.putInt(v == null ? -1 : v.length);
      if (v != null) out.put(v);
      if (expiry != 0) out.putLong(expiry);
    }
  }

  /** Decodes a WAL record; {@code where} names file and offset for the corruption message. */
  static Batch decode(ByteBuffer in, String file, long offset) {
    in.order(ByteOrder.LITTLE_ENDIAN);
    try {
      long first = in.getLong();
      int n = in.getInt();
      byte flags = in.get();
      if (n < 0 || n > in.remaining() / 13) throw new CorruptionException(file, offset, "bad operation count " + n);
      Batch b = new Batch(n);
      b.firstSeqno = first;
      b.flags = flags;
      if (b.isLink()) {
        if (n != 0) throw new CorruptionException(file, offset, "a link record with " + n + " operations");
        b.successor = in.getLong();
      }
      for (int i = 0; i < n; i++) {
        byte type = in.get();
        int ks = in.getInt();
        byte[] key = new byte[checkLen(in.getInt(), in, file, offset)];
        in.get(key);
        int vlen = in.getInt();
        byte[] value = null;
        long expiry = 0;
        if (type == PUT || type == PUT_EXPIRING) {
          value = new byte[checkLen(vlen, in, file, offset)];
          in.get(value);
          if (type == PUT_EXPIRING) {
            expiry = in.getLong();
            if (expiry <= 0) throw new CorruptionException(file, offset, "an expiry of " + expiry);
          }
        } else if (type != DELETE || vlen != -1) {
          throw new CorruptionException(file, offset, "bad operation type " + type);
        }
        b.add(ks, type == DELETE ? DELETE : PUT, key, value, expiry);
      }
      if (in.hasRemaining()) throw new CorruptionException(file, offset, in.remaining() + " trailing bytes in a batch");
      return b;
    } catch (java.nio.BufferUnderflowException e) {
      throw new CorruptionException(file, offset, "batch record ends early");
    }
  }

  private static int checkLen(int len, ByteBuffer in, String file, long offset) {
    if (len < 0 || len > in.remaining()) throw new CorruptionException(file, offset, "bad length " + len);
    return len;
  }
}
