package io.basaltdb.internal.engine.writecache;

import io.basaltdb.internal.sstable.KeyRecord;
import java.nio.ByteBuffer;

/**
 * A thread's scratch space for gets into a caller's buffer ({@link
 * io.basaltdb.internal.engine.read.ReadPath#get(int, ByteBuffer, ByteBuffer)}), so that such a get
 * allocates nothing once the thread has done one of its size: the key as an exact-length array (one
 * kept per key length up to {@link #CACHED_KEY_LENGTH}), the write cache's store key, the entry the
 * write cache holds, and the key index record.
 *
 * <p>Thread-safety: confined to its thread ({@link #get}); a get uses it from start to end and
 * calls nothing that uses it again.
 */
public final class Lookup {
  /**
   * Keys up to this length reuse a per-thread array of their length; longer ones are copied per
   * get.
   */
  static final int CACHED_KEY_LENGTH = 256;

  /**
   * Write cache entries up to this size are copied into the scratch; larger ones into a new array.
   */
  static final int MAX_SCRATCH_ENTRY = 64 * 1024;

  private static final ThreadLocal<Lookup> THREAD = ThreadLocal.withInitial(Lookup::new);

  private final byte[][] keysByLength = new byte[CACHED_KEY_LENGTH + 1][];

  /** The write cache's store key: the keyspace prefix, then the key. */
  byte[] storeKey = new byte[64];

  /** Where write cache entries are copied; grows up to {@link #MAX_SCRATCH_ENTRY}. */
  byte[] scratch = new byte[256];

  /**
   * The write cache entry found ({@link #scratch}, or a larger array of its own), {@link
   * #entryLength} bytes of it.
   */
  public byte[] entry;

  public int entryLength;
  public final KeyRecord record = new KeyRecord();

  public static Lookup get() {
    return THREAD.get();
  }

  /**
   * The bytes of {@code key} from its position to its limit as an array of exactly that length: the
   * buffer's own array where it is exactly that, else this thread's array of that length
   * (overwritten by the next call), else a copy. The buffer's position is left as it was.
   */
  public byte[] key(ByteBuffer key) {
    int n = key.remaining();
    if (key.hasArray() && key.arrayOffset() + key.position() == 0 && key.array().length == n)
      return key.array();
    byte[] k;
    if (n <= CACHED_KEY_LENGTH) {
      k = keysByLength[n];
      if (k == null) k = keysByLength[n] = new byte[n];
    } else {
      k = new byte[n];
    }
    key.get(key.position(), k, 0, n);
    return k;
  }

  /** {@link #storeKey} with room for {@code n} bytes. */
  byte[] storeKey(int n) {
    if (storeKey.length < n) storeKey = new byte[Math.max(n, storeKey.length * 2)];
    return storeKey;
  }

  /**
   * Copies {@code src[off, off + len)} to {@code out} at its position if it fits, and sets the
   * limit to its end (the position stays, so the buffer then holds exactly the value); if it does
   * not fit, leaves {@code out} as it was. Returns {@code len}.
   */
  public static int copyOut(byte[] src, int off, int len, ByteBuffer out) {
    int at = out.position();
    if (len > out.limit() - at) return len;
    out.put(at, src, off, len); // absolute: allocates nothing and leaves the position
    out.limit(at + len);
    return len;
  }
}
