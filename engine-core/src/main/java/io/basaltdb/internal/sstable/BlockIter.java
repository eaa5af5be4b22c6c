package io.basaltdb.internal.sstable;

import io.basaltdb.internal.memory.Mem;
import java.util.Arrays;

/**
 * A cursor over the entries of one {@link Block}, decoding each entry's prefix-compressed key and
 * its value (a data record, or a block handle in the index block). Every length and varint read is
 * checked against the entry area, so bad bytes end in a {@code CorruptionException} naming the file
 * offset, never in an out-of-bounds access.
 *
 * <p>Backward moves ({@link #seekToLast}, {@link #seekBefore}, {@link #prev}): an entry's key is
 * stored as a suffix of the one before it, so entries decode forward only, from a restart point. A
 * backward move decodes the whole restart interval it lands in once, keeping each entry's offset
 * and full key (Pebble's {@code blockIter} caches the interval the same way); each {@code prev}
 * inside that interval then restores one key and decodes one entry, where LevelDB decodes from the
 * restart point again at every step. A step back costs O(1) amortized (the interval's entries are
 * decoded twice), a forward move nothing more than before.
 *
 * <p>Thread-safety: not thread-safe; confined to one thread, as the cursor of one {@link
 * TableIterator} or as a thread's lookup cursor in {@link TableReader#get}. The block it reads is
 * immutable.
 */
final class BlockIter {
  private final boolean index;
  private Block block;

  /** The block's contents, as {@code (base, address)} in {@link Mem}'s addressing. */
  private Object base;

  private long address;
  private int limit;

  /** Offset of the current entry; {@code limit} when not positioned. */
  private int current;

  /** Offset of the entry after the current one. */
  private int next;

  /** Read cursor of the decoder. */
  private int p;

  private byte[] key = new byte[32];
  private int keyLen;

  // The current entry's value: a record (data block) or a handle (index block).
  long seqno;
  int docSize;
  boolean tombstone;
  boolean olderReported;
  long hint;

  /** The record's expiry (ms since the epoch), 0 for none. */
  long expiry;

  long handleOffset;
  int handleSize;

  // The restart interval a backward move decoded: entry i starts at ivOffset[i] and has the key
  // ivKeys[ivKeyEnd[i - 1], ivKeyEnd[i]) (from 0 for i = 0); ivPos is the entry the cursor is on.
  // Valid for the current block only while ivOffset[ivPos] == current (a forward move leaves it).
  private int[] ivOffset;
  private int[] ivKeyEnd;
  private byte[] ivKeys;
  private int ivCount;
  private int ivPos;

  /**
   * {@code index} selects the value format: block handles (index block) or records (data block).
   */
  BlockIter(boolean index) {
    this.index = index;
  }

  /** Makes {@code b} the block to read; unpositioned until a seek. */
  void reset(Block b) {
    block = b;
    base = b.base;
    address = b.address;
    limit = b.restartsOffset;
    current = limit;
    keyLen = 0;
    ivCount = 0;
  }

  /** This cursor's block for {@link #resetTrusted}, made on first use. */
  private Block scratch;

  /**
   * As {@link #reset} with {@code Block.trusted(base, address, len, fileOffset, file)}, without
   * making a block: the cursor's own scratch block is pointed at the contents (a thread's lookup
   * cursor).
   */
  void resetTrusted(Object base, long address, int len, long fileOffset, String file) {
    if (scratch == null) scratch = Block.scratch();
    scratch.retarget(base, address, len, fileOffset, file);
    reset(scratch);
  }

  /** Drops the block (unpositioned, invalid) so a reused cursor does not keep it reachable. */
  void release() {
    if (scratch != null) scratch.forget();
    block = null;
    base = null;
    address = 0;
    limit = 0;
    current = 0;
    keyLen = 0;
    ivCount = 0;
    if (ivKeys != null && ivKeys.length > 64 << 10) ivKeys = null; // an interval of huge keys
  }

  boolean valid() {
    return current < limit;
  }

  /**
   * Positions on the entry at {@code pos}, whose key shares with the key before it only bytes that
   * {@code key} shares with it (an HB+-trie walk matched {@code key}'s first {@code known} bytes to
   * it), and returns whether its key is {@code key}. An entry that shares more than {@code known}
   * bytes, or does not start at an entry boundary the decoder accepts, is corruption.
   */
  boolean matchAt(int pos, byte[] key, int known) {
    if (pos < 0 || pos >= limit) throw block.corrupt(pos, "entry offset outside the block");
    int k = Math.min(known, key.length);
    if (k > this.key.length) this.key = Arrays.copyOf(this.key, Math.max(k, this.key.length * 2));
    System.arraycopy(key, 0, this.key, 0, k);
    keyLen = k;
    ivCount = 0;
    decodeAt(pos, false);
    return compareKey(key) == 0;
  }

