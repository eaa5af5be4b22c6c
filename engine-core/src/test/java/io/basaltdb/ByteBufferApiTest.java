package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The {@code ByteBuffer} API beside the {@code byte[]} one: gets into a caller's buffer (heap,
 * direct, sliced, at a position), puts, deletes and batches from buffers, read back by the other
 * API; values served from the write cache, from the files and from the block cache; bad buffers
 * refused before anything is written; and, on the calling thread, no heap allocation per get, put
 * or batch once warm.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class ByteBufferApiTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static ByteBuffer direct(byte[] bytes) {
    return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
  }

  /**
   * {@code bytes} in the middle of a larger heap array, as a slice positioned after a few bytes of
   * its own.
   */
  static ByteBuffer offsetHeap(byte[] bytes) {
    byte[] big = new byte[bytes.length + 20];
    Arrays.fill(big, (byte) '#');
    System.arraycopy(bytes, 0, big, 13, bytes.length);
    ByteBuffer slice = ByteBuffer.wrap(big, 10, bytes.length + 6).slice(); // arrayOffset 10
    return slice.position(3).limit(3 + bytes.length);
  }

  /**
   * The value of {@code key} read into each kind of buffer, checked to agree with the byte[] get;
   * null if absent.
   */
  static byte[] readAllWays(Keyspace ks, byte[] key) {
    byte[] expected = ks.get(key);
    int len = expected == null ? 8 : expected.length;
    for (ByteBuffer out :
        new ByteBuffer[] {
          ByteBuffer.allocate(len + 5),
          ByteBuffer.allocateDirect(len + 5),
          ByteBuffer.wrap(new byte[len + 30], 7, len + 11).slice()
        }) {
      for (ByteBuffer k :
          new ByteBuffer[] {
            ByteBuffer.wrap(key),
            direct(key),
            offsetHeap(key),
            ByteBuffer.wrap(key).asReadOnlyBuffer()
          }) {
        out.clear().position(2);
        int kp = k.position(), kl = k.limit();
        int n = ks.get(k, out);
        assertEquals(kp, k.position(), "the key buffer's position moved");
        assertEquals(kl, k.limit(), "the key buffer's limit moved");
        assertEquals(2, out.position(), "the value buffer's position moved");
        if (expected == null) {
          assertEquals(-1, n);
          assertEquals(out.capacity(), out.limit(), "an absent key changed the value buffer");
        } else {
          assertEquals(expected.length, n);
          assertEquals(2 + n, out.limit());
          byte[] got = new byte[n];
          out.get(2, got);
          assertArrayEquals(
              expected, got, "a get into a " + (out.isDirect() ? "direct" : "heap") + " buffer");
        }
      }
    }
    return expected;
  }

  @Test
  void buffersReadAndWriteWhatArraysDo() {
    AtomicLong clock = new AtomicLong(1_000_000);
    try (Basalt db = Basalt.open(new MemStorage(1), ChangeFeedTest.tiny().clock(clock::get))) {
      Keyspace ks = db.createKeyspace("k");
      Keyspace other = db.createKeyspace("o");
      ByteBuffer key = offsetHeap(b("apple"));
      ByteBuffer value = direct(b("red fruit"));
      ks.put(key, value);
      assertEquals(3, key.position(), "put moved the key buffer");
      assertEquals(0, value.position(), "put moved the value buffer");
      ks.put(direct(b("plum")), ByteBuffer.wrap(new byte[0])); // an empty value
      ks.put(ByteBuffer.wrap(b("fig")), direct(b("soon gone")), clock.get() + 10);
      ks.put(b("kiwi"), b("green"));
      db.write(
          new WriteBatch()
              .put(ks, direct(b("pear")), offsetHeap(b("yellow")))
              .delete(ks, direct(b("kiwi")))
              .put(other, ByteBuffer.wrap(b("apple")), direct(b("elsewhere"))));
      for (int round = 0; round < 2; round++) { // from the write cache, then from the files
        assertArrayEquals(b("red fruit"), readAllWays(ks, b("apple")));
        assertArrayEquals(new byte[0], readAllWays(ks, b("plum")));
        assertArrayEquals(b("soon gone"), readAllWays(ks, b("fig")));
        assertArrayEquals(b("yellow"), readAllWays(ks, b("pear")));
        assertArrayEquals(b("elsewhere"), readAllWays(other, b("apple")));
        assertNull(readAllWays(ks, b("kiwi")), "deleted through a buffer");
        assertNull(readAllWays(ks, b("none")));
        db.flush();
      }
      for (int i = 0; i < 3; i++)
        assertArrayEquals(b("red fruit"), readAllWays(ks, b("apple"))); // block cache
      clock.addAndGet(10);
      assertNull(readAllWays(ks, b("fig")), "expired");

      // A value larger than the room left: nothing copied, the length returned for a second try.
      ByteBuffer small = ByteBuffer.allocate(4);
      assertEquals(9, ks.get(ByteBuffer.wrap(b("apple")), small));
      assertEquals(0, small.position());
      assertEquals(4, small.limit());
      assertArrayEquals(new byte[4], small.array(), "a value that does not fit was partly copied");
      ks.delete(ByteBuffer.wrap(b("apple")));
      assertNull(ks.get(b("apple")));
    }
  }

  @Test
  void theInMemoryStoreServesBuffersToo() {
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20))) {
      Keyspace ks = db.createKeyspace("k");
      ks.put(direct(b("a")), direct(b("1")));
      db.write(new WriteBatch().put(ks, ByteBuffer.wrap(b("b")), ByteBuffer.wrap(b("2"))));
      assertArrayEquals(b("1"), readAllWays(ks, b("a")));
      assertArrayEquals(b("2"), readAllWays(ks, b("b")));
      ks.delete(direct(b("a")));
      assertNull(readAllWays(ks, b("a")));
    }
  }

  @Test
  void badBuffersAreRefusedBeforeAnythingIsWritten() {
    try (Basalt db = Basalt.open(new MemStorage(2), ChangeFeedTest.tiny().maxValueSize(100))) {
      Keyspace ks = db.createKeyspace("k");
      ByteBuffer v = ByteBuffer.wrap(b("v"));
      assertThrows(InvalidArgumentException.class, () -> ks.put((ByteBuffer) null, v));
      assertThrows(InvalidArgumentException.class, () -> ks.put(ByteBuffer.wrap(b("k")), null));
      assertThrows(
          InvalidArgumentException.class,
          () -> ks.put(ByteBuffer.allocate(Options.MAX_KEY_SIZE + 1), v));
      InvalidArgumentException big =
          assertThrows(
              InvalidArgumentException.class,
              () -> ks.put(ByteBuffer.wrap(b("k")), ByteBuffer.allocateDirect(101)));
      assertTrue(big.getMessage().contains("maxValueSize"), big.getMessage());
      assertThrows(InvalidArgumentException.class, () -> ks.delete((ByteBuffer) null));
      assertThrows(InvalidArgumentException.class, () -> ks.get(null, ByteBuffer.allocate(4)));
      assertThrows(InvalidArgumentException.class, () -> ks.get(ByteBuffer.wrap(b("k")), null));
      InvalidArgumentException readOnly =
          assertThrows(
              InvalidArgumentException.class,
              () -> ks.get(ByteBuffer.wrap(b("k")), ByteBuffer.allocate(4).asReadOnlyBuffer()));
      assertTrue(readOnly.getMessage().contains("read-only"), readOnly.getMessage());
      WriteBatch batch =
          new WriteBatch()
              .put(ks, ByteBuffer.wrap(b("good")), v)
              .put(ks, ByteBuffer.wrap(b("bad")), ByteBuffer.allocate(101));
      assertThrows(InvalidArgumentException.class, () -> db.write(batch));
      assertNull(ks.get(b("good")), "a refused batch wrote a put");
      assertEquals(0, db.stats().get("puts"));
      // The batch is reusable after clear, and after a refusal.
      db.write(batch.clear().put(ks, ByteBuffer.wrap(b("good")), v));
      assertArrayEquals(b("v"), ks.get(b("good")));
    }
    Basalt closed = Basalt.open(new MemStorage(3), ChangeFeedTest.tiny());
    Keyspace ks = closed.createKeyspace("k");
    closed.close();
    assertThrows(
        ClosedException.class, () -> ks.get(ByteBuffer.wrap(b("k")), ByteBuffer.allocate(4)));
    assertThrows(
        ClosedException.class, () -> ks.put(ByteBuffer.wrap(b("k")), ByteBuffer.allocate(4)));
  }

  @Test
  void aReusedBatchWritesOnlyItsNewOperations() {
    try (Basalt db = Basalt.open(new MemStorage(4), ChangeFeedTest.tiny())) {
      Keyspace ks = db.createKeyspace("k");
      WriteBatch batch = new WriteBatch();
      ByteBuffer k = ByteBuffer.allocateDirect(8), v = ByteBuffer.allocateDirect(300);
      for (int round = 0; round < 20; round++) {
        batch.clear();
        for (int i = 0; i < 10 + round; i++) {
          k.clear().putInt(round).putInt(i).flip();
          v.clear().limit(round * 10 + i).position(0); // growing values: the batch's array grows
          batch.put(ks, k, v);
        }
        assertEquals(10 + round, batch.size());
        db.write(batch);
        db.write(batch); // a batch may be written twice: the same keys, newer seqnos
      }
      long puts = 0;
      for (int round = 0; round < 20; round++) puts += 2L * (10 + round);
      assertEquals(puts, db.stats().get("puts"));
      for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 10 + round; i++) {
          byte[] key = ByteBuffer.allocate(8).putInt(round).putInt(i).array();
          assertEquals(round * 10 + i, ks.get(key).length);
        }
      }
    }
  }

  /**
   * A batch in a write (as on another thread) can be neither changed nor written again until it
   * returns.
   */
  @Test
  void aBatchBeingWrittenIsNeitherChangedNorWrittenAgain() {
    try (Basalt db = Basalt.open(new MemStorage(6), ChangeFeedTest.tiny())) {
      Keyspace ks = db.createKeyspace("k");
      WriteBatch batch = new WriteBatch().put(ks, b("a"), b("1"));
      assertTrue(batch.batch.beginWrite()); // what a write in progress holds
      assertThrows(InvalidArgumentException.class, () -> batch.put(ks, b("b"), b("2")));
      assertThrows(InvalidArgumentException.class, () -> batch.delete(ks, ByteBuffer.wrap(b("a"))));
      assertThrows(InvalidArgumentException.class, batch::clear);
      InvalidArgumentException twice =
          assertThrows(InvalidArgumentException.class, () -> db.write(batch));
      assertTrue(twice.getMessage().contains("one write at a time"), twice.getMessage());
      assertNull(ks.get(b("a")));
      assertEquals(1, batch.size());
      batch.batch.endWrite();
      db.write(batch.put(ks, b("b"), b("2")));
      assertArrayEquals(b("1"), ks.get(b("a")));
      assertArrayEquals(b("2"), ks.get(b("b")));
    }
  }

  /**
   * No call allocates on the calling thread once warm: gets served by the block cache and by the
   * write cache, single puts and batches of 16 puts from direct buffers (see {@link #main}). A call
   * is counted as allocating if the thread's allocated bytes grew across it; the odd call may (a
   * lock's queue node when a background thread holds it, the JIT's first runs), so the bound is 5%
   * of the calls, where an object made per call would be 100%. The tests' memory debug mode
   * allocates on every off-heap access, so the probe runs in a JVM of its own without it. The
   * byte[] get, measured the same way, allocates at every call (its result), which shows the
   * measure sees allocation.
   */
  @Test
  void buffersAllocateNothingPerCallOnTheCallingThread() throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!arg.startsWith("-Dbasalt.memory.debug")
          && !arg.startsWith("-agentlib")
          && !arg.startsWith("-javaagent")) {
        command.add(arg);
      }
    }
    command.addAll(
        List.of(
            "-Dbasalt.memory.debug=false",
            "-cp",
            System.getProperty("java.class.path"),
            ByteBufferApiTest.class.getName()));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), "the probe did not finish");
    assertEquals(0, p.exitValue(), out);
    String line =
        out.lines()
            .filter(l -> l.startsWith("allocating calls:"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no figures from the probe: " + out));
    String[] f = line.substring(line.indexOf(':') + 1).trim().split(" ");
    for (int i = 0; i < 4; i++) assertTrue(Double.parseDouble(f[i]) < 0.05, line);
    assertEquals(1.0, Double.parseDouble(f[4]), line);
  }

  /**
   * The allocation probe: prints the share of calls during which the calling thread allocated on
   * the heap: gets from the block cache, puts, gets from the write cache, batches of 16 puts
   * (buffers), then byte[] gets; three rounds after two of warm-up.
   */
  public static void main(String[] args) throws java.io.IOException {
    Path dir = java.nio.file.Files.createTempDirectory("basalt-alloc-probe");
    try {
      probe(dir);
    } finally {
      try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(dir)) {
        for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList())
          java.nio.file.Files.delete(f);
      }
    }
  }

  /**
   * The probe on a store in {@code dir}: real files, as a user's (the test storage copies what it
   * is given).
   */
  private static void probe(Path dir) {
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    int keys = 2_000, rounds = Integer.getInteger("rounds", 5);
    Options o =
        Options.defaults()
            .memoryQuota(256L << 20)
            .writeCacheSize(64L << 20)
            .blockCacheSize(64L << 20)
            .syncMode(SyncMode.NONE);
    try (Basalt db = Basalt.open(dir, o)) {
      Keyspace ks = db.createKeyspace("k");
      ByteBuffer k = ByteBuffer.allocateDirect(16),
          v = ByteBuffer.allocateDirect(100),
          out = ByteBuffer.allocate(128);
      WriteBatch batch = new WriteBatch();
      for (int i = 0; i < keys; i++) ks.put(key(k, i), v.clear());
      db.flush(); // the files hold them now; the block cache takes each block on its second read
      long[] allocating = new long[4];
      long calls = 0, batches = 0;
      for (int r = 0; r < rounds; r++) {
        boolean measured =
            r >= 2; // two rounds to warm up (caches, scratch arrays, the thread's batch)
        for (int i = 0; i < keys; i++) {
          long t = mx.getThreadAllocatedBytes(thread);
          check(ks.get(key(k, i), out.clear()));
          if (measured && mx.getThreadAllocatedBytes(thread) != t) allocating[0]++;
        }
        for (int i = 0; i < keys; i++) {
          key(k, i + keys);
          v.clear();
          long t = mx.getThreadAllocatedBytes(thread);
          ks.put(k, v);
          if (measured && mx.getThreadAllocatedBytes(thread) != t) allocating[1]++;
        }
        for (int i = 0; i < keys; i++) { // from the write cache
          long t = mx.getThreadAllocatedBytes(thread);
          check(ks.get(key(k, i + keys), out.clear()));
          if (measured && mx.getThreadAllocatedBytes(thread) != t) allocating[2]++;
        }
        for (int i = 0; i < keys / 16; i++) {
          long t = mx.getThreadAllocatedBytes(thread);
          batch.clear();
          for (int j = 0; j < 16; j++) batch.put(ks, key(k, i * 16 + j), v.clear());
          db.write(batch);
          if (measured && mx.getThreadAllocatedBytes(thread) != t) allocating[3]++;
        }
        if (measured) {
          calls += keys;
          batches += keys / 16;
        }
      }
      byte[][] arrays = new byte[keys][];
      for (int i = 0; i < keys; i++) {
        arrays[i] = new byte[16];
        key(k, i).get(arrays[i]);
      }
      int arrayAllocating = 0;
      for (int i = 0; i < keys; i++) {
        long t = mx.getThreadAllocatedBytes(thread);
        check(ks.get(arrays[i]).length);
        if (mx.getThreadAllocatedBytes(thread) != t) arrayAllocating++;
      }
      System.out.printf(
          java.util.Locale.ROOT,
          "allocating calls: %.4f %.4f %.4f %.4f %.4f%n",
          allocating[0] / (double) calls,
          allocating[1] / (double) calls,
          allocating[2] / (double) calls,
          allocating[3] / (double) batches,
          arrayAllocating / (double) keys);
    }
  }

  private static void check(int length) {
    if (length != 100) throw new AssertionError("a get returned " + length + " bytes, not 100");
  }

  static ByteBuffer key(ByteBuffer k, int i) {
    return k.clear().putLong(i).putLong(~i).flip();
  }
}
