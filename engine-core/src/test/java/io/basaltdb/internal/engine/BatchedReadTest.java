package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Basalt;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.read.EngineCursor;
import io.basaltdb.internal.engine.read.PooledReadTransport;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.spi.ReadTarget;
import io.basaltdb.spi.ReadTransport;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batched gets: the default read transport keeps a batch's reads in flight together; getAll agrees
 * with get.
 */
class BatchedReadTest {
  @TempDir Path dir;

  @Test
  void pooledTransport_hasEveryReadOfABatchInFlightAtOnce() {
    int n = 8;
    CountDownLatch inside = new CountDownLatch(n);
    ReadTarget target =
        (position, dst) -> {
          inside.countDown();
          try { // returns only once all n reads are inside at the same time
            if (!inside.await(10, TimeUnit.SECONDS))
              throw new StorageException("reads ran one after another");
          } catch (InterruptedException e) {
            throw new StorageException("interrupted");
          }
          dst.put((byte) position);
          return 1;
        };
    try (PooledReadTransport t = new PooledReadTransport(n)) {
      List<ReadTransport.Read> reads = new ArrayList<>();
      for (int i = 0; i < n; i++)
        reads.add(new ReadTransport.Read(target, i, ByteBuffer.allocate(1)));
      t.submit(reads);
      for (int i = 0; i < n; i++) {
        assertEquals(1, reads.get(i).result().join());
        assertEquals(i, reads.get(i).dst().get(0));
      }
    }
  }

  @Test
  void pooledTransport_failedRead_completesItsResultExceptionally() {
    StorageException boom = new StorageException("read of /x failed: injected");
    ReadTarget bad =
        (position, dst) -> {
          throw boom;
        };
    try (PooledReadTransport t = new PooledReadTransport(2)) {
      List<ReadTransport.Read> reads =
          List.of(
              new ReadTransport.Read(bad, 0, ByteBuffer.allocate(1)),
              new ReadTransport.Read(bad, 1, ByteBuffer.allocate(1)));
      t.submit(reads);
      for (ReadTransport.Read r : reads) {
        CompletionException e = assertThrows(CompletionException.class, () -> r.result().join());
        assertSame(boom, e.getCause());
      }
    }
  }

