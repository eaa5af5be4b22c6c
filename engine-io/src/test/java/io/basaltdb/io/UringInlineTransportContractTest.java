package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.spi.ReadTransport;
import io.netty.channel.uring.IoUring;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import jnr.ffi.LibraryLoader;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The io_uring transport with reads tried on the submitting thread first ({@code preadv2(RWF_NOWAIT)}),
 * its default: the contract, where each kind of read is made, and the descriptors those reads use.
 */
class UringInlineTransportContractTest extends ReadTransportContract {
  /** What the test needs of the C library to drop a file from the page cache. */
  public interface TestLibC {
    int open(String path, int flags);

    int posix_fadvise(int fd, long offset, long length, int advice);

    int close(int fd);
  }

  private static final int POSIX_FADV_DONTNEED = 4;

  @BeforeEach
  void needsIoUring() {
    assumeTrue(IoUring.isAvailable(), () -> "io_uring is not available: " + IoUring.unavailabilityCause());
  }

  @Override
  ReadTransport transport(int queueDepth) {
    return UringReadTransport.open(queueDepth, buffers, true);
  }

  @Test
  void cachedReads_areMadeOnTheSubmittingThread_readsThatNeedTheDisk_onTheRing() throws Exception {
    Path data = dir.resolve("data");
    assumeFalse("tmpfs".equals(Files.getFileStore(data).type()), "tmpfs keeps every page in memory");
    try (UringReadTransport t = UringReadTransport.open(4, buffers, true)) {
      dropFromPageCache(data); // the file was synced when written, so its pages are clean and can go
      ReadTransport.Read cold = read(file, 1 << 20, 4096, false, 0);
      var coldBy = cold.result().handle((n, e) -> Thread.currentThread());
      t.submit(List.of(cold));
      assertAgrees(cold, 0);
      assertTrue(coldBy.join().getName().startsWith("basalt-uring-"),
          "a read the page cache does not hold goes to the ring, was made on " + coldBy.join().getName());

      ReadTransport.Read warm = read(file, 1 << 20, 4096, false, 0); // the ring's read brought it in
      var warmBy = warm.result().handle((n, e) -> Thread.currentThread());
      t.submit(List.of(warm));
      assertAgrees(warm, 0);
      assertSame(Thread.currentThread(), warmBy.join(), "a cached read is made on the thread that submits it");
      assertEquals(1, t.openFiles(), "the ring kept its own descriptor for the cold read");
      assertEquals(1, t.sharedFiles(), "and the submitting threads one, shared");
    }
  }

  @Test
  void sharedDescriptors_closeWhenTheirFileIsDeleted_andAtClose() throws Exception {
    Path data = dir.resolve("data");
    long before = descriptors(data); // the store's own channel
    try (UringReadTransport t = UringReadTransport.open(4, buffers, true)) {
      for (int i = 0; i < 3; i++) {
        ReadTransport.Read r = read(file, 100 * i, 100, false, 0);
        t.submit(List.of(r));
        assertAgrees(r, 0);
      }
      assertEquals(1, t.sharedFiles(), "one descriptor per file, kept for its later reads");
      assertEquals(before + 1, descriptors(data));
      t.sweepNow();
      assertEquals(1, t.sharedFiles(), "a file still there keeps its descriptor");
      Files.delete(data);
      t.sweepNow();
      assertEquals(0, t.sharedFiles(), "a deleted file's descriptor is dropped");
      assertEquals(before, descriptors(data), "and closed, so its space can be freed");
    }
    file.close();
    writeTheFile();
    long again = descriptors(data);
    UringReadTransport t = UringReadTransport.open(4, buffers, true);
    ReadTransport.Read r = read(file, 0, 100, false, 0);
    t.submit(List.of(r));
    assertAgrees(r, 0);
    assertEquals(again + 1, descriptors(data));
    t.close();
    assertEquals(again, descriptors(data), "close closes the shared descriptors");
    ReadTransport.Read late = read(file, 0, 100, false, 0);
    t.submit(List.of(late));
    assertTrue(late.result().isCompletedExceptionally(), "a read after close is refused, not made");
  }

  private static void dropFromPageCache(Path file) {
    TestLibC libc = LibraryLoader.create(TestLibC.class).load("c");
    int fd = libc.open(file.toAbsolutePath().toString(), 0);
    assertTrue(fd >= 0, "open " + file);
    try {
      assertEquals(0, libc.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
    } finally {
      libc.close(fd);
    }
  }

  /** Descriptors of this process open on {@code file}, deleted or not. */
  private static long descriptors(Path file) throws java.io.IOException {
    long n = 0;
    String name = file.toAbsolutePath().toString();
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : fds.toList()) {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          if (target.equals(name) || target.equals(name + " (deleted)")) n++;
        } catch (java.io.IOException gone) {
          // closed meanwhile
        }
      }
    }
    return n;
  }
}
