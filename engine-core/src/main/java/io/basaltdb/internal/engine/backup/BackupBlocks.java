package io.basaltdb.internal.engine.backup;

import io.basaltdb.ClosedException;
import io.basaltdb.CorruptionException;
import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.skiplist.ItemSink;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * The files of an in-memory store's backup, shards and deltas alike (docs/format.md, "In-memory
 * backup files"): a sequence of blocks, each a header and a payload of items, and nothing after the
 * last block.
 *
 * <pre>
 *  block header (17 bytes, little-endian)
 *  0   u32  stored length: payload bytes in the file
 *  4   u32  raw length: payload bytes once decompressed
 *  8   u32  items in the block
 *  12  u8   codec: 0 stored as is, 1 LZ4 block
 *  13  u32  CRC-32C of header bytes 0-12 and the stored payload
 *  payload: items, each varint key length, varint entry length, store key, write cache entry
 * </pre>
 *
 * A block holds about {@link #BLOCK} raw bytes (one larger item makes a block of its own). Items
 * carry no lifetime metadata (bornSn, deadSn): a restore recreates it (seed 001 section 5.1).
 *
 * <p>Thread-safety: a writer or a reader belongs to one thread at a time.
 */
final class BackupBlocks {
  static final int HEADER = 17;
  static final int BLOCK = 64 * 1024;
  static final byte RAW = 0;
  static final byte LZ4_BLOCK = 1;

  /** Bytes gathered before one write to the file: large sequential writes. */
  private static final int WRITE_BUFFER = 1 << 20;

  private static final LZ4Compressor COMPRESSOR = LZ4Factory.fastestInstance().fastCompressor();
  private static final LZ4SafeDecompressor DECOMPRESSOR =
      LZ4Factory.fastestInstance().safeDecompressor();

  private BackupBlocks() {}

  /** Bytes a writer writes between two requests for a background sync of its file. */
  static final long SYNC_STEP = 64L << 20;

  /**
   * Syncs files in the background while the backup goes on writing them, {@link #SYNC_STEP} at a
   * time: the disk writes back during the scan (a backup far below the kernel's dirty threshold
   * would otherwise leave the disk idle until the syncs at the end, and a large one would fill the
   * page cache with dirty pages). Syncs are advisory for durability: the backup syncs every file
   * again before its marker.
   *
   * <p>It also writes for the writers that hand it their full buffers ({@link #write}), on threads
   * of its own, so a scan goes on filling its next buffer while the last one goes to the file.
   *
   * <p>Thread-safety: any writer may request; one thread syncs, a file at a time.
   */
  static final class Syncer implements AutoCloseable {
    private final java.util.concurrent.ExecutorService thread =
        java.util.concurrent.Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "basalt-backup-sync");
              t.setDaemon(true);
              return t;
            });
    private final java.util.concurrent.ExecutorService writes;

    /** A syncer whose {@code writeThreads} threads write the buffers handed to {@link #write}. */
    Syncer(int writeThreads) {
      writes =
          java.util.concurrent.Executors.newFixedThreadPool(
              Math.max(1, writeThreads),
              r -> {
                Thread t = new Thread(r, "basalt-backup-write");
                t.setDaemon(true);
                return t;
              });
    }

    /**
     * Writes all of {@code buf} to {@code f} at {@code offset} on a write thread; the caller must
     * not touch buf until the future is done.
     */
    java.util.concurrent.Future<?> write(StorageFile f, long offset, ByteBuffer buf) {
      return writes.submit(() -> f.write(offset, buf));
    }

    /**
     * Files with a sync queued or running; guarded by itself. A writer waits here before it closes
     * its file.
     */
    private final java.util.Map<StorageFile, Integer> pending = new java.util.HashMap<>();

    /** The first failure of a background sync; reported by {@link #close}. */
    private final java.util.concurrent.atomic.AtomicReference<RuntimeException> failure =
        new java.util.concurrent.atomic.AtomicReference<>();

    /** Queues a sync of {@code f} unless one is queued already. */
    void request(StorageFile f) {
      synchronized (pending) {
        if (pending.containsKey(f)) return;
        pending.put(f, 1);
      }
      thread.execute(
          () -> {
            try {
              f.sync();
            } catch (RuntimeException e) {
              failure.compareAndSet(null, e);
            } finally {
              synchronized (pending) {
                pending.remove(f);
                pending.notifyAll();
              }
            }
          });
    }

    /** Waits until no sync of {@code f} is queued or running (before it is closed). */
    void await(StorageFile f) {
      boolean interrupted = false;
      synchronized (pending) {
        while (pending.containsKey(f)) {
          try {
            pending.wait();
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
    }

    /**
     * Stops the thread once its syncs are done; throws the first failure of one (at the first close
     * only).
     */
    @Override
    public void close() {
      writes.shutdown();
      thread.shutdown();
      Backups.awaitTermination(writes);
      Backups.awaitTermination(thread);
      RuntimeException f = failure.getAndSet(null); // once: a second close reports nothing again
      if (f != null) throw f;
    }
  }

  /** What a finished file holds: its size, CRC-32C and items. */
  record Written(String name, long size, int crc, long items) {}

  /**
   * Writes a backup file, created unsynced (the backup syncs every file before its marker). Items
   * come from a scan or a capture ({@link ItemSink}); {@link #finish} writes the last block.
   */
  static final class Writer implements ItemSink {
    private final String name;
    private final StorageFile out;
    private final boolean lz4;
    private final BooleanSupplier stopped;
    private byte[] raw = new byte[BLOCK];
    private int rawLength;
    private int blockItems;
    private byte[] compressed = new byte[0];
    private final byte[] header = new byte[HEADER];
    private final CRC32C blockCrc = new CRC32C();
    private final CRC32C fileCrc = new CRC32C();

    /**
     * The buffer being filled; with a syncer, the other one ({@code spare}) may be in a write
     * meanwhile.
     */
    private ByteBuffer pending = writeBuffer();

    private ByteBuffer spare;

    /** The write of {@code spare} under way (syncer only), or null. */
    private java.util.concurrent.Future<?> inFlight;

    private long offset;
    private long items;

    /** Background syncs of this file (null: none), and the offset of the last request. */
    private final Syncer syncer;

    private long syncRequestedAt;

    Writer(Storage storage, String name, boolean lz4, BooleanSupplier stopped) {
      this(storage, name, lz4, stopped, null);
    }

    Writer(Storage storage, String name, boolean lz4, BooleanSupplier stopped, Syncer syncer) {
      this.name = name;
      this.lz4 = lz4;
      this.stopped = stopped;
      this.syncer = syncer;
      // with a syncer (a scan's shard): whole aligned buffers bypass the page cache where the
      // storage can
      this.out = syncer != null ? storage.createUnsyncedDirect(name) : storage.createUnsynced(name);
    }

    /** A buffer of {@link #WRITE_BUFFER} bytes aligned for a direct write. */
    private static ByteBuffer writeBuffer() {
      int a = Storage.DIRECT_ALIGNMENT;
      return ByteBuffer.allocateDirect(WRITE_BUFFER + a)
          .alignedSlice(a)
          .limit(WRITE_BUFFER)
          .slice();
    }

    @Override
    public void item(long keyAddr, int keyLen, long valueAddr, int valueLen) {
      int need = room(keyLen, valueLen);
      if (rawLength > 0 && rawLength + need > BLOCK) endBlock();
      if (raw.length < rawLength + need) raw = java.util.Arrays.copyOf(raw, rawLength + need);
      int at = putVarint(raw, rawLength, keyLen);
      at = putVarint(raw, at, valueLen);
      if (valueAddr == keyAddr + keyLen) { // a skiplist node: the value follows the key, one copy
        Mem.copyToArray(keyAddr, raw, at, keyLen + valueLen);
      } else {
        Mem.copyToArray(keyAddr, raw, at, keyLen);
        Mem.copyToArray(valueAddr, raw, at + keyLen, valueLen);
      }
      rawLength = at + keyLen + valueLen;
      blockItems++;
      items++;
    }

    /** Writes the last block and closes the file; returns what it holds. */
    Written finish() {
      try {
        if (rawLength > 0) endBlock();
        drain();
        awaitWrite();
      } finally {
        if (inFlight != null) awaitQuietly();
        if (syncer != null) syncer.await(out);
        out.close();
      }
      return new Written(name, offset, (int) fileCrc.getValue(), items);
    }

    /** Closes the file after a failure; what it holds is deleted with the backup. */
    void abandon() {
      awaitQuietly();
      if (syncer != null) syncer.await(out);
      out.close();
    }

    /** Waits for the write under way, if any; throws its failure. */
    private void awaitWrite() {
      java.util.concurrent.Future<?> f = inFlight;
      if (f == null) return;
      boolean interrupted = false;
      try {
        while (true) {
          try {
            f.get();
            return;
          } catch (InterruptedException e) {
            interrupted = true; // the buffer is the write's until it ends: wait on
          } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException r) throw r;
            if (c instanceof Error err) throw err;
            throw new io.basaltdb.StorageException("writing " + name + " failed: " + c, c);
          }
        }
      } finally {
        inFlight = null;
        if (interrupted) Thread.currentThread().interrupt();
      }
    }

    /**
     * As {@link #awaitWrite}, for a file being abandoned: its failure is the backup's failure
     * already.
     */
    private void awaitQuietly() {
      try {
        awaitWrite();
      } catch (RuntimeException | Error ignored) {
        // the backup has failed; what the file holds is deleted with it
      }
    }

    private void endBlock() {
      if (stopped.getAsBoolean()) {
        throw new ClosedException(
            "the store was closed during the backup, which is abandoned (what it wrote is"
                + " deleted, or left without its marker)");
      }
      byte[] payload = raw;
      int stored = rawLength;
      byte codec = RAW;
      if (lz4) {
        int max = COMPRESSOR.maxCompressedLength(rawLength);
        if (compressed.length < max) compressed = new byte[max];
        int n = COMPRESSOR.compress(raw, 0, rawLength, compressed, 0, max);
        if (n < rawLength) {
          payload = compressed;
          stored = n;
          codec = LZ4_BLOCK;
        }
      }
      putInt(header, 0, stored);
      putInt(header, 4, rawLength);
      putInt(header, 8, blockItems);
      header[12] = codec;
      blockCrc.reset();
      blockCrc.update(header, 0, 13);
      blockCrc.update(payload, 0, stored);
      putInt(header, 13, (int) blockCrc.getValue());
      append(header, HEADER);
      append(payload, stored);
      rawLength = 0;
      blockItems = 0;
    }

    private void append(byte[] b, int len) {
      fileCrc.update(b, 0, len);
      for (int at = 0; at < len; ) {
        if (!pending.hasRemaining()) drain();
        int n = Math.min(len - at, pending.remaining());
        pending.put(b, at, n);
        at += n;
      }
    }

    private void drain() {
      pending.flip();
      int n = pending.remaining();
      if (n > 0) {
        if (syncer == null) {
          out.write(offset, pending); // writes all of it
        } else { // the write goes on in the background while the other buffer fills
          awaitWrite();
          ByteBuffer full = pending;
          inFlight = syncer.write(out, offset, full);
          pending = spare != null ? spare : writeBuffer();
          spare = full;
        }
      }
      offset += n;
      pending.clear();
      if (syncer != null && offset - syncRequestedAt >= SYNC_STEP) {
        syncRequestedAt = offset;
        syncer.request(out);
      }
    }
  }

  /** Receives the items of a backup file in order: a store key and an entry, in {@code buf}. */
  interface ItemConsumer {
    void item(byte[] buf, int keyOffset, int keyLength, int entryOffset, int entryLength);
  }

  /**
   * Reads the backup file {@code name}, of {@code size} bytes and CRC-32C {@code crc} as the marker
   * recorded, handing each item to {@code consumer}; returns how many there were.
   *
   * @throws CorruptionException naming the file, on a damaged block, a bad length, a file whose
   *     size or checksum is not the recorded one, or bytes after the last block
   */
  static long read(Storage storage, String name, long size, int crc, ItemConsumer consumer) {
    StorageFile in = storage.openForReading(name);
    try {
      long actual = in.size();
      if (actual != size) {
        throw corrupt(
            storage,
            name,
            "has "
                + actual
                + " bytes where the backup recorded "
                + size
                + " (truncated or overwritten)");
      }
      Reader r = new Reader(in, size);
      CRC32C blockCrc = new CRC32C();
      byte[] raw = new byte[BLOCK];
      long items = 0;
      while (r.position() < size) {
        long blockAt = r.position();
        byte[] w = r.need(HEADER, storage, name);
        int h = r.at;
        int stored = getInt(w, h), rawLength = getInt(w, h + 4), blockItems = getInt(w, h + 8);
        byte codec = w[h + 12];
        int expected = getInt(w, h + 13);
        if (stored < 0
            || rawLength < 0
            || blockItems < 0
            || stored > size - blockAt - HEADER
            || (codec != RAW && codec != LZ4_BLOCK)
            || (codec == RAW && stored != rawLength)) {
          throw corrupt(storage, name, "has a bad block header at offset " + blockAt);
        }
        blockCrc.reset();
        blockCrc.update(w, h, 13);
        r.skip(HEADER);
        w = r.need(stored, storage, name);
        int p = r.at;
        blockCrc.update(w, p, stored);
        if ((int) blockCrc.getValue() != expected) {
          throw corrupt(storage, name, "fails the checksum of its block at offset " + blockAt);
        }
        byte[] payload = w;
        int from = p;
        if (codec == LZ4_BLOCK) {
          if (raw.length < rawLength) raw = new byte[rawLength];
          int n;
          try {
            n = DECOMPRESSOR.decompress(w, p, stored, raw, 0, rawLength);
          } catch (LZ4Exception e) {
            throw corrupt(
                storage,
                name,
                "has a block at offset "
                    + blockAt
                    + " that does not decompress: "
                    + e.getMessage());
          }
          if (n != rawLength)
            throw corrupt(
                storage, name, "has a block at offset " + blockAt + " of the wrong raw length");
          payload = raw;
          from = 0;
        }
        int end = from + rawLength, at = from;
        for (int i = 0; i < blockItems; i++) {
          long kl = varint(payload, at, end);
          if (kl < 0)
            throw corrupt(storage, name, "has a bad item in its block at offset " + blockAt);
          at += varintSize(kl);
          long el = varint(payload, at, end);
          if (el < 0)
            throw corrupt(storage, name, "has a bad item in its block at offset " + blockAt);
          at += varintSize(el);
          if (kl + el > end - at)
            throw corrupt(storage, name, "has a bad item in its block at offset " + blockAt);
          int k = at;
          at += (int) kl;
          consumer.item(payload, k, (int) kl, at, (int) el);
          at += (int) el;
        }
        if (at != end)
          throw corrupt(
              storage, name, "has a block at offset " + blockAt + " with bytes after its items");
        r.skip(stored);
        items += blockItems;
      }
      if (r.crc() != crc)
        throw corrupt(
            storage,
            name,
            "fails its checksum (CRC-32C "
                + Integer.toHexString(r.crc())
                + ", recorded "
                + Integer.toHexString(crc)
                + ")");
      return items;
    } finally {
      in.close();
    }
  }

  /**
   * A window over a file read front to back in large reads, with the CRC-32C of what it has passed.
   */
  private static final class Reader {
    private final StorageFile in;
    private final long size;
    private byte[] buf = new byte[1 << 20];

    /** Window: buf[at, limit) holds the file's bytes from {@code position()}. */
    int at;

    private int limit;
    private long fileOffset; // file offset of buf[limit]
    private final CRC32C crc = new CRC32C();

    Reader(StorageFile in, long size) {
      this.in = in;
      this.size = size;
    }

    long position() {
      return fileOffset - (limit - at);
    }

    /** Makes {@code n} bytes available from {@link #at}; returns the buffer. */
    byte[] need(int n, Storage storage, String name) {
      if (limit - at >= n) return buf;
      if (position() + n > size)
        throw corrupt(storage, name, "ends inside a block at offset " + position());
      System.arraycopy(buf, at, buf, 0, limit - at);
      limit -= at;
      at = 0;
      if (buf.length < n) buf = java.util.Arrays.copyOf(buf, Math.max(n, buf.length * 2));
      while (limit < n) {
        int want = (int) Math.min(buf.length - limit, size - fileOffset);
        int got = in.read(fileOffset, ByteBuffer.wrap(buf, limit, want));
        if (got <= 0)
          throw corrupt(
              storage,
              name,
              "ends at offset " + fileOffset + ", before its recorded " + size + " bytes");
        limit += got;
        fileOffset += got;
      }
      return buf;
    }

    void skip(int n) {
      crc.update(buf, at, n);
      at += n;
    }

    int crc() {
      return (int) crc.getValue();
    }
  }

  static CorruptionException corrupt(Storage storage, String name, String what) {
    return new CorruptionException(
        "the backup file "
            + storage.describe(name)
            + " "
            + what
            + "; the backup cannot be restored (docs/operations.md, \"Backup\")");
  }

  /** Bytes an item takes in a block. */
  static int room(int keyLen, int valueLen) {
    return varintSize(keyLen) + keyLen + varintSize(valueLen) + valueLen;
  }

  static int varintSize(long v) {
    int n = 1;
    while (v >= 0x80) {
      v >>>= 7;
      n++;
    }
    return n;
  }

  static int putVarint(byte[] b, int at, int v) {
    while ((v & ~0x7F) != 0) {
      b[at++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    b[at++] = (byte) v;
    return at;
  }

  /** The varint at {@code b[at]}, or -1 if it runs past {@code end} or past 31 bits. */
  static long varint(byte[] b, int at, int end) {
    long v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (at >= end) return -1;
      int x = b[at++];
      v |= (long) (x & 0x7F) << shift;
      if ((x & 0x80) == 0) return v > Integer.MAX_VALUE ? -1 : v;
    }
    return -1;
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) v;
    b[at + 1] = (byte) (v >>> 8);
    b[at + 2] = (byte) (v >>> 16);
    b[at + 3] = (byte) (v >>> 24);
  }

  private static int getInt(byte[] b, int at) {
    return (b[at] & 0xFF)
        | (b[at + 1] & 0xFF) << 8
        | (b[at + 2] & 0xFF) << 16
        | (b[at + 3] & 0xFF) << 24;
  }
}
