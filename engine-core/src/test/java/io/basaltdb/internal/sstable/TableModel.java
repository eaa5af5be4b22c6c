package io.basaltdb.internal.sstable;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.basaltdb.ClosedException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * A sorted map of records, the model the SSTable tests compare tables against, with generators of
 * random keys (shared prefixes, the empty key, long keys) and a writer for it.
 *
 * <p>Thread-safety: not thread-safe; build it in one thread, then read it from any.
 */
final class TableModel {
  final TreeMap<byte[], KeyRecord> map = new TreeMap<>(KeyRecord::compareKeys);

  void put(byte[] key, long seqno, int docSize, boolean tombstone, long hint) {
    map.put(key, new KeyRecord().set(key, seqno, docSize, tombstone, hint));
  }

  /** Adds {@code n} random records with keys from {@link #randomKey}. */
  static TableModel random(SplittableRandom r, int n, int maxKeyLen) {
    TableModel m = new TableModel();
    byte[][] prefixes = new byte[8][];
    for (int i = 0; i < prefixes.length; i++)
      prefixes[i] = bytes(r, r.nextInt(Math.min(maxKeyLen, 40) + 1));
    while (m.map.size() < n) {
      byte[] k = randomKey(r, prefixes, maxKeyLen);
      m.put(
          k,
          r.nextLong(0, Long.MAX_VALUE),
          r.nextInt(0, Integer.MAX_VALUE),
          r.nextInt(4) == 0,
          r.nextLong());
    }
    return m;
  }

  /** Byte values at the edges of the unsigned order, where separator and comparison bugs hide. */
  private static final byte[] EDGE_BYTES = {
    0x00, 0x01, 0x7F, (byte) 0x80, (byte) 0xFE, (byte) 0xFF
  };

  /**
   * A key that often starts with one of {@code prefixes}, with few distinct byte values so keys
   * collide on prefixes.
   */
  static byte[] randomKey(SplittableRandom r, byte[][] prefixes, int maxKeyLen) {
    byte[] prefix = r.nextBoolean() ? prefixes[r.nextInt(prefixes.length)] : new byte[0];
    int len = Math.min(maxKeyLen, prefix.length + r.nextInt(r.nextInt(8) == 0 ? 64 : 6));
    byte[] k = new byte[len];
    int p = Math.min(prefix.length, len);
    System.arraycopy(prefix, 0, k, 0, p);
    boolean small = r.nextBoolean();
    for (int i = p; i < len; i++)
      k[i] = small ? EDGE_BYTES[r.nextInt(EDGE_BYTES.length)] : (byte) r.nextInt(256);
    return k;
  }

  static byte[] bytes(SplittableRandom r, int len) {
    byte[] b = new byte[len];
    for (int i = 0; i < len; i++) b[i] = (byte) r.nextInt(256);
    return b;
  }

  TableInfo write(StorageFile file, TableOptions options) {
    TableWriter w = new TableWriter(file, options);
    for (KeyRecord rec : map.values())
      w.add(rec.key, rec.seqno, rec.docSize, rec.tombstone, rec.hint);
    return w.finish();
  }

  /** The bytes of this model written as a table with {@code options}. */
  byte[] tableBytes(TableOptions options) {
    StorageFile f = newFile();
    write(f, options);
    return contents(f);
  }

  /** A new file in a fresh {@link MemStorage}, holding {@code contents}. */
  static StorageFile file(byte[] contents) {
    StorageFile f = new MemStorage(0).create("t.sst");
    if (contents.length > 0) f.write(0, ByteBuffer.wrap(contents));
    return f;
  }

  static StorageFile newFile() {
    return file(new byte[0]);
  }

  static byte[] contents(StorageFile f) {
    byte[] b = new byte[Math.toIntExact(f.size())];
    assertEquals(b.length, f.read(0, ByteBuffer.wrap(b)));
    return b;
  }

  /** True if the handle was closed (its operations throw). */
  static boolean isClosed(StorageFile f) {
    try {
      f.size();
      return false;
    } catch (StorageException
        | ClosedException e) { // the storage may report a closed handle either way
      return true;
    }
  }

  static void assertRecord(KeyRecord want, KeyRecord got, String ctx) {
    assertArrayEquals(want.key, got.key, ctx);
    assertEquals(want.seqno, got.seqno, ctx);
    assertEquals(want.docSize, got.docSize, ctx);
    assertEquals(want.tombstone, got.tombstone, ctx);
    assertEquals(want.hint, got.hint, ctx);
  }

  /**
   * Asserts that the iterator, from its current position, yields exactly {@code expected}'s
   * records.
   */
  static void assertRest(TableIterator it, Iterable<KeyRecord> expected, String ctx) {
    KeyRecord got = new KeyRecord();
    int i = 0;
    for (KeyRecord want : expected) {
      if (!it.valid())
        throw new AssertionError(ctx + ": iterator ended at record " + i + ", expected " + want);
      assertRecord(want, it.record(got), ctx + " record " + i);
      it.next();
      i++;
    }
    assertFalse(it.valid(), ctx + ": iterator has records beyond the expected " + i);
  }

  Map.Entry<byte[], KeyRecord> ceiling(byte[] key) {
    return map.ceilingEntry(key);
  }
}
