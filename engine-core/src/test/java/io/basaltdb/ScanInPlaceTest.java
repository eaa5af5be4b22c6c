package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scans over files the page cache holds read their documents' blocks in place, from the files'
 * mappings, on the scan's thread (ReadPath.readInPlace), each shared block of a key-ordered run
 * decoded once; without mapped reads the same scans go through the read transport. Both must give
 * the model's keys and values, over documents bigger than a block, a write cache overlaying the
 * files, and several runs, and both must report a damaged block.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ScanInPlaceTest {
  @TempDir Path tmp;

  private static Options options(boolean mapped) {
    // No block cache: every document a scan returns from the files is read from a block.
    return Options.defaults()
        .memoryQuota(32L << 20)
        .blockCacheSize(0)
        .mappedReads(mapped)
        .syncMode(SyncMode.NONE)
        .fragmentationThreshold(1.0); // no collection: it would rewrite the runs in seqno order
  }

  private static byte[] key(int i) {
    return String.format("key%06d", i).getBytes();
  }

  private static byte[] value(int i, int round) {
    byte[] v = new byte[i % 50 == 0 ? 10_000 : 100]; // every 50th bigger than a 4 KiB block
    Arrays.fill(v, (byte) (i * 31 + round));
    return v;
  }

  /** Writes the same data into {@code dir}, recording it in {@code model}. */
  private static void populate(Basalt db, TreeMap<String, byte[]> model) {
    Keyspace ks = db.keyspace("default");
    int n = 3000;
    for (int round = 0; round < 2; round++) { // two flushes: two runs over the range
      for (int j = 0; j < n; j++) {
        int i = (j * 7919) % n; // scrambled: seqno order is not key order
        if (round == 1 && i % 3 != 0) continue;
        ks.put(key(i), value(i, round));
        model.put(new String(key(i)), value(i, round));
      }
      db.flush();
    }
    for (int i = 0; i < n; i += 11) { // the write cache over the files
      if (i % 2 == 0) {
        ks.delete(key(i));
        model.remove(new String(key(i)));
      } else {
        ks.put(key(i), value(i, 7));
        model.put(new String(key(i)), value(i, 7));
      }
    }
  }

  private static List<String> scan(Keyspace ks, byte[] from, byte[] to) {
    List<String> out = new ArrayList<>();
    try (Cursor c = ks.scan(from, to)) {
      while (c.next()) out.add(new String(c.key()) + "=" + Arrays.hashCode(c.value()));
    }
    return out;
  }

  private static List<String> model(TreeMap<String, byte[]> model, byte[] from, byte[] to) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, byte[]> e :
        model.subMap(new String(from), true, new String(to), false).entrySet())
      out.add(e.getKey() + "=" + Arrays.hashCode(e.getValue()));
    return out;
  }

  @Test
  void scansInPlace_andThroughTheTransport_agreeWithTheModel_andDecodeSharedBlocksOnce() {
    long[] inPlaceReads = new long[2];
    long[] documentReads = new long[2];
    long[] cacheLookups = new long[2]; // the document cache's hits and misses during the scans
    for (boolean mapped : new boolean[] {true, false}) {
      TreeMap<String, byte[]> model = new TreeMap<>();
      try (Basalt db = Basalt.open(tmp.resolve("m" + mapped), options(mapped))) {
        populate(db, model);
        Keyspace ks = db.keyspace("default");
        long docs0 = db.stats().get("documentReads"),
            inPlace0 = db.stats().get("batchedReadsInPlace"),
            lookups0 = documentCacheLookups(db);
        List<String> all = scan(ks, key(0), key(3000));
        assertEquals(model(model, key(0), key(3000)), all, "mapped " + mapped);
        documentReads[mapped ? 1 : 0] = db.stats().get("documentReads") - docs0;
        inPlaceReads[mapped ? 1 : 0] = db.stats().get("batchedReadsInPlace") - inPlace0;
        for (int from = 0; from < 3000; from += 613) { // short scans, as YCSB's E makes
          assertEquals(
              model(model, key(from), key(from + 40)), scan(ks, key(from), key(from + 40)));
        }
        cacheLookups[mapped ? 1 : 0] = documentCacheLookups(db) - lookups0;
        assertTrue(all.size() > 2500, "keys scanned: " + all.size());
        assertTrue(
            documentReads[mapped ? 1 : 0] < all.size() / 4,
            "a key-ordered run's neighbours share blocks: "
                + documentReads[mapped ? 1 : 0]
                + " document reads for "
                + all.size()
                + " keys");
      }
    }
    assertTrue(inPlaceReads[1] > 0, "mapped: blocks read in place");
    assertEquals(0, inPlaceReads[0], "without mapped reads nothing is read in place");
    // In place the page cache holds the blocks: the document cache is neither looked up nor filled
    // (but by the few reads that fall back to a point read: a stale hint, a slow copy).
    assertTrue(
        cacheLookups[1] < 300,
        "mapped: the scans left the document cache alone: " + cacheLookups[1]);
    assertTrue(cacheLookups[0] > 0, "through the transport the scans use the document cache");
  }

  private static long documentCacheLookups(Basalt db) {
    return db.stats().get("blockCacheDocumentHits") + db.stats().get("blockCacheDocumentMisses");
  }

  @Test
  void aDamagedDocumentBlock_readInPlace_isReportedAsCorruption() throws IOException {
    Path dir = tmp.resolve("damaged");
    TreeMap<String, byte[]> model = new TreeMap<>();
    try (Basalt db = Basalt.open(dir, options(true))) {
      populate(db, model);
    }
    List<Path> segments;
    try (Stream<Path> files = Files.walk(dir)) {
      segments = files.filter(p -> p.toString().endsWith(".seg")).toList();
    }
    assertTrue(!segments.isEmpty(), "segments in " + dir);
    for (Path p : segments) { // a byte flipped in each segment's first data block (after its
      // 32-byte file header; a run's index entries follow its blocks)
      try (FileChannel ch =
          FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
        ByteBuffer b = ByteBuffer.allocate(1);
        ch.read(b, 300);
        b.put(0, (byte) (b.get(0) ^ 0x5A)).rewind();
        ch.write(b, 300);
      }
    }
    try (Basalt db = Basalt.open(dir, options(true))) {
      Keyspace ks = db.keyspace("default");
      assertThrows(CorruptionException.class, () -> scan(ks, key(0), key(3000)));
    }
  }
}
