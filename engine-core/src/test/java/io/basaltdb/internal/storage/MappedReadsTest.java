package io.basaltdb.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Buffered reads through a memory mapping of the file ({@code Options.mappedReads}): the same bytes
 * and the same short reads at the end as {@code pread}, a file grown or truncated under its
 * mapping, a cold file read another way, and a close racing readers, which must end in {@link
 * ClosedException}, never in a read of unmapped memory.
 */
class MappedReadsTest {
  @TempDir Path dir;

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static FileStorageFile written(FileStorage s, String name, byte[] data) {
    FileStorageFile f = (FileStorageFile) s.create(name);
    f.write(0, ByteBuffer.wrap(data));
    return f;
  }

  /** The bytes a read of {@code len} at {@code pos} returns, as many as it read. */
  private static byte[] read(StorageFile f, long pos, int len) {
    ByteBuffer b = ByteBuffer.allocate(len);
    int n = f.read(pos, b);
    assertEquals(n, b.position(), "a read's count and its buffer's position agree");
    return Arrays.copyOf(b.array(), n);
  }

  @Test
  void mappedReads_returnWhatPreadReturns_atAnyOffset_includingShortReadsAtTheEnd() {
    byte[] data = random(300_000, 1);
    try (FileStorageFile mapped =
            written(new FileStorage(dir.resolve("m"), false, true), "f", data);
        FileStorageFile plain =
            written(new FileStorage(dir.resolve("p"), false, false), "f", data)) {
      Random r = new Random(2);
      for (int i = 0; i < 2_000; i++) {
        long pos = r.nextInt(data.length + 100);
        int len = 1 + r.nextInt(i % 10 == 0 ? 70_000 : 5_000);
        byte[] want =
            Arrays.copyOfRange(
                data, (int) Math.min(pos, data.length), (int) Math.min(pos + len, data.length));
        assertArrayEquals(want, read(mapped, pos, len), "mapped read at " + pos + " of " + len);
        assertArrayEquals(want, read(plain, pos, len), "pread at " + pos + " of " + len);
      }
      assertTrue(
          mapped.mappedReads() > 1_500,
          "most reads came from the mapping: " + mapped.mappedReads());
      assertEquals(0, plain.mappedReads(), "mappedReads(false) never maps");
      ByteBuffer into = ByteBuffer.allocate(100);
      into.position(10);
      assertEquals(
          90, mapped.readInPlace(5_000, into), "in place: from the buffer's position to its limit");
      assertArrayEquals(
          Arrays.copyOfRange(data, 5_000, 5_090), Arrays.copyOfRange(into.array(), 10, 100));
      assertEquals(
          -1,
          plain.readInPlace(5_000, ByteBuffer.allocate(100)),
          "a file that does not map reads nothing in place");
    }
  }

  @Test
  void aFileGrownPastItsMapping_orTruncatedUnderIt_readsItsCurrentBytes() {
    FileStorage s = new FileStorage(dir, false, true);
    byte[] first = random(64 << 10, 3);
    try (FileStorageFile f = written(s, "f", first)) {
      assertArrayEquals(Arrays.copyOfRange(first, 100, 4_196), read(f, 100, 4_096)); // maps 64 KiB
      long before = f.mappedReads();
      byte[] more = random(3 << 20, 4);
      f.write(first.length, ByteBuffer.wrap(more)); // grows far past the mapping: mapped again
      assertArrayEquals(
          Arrays.copyOfRange(more, (2 << 20), (2 << 20) + 8_192),
          read(f, first.length + (2 << 20), 8_192));
      assertEquals(
          before + 1, f.mappedReads(), "the grown file is mapped again and read from the mapping");
      f.write(
          10, ByteBuffer.wrap(new byte[] {1, 2, 3})); // a write below the mapping shows through it
      assertArrayEquals(new byte[] {1, 2, 3}, read(f, 10, 3));
      f.truncate(50_000);
      assertEquals(0, read(f, 60_000, 100).length, "past the new end: nothing, as pread");
      assertArrayEquals(
          Arrays.copyOfRange(first, 49_000, 50_000),
          read(f, 49_000, 4_096),
          "a short read at the new end");
    }
  }

  @Test
  void aColdFile_isReadWithPread_andItsBytesAreTheSame() {
    byte[] data = random(100_000, 5);
    try (FileStorageFile f = written(new FileStorage(dir, false, true), "f", data)) {
      assertArrayEquals(Arrays.copyOfRange(data, 0, 4_096), read(f, 0, 4_096));
      for (int i = 0; i < FileStorageFile.WINDOW; i++)
        f.judge(i <= FileStorageFile.SLOW_PER_WINDOW); // one too many slow copies
      assertEquals(
          1,
          f.coldSpells(),
          "a window with more than " + FileStorageFile.SLOW_PER_WINDOW + " slow copies: cold");
      long mappedBefore = f.mappedReads();
      assertEquals(
          -1, f.readInPlace(0, ByteBuffer.allocate(4_096)), "a cold file reads nothing in place");
      assertArrayEquals(
          Arrays.copyOfRange(data, 8_000, 12_096), read(f, 8_000, 4_096), "and a read uses pread");
      assertEquals(mappedBefore, f.mappedReads(), "not through the mapping");
    }
    try (FileStorageFile g = written(new FileStorage(dir.resolve("g"), false, true), "g", data)) {
      for (int i = 0; i < FileStorageFile.WINDOW; i++)
        g.judge(i < FileStorageFile.SLOW_PER_WINDOW); // a descheduled copy now and then
      assertEquals(0, g.coldSpells(), "a few slow copies in a window leave the file warm");
      assertEquals(4_096, g.readInPlace(0, ByteBuffer.allocate(4_096)));
    }
  }

