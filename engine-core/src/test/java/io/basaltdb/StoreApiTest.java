package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The public API's contracts: refusals leave the store unchanged, closed handles throw, keyspaces.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class StoreApiTest {
  static byte[] b(String s) {
    return s.getBytes();
  }

  static Options small() {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(256 << 10).maxValueSize(1000);
  }

  @Test
  void badInput_isRefusedBeforeAnythingIsWritten() {
    MemStorage storage = new MemStorage(1);
    try (Basalt db = Basalt.open(storage, small())) {
      Keyspace ks = db.keyspace("default");
      ks.put(b("a"), b("1"));
      long seq = db.stats().lastSeqno();
      assertThrows(InvalidArgumentException.class, () -> ks.put(null, b("x")));
      assertThrows(InvalidArgumentException.class, () -> ks.put(b("k"), null));
      assertThrows(
          InvalidArgumentException.class, () -> ks.put(new byte[Options.MAX_KEY_SIZE + 1], b("x")));
      InvalidArgumentException big =
          assertThrows(InvalidArgumentException.class, () -> ks.put(b("k"), new byte[1001]));
      assertTrue(big.getMessage().contains("maxValueSize"), big.getMessage());
      assertThrows(InvalidArgumentException.class, () -> ks.delete((byte[]) null));
      assertThrows(InvalidArgumentException.class, () -> ks.get(null));
      assertThrows(InvalidArgumentException.class, () -> db.write(null));
      // A batch with one bad value is refused whole: its good puts do not appear.
      WriteBatch batch =
          new WriteBatch().put(ks, b("good"), b("v")).put(ks, b("bad"), new byte[1001]);
      assertThrows(InvalidArgumentException.class, () -> db.write(batch));
      assertThrows(
          InvalidArgumentException.class, () -> new WriteBatch().put(null, b("k"), b("v")));
      assertThrows(InvalidArgumentException.class, () -> db.keyspace("missing"));
      assertThrows(InvalidArgumentException.class, () -> db.createKeyspace("default"));
      assertThrows(InvalidArgumentException.class, () -> db.createKeyspace(""));
      assertThrows(InvalidArgumentException.class, () -> db.dropKeyspace("missing"));
      assertThrows(
          InvalidArgumentException.class, () -> ks.scan(new byte[Options.MAX_KEY_SIZE + 1], null));
      try (Basalt other = Basalt.openInMemory(small())) {
        WriteBatch foreign = new WriteBatch().put(other.keyspace("default"), b("f"), b("v"));
        assertThrows(InvalidArgumentException.class, () -> db.write(foreign));
      }
      assertEquals(seq, db.stats().lastSeqno(), "a refused write consumed a seqno");
      assertNull(ks.get(b("good")));
      assertNull(ks.get(b("k")));
      assertArrayEquals(b("1"), ks.get(b("a")));
      // Limits themselves are accepted: an empty key, an empty value, a 64 KiB key, a maximal
      // value.
      ks.put(new byte[0], new byte[0]);
      ks.put(new byte[Options.MAX_KEY_SIZE], new byte[1000]);
      assertArrayEquals(new byte[0], ks.get(new byte[0]));
      assertArrayEquals(new byte[1000], ks.get(new byte[Options.MAX_KEY_SIZE]));
    }
    try (Basalt db =
        Basalt.open(storage, small())) { // and the refusals left nothing behind in the WAL
      Keyspace ks = db.keyspace("default");
      assertNull(ks.get(b("good")));
      assertArrayEquals(b("1"), ks.get(b("a")));
    }
  }

  @Test
  void invalidOptions_nameTheKnob() {
    InvalidArgumentException e =
        assertThrows(
            InvalidArgumentException.class,
            () -> Basalt.openInMemory(Options.defaults().memoryQuota(10)));
    assertTrue(e.getMessage().contains("memoryQuota"), e.getMessage());
    e =
        assertThrows(
            InvalidArgumentException.class,
            () -> Options.defaults().writeCacheSize(Long.MAX_VALUE).validate());
    assertTrue(e.getMessage().contains("writeCacheSize"), e.getMessage());
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().segmentSize(1).validate());
    assertThrows(
        InvalidArgumentException.class, () -> Options.defaults().maxValueSize(-1).validate());
    assertTrue(Options.defaults().toString().contains("syncMode=SYNC"));
  }

  @Test
  void optionsSetByName_takeEveryKindOfValue_andRefuseUnknownOnes() {
    Options o =
        Options.defaults()
            .set("memoryQuota", "33554432")
            .set("exactItemCounts", "true")
            .set("syncMode", "none")
            .set("fragmentationThreshold", "0.3")
            .set("coldZstdLevel", "5");
    assertEquals(32L << 20, o.memoryQuota());
    assertTrue(o.exactItemCounts());
    assertEquals(SyncMode.NONE, o.syncMode());
    assertEquals(0.3, o.fragmentationThreshold());
    assertEquals(5, o.coldZstdLevel());
    InvalidArgumentException e =
        assertThrows(InvalidArgumentException.class, () -> o.set("noSuchKnob", "1"));
    assertTrue(e.getMessage().contains("noSuchKnob"), e.getMessage());
    e = assertThrows(InvalidArgumentException.class, () -> o.set("memoryQuota", "lots"));
    assertTrue(e.getMessage().contains("memoryQuota"), e.getMessage());
    assertThrows(InvalidArgumentException.class, () -> o.set("exactItemCounts", "yes"));
    assertThrows(InvalidArgumentException.class, () -> o.set("syncMode", "sometimes"));
    assertThrows(InvalidArgumentException.class, () -> o.set(null, "1"));
  }

  @Test
  void closedHandles_throwClosedException() {
    MemStorage storage = new MemStorage(2);
    Basalt db = Basalt.open(storage, small());
    Keyspace ks = db.keyspace("default");
    ks.put(b("a"), b("1"));
    Snapshot snap = db.snapshot();
    Cursor cursor = ks.scan(null, null);
    db.close();
    db.close(); // idempotent
    assertThrows(ClosedException.class, () -> ks.put(b("a"), b("2")));
    assertThrows(ClosedException.class, () -> ks.get(b("a")));
    assertThrows(ClosedException.class, () -> snap.get(ks, b("a")));
    assertThrows(ClosedException.class, cursor::next);
    assertThrows(ClosedException.class, db::snapshot);
    assertThrows(ClosedException.class, db::stats);
    snap.close();
    cursor.close();
    try (Basalt again = Basalt.open(storage, small())) {
      assertArrayEquals(b("1"), again.keyspace("default").get(b("a")));
      Snapshot s = again.snapshot();
      s.close();
      assertThrows(ClosedException.class, () -> s.get(again.keyspace("default"), b("a")));
    }
  }

  @Test
  void secondOpenOfOneDirectory_isRefused(@TempDir Path dir) {
    try (Basalt db = Basalt.open(dir, small())) {
      StorageException e = assertThrows(StorageException.class, () -> Basalt.open(dir, small()));
      assertTrue(e.getMessage().contains("already open"), e.getMessage());
      db.keyspace("default").put(b("k"), b("v"));
    }
    try (Basalt db = Basalt.open(dir, small())) {
      assertArrayEquals(b("v"), db.keyspace("default").get(b("k")));
    }
  }

  @Test
  void keyspaces_areIsolatedDurableAndDroppable() {
    MemStorage storage = new MemStorage(3);
    try (Basalt db = Basalt.open(storage, small())) {
      Keyspace a = db.createKeyspace("a");
      Keyspace bks = db.createKeyspace("b");
      a.put(b("k"), b("in-a"));
      bks.put(b("k"), b("in-b"));
      db.flush();
      a.put(b("k2"), b("a2"));
      assertEquals(List.of("a", "b", "default"), db.keyspaceNames());
      assertNull(db.keyspace("default").get(b("k")));
    }
    try (Basalt db = Basalt.open(storage, small())) {
      Keyspace a = db.keyspace("a");
      assertArrayEquals(b("in-a"), a.get(b("k")));
      assertArrayEquals(b("a2"), a.get(b("k2")));
      assertArrayEquals(b("in-b"), db.keyspace("b").get(b("k")));
      db.dropKeyspace("a");
      assertThrows(ClosedException.class, () -> a.get(b("k")));
      assertThrows(InvalidArgumentException.class, () -> db.keyspace("a"));
      Keyspace fresh = db.createKeyspace("a");
      assertNull(fresh.get(b("k")), "a recreated keyspace must not see the dropped one's data");
    }
    try (Basalt db = Basalt.open(storage, small())) {
      assertNull(db.keyspace("a").get(b("k2")));
      assertArrayEquals(b("in-b"), db.keyspace("b").get(b("k")));
    }
  }

  @Test
  void inMemoryStore_refusesWritesPastItsQuotaAndStaysIntact() {
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(2L << 20))) {
      assertTrue(db.isInMemory());
      Keyspace ks = db.keyspace("default");
      int i = 0;
      MemoryLimitException full = null;
      while (full == null && i < 100_000) {
        try {
          ks.put(b("key" + i), new byte[500]);
          i++;
        } catch (MemoryLimitException e) {
          full = e;
        }
      }
      assertTrue(full != null && full.getMessage().contains("full"), "never filled up");
      for (int j = 0; j < i; j++) assertArrayEquals(new byte[500], ks.get(b("key" + j)));
      assertNull(ks.get(b("key" + i)));
      ks.delete(b("key0"));
      assertNull(ks.get(b("key0")));
      assertThrows(InvalidArgumentException.class, () -> db.keyspace(null));
    }
  }

  @Test
  void stats_countWritesFlushesAndAmplification() {
    try (Basalt db = Basalt.open(new MemStorage(4), small())) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(b("key" + i), new byte[100]);
      db.flush();
      Stats s = db.stats();
      assertEquals(100, s.get("puts"));
      assertEquals(100 * 100 + 10 * 4 + 90 * 5, s.userBytesWritten());
      assertEquals(1, s.flushes());
      assertTrue(s.get("segmentBytesWritten") > 0 && s.get("indexBytesWritten") > 0);
      assertTrue(s.writeAmplification() > 1.0, "WAL plus segment at least doubles the bytes: " + s);
      assertEquals(100, s.get("flushedRecords"));
      assertEquals(s.get("flushedBytes"), s.get("liveDataBytes"), "nothing discarded yet");
      assertEquals(
          (double) (s.get("diskBytes") - s.get("preallocatedBytes"))
              / (s.get("segmentBytes") - s.get("segmentStaleBytes")),
          s.spaceAmplification(),
          1e-9);
      // The segment's preallocated tail is not data: 100 small documents once read 6,000. A tiny
      // store's
      // tail is the smallest derived segment size (2 MiB, Options.segmentSizeRatio), not 64 MiB.
      assertTrue(
          s.get("preallocatedBytes") > 1L << 20 && s.get("preallocatedBytes") < 4L << 20,
          "preallocated: " + s);
      assertTrue(
          s.spaceAmplification() < 10,
          "a tiny store's WAL and manifest only: " + s.spaceAmplification());
      assertEquals(100, s.lastSeqno());
      assertFalse(s.asMap().isEmpty());
      assertThrows(InvalidArgumentException.class, () -> s.get("nope"));
      // Flushed keys: each get reads its document, and the key index's few data blocks are read
      // twice,
      // then cached (the cache admits what is read twice); absent keys read nothing (the bloom
      // filter or the key range answers).
      for (int i = 0; i < 100; i++) ks.get(b("key" + i));
      for (int i = 0; i < 100; i++) ks.get(b("zz-absent" + i));
      Stats r = db.stats();
      assertEquals(100, r.get("documentReads"));
      long dataBlocks = r.get("indexBlockReads");
      assertTrue(dataBlocks >= 1 && dataBlocks <= 5, r.toString());
      assertEquals((100 + dataBlocks) / 200.0, r.readsPerGet(), 1e-9, r.toString());
      // Again: the second read of each document and data block caches it (the cache admits what is
      // read twice); the third pass reads nothing from disk.
      for (int i = 0; i < 100; i++) ks.get(b("key" + i));
      Stats second = db.stats();
      assertEquals(200, second.get("documentReads"));
      assertEquals(0, second.get("blockCacheDocumentHits"));
      long dataBlocks2 = second.get("indexBlockReads");
      assertEquals(
          dataBlocks,
          dataBlocks2,
          "each data block was read by many gets, so it was cached in the first pass");
      for (int i = 0; i < 100; i++) ks.get(b("key" + i));
      Stats again = db.stats();
      assertEquals(200, again.get("documentReads"));
      assertEquals(100, again.get("blockCacheDocumentHits"));
      assertEquals(dataBlocks2, again.get("indexBlockReads"));
      assertEquals((200 + dataBlocks2) / 400.0, again.readsPerGet(), 1e-9, again.toString());
    }
  }

  @Test
  void stats_keyIndexTotals_surviveReopen_andDiskBytesIsTheFilesSize(@TempDir Path dir)
      throws Exception {
    Options o =
        small().l0CompactionTrigger(2).level1Bytes(1024).levelMultiplier(2).tableTargetBytes(1024);
    List<String> persisted =
        List.of(
            "flushedRecords",
            "flushedBytes",
            "discardedVersions",
            "discardedBytes",
            "liveDataBytes");
    Stats before;
    try (Basalt db = Basalt.open(dir, o)) {
      Keyspace ks = db.keyspace("default");
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 100; i++) ks.put(b("key" + i), new byte[50 + round]);
        db.flush();
      }
      assertTrue(db.waitForCompactions(30_000));
      while (true) { // a replaced table may still be going: measure when the files held still
        // around stats()
        long files = fileBytes(dir);
        before = db.stats();
        if (fileBytes(dir) == files) {
          assertEquals(files, before.get("diskBytes"), "every file but the empty LOCK: " + before);
          break;
        }
      }
      assertEquals(400, before.get("flushedRecords"));
      assertTrue(
          before.get("discardedVersions") > 0, "compaction dropped older versions: " + before);
      assertEquals(
          before.get("flushedBytes") - before.get("discardedBytes"), before.get("liveDataBytes"));
      assertTrue(before.spaceAmplification() > 0);
    }
    try (Basalt db = Basalt.open(dir, o)) {
      Stats after = db.stats();
      for (String name : persisted) assertEquals(before.get(name), after.get(name), name);
      assertEquals(0, after.get("compactions"), "the other counters start again at each open");
    }
  }

  private static long fileBytes(Path dir) throws java.io.IOException {
    try (var files = java.nio.file.Files.walk(dir)) {
      return files
          .filter(java.nio.file.Files::isRegularFile)
          .mapToLong(f -> f.toFile().length())
          .sum();
    }
  }
}
