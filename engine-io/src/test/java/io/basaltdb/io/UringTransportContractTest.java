package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.spi.ReadTransport;
import io.netty.channel.uring.IoUring;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The io_uring transport's ring against the contract, and what only it does (its own descriptors);
 * its reads on submitting threads are {@link UringInlineTransportContractTest}'s.
 */
class UringTransportContractTest extends ReadTransportContract {
  @BeforeEach
  void needsIoUring() {
    assumeTrue(
        IoUring.isAvailable(), () -> "io_uring is not available: " + IoUring.unavailabilityCause());
  }

  @Override
  ReadTransport transport(int queueDepth) {
    return UringReadTransport.open(queueDepth, buffers, false);
  }

  @Test
  void descriptorsOfDeletedFiles_areClosed_soTheirSpaceIsFreed() throws Exception {
    try (UringReadTransport t = UringReadTransport.open(4, buffers, false)) {
      ReadTransport.Read r = read(file, 0, 100, false, 0);
      t.submit(List.of(r));
      assertAgrees(r, 0);
      ReadTransport.Read again = read(file, 100, 100, true, 0);
      t.submit(List.of(again));
      assertAgrees(again, 0);
      assertEquals(1, t.openFiles(), "one descriptor per file, kept for its later reads");
      // the store's own direct channel and the transport's descriptor are O_DIRECT with
      // directReads; none without
      assertEquals(directReads() ? 2 : 0, directDescriptors(dir.resolve("data")));
      t.sweepNow();
      assertEquals(1, t.openFiles(), "a file still there keeps its descriptor");
      Files.delete(dir.resolve("data"));
      t.sweepNow();
      assertEquals(0, t.openFiles(), "a deleted file's descriptor is closed");
    }
  }

  /**
   * Descriptors of this process open on {@code file} with O_DIRECT (040000 in /proc's octal flags,
   * x86-64).
   */
  static long directDescriptors(java.nio.file.Path file) throws java.io.IOException {
    long n = 0;
    try (java.util.stream.Stream<java.nio.file.Path> fds =
        Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
      for (java.nio.file.Path fd : fds.toList()) {
        try {
          if (!Files.readSymbolicLink(fd).equals(file.toAbsolutePath())) continue;
          for (String line :
              Files.readAllLines(
                  java.nio.file.Path.of("/proc/self/fdinfo", fd.getFileName().toString()))) {
            if (line.startsWith("flags:")
                && (Long.parseLong(line.substring(6).trim(), 8) & 040000) != 0) n++;
          }
        } catch (java.io.IOException gone) {
          // closed meanwhile
        }
      }
    }
    return n;
  }

  @Test
  void readsBeyondThePooledBuffers_waitForOne_ratherThanTakingBuffersOutsideThePool() {
    try (UringReadTransport t =
        UringReadTransport.open(32, buffers, false)) { // 32 slots, 8 pooled buffers
      java.util.Random rnd = new java.util.Random(3);
      List<ReadTransport.Read> reads = new java.util.ArrayList<>();
      for (int i = 0; i < 100; i++)
        reads.add(read(file, rnd.nextInt(FILE_SIZE - 8192), 1 + rnd.nextInt(8192), false, 0));
      t.submit(reads);
      for (ReadTransport.Read r : reads) assertAgrees(r, 0);
      assertEquals(0, buffers.overflows(), "every read staged through one of the pool's buffers");
    }
  }

  @Test
  void provider_isFoundByTheEngine_andRefusesBadDepths() {
    ReadTransport.Provider p =
        java.util.ServiceLoader.load(ReadTransport.Provider.class).stream()
            .map(java.util.ServiceLoader.Provider::get)
            .filter(x -> x instanceof UringReadTransportProvider)
            .findFirst()
            .orElseThrow();
    assertTrue(p.priority() > 0, "above the built-in transport");
    try (ReadTransport t = p.create(32, buffers)) {
      assertEquals("io_uring", t.name());
      ReadTransport.Read r = new ReadTransport.Read(file, 7, ByteBuffer.allocate(9));
      t.submit(List.of(r));
      assertEquals(9, r.result().join());
    }
    org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> p.create(0, buffers));
  }
}