  @Test
  void aCloseRacingReaders_endsEachReadInItsBytesOrClosedException() throws Exception {
    byte[] data = random(1 << 20, 6);
    for (int round = 0; round < 20; round++) {
      FileStorageFile f =
          written(new FileStorage(dir.resolve("r" + round), false, true), "f", data);
      CountDownLatch started = new CountDownLatch(3);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> readers = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        long seed = round * 10L + t;
        Thread th =
            new Thread(
                () -> {
                  Random r = new Random(seed);
                  started.countDown();
                  try {
                    while (true) {
                      int pos = r.nextInt(data.length - 8_192);
                      ByteBuffer b = ByteBuffer.allocate(8_192);
                      boolean inPlace = r.nextBoolean();
                      int n = inPlace ? f.readInPlace(pos, b) : f.read(pos, b);
                      if (n == -1 && inPlace) continue;
                      if (n != 8_192 || !Arrays.equals(b.array(), 0, n, data, pos, pos + n)) {
                        throw new AssertionError(
                            "read at " + pos + " returned " + n + " bytes, or the wrong ones");
                      }
                    }
                  } catch (ClosedException expected) {
                    // the close won
                  } catch (Throwable e) {
                    failure.set(e);
                  }
                });
        th.start();
        readers.add(th);
      }
      started.await();
      Thread.sleep(2);
      f.close();
      for (Thread th : readers) th.join(10_000);
      if (failure.get() != null) throw new AssertionError("round " + round, failure.get());
      assertThrows(ClosedException.class, () -> f.read(0, ByteBuffer.allocate(10)));
      assertThrows(ClosedException.class, () -> f.readInPlace(0, ByteBuffer.allocate(10)));
    }
  }

  @Test
  void aTruncateRacingReaders_waitsForTheirCopies_andLaterReadsSeeTheNewEnd() throws Exception {
    byte[] data = random(4 << 20, 7);
    for (int round = 0; round < 10; round++) {
      FileStorageFile f =
          written(new FileStorage(dir.resolve("t" + round), false, true), "f", data);
      assertArrayEquals(
          Arrays.copyOfRange(data, 3 << 20, (3 << 20) + 100), read(f, 3 << 20, 100)); // mapped
      AtomicReference<Throwable> failure = new AtomicReference<>();
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      List<Thread> readers = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        Thread th =
            new Thread(
                () -> {
                  Random r = new Random();
                  try {
                    while (!stop.get()) {
                      int pos = (3 << 20) + r.nextInt(1 << 19);
                      byte[] got = read(f, pos, 8_192);
                      if (got.length != 0
                          && (got.length != 8_192
                              || !Arrays.equals(got, 0, 8_192, data, pos, pos + 8_192))) {
                        throw new AssertionError(
                            "read at "
                                + pos
                                + " returned "
                                + got.length
                                + " bytes, or the wrong ones");
                      }
                    }
                  } catch (Throwable e) {
                    failure.set(e);
                  }
                });
        th.start();
        readers.add(th);
      }
      Thread.sleep(2);
      f.truncate(1 << 20); // the readers' pages go: a copy still in them would fault
      Thread.sleep(2);
      stop.set(true);
      for (Thread th : readers) th.join(10_000);
      if (failure.get() != null) throw new AssertionError("round " + round, failure.get());
      assertEquals(0, read(f, 3 << 20, 100).length, "past the new end: nothing");
      assertArrayEquals(
          Arrays.copyOfRange(data, 1_000, 2_000), read(f, 1_000, 1_000), "below it: the bytes");
      f.close();
    }
  }

  @Test
  void anInterruptedFirstRead_stillMapsTheFile_andKeepsTheInterrupt() {
    byte[] data = random(200_000, 8);
    try (FileStorageFile f = written(new FileStorage(dir, false, true), "f", data)) {
      Thread.currentThread().interrupt();
      try {
        assertArrayEquals(Arrays.copyOfRange(data, 5_000, 9_096), read(f, 5_000, 4_096));
      } finally {
        assertTrue(Thread.interrupted(), "the caller's interrupt status is kept");
      }
      long before = f.mappedReads();
      assertArrayEquals(Arrays.copyOfRange(data, 50_000, 54_096), read(f, 50_000, 4_096));
      assertEquals(before + 1, f.mappedReads(), "the interrupt did not turn mapped reads off");
      assertEquals(
          0, read(f, 1L << 40, 100).length, "a read far past the end reads nothing, as pread");
    }
  }
}
