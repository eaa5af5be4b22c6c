package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.KeyspaceOptions.Kind;
import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Hashed keyspaces (seed 004's lazy-trie as a keyspace's key index): point access across flushes,
 * reopens and garbage collection; the refusals; snapshots that outlive flushes; the change feed.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class HashedKeyspaceTest {
  static final KeyspaceOptions HASHED = KeyspaceOptions.defaults().kind(Kind.HASHED);

  static Options small() {
    return Options.defaults()
        .memoryQuota(32L << 20)
        .writeCacheSize(256 << 10)
        .tableTargetBytes(64 << 10)
        .level1Bytes(256 << 10);
  }

  @Test
  void pointAccess_acrossFlushesAndReopen() {
    MemStorage storage = new MemStorage(3);
    int n = 5000;
    try (Basalt db = Basalt.open(storage, small())) {
      Keyspace ks = db.createKeyspace("sessions", HASHED.branching(16).sluggishness(4));
      for (int i = 0; i < n; i++) ks.put(key(i), value(i, 0));
      db.flush();
      for (int i = 0; i < n; i += 3) ks.put(key(i), value(i, 1));
      for (int i = 0; i < n; i += 5) ks.delete(key(i));
      ks.delete(key(n + 1)); // absent
      db.flush();
      check(ks, n);
      assertEquals(
          0,
          db.stats().get("tablesAtLevel0"),
          "a hashed keyspace writes no key index tables: " + db.stats());
    }
    try (Basalt db = Basalt.open(storage, small())) {
      assertEquals(
          KeyspaceOptions.defaults().kind(Kind.HASHED).branching(16).sluggishness(4),
          db.keyspaceOptions("sessions"));
      Keyspace ks = db.keyspace("sessions");
      check(ks, n);
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i += 7) keys.add(key(i));
      List<byte[]> got = ks.getAll(keys);
      for (int j = 0; j < keys.size(); j++)
        assertArrayEquals(expected(j * 7), got.get(j), "getAll " + j * 7);
      assertEquals(n - (n + 4) / 5, ks.approximateItemCount());
    }
  }

  @Test
  void scansAndCursors_areRefused_namingTheKind() {
    try (Basalt db = Basalt.open(new MemStorage(1), small())) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      ks.put(key(1), value(1, 0));
      UnsupportedOperationException e =
          assertThrows(UnsupportedOperationException.class, () -> ks.scan(null, null));
      assertTrue(e.getMessage().contains("HASHED"), e.getMessage());
      assertThrows(UnsupportedOperationException.class, () -> ks.reverseScan(null, null));
      try (Snapshot s = db.snapshot()) {
        assertThrows(UnsupportedOperationException.class, () -> s.scan(ks, null, null));
        assertArrayEquals(value(1, 0), s.get(ks, key(1)));
      }
      assertThrows(
          InvalidArgumentException.class,
          () ->
              db.createKeyspace(
                  "x", HASHED.keyIndexFormat(KeyspaceOptions.KeyIndexFormat.HB_TRIE)));
    }
    try (Basalt mem = Basalt.openInMemory(Options.defaults().memoryQuota(32L << 20))) {
      Keyspace ks = mem.createKeyspace("h", KeyspaceOptions.defaults().kind(Kind.HASHED));
      ks.put(key(1), value(1, 0));
      assertArrayEquals(value(1, 0), ks.get(key(1)));
      assertThrows(UnsupportedOperationException.class, () -> ks.scan(null, null));
      assertEquals(Kind.HASHED, mem.keyspaceOptions("h").kind());
    }
  }

  @Test
  void snapshot_keepsSeeingReplacedAndDeletedVersions_acrossFlushes() {
    try (Basalt db = Basalt.open(new MemStorage(2), small())) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      for (int i = 0; i < 2000; i++) ks.put(key(i), value(i, 0));
      db.flush();
      try (Snapshot s = db.snapshot()) {
        for (int i = 0; i < 2000; i += 2) ks.put(key(i), value(i, 1));
        for (int i = 1; i < 2000; i += 4) ks.delete(key(i));
        ks.put(key(5000), value(5000, 0));
        db.flush();
        for (int i = 0; i < 2000; i += 4) ks.put(key(i), value(i, 2));
        db.flush();
        for (int i = 0; i < 2000; i++)
          assertArrayEquals(value(i, 0), s.get(ks, key(i)), "key " + i);
        assertNull(s.get(ks, key(5000)));
        assertArrayEquals(value(0, 2), ks.get(key(0)));
        assertNull(ks.get(key(1)));
      }
      db.flush();
      assertArrayEquals(value(2, 1), ks.get(key(2)));
    }
  }

  @Test
  void changeFeed_deliversPutsAndDeletes_exactlyTheNewest() {
    try (Basalt db = Basalt.open(new MemStorage(2), small())) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      long from = db.stats().lastSeqno() + 1;
      ks.put(key(1), value(1, 0));
      ks.put(key(2), value(2, 0));
      ks.put(key(3), value(3, 0));
      db.flush();
      ks.put(key(1), value(1, 1));
      ks.delete(key(2));
      db.flush();
      List<String> changes = new ArrayList<>();
      try (ChangeFeed f = ks.changes(from, ChangeFeed.NOW, ChangeFeed.Mode.EXACT)) {
        while (f.next()) {
          changes.add(ByteBuffer.wrap(f.key()).getInt() + (f.isDeletion() ? "-" : "+"));
        }
      }
      assertEquals(
          List.of("3+", "1+", "2-"), changes, "the newest version of each key, in seqno order");
      // a consumer resuming after the first flush: the deletion's tombstone is still in the log
      List<String> resumed = new ArrayList<>();
      try (ChangeFeed f = ks.changes(from + 3, ChangeFeed.NOW, ChangeFeed.Mode.FAST)) {
        while (f.next())
          resumed.add(ByteBuffer.wrap(f.key()).getInt() + (f.isDeletion() ? "-" : "+"));
      }
      assertEquals(List.of("1+", "2-"), resumed);
    }
  }

  static void check(Keyspace ks, int n) {
    for (int i = 0; i < n; i++) assertArrayEquals(expected(i), ks.get(key(i)), "key " + i);
    assertNull(ks.get(key(n + 1)));
  }

  static byte[] expected(int i) {
    return i % 5 == 0 ? null : value(i, i % 3 == 0 ? 1 : 0);
  }

  static byte[] key(int i) {
    return ByteBuffer.allocate(12).putInt(i).putLong(i * 0x9E3779B97F4A7C15L).array();
  }

  static byte[] value(int i, int round) {
    byte[] v = new byte[40 + i % 100];
    ByteBuffer.wrap(v).putInt(i).putInt(round);
    return v;
  }
}
