package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.memory.AlignedBuffers;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.spi.ReadTarget;
import io.basaltdb.spi.ReadTransport;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every {@link ReadTransport} does, run against each (the subclasses): reads agree with the
 * file, whatever the buffer (heap or direct, at an offset, larger than a block); a batch's reads
 * from many threads at once; fewer bytes at the end of the file; a failed read fails alone, naming
 * its file; close waits for the reads taken and refuses later ones.
 */
@org.junit.jupiter.api.Timeout(60) // a read that never completes fails its test, not the build
abstract class ReadTransportContract {
  static final int FILE_SIZE = 3 << 20;

  @TempDir Path dir;
  byte[] content;
  FileStorage storage;
  StorageFile file;

  /**
   * The store's buffers, small enough that 32 reads in flight overflow it: every one must come
   * back.
   */
  AlignedBuffers buffers = new AlignedBuffers(8 * (12 << 10), 12 << 10);

  /** A transport keeping up to {@code queueDepth} reads in flight. */
  abstract ReadTransport transport(int queueDepth);

  /** Whether the file is read around the page cache (the store's {@code directReads}). */
  boolean directReads() {
    return false;
  }

  @BeforeEach
  void writeTheFile() {
    content = new byte[FILE_SIZE];
    new Random(42).nextBytes(content);
    storage = new FileStorage(dir, directReads());
    storage.useReadBuffers(buffers);
    try (StorageFile f = storage.create("data")) {
      f.write(0, ByteBuffer.wrap(content));
      f.sync();
    }
    file = storage.openForReading("data");
    assertEquals(directReads(), file.direct());
  }

  @AfterEach
  void closeTheFile() {
    file.close();
    assertEquals(0, buffers.taken(), "every aligned buffer taken for a read was given back");
    buffers.close();
  }

  /**
   * A read of {@code length} bytes at {@code position} into a heap or direct buffer, {@code pad}
   * bytes in.
   */
  static ReadTransport.Read read(
      ReadTarget target, long position, int length, boolean direct, int pad) {
    ByteBuffer b =
        direct ? ByteBuffer.allocateDirect(pad + length) : ByteBuffer.allocate(pad + length);
    b.position(pad);
    return new ReadTransport.Read(target, position, b);
  }

  /** Checks a completed read against the file: its count, its bytes, and the buffer's position. */
  void assertAgrees(ReadTransport.Read r, int pad) {
    int asked = r.dst().limit() - pad;
    int expected = (int) Math.max(0, Math.min(asked, FILE_SIZE - r.position()));
    assertEquals(expected, r.result().join(), "bytes read at " + r.position());
    assertEquals(
        pad + expected, r.dst().position(), "the buffer's position moves past the bytes read");
    byte[] got = new byte[expected];
    r.dst().get(pad, got);
    assertArrayEquals(
        Arrays.copyOfRange(content, (int) r.position(), (int) r.position() + expected), got);
  }

  @Test
  void readsAgreeWithTheFile_heapOrDirect_smallOrLarge() {
    Random rnd = new Random(1);
    try (ReadTransport t = transport(8)) {
      List<ReadTransport.Read> reads = new ArrayList<>();
      int[] pads = new int[100];
      for (int i = 0; i < pads.length; i++) {
        int length =
            i % 10 == 0
                ? 100_000 + rnd.nextInt(200_000)
                : 1 + rnd.nextInt(8192); // some past a bounce buffer
        pads[i] = rnd.nextInt(3) * 7;
        reads.add(read(file, rnd.nextInt(FILE_SIZE - length), length, i % 3 == 0, pads[i]));
      }
      t.submit(reads); // 100 reads through a queue of 8
      for (int i = 0; i < reads.size(); i++) assertAgrees(reads.get(i), pads[i]);
      ReadTransport.Read empty = read(file, 5, 0, false, 0);
      t.submit(List.of(empty));
      assertEquals(0, empty.result().join());
    }
  }

