package io.basaltdb.internal.hashindex;

import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.sstable.KeyRecord;

/**
 * The byte layout of one lazy-trie leaf list (docs/format.md, "Lazy-trie"): an immutable off-heap
 * block holding the records of up to s distinct hashes (more only at full depth), sorted by hash
 * (unsigned), then key (unsigned bytes). Records sit back to back, each padded to 8 bytes, so the
 * records of one trie character form one contiguous run that a split copies in one piece.
 *
 * <pre>
 * list   = count u32 | distinct u32 | bytes u32 | pad u32 | record*
 * record = hash u64 | seqno u64 | hint u64 | expiry u64 | docSize u32 | keyLen u24 + flags u8 | key | pad to 8
 * </pre>
 *
 * <p>Thread-safety: a published list is never written again; any thread may read it while it is
 * reachable (inside an access-barrier session). Only the trie's writer builds lists.
 */
final class TrieList {
  static final int COUNT_OFFSET = 0;
  static final int DISTINCT_OFFSET = 4;
  static final int BYTES_OFFSET = 8;
  static final int HEADER_SIZE = 16;

  static final int HASH_OFFSET = 0;
  static final int SEQNO_OFFSET = 8;
  static final int HINT_OFFSET = 16;
  static final int EXPIRY_OFFSET = 24;
  static final int DOC_SIZE_OFFSET = 32;
  static final int KEY_LEN_OFFSET = 36;
  static final int RECORD_HEADER_SIZE = 40;

  private static final int KEY_LEN_MASK = 0xFF_FFFF;

  private TrieList() {}

  static int count(long list) {
    return Mem.lpInt(list + COUNT_OFFSET);
  }

  static int distinct(long list) {
    return Mem.lpInt(list + DISTINCT_OFFSET);
  }

  /** The block's whole size in bytes, header included: what it was allocated with. */
  static int bytes(long list) {
    return Mem.lpInt(list + BYTES_OFFSET);
  }

  static long first(long list) {
    return list + HEADER_SIZE;
  }

  static long end(long list) {
    return list + bytes(list);
  }

  static long hash(long rec) {
    return Mem.lpLong(rec + HASH_OFFSET);
  }

  static long seqno(long rec) {
    return Mem.lpLong(rec + SEQNO_OFFSET);
  }

  static int keyLength(long rec) {
    return Mem.lpInt(rec + KEY_LEN_OFFSET) & KEY_LEN_MASK;
  }

  static int flags(long rec) {
    return Mem.lpInt(rec + KEY_LEN_OFFSET) >>> 24;
  }

  static int docSize(long rec) {
    return Mem.lpInt(rec + DOC_SIZE_OFFSET);
  }

  static long key(long rec) {
    return rec + RECORD_HEADER_SIZE;
  }

  static long next(long rec) {
    return rec + recordSize(keyLength(rec));
  }

  static int recordSize(int keyLength) {
    return (RECORD_HEADER_SIZE + keyLength + 7) & ~7;
  }

  /** Order of (hash, key) against a record: negative when the probe sorts first. */
  static int compare(long hash, byte[] key, long rec) {
    int c = Long.compareUnsigned(hash, hash(rec));
    if (c != 0) return c;
    return -Mem.compareUnsigned(null, key(rec), keyLength(rec), key);
  }

  /**
   * The record of {@code key} in {@code list}, or 0. Stops at the first record that sorts after the
   * key.
   */
  static long find(long list, long hash, byte[] key) {
    long end = end(list);
    for (long r = first(list); r < end; r = next(r)) {
      int c = compare(hash, key, r);
      if (c == 0) return r;
      if (c < 0) return 0;
    }
    return 0;
  }

  /** Fills {@code out} from record {@code rec}; {@code out.key} is set to {@code key}. */
  static void read(long rec, byte[] key, KeyRecord out) {
    out.set(
        key,
        seqno(rec),
        docSize(rec),
        false,
        Mem.lpLong(rec + HINT_OFFSET),
        false,
        Mem.lpLong(rec + EXPIRY_OFFSET));
  }

  /** A copy of the record's key. */
  static byte[] keyOf(long rec) {
    byte[] k = new byte[keyLength(rec)];
    Mem.copyToArray(key(rec), k, 0, k.length);
    return k;
  }

  static void writeHeader(long list, int count, int distinct, int bytes) {
    Mem.spInt(list + COUNT_OFFSET, count);
    Mem.spInt(list + DISTINCT_OFFSET, distinct);
    Mem.spInt(list + BYTES_OFFSET, bytes);
    Mem.spInt(list + BYTES_OFFSET + 4, 0);
  }

  /** Writes one record at {@code rec}; returns the address after it. */
  static long writeRecord(
      long rec, long hash, byte[] key, long seqno, int docSize, long hint, long expiry, int flags) {
    Mem.spLong(rec + HASH_OFFSET, hash);
    Mem.spLong(rec + SEQNO_OFFSET, seqno);
    Mem.spLong(rec + HINT_OFFSET, hint);
    Mem.spLong(rec + EXPIRY_OFFSET, expiry);
    Mem.spInt(rec + DOC_SIZE_OFFSET, docSize);
    Mem.spInt(rec + KEY_LEN_OFFSET, key.length | (flags << 24));
    Mem.copyFromArray(key, 0, key(rec), key.length);
    int size = recordSize(key.length);
    int pad = size - RECORD_HEADER_SIZE - key.length;
    if (pad > 0) Mem.fill(key(rec) + key.length, pad, (byte) 0);
    return rec + size;
  }

  /** Distinct hashes among the records in {@code [from, to)}, which are sorted by hash. */
  static int distinctIn(long from, long to) {
    int n = 0;
    long prev = 0;
    for (long r = from; r < to; r = next(r)) {
      long h = hash(r);
      if (n == 0 || h != prev) n++;
      prev = h;
    }
    return n;
  }

  static int countIn(long from, long to) {
    int n = 0;
    for (long r = from; r < to; r = next(r)) n++;
    return n;
  }
}
