package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.read.EngineCursor;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * A keyspace whose key index format is switched (a {@link VersionEdit#keyIndexFormat} commit) holds
 * block and HB+-trie tables side by side: gets, batched gets and scans answer from both alike,
 * across a reopen, and compaction rewrites them all in the new format.
 */
class KeyIndexFormatSwitchTest {
  /** A long key that shares a long prefix with others: what the trie is for. */
  private static byte[] key(int i) {
    return ("https://example.com/tenants/" + (i % 7) + "/documents/" + "x".repeat(200) + "/" + i)
        .getBytes(StandardCharsets.US_ASCII);
  }

  private static void write(Engine e, int ks, Random rnd, TreeMap<String, byte[]> model, int n) {
    for (int i = 0; i < n; i++) {
      int k = rnd.nextInt(3000);
      Batch b = new Batch(1);
      if (rnd.nextInt(6) == 0) {
        b.add(ks, Batch.DELETE, key(k), null);
        model.remove(new String(key(k), StandardCharsets.US_ASCII));
      } else {
        byte[] v = new byte[1 + rnd.nextInt(60)];
        rnd.nextBytes(v);
        b.add(ks, Batch.PUT, key(k), v);
        model.put(new String(key(k), StandardCharsets.US_ASCII), v);
      }
      e.write(b);
    }
  }

  private static void check(Engine e, int ks, TreeMap<String, byte[]> model, String ctx) {
    List<byte[]> keys = new ArrayList<>();
    for (int k = 0; k < 3000; k += 3) keys.add(key(k));
    int[] ksIds = new int[keys.size()];
    Arrays.fill(ksIds, ks);
    List<byte[]> got = e.getAll(ksIds, keys);
    for (int i = 0; i < keys.size(); i++) {
      byte[] want = model.get(new String(keys.get(i), StandardCharsets.US_ASCII));
      assertArrayEquals(want, e.get(ks, keys.get(i)), ctx + " get " + i);
      assertArrayEquals(want, got.get(i), ctx + " getAll " + i);
    }
    try (EngineCursor c = e.scan(ks, null, null)) {
      int n = 0;
      for (Map.Entry<String, byte[]> m : model.entrySet()) {
        assertTrue(c.next(), ctx + " scan ends early at " + n);
        assertEquals(m.getKey(), new String(c.key(), StandardCharsets.US_ASCII), ctx + " scan");
        assertArrayEquals(m.getValue(), c.value(), ctx + " scan value");
        n++;
      }
      assertTrue(!c.next(), ctx + " scan has extra keys");
    }
  }

  /** {block tables, trie tables} of keyspace {@code ks} in the current version. */
  private static int[] formats(Engine e, int ks) {
    int[] n = new int[2];
    Version v = e.versions().current();
    for (KeyspaceFiles.Table t : v.files(ks).tables) n[t.reader().trieChunkBytes() == 0 ? 0 : 1]++;
    return n;
  }

  /** File numbers of keyspace {@code ks}'s block tables in the current version. */
  private static java.util.Set<Long> blockTables(Engine e, int ks) {
    java.util.Set<Long> out = new java.util.HashSet<>();
    for (KeyspaceFiles.Table t : e.versions().current().files(ks).tables) {
      if (t.reader().trieChunkBytes() == 0) out.add(t.fileNumber());
    }
    return out;
  }

  @Test
  void blockAndTrieTables_inOneKeyspace_readAlike_andCompactionRewritesThem() {
    MemStorage storage = new MemStorage(7);
    Random rnd = new Random(7);
    TreeMap<String, byte[]> model = new TreeMap<>();
    int ks;
    java.util.Set<Long> before;
    try (Engine e =
        Engine.open(
            storage,
            CompactionTest.tinyLevels().l0StopWritesTrigger(100).l0CompactionTrigger(64))) {
      ks = e.createKeyspace("docs");
      write(e, ks, rnd, model, 1500);
      e.flush();
      e.versionSet().logAndApply(new VersionEdit().keyIndexFormat(ks, 8));
      write(e, ks, rnd, model, 1500);
      e.flush();
      int[] f = formats(e, ks);
      assertTrue(f[0] > 0 && f[1] > 0, "both formats: " + Arrays.toString(f));
      check(e, ks, model, "mixed");
      before = blockTables(e, ks);
    }
    try (Engine e = Engine.open(storage, CompactionTest.tinyLevels())) {
      check(e, ks, model, "mixed, reopened");
      for (int round = 0; round < 4; round++) {
        write(e, ks, rnd, model, 1500);
        e.flush();
      }
      assertTrue(e.waitForCompactions(30_000), "compactions settle");
      java.util.Set<Long> after = blockTables(e, ks);
      assertTrue(before.containsAll(after), "no block table written after the switch: " + after);
      assertTrue(after.size() < before.size(), "compaction rewrote block tables: " + after);
      assertTrue(e.stats().get("compactions") > 0);
      check(e, ks, model, "compacted");
    }
  }
}
