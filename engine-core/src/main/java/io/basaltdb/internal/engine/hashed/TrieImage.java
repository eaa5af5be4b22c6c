package io.basaltdb.internal.engine.hashed;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * A hashed keyspace's trie image (docs/format.md, "Lazy-trie images"): every record of its
 * lazy-trie as of a flushed seqno, written once, sequentially, then renamed into place. An open
 * loads the newest image it may use and replays the log after it ({@link HashedIndexes#recover}).
 *
 * <pre>
 * image  = header | block* | footer
 * header = magic u64 | version u32 | keyspace u32 | layout u32 | pad u32 | seqno u64 | crc32c u32 (of the 32 bytes before)
 * block  = length u32 (> 0) | crc32c u32 (of the payload) | payload: record*
 * record = keyLen varint | key | seqno u64 | docSize varint | hint u64 | expiry varint
 * footer = 0 u32 | crc32c u32 (of the 16 bytes after) | records u64 | seqno u64
 * </pre>
 *
 * Integers are little-endian. A file without a valid footer is incomplete and not an image.
 *
 * <p>Thread-safety: stateless; {@link #write} runs on the trie's writer thread.
 */
public final class TrieImage {
  static final long MAGIC = 0x4547_414d_4952_5442L; // "BTRIMAGE" little-endian
  static final int VERSION = 1;
  static final int HEADER_SIZE = 36;
  static final int BLOCK_BYTES = 64 << 10;

  /** The largest block a writer makes: a full one, or one record of the longest key on its own. */
  static final int MAX_BLOCK = BLOCK_BYTES + KeyRecord.MAX_KEY_SIZE + 64;

  private TrieImage() {}

  /** The directory of keyspace {@code ks}'s trie images. */
  public static String dir(int ks) {
    return FileNames.trieDir(ks);
  }

  /**
   * Writes {@code index}'s records as of {@code seqno} to a temporary file, synced; returns its
   * name ({@link #publish} renames it into place). The caller is the trie's writer.
   */
  public static String write(Storage storage, HashedIndex index, int layout, long seqno) {
    storage.mkdirs(dir(index.keyspace()));
    String temp = FileNames.trieImage(index.keyspace(), seqno) + ".tmp";
    StorageFile f = storage.create(temp);
    try {
      ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
      h.putLong(MAGIC).putInt(VERSION).putInt(index.keyspace()).putInt(layout).putInt(0);
      h.putLong(seqno);
      h.putInt(crc(h.array(), 0, 32));
      f.write(0, h.flip());
      long[] pos = {HEADER_SIZE};
      long[] records = {0};
      ByteBuffer block = ByteBuffer.allocate(8 + BLOCK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      block.position(8);
      index
          .trie()
          .forEach(
              r -> {
                int need = 5 + r.key.length + 8 + 5 + 8 + 10;
                if (block.position() > 8 && block.position() + need > block.capacity()) {
                  pos[0] += writeBlock(f, pos[0], block);
                }
                ByteBuffer b = block;
                if (b.remaining() < need) { // one record larger than a block: a block of its own
                  b = ByteBuffer.allocate(8 + need).order(ByteOrder.LITTLE_ENDIAN).position(8);
                }
                putVarint(b, r.key.length);
                b.put(r.key);
                b.putLong(r.seqno);
                putVarint(b, r.docSize);
                b.putLong(r.hint);
                putVarint(b, r.expiry);
                if (b != block) pos[0] += writeBlock(f, pos[0], b);
                records[0]++;
              });
      if (block.position() > 8) pos[0] += writeBlock(f, pos[0], block);
      ByteBuffer footer = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
      footer.putInt(0).putInt(0).putLong(records[0]).putLong(seqno);
      footer.putInt(4, crc(footer.array(), 8, 16));
      f.write(pos[0], footer.flip());
      f.sync();
    } catch (RuntimeException | Error e) {
      f.close();
      storage.delete(temp);
      throw e;
    }
    f.close();
    return temp;
  }

  private static int writeBlock(StorageFile f, long at, ByteBuffer block) {
    int len = block.position() - 8;
    block.putInt(0, len);
    block.putInt(4, crc(block.array(), 8, len));
    block.flip();
    f.write(at, block);
    block.clear();
    block.position(8);
    return 8 + len;
  }

  /** Renames a written image into place and syncs its directory: from now on an open may use it. */
  public static void publish(Storage storage, String temp) {
    storage.rename(temp, temp.substring(0, temp.length() - ".tmp".length()));
    storage.syncDirectory(temp.substring(0, temp.lastIndexOf('/')));
  }

  /** The images of keyspace {@code ks}, oldest first, and any temporary files. */
  public static List<String> list(Storage storage, int ks) {
    if (!storage.exists(dir(ks))) return List.of();
    List<String> names = new ArrayList<>();
    for (String n : storage.list(dir(ks))) names.add(n.contains("/") ? n : dir(ks) + "/" + n);
    names.sort(null);
    return names;
  }

  /**
   * Loads image {@code name} into the empty {@code index}; returns its seqno.
   *
   * @throws CorruptionException if the file is not a whole, intact image of this keyspace
   */
  static long load(Storage storage, String name, HashedIndex index, int layout) {
    StorageFile f = storage.openForReading(name);
    try {
      long size = f.size();
      ByteBuffer h = read(f, 0, HEADER_SIZE, name);
      if (h.getLong(0) != MAGIC || h.getInt(8) != VERSION) throw corrupt(name, 0, "not an image");
      if (h.getInt(32) != crc(h.array(), 0, 32)) throw corrupt(name, 0, "header checksum");
      if (h.getInt(12) != index.keyspace() || h.getInt(16) != layout)
        throw corrupt(name, 12, "image of another keyspace or layout");
      long seqno = h.getLong(24);
      if (seqno != FileNames.trieImageSeqno(name))
        throw corrupt(name, 24, "seqno " + seqno + " is not the one its name carries");
      long pos = HEADER_SIZE, records = 0;
      while (true) {
        ByteBuffer head = read(f, pos, 8, name);
        int len = head.getInt(0);
        if (len == 0) {
          ByteBuffer footer = read(f, pos + 8, 16, name);
          if (head.getInt(4) != crc(footer.array(), 0, 16)) throw corrupt(name, pos, "footer");
          if (footer.getLong(0) != records || footer.getLong(8) != seqno)
            throw corrupt(name, pos, "footer disagrees with the records");
          if (pos + 24 != size) throw corrupt(name, pos, "bytes after the footer");
          return seqno;
        }
        if (len < 0 || len > MAX_BLOCK || pos + 8 + len > size)
          throw corrupt(name, pos, "block length " + len);
        ByteBuffer b = read(f, pos + 8, len, name);
        if (head.getInt(4) != crc(b.array(), 0, len)) throw corrupt(name, pos, "block checksum");
        try {
          while (b.hasRemaining()) {
            long keyLen = getVarint(b);
            if (keyLen < 0 || keyLen > KeyRecord.MAX_KEY_SIZE) throw corrupt(name, pos, "key");
            byte[] key = new byte[(int) keyLen];
            b.get(key);
            long s = b.getLong();
            long docSize = getVarint(b);
            long hint = b.getLong();
            long expiry = getVarint(b);
            if (s < 0 || s > seqno || docSize < 0 || docSize > Integer.MAX_VALUE || expiry < 0)
              throw corrupt(name, pos, "record fields");
            index.load(key, s, (int) docSize, hint, expiry);
            records++;
          }
        } catch (java.nio.BufferUnderflowException e) {
          throw corrupt(name, pos, "record overruns its block");
        }
        pos += 8 + len;
      }
    } finally {
      f.close();
    }
  }

  private static ByteBuffer read(StorageFile f, long pos, int len, String name) {
    ByteBuffer b = ByteBuffer.allocate(len).order(ByteOrder.LITTLE_ENDIAN);
    while (b.hasRemaining()) {
      int n = f.read(pos + b.position(), b);
      if (n <= 0) throw corrupt(name, pos, "ends early");
    }
    return b.flip();
  }

  private static CorruptionException corrupt(String name, long at, String what) {
    return new CorruptionException(name, at, "trie image: " + what);
  }

  static int crc(byte[] a, int off, int len) {
    CRC32C c = new CRC32C();
    c.update(a, off, len);
    return (int) c.getValue();
  }

  private static void putVarint(ByteBuffer b, long v) {
    while ((v & ~0x7FL) != 0) {
      b.put((byte) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    b.put((byte) v);
  }

  private static long getVarint(ByteBuffer b) {
    long v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      byte x = b.get();
      v |= (long) (x & 0x7F) << shift;
      if (x >= 0) return v;
    }
    throw new CorruptionException("trie image", -1, "varint too long");
  }
}
