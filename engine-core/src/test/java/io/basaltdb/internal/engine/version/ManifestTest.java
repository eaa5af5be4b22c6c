package io.basaltdb.internal.engine.version;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * The manifest's byte layout (docs/format.md, "Manifest"): what it encodes decodes back, and
 * versions.
 */
class ManifestTest {
  static Manifest sample() {
    return new Manifest(
        7,
        1234,
        99,
        42,
        40,
        41,
        3,
        List.of(
            new Manifest.KeyspaceMeta(
                1,
                "default",
                List.of(new Manifest.TableMeta(30, 0), new Manifest.TableMeta(12, 2)),
                List.of(),
                new Manifest.Counters(500, 64_000, 380, 41_000)),
            new Manifest.KeyspaceMeta(2, "second", List.of(), List.of(), Manifest.Counters.ZERO)));
  }

  @Test
  void decode_returnsWhatEncodeWrote_countersIncluded() {
    Manifest m = sample();
    Manifest back = Manifest.decode(m.encode(), "test");
    assertEquals(m, back);
    assertEquals(
        new Manifest.Counters(500, 64_000, 380, 41_000), back.keyspaces().get(0).counters());
    assertEquals(64_000 - 41_000, back.keyspaces().get(0).counters().liveBytes());
  }

  @Test
  void aManifestOfAnotherFormatVersion_failsTheOpen_namingBothVersions() {
    MemStorage storage = new MemStorage(1);
    storage.mkdirs(FileNames.MANIFEST_DIR);
    byte[] data = sample().encode();
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(8, 1); // the version before the counters
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    b.putInt(data.length - 4, (int) crc.getValue());
    try (var f = storage.create(FileNames.manifest(7))) {
      f.write(0, ByteBuffer.wrap(data));
    }
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Engine.open(storage, Options.defaults()));
    assertTrue(
        e.getMessage()
            .contains(
                "format version 1; this build reads versions "
                    + Manifest.OLDEST_READABLE_VERSION
                    + " to "
                    + Manifest.FORMAT_VERSION),
        e.getMessage());
  }

  static Manifest guardedSample() {
    Guards g =
        Guards.EMPTY.withAdded(6, List.of(b("m"), b("c"), b("x"))).withAdded(3, List.of(b("k")));
    return new Manifest(
        8,
        1234,
        99,
        42,
        40,
        41,
        2,
        List.of(
            new Manifest.KeyspaceMeta(
                1,
                "default",
                List.of(new Manifest.TableMeta(30, 6), new Manifest.TableMeta(12, 6)),
                List.of(),
                new Manifest.Counters(500, 64_000, 380, 41_000),
                List.of(),
                List.of(),
                g)),
        Manifest.FLAG_GUARDS);
  }

  private static byte[] b(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  @Test
  void aGuardedManifest_hasTheGuardsFlag_andRoundTripsItsGuards() {
    Manifest m = guardedSample();
    byte[] data = m.encode();
    assertEquals(Manifest.VERSION_WITHOUT_KEYSPACE_FORMATS, data[8]);
    assertEquals(Manifest.FLAG_GUARDS, data[12]);
    Manifest back = Manifest.decode(data, "test");
    assertEquals(m, back);
    assertTrue(back.guardedKeyIndex());
    assertEquals(3, back.keyspaces().get(0).guards().count(6));
    assertEquals(1, back.keyspaces().get(0).guards().guardOf(6, b("d")));
  }

  @Test
  void aKeyspaceWithTrieTables_isFormat7_andKeepsItsChunkSize() {
    Manifest.KeyspaceMeta block =
        new Manifest.KeyspaceMeta(
            1,
            "block",
            List.of(),
            List.of(),
            Manifest.Counters.ZERO,
            List.of(),
            List.of(),
            Guards.EMPTY,
            5,
            0);
    Manifest.KeyspaceMeta trie =
        new Manifest.KeyspaceMeta(
            2,
            "trie",
            List.of(new Manifest.TableMeta(9, 0)),
            List.of(),
            Manifest.Counters.ZERO,
            List.of(),
            List.of(),
            Guards.EMPTY,
            6,
            16);
    Manifest m = new Manifest(7, 1234, 99, 42, 40, 41, 3, List.of(block, trie), 0);
    byte[] data = m.encode();
    assertEquals(7, data[8], "HB+-trie keyspaces but no hashed one: format 7");
    assertEquals(7, Manifest.VERSION_WITHOUT_HASHED_KEYSPACES);
    Manifest back = Manifest.decode(data, "test");
    assertEquals(m, back);
    assertEquals(16, back.keyspaces().get(1).trieChunkBytes());
    assertEquals(0, back.keyspaces().get(0).trieChunkBytes());
    // a chunk size no build writes is corruption
    byte[] bad = data.clone();
    int at = lastIndexOf(bad, new byte[] {16, 0, 0, 0});
    bad[at] = 5;
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(bad, 0, bad.length - 4);
    java.nio.ByteBuffer.wrap(bad)
        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .putInt(bad.length - 4, (int) crc.getValue());
    org.junit.jupiter.api.Assertions.assertThrows(
        io.basaltdb.CorruptionException.class, () -> Manifest.decode(bad, "test"));
  }

  @Test
  void aHashedKeyspace_isFormat8_andAnOlderFormatCannotNameOne() {
    int code = io.basaltdb.internal.engine.base.KeyspaceLayout.hashed(256, 16);
    Manifest.KeyspaceMeta hashed =
        new Manifest.KeyspaceMeta(
            2,
            "h",
            List.of(),
            List.of(),
            Manifest.Counters.ZERO,
            List.of(),
            List.of(),
            Guards.EMPTY,
            0,
            code);
    Manifest m = new Manifest(7, 1234, 99, 42, 40, 41, 3, List.of(hashed), 0);
    byte[] data = m.encode();
    assertEquals(8, data[8]);
    assertEquals(8, Manifest.FORMAT_VERSION);
    Manifest back = Manifest.decode(data, "test");
    assertEquals(m, back);
    assertEquals(code, back.keyspaces().get(0).trieChunkBytes());
    // the same code in a format 7 manifest is corruption, as is a branching no build writes
    for (int[] change : new int[][] {{8, 7}, {-1, 0}}) {
      byte[] bad = data.clone();
      if (change[0] == 8) bad[8] = 7;
      else bad[lastIndexOf(bad, intLe(code))] = 3; // branching 3
      java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
      crc.update(bad, 0, bad.length - 4);
      java.nio.ByteBuffer.wrap(bad)
          .order(java.nio.ByteOrder.LITTLE_ENDIAN)
          .putInt(bad.length - 4, (int) crc.getValue());
      org.junit.jupiter.api.Assertions.assertThrows(
          io.basaltdb.CorruptionException.class, () -> Manifest.decode(bad, "test"));
    }
  }

  private static byte[] intLe(int v) {
    return java.nio.ByteBuffer.allocate(4)
        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .putInt(v)
        .array();
  }

  private static int lastIndexOf(byte[] data, byte[] what) {
    for (int i = data.length - 4 - what.length; i >= 0; i--) {
      if (java.util.Arrays.equals(data, i, i + what.length, what, 0, what.length)) return i;
    }
    throw new AssertionError("not found");
  }

  @Test
  void aLeveledManifest_isFormat6_andKeepsThePurgeSeqnoAndItemCount() {
    Manifest m =
        new Manifest(
            7,
            1234,
            99,
            42,
            40,
            41,
            2,
            List.of(
                new Manifest.KeyspaceMeta(
                    1,
                    "default",
                    List.of(),
                    List.of(),
                    new Manifest.Counters(0, 0, 0, 0, 0, 0, 777),
                    List.of(),
                    List.of(),
                    Guards.EMPTY,
                    12_345)),
            Manifest.FLAG_ITEM_COUNTS);
    byte[] data = m.encode();
    assertEquals(6, data[8], "no keyspace with HB+-trie tables: still format 6");
    assertEquals(Manifest.FLAG_ITEM_COUNTS, data[12]);
    Manifest back = Manifest.decode(data, "test");
    assertTrue(!back.guardedKeyIndex());
    assertTrue(back.itemsCounted());
    assertEquals(12_345, back.keyspaces().get(0).purgeSeqno());
    assertEquals(777, back.keyspaces().get(0).counters().items());
    assertEquals(m, back);
  }

  @Test
  void aFormat4Manifest_isStillRead_withItsFlushedSeqnoAsPurgeSeqno() {
    // Format 4 is format 6 of a store without guards less each keyspace's item count (the counters'
    // last
    // 8 bytes) and purge seqno (its last 8 bytes).
    Manifest m =
        new Manifest(
            7,
            1234,
            99,
            42,
            40,
            41,
            2,
            List.of(
                new Manifest.KeyspaceMeta(
                    1,
                    "default",
                    List.of(new Manifest.TableMeta(30, 0)),
                    List.of(),
                    new Manifest.Counters(500, 64_000, 380, 41_000))));
    byte[] v6 = m.encode();
    int items = 72 + 4 + 4 + "default".length() + 48; // header, id, name length, name, six counters
    byte[] v4 = new byte[v6.length - 16];
    System.arraycopy(v6, 0, v4, 0, items);
    System.arraycopy(v6, items + 8, v4, items, v6.length - 12 - items - 8);
    ByteBuffer b = ByteBuffer.wrap(v4).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(8, 4);
    CRC32C crc = new CRC32C();
    crc.update(v4, 0, v4.length - 4);
    b.putInt(v4.length - 4, (int) crc.getValue());
    Manifest back = Manifest.decode(v4, "test");
    assertEquals(m.keyspaces().get(0).counters(), back.keyspaces().get(0).counters());
    assertEquals(m.keyspaces().get(0).tables(), back.keyspaces().get(0).tables());
    assertEquals(
        99,
        back.keyspaces().get(0).purgeSeqno(),
        "deletions up to the flushed seqno may have been purged");
    assertTrue(!back.itemsCounted());
  }

  @Test
  void aNegativePurgeSeqno_isCorruption() {
    Manifest m =
        new Manifest(
            7,
            1234,
            99,
            42,
            40,
            41,
            2,
            List.of(
                new Manifest.KeyspaceMeta(
                    1,
                    "default",
                    List.of(),
                    List.of(),
                    Manifest.Counters.ZERO,
                    List.of(),
                    List.of(),
                    Guards.EMPTY,
                    5)));
    byte[] data = m.encode();
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(data.length - 12, -5);
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    b.putInt(data.length - 4, (int) crc.getValue());
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Manifest.decode(data, "test"));
    assertTrue(e.getMessage().contains("purge seqno -5"), e.getMessage());
  }

  @Test
  void guardKeysOutOfOrder_areCorruption() {
    byte[] data = guardedSample().encode();
    // Level 6's keys are c, m, x (each a u32 length 1 and a byte); swap the first two.
    int at = indexOf(data, new byte[] {1, 0, 0, 0, 'c', 1, 0, 0, 0, 'm'});
    data[at + 4] = 'm';
    data[at + 9] = 'c';
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    ByteBuffer.wrap(data)
        .order(ByteOrder.LITTLE_ENDIAN)
        .putInt(data.length - 4, (int) crc.getValue());
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Manifest.decode(data, "test"));
    assertTrue(e.getMessage().contains("guard keys of level 6 out of order"), e.getMessage());
  }

  private static int indexOf(byte[] data, byte[] part) {
    for (int i = 0; i + part.length <= data.length; i++) {
      if (java.util.Arrays.equals(data, i, i + part.length, part, 0, part.length)) return i;
    }
    throw new AssertionError("not found");
  }
}