  @Test
  void manyThreadsSubmitAtOnce_everyReadRight() throws Exception {
    try (ReadTransport t = transport(32)) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<?>> done = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        for (int th = 0; th < 4; th++) {
          long seed = th;
          done.add(
              pool.submit(
                  () -> {
                    start.await();
                    Random rnd = new Random(seed);
                    for (int batch = 0; batch < 40; batch++) {
                      List<ReadTransport.Read> reads = new ArrayList<>();
                      for (int i = 0; i < 32; i++)
                        reads.add(
                            read(
                                file,
                                (long) rnd.nextInt(FILE_SIZE / 4096) * 4096,
                                4096,
                                rnd.nextBoolean(),
                                0));
                      t.submit(reads);
                      for (ReadTransport.Read r : reads) assertAgrees(r, 0);
                    }
                    return null;
                  }));
        }
        start.countDown();
        for (Future<?> f : done) f.get(60, TimeUnit.SECONDS);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void atTheEndOfTheFile_fewerBytesOrNone() {
    try (ReadTransport t = transport(4)) {
      List<ReadTransport.Read> reads =
          List.of(
              read(file, FILE_SIZE - 1000, 4096, false, 0),
              read(file, FILE_SIZE - 1000, 4096, true, 3),
              read(file, FILE_SIZE, 100, false, 0),
              read(file, FILE_SIZE + 5000, 100, true, 0));
      t.submit(reads);
      assertEquals(1000, reads.get(0).result().join());
      assertEquals(1000, reads.get(1).result().join());
      assertEquals(0, reads.get(2).result().join());
      assertEquals(0, reads.get(3).result().join());
      assertAgrees(reads.get(0), 0);
      assertAgrees(reads.get(1), 3);
    }
  }

  /** A target read through a channel of its own, as engine-io's transport reads it: by its path. */
  static ReadTarget pathTarget(Path path) {
    return new ReadTarget() {
      @Override
      public int read(long position, ByteBuffer dst) {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(path)) {
          int total = 0;
          while (dst.hasRemaining()) {
            int n = ch.read(dst, position + total);
            if (n < 0) break;
            total += n;
          }
          return total;
        } catch (java.io.IOException e) {
          throw new StorageException("read of " + path + " failed: " + e.getMessage(), e);
        }
      }

      @Override
      public Path path() {
        return path;
      }
    };
  }

  @Test
  void aFailedRead_failsAlone_namingItsFile() throws Exception {
    Path missing = dir.resolve("missing");
    Path directory = Files.createDirectories(dir.resolve("a-directory"));
    try (ReadTransport t = transport(4)) {
      List<ReadTransport.Read> reads = new ArrayList<>();
      for (int i = 0; i < 6; i++) reads.add(read(file, i * 10_000L, 1000, i % 2 == 0, 0));
      reads.add(2, read(pathTarget(missing), 0, 100, false, 0));
      reads.add(5, read(pathTarget(directory), 0, 100, true, 0));
      t.submit(reads);
      for (int i = 0; i < reads.size(); i++) {
        ReadTransport.Read r = reads.get(i);
        if (i == 2 || i == 5) {
          CompletionException e = assertThrows(CompletionException.class, () -> r.result().join());
          assertInstanceOf(StorageException.class, e.getCause());
          Path named = i == 2 ? missing : directory;
          assertTrue(
              e.getCause().getMessage().contains(named.toString()), e.getCause().getMessage());
        } else {
          assertAgrees(r, 0);
        }
      }
    }
  }

  @Test
  void close_waitsForTheReadsTaken_andRefusesLaterOnes() throws Exception {
    ReadTransport t = transport(4);
    List<ReadTransport.Read> reads = new ArrayList<>();
    Random rnd = new Random(3);
    for (int i = 0; i < 500; i++)
      reads.add(read(file, rnd.nextInt(FILE_SIZE - 65536), 65536, i % 2 == 0, 0));
    t.submit(reads);
    Thread closer = new Thread(t::close);
    closer.start(); // while most of the 500 are still queued
    closer.join(30_000);
    assertTrue(!closer.isAlive(), "close returned");
    for (ReadTransport.Read r : reads)
      assertAgrees(r, 0); // all done when close returned: join does not wait
    ReadTransport.Read late = read(file, 0, 10, false, 0);
    t.submit(List.of(late));
    CompletionException e = assertThrows(CompletionException.class, () -> late.result().join());
    assertInstanceOf(ClosedException.class, e.getCause());
    t.close(); // a second close does nothing
  }
}
