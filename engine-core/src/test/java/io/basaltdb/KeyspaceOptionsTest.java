package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.KeyspaceOptions.KeyIndexFormat;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Per-keyspace options: validated before anything is written, kept in the manifest across reopens,
 * refused where they cannot apply, and an HB+-trie keyspace serves long keys through flushes,
 * compactions and a reopen.
 */
class KeyspaceOptionsTest {
  private static final KeyspaceOptions TRIE =
      KeyspaceOptions.defaults().keyIndexFormat(KeyIndexFormat.HB_TRIE).trieChunkBytes(16);

  @Test
  void badOptions_areRefused_withClearMessages() {
    InvalidArgumentException e =
        assertThrows(
            InvalidArgumentException.class, () -> KeyspaceOptions.defaults().trieChunkBytes(3));
    assertTrue(e.getMessage().contains("4, 8 or 16"), e.getMessage());
    assertThrows(
        InvalidArgumentException.class, () -> KeyspaceOptions.defaults().keyIndexFormat(null));
    try (Basalt db = Basalt.open(new MemStorage(1), Options.defaults())) {
      assertThrows(InvalidArgumentException.class, () -> db.createKeyspace("k", null));
      assertEquals(1, db.keyspaceNames().size(), "nothing created");
      db.createKeyspace("k", TRIE);
      assertThrows(InvalidArgumentException.class, () -> db.createKeyspace("k", TRIE));
      assertThrows(InvalidArgumentException.class, () -> db.keyspaceOptions("nope"));
    }
    try (Basalt mem = Basalt.openInMemory(Options.defaults().memoryQuota(32L << 20))) {
      InvalidArgumentException m =
          assertThrows(InvalidArgumentException.class, () -> mem.createKeyspace("k", TRIE));
      assertTrue(m.getMessage().contains("in-memory"), m.getMessage());
      assertTrue(!mem.keyspaceNames().contains("k"));
      mem.createKeyspace("plain", KeyspaceOptions.defaults());
      assertEquals(KeyspaceOptions.defaults(), mem.keyspaceOptions("plain"));
    }
  }

  @Test
  void trieKeyspace_keepsItsFormat_andServesLongKeys_acrossReopen() {
    MemStorage storage = new MemStorage(2);
    Options o =
        Options.defaults()
            .memoryQuota(32L << 20)
            .writeCacheSize(256 << 10)
            .tableTargetBytes(64 << 10)
            .level1Bytes(256 << 10);
    int n = 3000;
    try (Basalt db = Basalt.open(storage, o)) {
      Keyspace ks = db.createKeyspace("urls", TRIE);
      for (int i = 0; i < n; i++) ks.put(key(i), value(i));
      for (int i = 0; i < n; i += 5) ks.delete(key(i));
      db.flush();
    }
    try (Basalt db = Basalt.open(storage, o)) {
      assertEquals(TRIE, db.keyspaceOptions("urls"));
      assertEquals(KeyspaceOptions.defaults(), db.keyspaceOptions("default"));
      Keyspace ks = db.keyspace("urls");
      for (int i = 0; i < n; i++) {
        assertArrayEquals(i % 5 == 0 ? null : value(i), ks.get(key(i)), "key " + i);
      }
      int seen = 0;
      try (Cursor c = ks.scan(null, null)) {
        while (c.next()) seen++;
      }
      assertEquals(n - n / 5, seen);
    }
  }

  private static byte[] key(int i) {
    return ("https://example.org/" + "segment/".repeat(40) + (i * 7919 % 100_000))
        .getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] value(int i) {
    return ("v" + i).getBytes(StandardCharsets.US_ASCII);
  }
}
