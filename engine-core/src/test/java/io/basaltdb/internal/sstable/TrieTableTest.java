package io.basaltdb.internal.sstable;

import static io.basaltdb.internal.sstable.TableRoundTripTest.checkTable;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.cache.BlockCache;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * HB+-trie tables (seed 003, sections 3.1 and 3.2): the five key patterns of the issue round-trip
 * at every chunk size, the paper's figure 6 builds the paper's trie, the section 3.2.3 rule flips
 * exactly at its thresholds, edge keys (empty, 64 KiB, prefixes of each other, ending on and inside
 * a chunk, 0x00 and 0xFF chunks, a 60 KiB shared prefix) work, and damage to a navigation page or
 * the header is reported as corruption. Replay a failure with {@code -Dbasalt.sstable.seed=N}.
 */
class TrieTableTest {
  private static final int[] CHUNKS = {4, 8, 16};

  static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.ISO_8859_1);
  }

  /** The key patterns of the issue (ForestDB's table 2 and a URL-like one). */
  enum Pattern {
    RANDOM,
    TWO_LEVEL,
    SMALL_ALPHABET,
    WORST,
    URL;

    /** {@code n} distinct keys of about {@code len} bytes (the patterns that fix it ignore it). */
    TableModel keys(SplittableRandom r, int n, int len) {
      TableModel m = new TableModel();
      byte[][] level1 = words(r, 192, 10), level2 = words(r, 192, 10);
      byte[][][] worst = new byte[20][][];
      for (int l = 0; l < 20; l++) worst[l] = words(r, 2, 10);
      String[] hosts = {"example.com", "shop.example.org", "news.example.net", "a.io"};
      String[] dirs = {"users", "items", "orders", "static/img", "api/v2/things"};
      while (m.map.size() < n) {
        byte[] k;
        switch (this) {
          case RANDOM -> k = TableModel.bytes(r, len);
          case TWO_LEVEL -> k = concat(level1[r.nextInt(192)], level2[r.nextInt(192)], tail(r, 16));
          case SMALL_ALPHABET -> {
            k = new byte[len];
            for (int i = 0; i < len; i++) k[i] = (byte) ('0' + r.nextInt(2));
          }
          case WORST -> {
            byte[] w = new byte[0];
            for (int l = 0; l < 20; l++) w = concat(w, worst[l][r.nextInt(2)]);
            k = w;
          }
          default ->
              k =
                  ascii(
                      "https://"
                          + hosts[r.nextInt(hosts.length)]
                          + "/"
                          + dirs[r.nextInt(dirs.length)]
                          + "/"
                          + r.nextInt(1_000_000)
                          + (r.nextBoolean() ? "?page=" + r.nextInt(50) : ""));
        }
        m.put(
            k,
            r.nextLong(0, 1L << 40),
            r.nextInt(1 << 20),
            r.nextInt(8) == 0,
            r.nextLong(1L << 36));
      }
      return m;
    }
  }

  static byte[][] words(SplittableRandom r, int n, int len) {
    byte[][] w = new byte[n][];
    for (int i = 0; i < n; i++) w[i] = TableModel.bytes(r, len);
    return w;
  }

  static byte[] tail(SplittableRandom r, int len) {
    return TableModel.bytes(r, len);
  }

  static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) n += p.length;
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  @Test
  void fivePatterns_roundTrip_atEveryChunkSize() {
    long seed = TableRoundTripTest.seed();
    try (BlockCache cache = new BlockCache(64 << 20)) {
      SplittableRandom r = new SplittableRandom(seed);
      for (Pattern p : Pattern.values()) {
        TableModel m = p.keys(r, 1500, 40);
        for (int c : CHUNKS) {
          checkTable(m, TableOptions.defaults().withTrie(c), r, p + " chunk " + c, cache);
        }
        checkTable(
            m, new TableOptions(512, 4, 0).withTrie(8), r, p + " small blocks, no filter", cache);
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  /** Writes {@code m} with {@code o}; returns the open reader and the writer's page spans. */
  static TableReader open(TableModel m, TableOptions o, List<long[]> pages) {
    StorageFile f = TableModel.newFile();
    TableWriter w = new TableWriter(f, o);
    for (KeyRecord rec : m.map.values())
      w.add(rec.key, rec.seqno, rec.docSize, rec.tombstone, rec.hint);
    w.finish();
    if (pages != null) pages.addAll(w.navigationPages());
    return TableReader.open(f, "t.sst");
  }

  static String shape(TableOptions o, String... keys) {
    TableModel m = new TableModel();
    for (int i = 0; i < keys.length; i++) m.put(ascii(keys[i]), i, 1, false, i);
    try (TableReader t = open(m, o, null)) {
      return t.describeTrie();
    }
  }

  @Test
  void figure6_chunkOfOneByte_buildsThePapersTries() {
    TableOptions naive = new TableOptions(4096, 1, 0).withTrie(1).withTrieSkewRule(false);
    // (a) aaaa alone is indexed by its first chunk
    assertEquals("node(p=0,skip=)[a->rec]", shape(naive, "aaaa"));
    // (b) aaab: a sub-tree on the fourth chunk that skips "aa"
    // (a star marks a node or leaf tree small enough to ride inline in its parent's reference)
    assertEquals(
        "node(p=0,skip=)[a->node*(p=3,skip=aa)[a->rec,b->rec]]", shape(naive, "aaaa", "aaab"));
    // (c) aabb: a tree on the third chunk skipping "a" in between; the fourth chunk's skips nothing
    assertEquals(
        "node(p=0,skip=)[a->node*(p=2,skip=a)[a->node*(p=3,skip=)[a->rec,b->rec],b->rec]]",
        shape(naive, "aaaa", "aaab", "aabb"));
    // With the section 3.2 rule, three keys below the root stay one leaf tree (figure 9a).
    TableOptions rule = naive.withTrieSkewRule(true);
    assertEquals("node(p=0,skip=)[a->leaf*(skip=a,blocks=1)]", shape(rule, "aaaa", "aaab", "aabb"));
    for (TableOptions o : new TableOptions[] {naive, rule}) {
      TableModel m = new TableModel();
      for (String k : new String[] {"aaaa", "aaab", "aabb", "b", "bb", "bbb", "c"})
        m.put(ascii(k), 1, 1, false, 1);
      checkTable(m, o, new SplittableRandom(6), "figure 6 and 8a keys " + o);
    }
  }

  @Test
  void extensionRule_flipsAtItsThresholds() {
    // fL = 4096 / (k + 8): with k = 200, fL = 19
    assertFalse(TrieBuilder.extends_(19 * 19, 19, 200), "n = b * fL is not enough");
    assertTrue(TrieBuilder.extends_(19 * 19 + 1, 19, 200), "n = b * fL + 1 extends");
    assertFalse(TrieBuilder.extends_(10_000, 18, 200), "b = fL - 1 never extends");
    assertTrue(TrieBuilder.extends_(10_000, 19, 200), "b = fL extends when n is large");
    // The builder applies it to real ranges: under the root's "A", b branches of m keys each,
    // keys of 201 bytes (k = 200 below the root's chunk of one byte).
    TableOptions o = new TableOptions(4096, 16, 0).withTrie(1);
    java.util.regex.Pattern leaf = java.util.regex.Pattern.compile("A->leaf\\*?\\(");
    java.util.regex.Pattern node = java.util.regex.Pattern.compile("A->node\\*?\\(p=1,");
    assertTrue(leaf.matcher(shapeOf(o, 19, 19)).find(), "n = 361 = b * fL: a leaf tree");
    assertTrue(node.matcher(shapeOf(o, 19, 20)).find(), "n = 380 > b * fL, b = fL: a node");
    assertTrue(leaf.matcher(shapeOf(o, 18, 30)).find(), "b = 18 < fL: a leaf tree");
  }

  /** The trie over "A" + one of b bytes + 199 bytes, m keys per branch, and "B". */
  private static String shapeOf(TableOptions o, int b, int m) {
    SplittableRandom r = new SplittableRandom(b * 1000 + m);
    TableModel model = new TableModel();
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < m; j++) {
        byte[] k = concat(new byte[] {'A', (byte) (i * 7)}, TableModel.bytes(r, 199));
        model.put(k, 1, 1, false, 1);
      }
    }
    model.put(ascii("B"), 1, 1, false, 1);
    assertEquals(b * m + 1, model.map.size());
    try (TableReader t = open(model, o, null)) {
      checkTable(model, o, r, "rule at b=" + b + " m=" + m);
      return t.describeTrie();
    }
  }

  @Test
  void smallChildren_rideInline_andLookupsReadNoPageForThem() {
    SplittableRandom r = new SplittableRandom(13);
    TableModel m = new TableModel();
    byte[][] l1 = words(r, 40, 20), l2 = words(r, 40, 20);
    for (int i = 0; i < 40; i++) {
      for (int j = 0; j < 40; j++) {
        for (int t = 0; t < 3; t++) m.put(concat(l1[i], l2[j], tail(r, 8)), 1, 1, false, 1);
      }
    }
    List<long[]> pages = new ArrayList<>();
    try (TableReader t = open(m, TableOptions.defaults().withTrie(8), pages)) {
      String shape = t.describeTrie();
      assertTrue(shape.contains("leaf*("), shape.substring(0, 300));
      // 1,600 groups of 3 keys: inline leaf trees, so far fewer pages than groups
      assertTrue(pages.size() < 200, pages.size() + " pages");
      checkTable(m, TableOptions.defaults().withTrie(8), r, "inline children");
    }
  }

  @Test
  void separatorsLargerThanAPage_stillMakeATreeWithARoot() {
    // one 5 KB key per record block, neighbours one apart in their first differing byte: the leaf
    // tree's separators are the whole suffixes, more than a page each (CI found the inner levels
    // looping, one entry per page, before an inner page took at least two)
    byte[] q = TableModel.bytes(new SplittableRandom(15), 5000);
    TableModel m = new TableModel();
    for (int j = 0; j < 40; j++)
      m.put(concat(ascii("PPPPPPPP"), new byte[] {(byte) j}, q), j, 1, false, j);
    List<long[]> pages = new ArrayList<>();
    try (TableReader t = open(m, TableOptions.defaults().withTrie(8), pages)) {
      assertTrue(t.describeTrie().contains("leaf(skip=,blocks=40)"), t.describeTrie());
      assertTrue(pages.size() < 100, pages.size() + " pages");
    }
    checkTable(m, TableOptions.defaults().withTrie(8), new SplittableRandom(16), "huge separators");
  }

  @Test
  void deepNesting_endsInALeafTree_atTheLevelCap() {
    // "b", "ab", "aab", ...: at chunk size 1 without the rule, one trie level per key
    TableModel m = new TableModel();
    for (int i = 0; i < 300; i++) m.put(ascii("a".repeat(i) + "b"), i, 1, false, i);
    TableOptions naive = new TableOptions(256, 4, 0).withTrie(1).withTrieSkewRule(false);
    try (TableReader t = open(m, naive, null)) {
      String shape = t.describeTrie();
      int levels = shape.split("node", -1).length - 1;
      assertEquals(TrieBuilder.MAX_LEVELS - 1, levels, "trie nodes on the path");
      assertTrue(shape.contains("leaf"), "a leaf tree at the last level");
    }
    checkTable(m, naive, new SplittableRandom(14), "deep nesting");
  }

  @Test
  void edgeKeys_roundTrip() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = new TableModel();
      m.put(new byte[0], 1, 1, false, 1);
      byte[] shared = TableModel.bytes(r, 60 << 10);
      for (int i = 0; i < 12; i++) {
        int len = i < 4 ? KeyRecord.MAX_KEY_SIZE : shared.length + r.nextInt(1, 5000 - 1440);
        byte[] k = Arrays.copyOf(shared, len);
        for (int j = shared.length; j < len; j++) k[j] = (byte) r.nextInt(256);
        m.put(k, i, i, i % 3 == 0, i);
      }
      byte[] p = ascii("prefixkeyXYZ0123456789");
      for (int len = 0; len <= p.length; len++) m.put(Arrays.copyOf(p, len), len, 1, false, len);
      for (int v : new int[] {0x00, 0xFF}) {
        for (int len = 1; len <= 33; len += 4) {
          byte[] k = new byte[len];
          Arrays.fill(k, (byte) v);
          m.put(k, len, 1, false, v);
          byte[] k2 = k.clone();
          k2[len - 1] ^= 1;
          m.put(k2, len, 1, true, v);
        }
      }
      for (TableOptions o :
          new TableOptions[] {
            TableOptions.defaults().withTrie(4),
            TableOptions.defaults().withTrie(8),
            new TableOptions(256, 2, 0).withTrie(16),
            TableOptions.defaults().withTrie(8).withTrieSkewRule(false)
          }) {
        checkTable(m, o, r, "edge keys " + o);
      }
      for (int c : CHUNKS) {
        TableModel one = new TableModel();
        one.put(ascii("only"), 5, 6, false, 7);
        checkTable(one, TableOptions.defaults().withTrie(c), r, "one record, chunk " + c);
        checkTable(new TableModel(), TableOptions.defaults().withTrie(c), r, "empty, chunk " + c);
      }
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void absentKeys_theTrieRulesOut_readNoRecordBlock() {
    SplittableRandom r = new SplittableRandom(11);
    TableModel m = Pattern.RANDOM.keys(r, 2000, 64);
    try (TableReader t =
        open(m, TableOptions.defaults().withBloomBitsPerKey(0).withTrie(8), null)) {
      KeyRecord out = new KeyRecord();
      int ruledOut = 0;
      for (int i = 0; i < 2000; i++) {
        byte[] k = TableModel.bytes(r, 64);
        long reads = t.blockReads();
        assertFalse(t.get(k, out));
        if (t.blockReads() == reads) ruledOut++;
      }
      // 2,000 random first chunks of 8 bytes: a random key shares one with none of them
      assertEquals(2000, ruledOut, "absent keys whose first chunk no key has");
      // a key whose first chunk is a present key's but whose tail differs: one block, no match
      byte[] k = m.map.firstKey().clone();
      k[63] ^= 1;
      long reads = t.blockReads();
      assertFalse(t.get(k, out));
      assertEquals(reads + 1, t.blockReads());
    }
  }

  @Test
  void trieTables_areSmaller_forLongSharedPrefixes() {
    SplittableRandom r = new SplittableRandom(12);
    TableModel m = new TableModel();
    byte[][] l1 = words(r, 20, 500), l2 = words(r, 20, 500);
    while (m.map.size() < 4000)
      m.put(concat(l1[r.nextInt(20)], l2[r.nextInt(20)], tail(r, 16)), 1, 1, false, 1);
    long block = m.write(TableModel.newFile(), TableOptions.defaults()).fileSize();
    long trie = m.write(TableModel.newFile(), TableOptions.defaults().withTrie(8)).fileSize();
    // A block table stores a full key (1,016 bytes) every 16 records, a trie table's record blocks
    // only at each block's start: the measured ratio is about 0.84
    assertTrue(trie < 0.9 * block, "trie table " + trie + " bytes, block table " + block);
  }

  @Test
  void damagedNavigation_isReportedAsCorruption() {
    long seed = TableRoundTripTest.seed();
    try {
      SplittableRandom r = new SplittableRandom(seed);
      TableModel m = Pattern.TWO_LEVEL.keys(r, 300, 0);
      TableOptions o = new TableOptions(256, 8, 10).withTrie(4);
      List<long[]> pages = new ArrayList<>();
      byte[] good;
      try (TableReader t = open(m, o, pages)) {
        assertTrue(t.describeTrie().contains("node("), t.describeTrie());
      }
      good = m.tableBytes(o);
      List<byte[]> probes = new ArrayList<>(m.map.keySet());
      for (int i = 0; i < 10; i++) probes.add(TableModel.bytes(r, r.nextInt(30)));
      int footerAt = good.length - Format.FOOTER_SIZE;
      Footer f = Footer.decode(Arrays.copyOfRange(good, footerAt, good.length), footerAt, "t.sst");
      List<long[]> blocks = new ArrayList<>(pages);
      blocks.add(new long[] {f.indexOffset(), f.indexSize()}); // the trie header
      // Unforged damage: every flipped byte of a page or the header fails its checksum.
      for (long[] b : blocks) {
        byte[] bad = good.clone();
        bad[(int) b[0] + r.nextInt((int) b[1])] ^= 0x10;
        int detected = TableStructureFuzzTest.readEverything(bad, probes);
        assertTrue(detected > 0, "damage in the page at " + b[0] + " is reported");
      }
      // Forged checksums: the structural checks see the damage; only CorruptionException escapes.
      int corruptions = 0;
      for (long[] b : blocks) {
        int off = (int) b[0], size = (int) b[1];
        for (int pos = off; pos < off + size; pos += 1 + r.nextInt(3)) {
          byte[] bad = good.clone();
          bad[pos] ^= (byte) r.nextInt(1, 256);
          Format.putIntLE(
              bad, off + size + Format.TRAILER_CRC_OFFSET, Format.crc(bad, off, size + 1));
          corruptions += TableStructureFuzzTest.readEverything(bad, probes);
        }
      }
      assertTrue(corruptions > 0);
    } catch (AssertionError | RuntimeException e) {
      throw new AssertionError(
          "failed with seed " + seed + " (replay: -Dbasalt.sstable.seed=" + seed + ")", e);
    }
  }

  @Test
  void badChunkSize_isRefused() {
    assertThrows(
        io.basaltdb.InvalidArgumentException.class,
        () -> new TableWriter(TableModel.newFile(), TableOptions.defaults().withTrie(3)));
    TableModel m = new TableModel();
    m.put(ascii("k"), 1, 1, false, 1);
    byte[] good = m.tableBytes(TableOptions.defaults().withTrie(8));
    int footerAt = good.length - Format.FOOTER_SIZE;
    Footer f = Footer.decode(Arrays.copyOfRange(good, footerAt, good.length), footerAt, "t");
    byte[] bad = good.clone();
    int at = (int) f.indexOffset();
    bad[at] = 5; // chunk size 5, checksum forged
    Format.putIntLE(
        bad,
        at + f.indexSize() + Format.TRAILER_CRC_OFFSET,
        Format.crc(bad, at, f.indexSize() + 1));
    assertThrows(CorruptionException.class, () -> TableReader.open(TableModel.file(bad), "t"));
  }
}
