package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Appends, checkpoints and reads of one segment, without crashes or damage. */
class SegmentReadWriteTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());

  static {
    System.out.println(
        "SegmentReadWriteTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  /**
   * Sealed blocks and index pages are gathered and written together, at the latest at a checkpoint:
   * 200 documents of 1 KiB (about 50 blocks) take a few file writes, not one per block, and read
   * back.
   */
  @Test
  void blocks_areWrittenTogether_andReadBackAfterTheCheckpoint() {
    io.basaltdb.internal.storage.MemStorage storage =
        new io.basaltdb.internal.storage.MemStorage(5);
    io.basaltdb.internal.storage.StorageFile file = storage.create("s.log");
    SegmentWriter w = SegmentWriter.create(file, 3, 1, SegmentOptions.defaults());
    AtomicLong writes = new AtomicLong();
    storage.setFaultInjector(
        (op, name) -> {
          if (op == io.basaltdb.internal.storage.MemStorage.Op.WRITE) writes.incrementAndGet();
          return io.basaltdb.internal.storage.MemStorage.Fault.NONE;
        });
    SplittableRandom r = new SplittableRandom(11);
    byte[][] values = new byte[200][];
    for (int i = 0; i < values.length; i++) {
      values[i] = new byte[1024];
      r.nextBytes(values[i]);
      w.append(i + 1, ("k" + i).getBytes(), values[i], false);
    }
    assertTrue(
        writes.get() <= 1, "blocks wait for the buffer to fill: " + writes.get() + " writes");
    SegmentState st = w.checkpoint();
    assertTrue(writes.get() <= 4, "about 220 KB in 128 KiB writes: " + writes.get() + " writes");
    w.sync();
    SegmentReader reader = new SegmentReader(file, st);
    for (int i = 0; i < values.length; i++)
      assertArrayEquals(values[i], reader.read(i + 1, -1).value());
  }

  @Test
  void read_everySeqno_withAndWithoutHint() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 7, 1000, SegmentOptions.defaults());
    TestDocs t = new TestDocs(SEED, 1000);
    t.appendRandom(w, 500);
    // The extremes: a 64 KiB key, a 1 MiB value, an empty key with an empty value.
    t.append(w, new Document(t.nextSeqno++, t.bytes(64 << 10), t.bytes(10), false));
    t.append(w, new Document(t.nextSeqno++, t.bytes(5), t.bytes(1 << 20), false));
    t.append(w, new Document(t.nextSeqno++, new byte[0], new byte[0], true));
    t.appendRandom(w, 1500);
    SegmentState s = w.checkpoint();
    assertEquals(t.docs.size(), s.documentCount());
    assertEquals(t.docs.lastKey(), s.lastSeqno());
    assertTrue(s.levels() >= 2, "a few hundred blocks fill more than one leaf page: " + s);
    SegmentReader r = new SegmentReader(file, s);
    t.checkAllReads(r);

    // A valid hint costs one block read; the index costs one page per level and the block.
    long seqno = t.docs.lastKey();
    long before = r.blockReads();
    r.read(seqno, t.hints.get(seqno));
    assertEquals(before + 1, r.blockReads());
    r.read(seqno, -1);
    assertEquals(before + 1 + s.levels() + 1, r.blockReads());
  }

  @Test
  void append_ofAValueRange_storesThatRangeAndItsExpiry_andRefusesABadRange() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 9, 1, SegmentOptions.defaults());
    byte[] entry = "headerVALUEtrailing".getBytes();
    long hint = w.append(1, "k".getBytes(), entry, 6, 5, false, 1234L);
    assertEquals(
        SegmentFormat.varLongSize(0) + 1 + SegmentFormat.varLongSize(1234) + 1 + 1 + 1 + 5,
        w.lastDocumentSize());
    assertThrows(
        InvalidArgumentException.class, () -> w.append(2, "k".getBytes(), entry, 15, 5, false, 0));
    assertThrows(
        InvalidArgumentException.class, () -> w.append(2, "k".getBytes(), entry, -1, 2, false, 0));
    SegmentState s = w.checkpoint();
    Document d = new SegmentReader(file, s).read(1, hint);
    assertArrayEquals("VALUE".getBytes(), d.value());
    assertEquals(1234L, d.expiry());
    assertFalse(d.tombstone());
  }

  @Test
  void indexPages_comeFromTheBlockCache_sharedByTheReadersOfLaterStates() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentOptions o = SegmentOptions.defaults().withBlockSize(64).withPageSize(64);
    SegmentWriter w = SegmentWriter.create(file, 3, 1, o);
    TestDocs t = new TestDocs(SEED + 2, 1);
    t.appendRandom(w, 400);
    SegmentState s1 = w.checkpoint();
    assertTrue(s1.levels() >= 3, "a deep index: " + s1);
    try (io.basaltdb.internal.cache.BlockCache cache =
        new io.basaltdb.internal.cache.BlockCache(1 << 20)) {
      long owner = cache.newOwners(2);
      SegmentReader r = new SegmentReader(file, s1, cache, owner);
      t.checkAllReads(
          r); // with and without hints: every page once from the file, then from the cache
      long seqno = t.docs.firstKey() + 7;
      long before = r.blockReads();
      r.readUncached(seqno, -1);
      assertEquals(before + 1, r.blockReads(), "only the data block is read: the pages are cached");
      assertTrue(cache.bytes(io.basaltdb.internal.cache.BlockCache.Kind.SEGMENT_PAGE) > 0);
      t.appendRandom(w, 50);
      SegmentReader r2 = new SegmentReader(file, w.checkpoint(), cache, owner);
      long hits = cache.hits();
      long before2 = r2.blockReads();
      r2.readUncached(seqno, -1);
      assertTrue(cache.hits() > hits, "the next state's reader finds the old pages in the cache");
      assertTrue(
          r2.blockReads() - before2 < 1 + r2.state().levels(),
          "fewer reads than a descent from disk");
      t.checkAllReads(r2);
    }
  }

  @Test
  void documents_areCachedOneByOne_sharedByLaterStates_andNeverSeenByAnotherSegment() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w =
        SegmentWriter.create(file, 3, 1, SegmentOptions.defaults().withBlockSize(256));
    TestDocs t = new TestDocs(SEED + 3, 1);
    t.appendRandom(w, 100);
    SegmentState s1 = w.checkpoint();
    ByteArrayFile other = new ByteArrayFile(); // another segment, whose seqnos overlap this one's
    SegmentWriter w2 =
        SegmentWriter.create(other, 4, 1, SegmentOptions.defaults().withBlockSize(256));
    TestDocs t2 = new TestDocs(SEED + 4, 1);
    t2.appendRandom(w2, 100);
    long seqno =
        t.docs.keySet().stream()
            .filter(q -> q > 10 && t2.docs.containsKey(q))
            .findFirst()
            .orElseThrow();
    try (io.basaltdb.internal.cache.BlockCache cache =
        new io.basaltdb.internal.cache.BlockCache(1 << 20)) {
      long owner = cache.newOwners(2);
      SegmentReader r = new SegmentReader(file, s1, cache, owner);
      assertNull(r.cached(seqno));
      Document d = r.read(seqno, t.hints.get(seqno));
      assertEquals(t.docs.get(seqno), d);
      assertNull(r.cached(seqno), "read once: not cached");
      assertEquals(d, r.read(seqno, t.hints.get(seqno)));
      long reads = r.blockReads();
      assertEquals(d, r.read(seqno, t.hints.get(seqno)), "the cached copy");
      assertEquals(d, r.cached(seqno));
      assertEquals(reads, r.blockReads(), "nothing read from the file");
      assertTrue(
          cache.bytes(io.basaltdb.internal.cache.BlockCache.Kind.DOCUMENT) > d.value().length);
      assertTrue(cache.hits(io.basaltdb.internal.cache.BlockCache.Kind.DOCUMENT) >= 2);

      t.appendRandom(w, 20);
      SegmentReader r2 = new SegmentReader(file, w.checkpoint(), cache, owner);
      assertEquals(
          d, r2.cached(seqno), "a later state of the same file shares the cached documents");
      long later = t.docs.lastKey();
      assertNull(r.cached(later), "a state never answers for seqnos past its own");

      // The other segment file (its own owners) has a document of the same seqno: never this one's
      // copy.
      SegmentReader o = new SegmentReader(other, w2.checkpoint(), cache, cache.newOwners(2));
      assertNull(o.cached(seqno));
      assertEquals(t2.docs.get(seqno), o.read(seqno, -1));
      assertEquals(d, r.read(seqno, -1));

      // Without a cache a reader reads every time.
      SegmentReader plain = new SegmentReader(file, s1);
      long before = plain.blockReads();
      plain.read(seqno, t.hints.get(seqno));
      plain.read(seqno, t.hints.get(seqno));
      assertEquals(before + 2, plain.blockReads());
      assertNull(plain.cached(seqno));
    }
  }

  @Test
  void read_deepTree_smallBlocksAndPages() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentOptions o = SegmentOptions.defaults().withBlockSize(64).withPageSize(64);
    SegmentWriter w = SegmentWriter.create(file, 1, 1, o);
    TestDocs t = new TestDocs(SEED + 1, 1);
    for (int i = 0; i < 600; i++) {
      Document d = t.next();
      t.append(w, new Document(d.seqno(), d.key(), t.bytes(t.random.nextInt(100)), d.tombstone()));
      if (i % 97 == 0) {
        w.checkpoint(); // partial pages at every level, superseded later
      }
    }
    SegmentState s = w.checkpoint();
    assertTrue(s.levels() >= 3, "fan-out 4 over hundreds of blocks: " + s);
    assertTrue(s.staleBytes() > 0);
    t.checkAllReads(new SegmentReader(file, s));
    checkIterators(new SegmentReader(file, s), t.docs);
  }

  @Test
  void documentSizes_addUpToStateDocumentBytes() {
    SegmentWriter w = SegmentWriter.create(new ByteArrayFile(), 0, 0, SegmentOptions.defaults());
    long sum = 0;
    for (int i = 0; i < 50; i++) {
      w.append(i * 300L, new byte[i], new byte[i * 200], false);
      int expected = BlockBuilder.encodedSize(0, i, i * 200, 0); // lower bound: delta is 0 or 300
      assertTrue(w.lastDocumentSize() == expected || w.lastDocumentSize() == expected + 1);
      sum += w.lastDocumentSize();
    }
    assertEquals(sum, w.checkpoint().documentBytes());
  }

  @Test
  void hints_nameTheSegmentAndBlock_andForeignOrStaleHintsAreIgnored() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 3, 10, SegmentOptions.defaults());
    TestDocs t = new TestDocs(SEED + 2, 10);
    t.appendRandom(w, 300);
    SegmentState s = w.checkpoint();
    SegmentReader r = new SegmentReader(file, s);
    for (Map.Entry<Long, Long> e : t.hints.entrySet()) {
      long hint = e.getValue();
      assertEquals(3, hint >>> 32);
      assertTrue(
          (hint & 0xFFFF_FFFFL) >= SegmentFormat.FILE_HEADER_SIZE
              && (hint & 0xFFFF_FFFFL) < s.tailOffset());
      Document d = t.docs.get(e.getKey());
      assertEquals(
          d,
          r.read(d.seqno(), SegmentFormat.hint(4, hint & 0xFFFF_FFFFL)),
          "another segment's hint");
      assertEquals(
          d,
          r.read(d.seqno(), SegmentFormat.hint(3, t.random.nextLong(s.tailOffset() + 100))),
          "a hint into the middle of anything");
    }
    // Another block's hint: the block is valid but lacks the seqno, so the index is used.
    long first = t.docs.firstKey();
    long last = t.docs.lastKey();
    assertEquals(t.docs.get(first), r.read(first, t.hints.get(last)));
  }

  @Test
  void olderReader_doesNotSeeLaterAppends() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 0, 1, SegmentOptions.defaults());
    TestDocs t = new TestDocs(SEED + 3, 1);
    t.appendRandom(w, 100);
    SegmentState s1 = w.checkpoint();
    NavigableMap<Long, Document> first = new TreeMap<>(t.docs);
    SegmentReader r1 = new SegmentReader(file, s1);
    t.appendRandom(w, 400);
    SegmentState s2 = w.checkpoint();
    TestDocs.checkAllReads(r1, first, t.hints);
    for (long q : t.docs.tailMap(s1.lastSeqno(), false).keySet()) {
      assertNull(r1.read(q, t.hints.get(q)));
    }
    assertEquals(first.size(), count(r1.iterator(0)));
    t.checkAllReads(new SegmentReader(file, s2));
  }

  @Test
  void emptySegment_readsNothing_andCheckpointWithoutAppendsWritesNothing() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 5, 100, SegmentOptions.defaults());
    SegmentState s = w.checkpoint();
    assertTrue(s.isEmpty());
    assertEquals(99, s.lastSeqno());
    assertEquals(SegmentFormat.FILE_HEADER_SIZE, s.tailOffset());
    SegmentReader r = new SegmentReader(file, s);
    assertNull(r.read(100, -1));
    assertFalse(r.iterator(0).hasNext());
    w.append(100, new byte[] {1}, new byte[] {2}, false);
    SegmentState s2 = w.checkpoint();
    long size = file.size();
    assertSame(s2, w.checkpoint());
    assertEquals(size, file.size());
    assertEquals(
        new Document(100, new byte[] {1}, new byte[] {2}, false),
        new SegmentReader(file, s2).read(100, -1));
  }

  @Test
  void iterator_fromVariousSeqnos() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w =
        SegmentWriter.create(file, 2, 50, SegmentOptions.defaults().withPageSize(256));
    TestDocs t = new TestDocs(SEED + 4, 50);
    for (int round = 0; round < 8; round++) {
      t.appendRandom(w, 150);
      w.checkpoint();
    }
    checkIterators(new SegmentReader(file, w.checkpoint()), t.docs);
  }

  private void checkIterators(SegmentReader r, NavigableMap<Long, Document> model) {
    List<Long> starts =
        new ArrayList<>(
            List.of(
                Long.MIN_VALUE,
                0L,
                r.state().startSeqno(),
                model.firstKey(),
                model.firstKey() + 1,
                model.lastKey(),
                model.lastKey() + 1,
                Long.MAX_VALUE));
    for (int i = 0; i < 20; i++) {
      starts.add(model.firstKey() + (model.lastKey() - model.firstKey()) * i / 20 + i % 3);
    }
    for (long from : starts) {
      DocumentIterator it = r.iterator(from);
      for (Document expected : model.tailMap(from, true).values()) {
        assertTrue(it.hasNext(), "from " + from);
        assertEquals(expected, it.next(), "from " + from);
      }
      assertFalse(it.hasNext(), "from " + from);
    }
  }

  private static int count(DocumentIterator it) {
    int n = 0;
    for (; it.hasNext(); it.next()) {
      n++;
    }
    return n;
  }

  @Test
  void read_concurrentReaders_whileTheWriterAppends() throws Exception {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 8, 1, SegmentOptions.defaults().withPageSize(128));
    TestDocs t = new TestDocs(SEED + 6, 1);
    t.appendRandom(w, 200);
    AtomicReference<SegmentReader> current =
        new AtomicReference<>(new SegmentReader(file, w.checkpoint()));
    // The model only grows and is read by the readers: publish immutable copies with each reader.
    ConcurrentHashMap<Long, Document> model = new ConcurrentHashMap<>(t.docs);
    ConcurrentHashMap<Long, Long> hints = new ConcurrentHashMap<>(t.hints);
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong reads = new AtomicLong();
    List<Thread> readers = new ArrayList<>();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    for (int i = 0; i < 3; i++) {
      long seed = SEED + 10 + i;
      Thread th =
          new Thread(
              () -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                try {
                  while (!done.get()) {
                    SegmentReader r = current.get();
                    long q =
                        r.state().startSeqno()
                            + rnd.nextLong(r.state().lastSeqno() - r.state().startSeqno() + 1);
                    Document d = r.read(q, rnd.nextBoolean() ? hints.getOrDefault(q, -1L) : -1);
                    assertEquals(model.get(q), d, "seqno " + q);
                    reads.incrementAndGet();
                  }
                } catch (Throwable e) {
                  errors.add(e);
                }
              });
      th.start();
      readers.add(th);
    }
    for (int round = 0; round < 100; round++) {
      for (int i = 0; i < 20; i++) {
        Document d = t.next();
        hints.put(d.seqno(), t.append(w, d));
        model.put(d.seqno(), d);
      }
      current.set(
          new SegmentReader(file, w.checkpoint())); // published after the model holds its documents
    }
    done.set(true);
    for (Thread th : readers) {
      th.join();
    }
    assertTrue(errors.isEmpty(), () -> "reader failed: " + errors.peek());
    assertTrue(reads.get() > 0);
  }

  @Test
  void compression_shrinksCompressibleBlocks_andStoresRandomOnesRaw() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 0, 1, SegmentOptions.defaults());
    byte[] text = "the quick brown fox jumps over the lazy dog ".repeat(20).getBytes();
    for (int i = 1; i <= 200; i++) {
      w.append(i, ("key" + i).getBytes(), text, false);
    }
    SegmentState s = w.checkpoint();
    assertTrue(s.tailOffset() < s.documentBytes() / 5, "compressed " + s);
    assertArrayEquals(text, new SegmentReader(file, s).read(77, -1).value());

    ByteArrayFile random = new ByteArrayFile();
    SegmentWriter w2 = SegmentWriter.create(random, 0, 1, SegmentOptions.defaults());
    TestDocs t = new TestDocs(SEED + 5, 1);
    byte[] noise = new byte[3000];
    t.random.nextBytes(noise);
    t.append(w2, new Document(1, new byte[0], noise, false));
    SegmentState s2 = w2.checkpoint();
    byte[] c = random.contents();
    assertEquals(
        0, c[SegmentFormat.FILE_HEADER_SIZE + SegmentFormat.BLOCK_FLAGS_OFFSET], "stored raw");
    assertEquals(t.docs.get(1L), new SegmentReader(random, s2).read(1, t.hints.get(1L)));
  }

  @Test
  void append_refusesBadArguments_andLeavesTheSegmentUnchanged() {
    SegmentWriter w = SegmentWriter.create(new ByteArrayFile(), 0, 10, SegmentOptions.defaults());
    assertThrows(
        InvalidArgumentException.class, () -> w.append(9, new byte[1], new byte[1], false));
    w.append(10, new byte[1], new byte[1], false);
    assertThrows(
        InvalidArgumentException.class, () -> w.append(10, new byte[1], new byte[1], false));
    assertThrows(
        InvalidArgumentException.class,
        () -> w.append(11, new byte[(64 << 10) + 1], new byte[0], false));
    assertThrows(
        InvalidArgumentException.class,
        () -> w.append(11, new byte[0], new byte[(20 << 20) + 1], false));
    assertThrows(InvalidArgumentException.class, () -> w.append(11, null, new byte[0], false));
    w.append(11, new byte[64 << 10], new byte[0], false);
    assertEquals(2, w.checkpoint().documentCount());
    assertThrows(
        InvalidArgumentException.class,
        () -> SegmentWriter.create(new ByteArrayFile(), -1, 0, SegmentOptions.defaults()));
    assertThrows(
        InvalidArgumentException.class,
        () -> SegmentWriter.create(new ByteArrayFile(), 1L << 31, 0, SegmentOptions.defaults()));
  }

  @Test
  void options_defaultsValidateAndRanges() {
    SegmentOptions d = SegmentOptions.defaults().validate();
    assertEquals(4096, d.blockSize());
    assertEquals(64L << 20, d.maxSegmentSize());
    assertEquals(d.maxSegmentSize(), d.preallocateBytes());
    assertEquals(8 << 20, d.withMaxSegmentSize(8 << 20).preallocateBytes());
    assertThrows(InvalidArgumentException.class, () -> d.withBlockSize(10).validate());
    assertThrows(
        InvalidArgumentException.class, () -> d.withMaxSegmentSize((1L << 30) + 1).validate());
    assertThrows(
        InvalidArgumentException.class,
        () -> d.withPreallocateBytes(d.maxSegmentSize() + 1).validate());
    assertThrows(InvalidArgumentException.class, () -> d.withPageSize(32).validate());
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 0, 0, d.withMaxSegmentSize(1 << 20));
    assertEquals(1 << 20, file.preallocated());
    assertFalse(w.isFull());
    for (int i = 0; !w.isFull(); i++) {
      w.append(i, new byte[8], new byte[64 << 10], false);
    }
    assertTrue(w.size() >= 1 << 20);
  }
}