  @Test
  void getAll_onDisk_readsEachBlockOnce_andAgreesWithGet() {
    Options o =
        Options.defaults().memoryQuota(64L << 20).syncMode(SyncMode.NONE).writeCacheSize(4L << 20);
    try (Engine e = Engine.open(new FileStorage(dir), o)) {
      int n = 2000;
      for (int i = 0; i < n; i++) {
        Batch b = new Batch(1);
        b.add(1, Batch.PUT, key(i), value(i));
        e.write(b);
      }
      e.flush();
      for (int i = 0; i < n; i += 3) { // some deleted, some rewritten and still in the write cache
        Batch b = new Batch(1);
        if (i % 2 == 0) b.add(1, Batch.DELETE, key(i), null);
        else b.add(1, Batch.PUT, key(i), "fresh".getBytes());
        e.write(b);
      }
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i++) keys.add(key(i));
      keys.add("absent".getBytes());
      Map<String, Long> before = e.stats();
      List<byte[]> got = e.getAll(ids(1, keys.size()), keys);
      Map<String, Long> after = e.stats();
      long reads = delta(before, after, "documentReads");
      for (int i = 0; i < n; i++) {
        assertArrayEquals(e.get(1, key(i)), got.get(i), "key " + i);
        if (i % 3 != 0) assertArrayEquals(value(i), got.get(i));
      }
      assertNull(got.get(n));
      assertTrue(
          reads > 0 && reads < n / 10, "one read per distinct 4 KiB block, not per key: " + reads);
      // The page cache holds the files just written: reads are copies from their mappings, made on
      // this
      // thread, until one is slow enough to look like a page fault (a file's first read maps it,
      // and a
      // fresh JVM interprets): the rest of that round goes to the transport.
      assertTrue(
          delta(before, after, "batchedReads") >= reads, "the batch's reads are counted: " + after);
      assertTrue(delta(before, after, "batchedReadsInPlace") > 0, "reads made in place: " + after);
    }
  }

  @Test
  void getAll_onDisk_withoutMappedReads_handsItsReadsToTheTransport() {
    Options o =
        Options.defaults().memoryQuota(64L << 20).syncMode(SyncMode.NONE).writeCacheSize(4L << 20);
    try (Engine e = Engine.open(new FileStorage(dir, false, false), o)) {
      for (int i = 0; i < 500; i++) put(e, 1, key(i), value(i));
      e.flush();
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < 500; i += 50) keys.add(key(i));
      Map<String, Long> before = e.stats();
      List<byte[]> got = e.getAll(ids(1, keys.size()), keys);
      Map<String, Long> after = e.stats();
      for (int i = 0; i < keys.size(); i++) assertArrayEquals(value(i * 50), got.get(i));
      assertTrue(
          delta(before, after, "batchedReadRounds") > 0,
          "the reads went to the transport: " + after);
      assertEquals(
          0, delta(before, after, "batchedReadsInPlace"), "none was made in place: " + after);
    }
  }

  /** Options for a key index of several levels of small tables with small blocks. */
  private static Options leveled() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(256 << 10)
        .blockSize(512)
        .l0CompactionTrigger(2)
        .level1Bytes(16 << 10)
        .levelMultiplier(4)
        .tableTargetBytes(16 << 10);
  }

  @Test
  void getAll_readsColdKeyIndexBlocksAndDocumentsThroughTheTransport() {
    MemStorage storage = new MemStorage(1);
    try (Engine e = Engine.open(storage, leveled())) {
      int n = 4000;
      for (int i = 0; i < n; i++) put(e, 1, key(i), value(i));
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      for (int i = 0; i < n; i += 10)
        put(e, 1, key(i), ("newer-" + i).getBytes()); // newer records above older ones
      e.flush();
      assertTrue(e.waitForCompactions(30_000)); // no background reads while the test counts reads
      assertTrue(e.stats().get("tables") > 3, "several tables: " + e.stats());
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i += 5) keys.add(key(i));
      keys.add("absent".getBytes());
      ReadThreads reads = new ReadThreads(storage);
      Map<String, Long> before = e.stats();
      List<byte[]> got = e.getAll(ids(1, keys.size()), keys);
      Map<String, Long> after = e.stats();
      reads.stop();
      for (int j = 0; j < keys.size() - 1; j++) {
        int i = j * 5;
        assertArrayEquals(
            i % 10 == 0 ? ("newer-" + i).getBytes() : value(i), got.get(j), "key " + i);
      }
      assertNull(got.get(keys.size() - 1));
      assertTrue(
          delta(before, after, "indexBlockReads") > 10, "the key index blocks were cold: " + after);
      reads.assertAllThroughTheTransport(before, after);
      for (byte[] k : keys) assertArrayEquals(e.get(1, k), e.getAll(ids(1, 1), List.of(k)).get(0));
    }
  }

  /**
   * Magma's coroutines: a key's next read goes out as soon as its last one completes, while the
   * batch's other reads are still in flight, and a batch never has more than readQueueDepth reads
   * in flight. The transport holds every read until the test completes it, one at a time, each once
   * the batch has done all it can.
   */
  @Test
  void getAll_sendsAKeysNextReadWhileOthersAreInFlight_andKeepsAtMostReadQueueDepthInFlight()
      throws Exception {
    MemStorage storage = new MemStorage(1);
    HeldReads held = new HeldReads();
    try (Engine e = Engine.open(storage, leveled().readQueueDepth(4), held.provider())) {
      int n = 2000;
      for (int i = 0; i < n; i++) put(e, 1, key(i), value(i));
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i += 97) keys.add(key(i)); // 21 keys, most in blocks of their own
      List<byte[]> got = held.run(() -> e.getAll(ids(1, keys.size()), keys), false);
      for (int j = 0; j < keys.size(); j++)
        assertArrayEquals(value(j * 97), got.get(j), "key " + j * 97);
      assertTrue(
          held.submitted.get() > keys.size(), "key index blocks and documents: " + held.submitted);
      assertEquals(4, held.maxInFlight.get(), "up to readQueueDepth reads in flight, never more");
      assertTrue(
          held.whileOthersInFlight.get() > 0, "reads handed over while others were in flight");
    }
  }

  /**
   * A block a batch has read lately (its last 8 x readQueueDepth reads: all of them here) is not
   * read again for a key that reaches it later: keys written one after another share document
   * blocks but not key index blocks, and the reads complete newest first, so some keys reach their
   * document's block after another key's read of it has completed.
   */
  @Test
  void getAll_readsEachBlockOnce_evenForKeysThatReachItAfterItsReadCompleted() throws Exception {
    MemStorage storage = new MemStorage(1);
    HeldReads held = new HeldReads();
    // Documents in seqno order (no key-ordered runs), so keys that share a document block are far
    // apart in the key index and reach the block at different times.
    try (Engine e =
        Engine.open(storage, leveled().readQueueDepth(4).keyOrderedRuns(false), held.provider())) {
      int n = 2000;
      for (int i = 0; i < n; i++)
        put(e, 1, key(i * 7919 % n), value(i * 7919 % n)); // log order is not key order
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      List<byte[]> keys = new ArrayList<>();
      for (int i = 500; i < 520; i++)
        keys.add(key(i * 7919 % n)); // neighbours in the log, not in the key index
      List<byte[]> got = held.run(() -> e.getAll(ids(1, keys.size()), keys), true);
      for (int j = 0; j < keys.size(); j++)
        assertArrayEquals(value((500 + j) * 7919 % n), got.get(j), "key " + j);
      assertEquals(
          held.blocks.size(),
          held.submitted.get(),
          "no block read twice: " + held.submitted + " reads of " + held.blocks.size() + " blocks");
      assertTrue(
          held.blocks.size() < 2 * keys.size(), "documents share blocks: " + held.blocks.size());
    }
  }

  /**
   * Key-ordered runs: keys written in scrambled order, then read as neighbours in key order (as a
   * scan's documents are), find their documents in shared blocks, each read once; in seqno order
   * nearly every key needs a block of its own.
   */
  @Test
  void keyOrderedRuns_putKeyNeighboursWrittenApartInSharedBlocks() throws Exception {
    for (boolean runs : new boolean[] {true, false}) {
      MemStorage storage = new MemStorage(3);
      HeldReads held = new HeldReads();
      try (Engine e =
          Engine.open(storage, leveled().readQueueDepth(4).keyOrderedRuns(runs), held.provider())) {
        int n = 2000;
        for (int i = 0; i < n; i++) put(e, 1, key(i * 7919 % n), value(i * 7919 % n));
        e.flush();
        assertTrue(e.waitForCompactions(30_000));
        List<byte[]> keys = new ArrayList<>();
        for (int i = 1000; i < 1040; i++) keys.add(key(i)); // neighbours in the key index
        List<byte[]> got = held.run(() -> e.getAll(ids(1, keys.size()), keys), false);
        for (int j = 0; j < keys.size(); j++)
          assertArrayEquals(value(1000 + j), got.get(j), "key " + j);
        long documentBlocks =
            held.blocks.stream().filter(b -> b.getKey().toString().contains(".seg")).count();
        if (runs) {
          assertTrue(
              documentBlocks <= keys.size() / 3,
              "40 neighbours from " + documentBlocks + " document blocks");
        } else {
          assertTrue(
              documentBlocks >= keys.size() * 3 / 4,
              "seqno order: " + documentBlocks + " document blocks for 40 keys");
        }
      }
    }
  }

  /**
   * Collection writes the live documents it copies as key-ordered runs: keys flushed fifty at a
   * time in scrambled order (each flush's run a sparse scatter over the key space) sit one per
   * block for a run of neighbours; once a third of them are overwritten and collection rewrites the
   * rest, the neighbours share blocks.
   */
  @Test
  void collection_gathersKeyNeighboursIntoSharedBlocks() throws Exception {
    MemStorage storage = new MemStorage(3);
    int n = 2000;
    List<byte[]> keys = new ArrayList<>();
    for (int i = 1000; i < 1040; i++) keys.add(key(i));
    Options options = leveled().readQueueDepth(4).segmentSize(64 << 10);
    long before;
    HeldReads held = new HeldReads();
    try (Engine e =
        Engine.open(storage, options.copy().fragmentationThreshold(1.0), held.provider())) {
      for (int i = 0; i < n; i++) {
        int k = i * 7919 % n;
        put(e, 1, key(k), value(k));
        if (i % 50 == 49) e.flush();
      }
      for (int k = 1; k < n; k += 3) put(e, 1, key(k), value(k)); // garbage in the old segments
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      List<byte[]> got = held.run(() -> e.getAll(ids(1, keys.size()), keys), false);
      for (int j = 0; j < keys.size(); j++)
        assertArrayEquals(value(1000 + j), got.get(j), "key " + j);
      before = documentBlocks(held);
      assertEquals(0, e.stats().get("gcRuns"), "collection is off");
    }
    held = new HeldReads();
    try (Engine e =
        Engine.open(storage, options.copy().fragmentationThreshold(0.1), held.provider())) {
      assertTrue(e.waitForCompactions(30_000));
      assertTrue(e.stats().get("gcRuns") > 0, "collection ran: " + e.stats());
      List<byte[]> got = held.run(() -> e.getAll(ids(1, keys.size()), keys), false);
      for (int j = 0; j < keys.size(); j++)
        assertArrayEquals(value(1000 + j), got.get(j), "key " + j);
      long after = documentBlocks(held);
      assertTrue(
          before >= 24, "flushed runs scatter neighbours: " + before + " blocks for 40 keys");
      assertTrue(
          after <= before / 2,
          "collected: " + after + " blocks for 40 keys, " + before + " before");
    }
  }

  /** The document blocks (of segments, not tables) {@code held} read. */
  private static long documentBlocks(HeldReads held) {
    return held.blocks.stream().filter(b -> b.getKey().toString().contains(".seg")).count();
  }

  /** A transport that holds every read until the test performs it, counting what is in flight. */
  private static final class HeldReads implements ReadTransport {
    final java.util.concurrent.ConcurrentLinkedDeque<Read> pending =
        new java.util.concurrent.ConcurrentLinkedDeque<>();

    /** Every block read, by file and offset. */
    final java.util.Set<Map.Entry<ReadTarget, Long>> blocks =
        java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Runs {@code batch} on a thread of its own, completing its reads one at a time, each once the
     * batch waits (the oldest first, or with {@code newestFirst} the newest), and returns its
     * result.
     */
    <T> T run(java.util.function.Supplier<T> batch, boolean newestFirst)
        throws InterruptedException {
      List<T> result = new ArrayList<>();
      Thread t = new Thread(() -> result.add(batch.get()));
      t.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (t.isAlive()) {
        assertTrue(System.nanoTime() < deadline, "the batch finishes");
        Thread.State st = t.getState();
        if (st != Thread.State.WAITING && st != Thread.State.TIMED_WAITING) {
          Thread.onSpinWait();
          continue;
        }
        Read r = newestFirst ? pending.pollLast() : pending.pollFirst();
        if (r != null) { // the batch waits: complete one of its reads
          inFlight.decrementAndGet();
          r.readNow();
          long woken =
              System.nanoTime()
                  + TimeUnit.MILLISECONDS.toNanos(50); // it may run and wait again unseen
          while (t.getState() == st && System.nanoTime() < woken) Thread.onSpinWait();
        }
      }
      t.join();
      assertEquals(1, result.size(), "the batch returned");
      return result.get(0);
    }

    final java.util.concurrent.atomic.AtomicInteger inFlight =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger maxInFlight =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger submitted =
        new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger whileOthersInFlight =
        new java.util.concurrent.atomic.AtomicInteger();

    ReadTransport.Provider provider() {
      return new ReadTransport.Provider() {
        @Override
        public int priority() {
          return 0;
        }

        @Override
        public ReadTransport create(int queueDepth, io.basaltdb.spi.ReadBuffers buffers) {
          return HeldReads.this;
        }
      };
    }

    @Override
    public String name() {
      return "held";
    }

    @Override
    public void submit(List<Read> reads) {
      if (inFlight.get() > 0) whileOthersInFlight.incrementAndGet();
      submitted.addAndGet(reads.size());
      maxInFlight.accumulateAndGet(inFlight.addAndGet(reads.size()), Math::max);
      for (Read r : reads) blocks.add(Map.entry(r.target(), r.position()));
      pending.addAll(reads);
    }

    @Override
    public void close() {
      for (Read r; (r = pending.poll()) != null; ) r.readNow();
    }
  }

  @Test
  void getAll_documentsBiggerThanABlock_areReadWholeThroughTheTransport() {
    MemStorage storage = new MemStorage(1);
    try (Engine e = Engine.open(storage, leveled())) {
      int n = 40;
      for (int i = 0; i < n; i++) put(e, 1, key(i), big(i));
      e.flush();
      assertTrue(e.waitForCompactions(30_000)); // no background reads while the test counts reads
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i++) keys.add(key(i));
      ReadThreads reads = new ReadThreads(storage);
      Map<String, Long> before = e.stats();
      List<byte[]> got = e.getAll(ids(1, n), keys);
      Map<String, Long> after = e.stats();
      reads.stop();
      for (int i = 0; i < n; i++) assertArrayEquals(big(i), got.get(i), "key " + i);
      assertEquals(
          0, delta(before, after, "hintMisses"), "every document read at its hinted block");
      reads.assertAllThroughTheTransport(
          before, after); // the rest of each long block too, in a later round
      assertTrue(
          delta(before, after, "documentReads") >= 2 * n,
          "a first read and the rest, per document: " + after);
    }
  }

  @Test
  void scanReadAhead_readsTheDocumentsOfItsKeysTogether_andAgreesWithAPlainScan() {
    MemStorage storage = new MemStorage(1);
    try (Engine e = Engine.open(storage, leveled())) {
      int n = 3000;
      for (int i = 0; i < n; i++)
        put(e, 1, key((i * 7919) % n), i % 50 == 0 ? big(i) : value(i)); // scattered in the log
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      for (int i = 0; i < n; i += 9) { // the write cache over the files: fresh values and deletions
        Batch b = new Batch(1);
        if (i % 2 == 0) b.add(1, Batch.DELETE, key(i), null);
        else b.add(1, Batch.PUT, key(i), "fresh".getBytes());
        e.write(b);
      }
      List<String> plain = scan(e, key(100), key(700), 1);
      assertTrue(plain.size() > 500, "the range holds keys: " + plain.size());
      Map<String, Long> before = e.stats();
      List<String> batched = scan(e, key(100), key(700), 100);
      Map<String, Long> after = e.stats();
      assertEquals(plain, batched);
      assertEquals(plain, scan(e, key(100), key(700), 0), "the default, growing read-ahead");
      assertEquals(plain.subList(0, 5), scan(e, key(100), null, 0).subList(0, 5));
      assertEquals(
          delta(before, after, "documentReads"),
          delta(before, after, "batchedReads"),
          "every document read went through the transport (the key index blocks the scan reads as it goes)");
    }
  }

  @Test
  void aScanWhoseReadAheadFails_throwsFromThenOn_andNeverReturnsAKeyWithoutItsValue() {
    MemStorage storage = new MemStorage(1);
    try (Engine e = Engine.open(storage, leveled())) {
      for (int i = 0; i < 500; i++) put(e, 1, key(i), value(i));
      e.flush();
      assertTrue(e.waitForCompactions(30_000));
      try (EngineCursor c = e.scan(1, null, null, 50)) {
        assertTrue(c.next());
        storage.setFaultInjector(
            (op, name) ->
                op == MemStorage.Op.READ && name.endsWith(".seg")
                    ? MemStorage.Fault.IO_ERROR
                    : MemStorage.Fault.NONE);
        for (int i = 1; i < 50; i++)
          assertTrue(c.next()); // the rest of the first refill, read before the fault
        assertThrows(StorageException.class, c::next, "the next refill's document reads fail");
        storage.setFaultInjector(null);
        assertThrows(
            StorageException.class,
            c::next,
            "the keys taken ahead are not skipped: the cursor stays failed");
      }
      List<String> all = scan(e, null, null, 50); // a new cursor reads everything again
      assertEquals(500, all.size());
    }
  }

  /**
   * The keys and values of {@code [from, to)} as strings, scanned with {@code readAhead} (0: the
   * default).
   */
  private static List<String> scan(Engine e, byte[] from, byte[] to, int readAhead) {
    List<String> out = new ArrayList<>();
    try (EngineCursor c = e.scan(1, from, to, readAhead)) {
      while (c.next()) out.add(new String(c.key()) + "=" + java.util.Arrays.hashCode(c.value()));
    }
    return out;
  }

  /** Counts the reads of a {@link MemStorage} on the calling thread and on others until stopped. */
  private static final class ReadThreads {
    final Thread caller = Thread.currentThread();
    final java.util.concurrent.atomic.AtomicLong onCaller =
        new java.util.concurrent.atomic.AtomicLong();
    final java.util.concurrent.atomic.AtomicLong elsewhere =
        new java.util.concurrent.atomic.AtomicLong();
    private final MemStorage storage;

    ReadThreads(MemStorage storage) {
      this.storage = storage;
      storage.setFaultInjector(
          (op, name) -> {
            if (op == MemStorage.Op.READ)
              (Thread.currentThread() == caller ? onCaller : elsewhere).incrementAndGet();
            return MemStorage.Fault.NONE;
          });
    }

    void stop() {
      storage.setFaultInjector(null);
    }

    /**
     * Every read was one the transport made: the built-in pool makes the first read of a hand-over
     * of several on the caller's thread, and the rest on its own; a point read would be one more.
     */
    void assertAllThroughTheTransport(Map<String, Long> before, Map<String, Long> after) {
      assertTrue(
          onCaller.get() <= delta(before, after, "batchedReadRounds"),
          "the caller read at most one block per hand-over");
      assertEquals(
          delta(before, after, "batchedReads"),
          onCaller.get() + elsewhere.get(),
          "one read per distinct block of a round");
    }
  }

  @Test
  void getAll_acrossKeyspaces_keepsEveryKeyInItsKeyspace() {
    try (Basalt db =
            Basalt.open(
                dir.resolve("one"), Options.defaults().syncMode(SyncMode.NONE).blockSize(512));
        Basalt other = Basalt.open(dir.resolve("other"), Options.defaults())) {
      Keyspace a = db.createKeyspace("a");
      Keyspace b = db.createKeyspace("b");
      for (int i = 0; i < 500; i++) {
        a.put(key(i), ("a" + i).getBytes());
        if (i % 2 == 0) b.put(key(i), ("b" + i).getBytes());
      }
      db.flush();
      a.put(key(7), "a7-cached".getBytes()); // from the write cache
      b.delete(key(8));
      List<Keyspace> spaces = new ArrayList<>();
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < 500; i += 3) {
        spaces.add(i % 2 == 0 ? a : b);
        keys.add(key(i));
        spaces.add(i % 2 == 0 ? b : a);
        keys.add(key(i));
      }
      List<byte[]> got = db.getAll(spaces, keys);
      for (int j = 0; j < keys.size(); j++) {
        assertArrayEquals(
            spaces.get(j).get(keys.get(j)),
            got.get(j),
            spaces.get(j).name() + " " + new String(keys.get(j)));
      }
      assertArrayEquals(
          "a7-cached".getBytes(), db.getAll(List.of(a, b), List.of(key(7), key(7))).get(0));
      assertNull(db.getAll(List.of(b), List.of(key(8))).get(0));
      assertThrows(
          InvalidArgumentException.class, () -> db.getAll(List.of(a), List.of(key(1), key(2))));
      assertThrows(
          InvalidArgumentException.class,
          () -> db.getAll(List.of(other.createKeyspace("a")), List.of(key(1))));
      assertThrows(
          InvalidArgumentException.class,
          () -> db.getAll(java.util.Arrays.asList(a, null), List.of(key(1), key(2))));
      assertTrue(db.stats().get("batchedReads") > 0);
    }
  }

  private static long delta(Map<String, Long> before, Map<String, Long> after, String name) {
    return after.get(name) - before.get(name);
  }

  private static int[] ids(int ks, int n) {
    int[] ids = new int[n];
    java.util.Arrays.fill(ids, ks);
    return ids;
  }

  private static void put(Engine e, int ks, byte[] key, byte[] value) {
    Batch b = new Batch(1);
    b.add(ks, Batch.PUT, key, value);
    e.write(b);
  }

  /** An incompressible value bigger than a block of {@link #leveled()}. */
  private static byte[] big(int i) {
    byte[] v = new byte[1500 + 97 * i];
    new java.util.SplittableRandom(i).nextBytes(v);
    return v;
  }

  private static byte[] key(int i) {
    return String.format("key-%06d", i).getBytes();
  }

  private static byte[] value(int i) {
    return ("value-" + i + "-".repeat(80)).getBytes();
  }
}