  void seekToFirst() {
    keyLen = 0;
    decodeAt(0, true);
  }

  void next() {
    decodeAt(next, false);
  }

  /** Positions on the first entry whose key is at or after {@code target}, or invalid if none. */
  void seek(byte[] target) {
    // Binary search for the last restart whose key is before target; the answer is at or after it.
    int lo = 0;
    int hi = block.restartCount - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (compareRestartKey(block.restart(mid), target) < 0) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    keyLen = 0;
    decodeAt(block.restart(lo), true);
    while (valid() && compareKey(target) < 0) next();
  }

  /** Positions on the last entry, or invalid if the block has none. */
  void seekToLast() {
    if (limit == 0) {
      current = limit;
      return;
    }
    decodeInterval(block.restartCount - 1);
    positionCached(ivCount - 1);
  }

  /** Positions on the last entry whose key is before {@code target}, or invalid if none. */
  void seekBefore(byte[] target) {
    int r = lastRestartBefore(target);
    if (limit == 0 || compareRestartKey(block.restart(r), target) >= 0) {
      current = limit; // r is 0 and every key is at or after target
      return;
    }
    // Restart r + 1 is at or after target, so the answer is in interval r.
    decodeInterval(r);
    int i = ivCount - 1;
    while (i > 0 && compareCached(i, target) >= 0) i--; // restart r is before target
    positionCached(i);
  }

  /** Moves to the entry before the current one; invalid before the first. */
  void prev() {
    if (ivCount == 0 || ivPos >= ivCount || ivOffset[ivPos] != current) {
      // Not in a decoded interval (a forward move came last): decode the one holding the entry
      // before current, the interval of the last restart below current.
      if (current == 0) {
        current = limit;
        return;
      }
      int lo = 0;
      int hi = block.restartCount - 1;
      while (lo < hi) {
        int mid = (lo + hi + 1) >>> 1;
        if (block.restart(mid) < current) lo = mid;
        else hi = mid - 1;
      }
      decodeInterval(lo, current);
      positionCached(ivCount - 1);
    } else if (ivPos > 0) {
      positionCached(ivPos - 1);
    } else if (current == 0) {
      current = limit; // the first entry
    } else {
      int r = restartIndexOf(current);
      decodeInterval(r - 1);
      positionCached(ivCount - 1);
    }
  }

  /** The index of the restart point at offset {@code pos}, which is one. */
  private int restartIndexOf(int pos) {
    int lo = 0;
    int hi = block.restartCount - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (block.restart(mid) <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The last restart whose key is before {@code target}, or 0 if none is. */
  private int lastRestartBefore(byte[] target) {
    int lo = 0;
    int hi = block.restartCount - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (compareRestartKey(block.restart(mid), target) < 0) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /** Decodes restart interval {@code r} whole into the interval cache. */
  private void decodeInterval(int r) {
    decodeInterval(r, r + 1 < block.restartCount ? block.restart(r + 1) : limit);
  }

  /**
   * Decodes the entries of restart interval {@code r} that start before {@code end} (the next
   * restart, the block's end, or an entry inside the interval) into the interval cache; at least
   * one. An entry that runs past the next restart point means a damaged block.
   */
  private void decodeInterval(int r, int end) {
    if (ivOffset == null) {
      ivOffset = new int[16];
      ivKeyEnd = new int[16];
      ivKeys = new byte[256];
    } else if (ivKeys == null) {
      ivKeys = new byte[256];
    }
    ivCount = 0;
    int restart = block.restart(r);
    int stop = r + 1 < block.restartCount ? block.restart(r + 1) : limit;
    keyLen = 0;
    int pos = restart;
    int used = 0;
    while (true) {
      decodeAt(pos, pos == restart);
      if (ivCount == ivOffset.length) {
        ivOffset = Arrays.copyOf(ivOffset, ivCount * 2);
        ivKeyEnd = Arrays.copyOf(ivKeyEnd, ivCount * 2);
      }
      if (used + keyLen > ivKeys.length)
        ivKeys = Arrays.copyOf(ivKeys, Math.max(used + keyLen, ivKeys.length * 2));
      System.arraycopy(key, 0, ivKeys, used, keyLen);
      used += keyLen;
      ivOffset[ivCount] = pos;
      ivKeyEnd[ivCount++] = used;
      if (next > stop) throw block.corrupt(pos, "entry runs past restart point " + stop);
      if (next >= end) return;
      pos = next;
    }
  }

  /** Positions on entry {@code i} of the interval cache: its key restored, the entry decoded. */
  private void positionCached(int i) {
    int from = i == 0 ? 0 : ivKeyEnd[i - 1];
    int len = ivKeyEnd[i] - from;
    if (len > key.length) key = Arrays.copyOf(key, Math.max(len, key.length * 2));
    System.arraycopy(ivKeys, from, key, 0, len);
    keyLen = len; // the entry's shared bytes are this key's prefix already
    decodeAt(ivOffset[i], i == 0);
    ivPos = i;
  }

  /** Compares the key of entry {@code i} of the interval cache with {@code target}. */
  private int compareCached(int i, byte[] target) {
    int from = i == 0 ? 0 : ivKeyEnd[i - 1];
    return Arrays.compareUnsigned(ivKeys, from, ivKeyEnd[i], target, 0, target.length);
  }

  /** Compares the current key with {@code target}, as {@link KeyRecord#compareKeys}. */
  int compareKey(byte[] target) {
    return Arrays.compareUnsigned(key, 0, keyLen, target, 0, target.length);
  }

  byte[] keyCopy() {
    return Arrays.copyOf(key, keyLen);
  }

  private int compareRestartKey(int pos, byte[] target) {
    p = pos;
    int shared = readLength();
    int unshared = readLength();
    if (shared != 0)
      throw block.corrupt(pos, "restart entry shares " + shared + " bytes with a previous key");
    if (unshared > limit - p)
      throw block.corrupt(pos, "key of " + unshared + " bytes overruns the block");
    return Mem.compareUnsigned(base, address + p, unshared, target);
  }

  private void decodeAt(int pos, boolean restart) {
    if (pos >= limit) {
      current = limit;
      return;
    }
    p = pos;
    int shared = readLength();
    int unshared = readLength();
    if (restart && shared != 0)
      throw block.corrupt(pos, "restart entry shares " + shared + " bytes");
    if (shared > keyLen)
      throw block.corrupt(pos, "entry shares " + shared + " bytes of a " + keyLen + "-byte key");
    if (unshared > limit - p || shared + unshared > KeyRecord.MAX_KEY_SIZE) {
      throw block.corrupt(
          pos, "key suffix of " + unshared + " bytes overruns the block or the key size limit");
    }
    int len = shared + unshared;
    if (len > key.length) key = Arrays.copyOf(key, Math.max(len, key.length * 2));
    Mem.copyToArray(base, address + p, key, shared, unshared);
    keyLen = len;
    p += unshared;
    if (index) {
      handleOffset = readVarint();
      long size = readVarint();
      if (handleOffset < 0 || size < 0 || size > Integer.MAX_VALUE)
        throw block.corrupt(pos, "bad block handle");
      handleSize = (int) size;
    } else {
      seqno = readVarint();
      long ds = readVarint();
      if (seqno < 0 || ds < 0 || ds > Integer.MAX_VALUE)
        throw block.corrupt(pos, "bad seqno or document size");
      docSize = (int) ds;
      if (limit - p < Format.FLAGS_SIZE) throw block.corrupt(pos, "record overruns the block");
      int flags = Mem.lpUnsignedByte(base, address + p);
      if ((flags & ~Format.KNOWN_FLAGS) != 0) throw block.corrupt(p, "unknown flag bits " + flags);
      tombstone = (flags & Format.FLAG_TOMBSTONE) != 0;
      olderReported = (flags & Format.FLAG_OLDER_REPORTED) != 0;
      p += Format.FLAGS_SIZE;
      if ((flags & Format.FLAG_SEQNO_IN_KEY) != 0) {
        if (seqno != 0 || keyLen != 8)
          throw block.corrupt(pos, "a seqno-in-key record with a seqno or a key not of 8 bytes");
        seqno = BlockBuilder.bigEndian(key);
        if (seqno < 0) throw block.corrupt(pos, "a seqno-in-key record with a negative seqno");
      }
      if ((flags & Format.FLAG_NO_HINT) != 0) {
        if ((flags & Format.FLAG_VARINT_HINT) != 0)
          throw block.corrupt(pos, "a record both without and with a hint");
        hint = -1;
      } else if ((flags & Format.FLAG_VARINT_HINT) != 0) {
        hint = readVarint() - 1;
      } else {
        if (limit - p < Format.HINT_SIZE) throw block.corrupt(pos, "record overruns the block");
        hint = Mem.lpLongLE(base, address + p);
        p += Format.HINT_SIZE;
      }
      if ((flags & Format.FLAG_EXPIRES) != 0) {
        expiry = readVarint();
        if (expiry <= 0) throw block.corrupt(pos, "an expiry of " + expiry);
      } else {
        expiry = 0;
      }
    }
    current = pos;
    next = p;
  }

  private int readLength() {
    long v = readVarint();
    if (v < 0 || v > Integer.MAX_VALUE) throw block.corrupt(p, "length " + v + " out of range");
    return (int) v;
  }

  private long readVarint() {
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= limit) throw block.corrupt(p, "varint runs past the entries");
      byte b = Mem.lpByte(base, address + p++);
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) return result;
    }
    throw block.corrupt(p, "varint longer than 10 bytes");
  }
}
