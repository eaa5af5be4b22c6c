package io.basaltdb.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage contract against real files in a temporary directory, and what only FileStorage does.
 */
class FileStorageTest extends StorageContractTest {
  @TempDir Path dir;
  private int storages;

  @Override
  Storage storage() {
    return new FileStorage(dir.resolve("store" + storages++));
  }

  @Test
  void constructor_createsTheRootAndItsParents() {
    Path root = dir.resolve("a/b/c");
    FileStorage s = new FileStorage(root);
    assertTrue(Files.isDirectory(root));
    assertEquals(root.toAbsolutePath(), s.root());
    assertEquals(root.resolve("wal/1.log").toAbsolutePath().toString(), s.describe("wal/1.log"));
  }

  @Test
  void contents_landInTheFileOnDisk() throws IOException {
    FileStorage s = new FileStorage(dir);
    byte[] data = new byte[3 << 20];
    new Random(7).nextBytes(data);
    s.mkdirs("wal");
    try (StorageFile f = s.create("wal/1.log")) {
      f.write(0, ByteBuffer.wrap(data));
      f.sync();
      ByteBuffer back = ByteBuffer.allocate(data.length);
      assertEquals(data.length, f.read(0, back));
      assertArrayEquals(data, back.array());
    }
    assertArrayEquals(data, Files.readAllBytes(dir.resolve("wal/1.log")));
  }

  @Test
  void failures_nameTheOperationAndTheAbsolutePath() {
    FileStorage s = new FileStorage(dir);
    StorageException e = assertThrows(StorageException.class, () -> s.open("nope"));
    assertTrue(
        e.getMessage().startsWith("open of " + dir.toAbsolutePath().resolve("nope")),
        e.getMessage());
  }

  @Test
  void noSpaceLeftOnDevice_saysWhatToDo() {
    IOException enospc = new IOException("No space left on device");
    StorageException e =
        StorageErrors.failure(
            "write of 10 bytes at offset 0 to /x/wal/1.log", new IOException("wrapped", enospc));
    assertEquals(
        "write of 10 bytes at offset 0 to /x/wal/1.log failed: no space left on device; "
            + "free space, then reopen the store",
        e.getMessage());
    assertSame(enospc, e.getCause().getCause());
    StorageException other =
        StorageErrors.failure("sync of /x", new IOException("Input/output error"));
    assertTrue(
        other.getMessage().startsWith("sync of /x failed: ")
            && other.getMessage().contains("Input/output error"));
  }

  /** A FileStorageFile over a channel that moves at most {@code maxTransfer} bytes per call. */
  private FileStorageFile scripted(String name, int maxTransfer, ScriptedChannel[] channel)
      throws IOException {
    Path path = dir.resolve(name);
    channel[0] = new ScriptedChannel(path, maxTransfer);
    return new FileStorageFile(name, path, channel[0]);
  }

  @Test
  void partialWritesAndReads_areRepeatedUntilEveryByteMoved() throws IOException {
    ScriptedChannel[] channel = new ScriptedChannel[1];
    byte[] data = new byte[1000];
    new Random(5).nextBytes(data);
    try (FileStorageFile f = scripted("short-io", 7, channel)) {
      f.write(0, ByteBuffer.wrap(data));
      assertEquals(
          (data.length + 6) / 7, channel[0].writes, "the write loop went on after short writes");
      ByteBuffer back = ByteBuffer.allocate(data.length + 50);
      assertEquals(data.length, f.read(0, back), "reads loop to the end of the file, then stop");
      assertArrayEquals(data, Arrays.copyOf(back.array(), data.length));
    }
  }

  @Test
  void noSpaceFromTheChannel_saysWhatToDo_andNamesTheFile() throws IOException {
    ScriptedChannel[] channel = new ScriptedChannel[1];
    try (FileStorageFile f = scripted("full", 1 << 20, channel)) {
      channel[0].writeErrors.add(new IOException("No space left on device"));
      StorageException e =
          assertThrows(StorageException.class, () -> f.write(0, ByteBuffer.allocate(10)));
      assertEquals(
          "write of 10 bytes at offset 0 to "
              + dir.resolve("full")
              + " failed: no space left on device;"
              + " free space, then reopen the store",
          e.getMessage());
      f.write(0, ByteBuffer.allocate(10)); // the disk has room again
      assertEquals(10, f.size());
    }
  }

  @Test
  void failedSync_poisonsTheHandle_soNoLaterSyncClaimsDurability() throws IOException {
    ScriptedChannel[] channel = new ScriptedChannel[1];
    try (FileStorageFile f = scripted("eio", 1 << 20, channel)) {
      f.write(0, ByteBuffer.allocate(100));
      channel[0].forceErrors.add(new IOException("Input/output error"));
      StorageException first = assertThrows(StorageException.class, f::sync);
      assertTrue(first.getMessage().contains("Input/output error"), first.getMessage());
      // Linux may have dropped the failed pages and report the error once: a second fsync would
      // succeed.
      StorageException again = assertThrows(StorageException.class, f::sync);
      assertTrue(
          again.getMessage().contains("refused: an earlier sync of this handle failed")
              && again.getMessage().contains("reopen the store"),
          again.getMessage());
      assertSame(first, again.getCause());
    }
  }

  @Test
  void interruptedOperations_reopenTheFile_keepTheInterruptStatus_andLoseNothing()
      throws Exception {
    FileStorage s = new FileStorage(dir);
    try (StorageFile f = s.create("f")) {
      f.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}));
      ByteBuffer got = ByteBuffer.allocate(8);
      Thread.currentThread()
          .interrupt(); // the JDK closes the channel when an interrupted thread uses it
      try {
        assertEquals(8, f.read(0, got));
        assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt status is kept");
        f.write(8, ByteBuffer.wrap(new byte[] {9}));
        f.sync();
        assertTrue(Thread.currentThread().isInterrupted());
      } finally {
        Thread.interrupted();
      }
      assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, got.array());
      assertEquals(9, f.size(), "the other threads' and later uses see the reopened file");
      Thread other =
          new Thread(
              () -> {
                Thread.currentThread().interrupt();
                f.read(0, ByteBuffer.allocate(4)); // closes the channel under this thread too
              });
      other.start();
      other.join();
      ByteBuffer again = ByteBuffer.allocate(9);
      assertEquals(9, f.read(0, again));
      assertEquals(9, again.get(8));
    }
    StorageFile closed = s.open("f");
    closed.close();
    assertThrows(io.basaltdb.ClosedException.class, () -> closed.read(0, ByteBuffer.allocate(1)));
  }

  @Test
  void preallocate_usesTheNativeCalls_andFallsBackWhenTheyCannot() throws IOException {
    java.util.List<String> calls = new java.util.ArrayList<>();
    boolean[] supported = {true};
    io.basaltdb.spi.NativeFileCalls fake =
        new io.basaltdb.spi.NativeFileCalls() {
          @Override
          public String name() {
            return "fake";
          }

          @Override
          public boolean allocate(Path file, long length) throws IOException {
            calls.add(file.getFileName() + ":" + length);
            if (length == 666) throw new IOException("No space left on device");
            if (!supported[0]) return false;
            try (java.nio.channels.FileChannel ch =
                java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
              ch.write(
                  ByteBuffer.wrap(new byte[] {7}), length - 1); // marks that the provider did it
            }
            return true;
          }
        };
    FileStorage s = new FileStorage(dir, fake);
    try (StorageFile f = s.create("seg")) {
      f.preallocate(4096);
      assertEquals(java.util.List.of("seg:4096"), calls);
      assertEquals(7, Files.readAllBytes(dir.resolve("seg"))[4095]);
      supported[0] = false;
      f.preallocate(8192); // the file system cannot reserve: extend the size as before
      assertEquals(8192, f.size());
      assertEquals(0, Files.readAllBytes(dir.resolve("seg"))[8191]);
      StorageException e = assertThrows(StorageException.class, () -> f.preallocate(666));
      assertTrue(
          e.getMessage().contains("no space left on device") && e.getMessage().contains("seg"),
          e.getMessage());
    }
  }

  @Test
  void mkdirs_ofDirectoriesAlreadyThere_syncsTheirParents_inCaseTheirCreatorCrashedBeforeItDid()
      throws IOException {
    FileStorage storage = new FileStorage(dir.resolve("store"));
    // What a run that crashed between its mkdir and the parent's fsync leaves: entries not yet
    // durable.
    Files.createDirectories(dir.resolve("store/keyspaces/1"));
    long before = FileStorage.DIRECTORY_SYNCS.sum();
    storage.mkdirs("keyspaces/1");
    assertTrue(
        FileStorage.DIRECTORY_SYNCS.sum() - before >= 2,
        "mkdirs found the directories and returned without making their entries durable");
  }

  /**
   * The calls backups use: a durable hard link (or false where there can be none), unsynced
   * creation, read-only opens.
   */
  @Test
  void linksUnsyncedCreatesAndReadOnlyOpens() throws IOException {
    FileStorage a = new FileStorage(dir.resolve("a")), b = new FileStorage(dir.resolve("b"));
    a.mkdirs("d");
    StorageFile f = a.create("d/f");
    f.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
    f.sync();
    f.close();
    b.mkdirs("e");
    assertTrue(b.link(a, "d/f", "e/g"));
    assertTrue(Files.isSameFile(dir.resolve("a/d/f"), dir.resolve("b/e/g")));
    assertEquals(
        false, b.link(a, "d/f", "e/g"), "a name taken: no link, the caller copies and reports it");
    assertEquals(false, b.link(new MemStorage(1), "d/f", "e/h"), "no link across storage kinds");
    assertEquals(false, Files.exists(dir.resolve("b/e/h")));

    StorageFile u = b.createUnsynced("e/u");
    u.write(0, ByteBuffer.wrap(new byte[] {9}));
    u.sync();
    u.close();
    b.syncDirectory("e");
    assertEquals(1, b.size("e/u"));
    assertThrows(StorageException.class, () -> b.createUnsynced("e/u"), "an existing name");

    StorageFile r = b.openForReading("e/g");
    ByteBuffer got = ByteBuffer.allocate(3);
    assertEquals(3, r.read(0, got));
    assertArrayEquals(new byte[] {1, 2, 3}, got.array());
    assertThrows(
        java.nio.channels.NonWritableChannelException.class,
        () -> r.write(0, ByteBuffer.wrap(new byte[] {7})));
    r.close();
    assertThrows(StorageException.class, () -> b.openForReading("e/missing"));
  }

  /**
   * A file made for direct writes takes aligned writes from aligned direct buffers through O_DIRECT
   * where the file system allows (the test's directory is probed), and everything else through the
   * page cache: a heap buffer, an unaligned offset or length, an interrupted writer. It reads back
   * as written.
   */
  /**
   * Options.directWrites: a file created or reopened for writing stages each write's whole blocks
   * around the page cache, re-sending the start of its first block, and its partial last block
   * through it. An appender of odd-sized writes (a segment's, a table's, the WAL's) with reads of
   * what it wrote between them, and an overwrite in the middle after a reopen, read back every
   * byte; the file holds no padding; most bytes went direct.
   */
  @Test
  void directWritesStorage_stagesAppendsAroundThePageCache_andEveryByteReadsBack()
      throws Exception {
    FileStorage s = new FileStorage(dir, false, true, true);
    Random r = new Random(21);
    byte[] expected = new byte[3 << 20];
    r.nextBytes(expected);
    int at = 0;
    try (StorageFile f = s.create("seg")) {
      assertTrue(f instanceof DirectWriteFile, "ext4 takes O_DIRECT");
      while (at < expected.length) {
        int n = Math.min(expected.length - at, 1 + r.nextInt(r.nextBoolean() ? 300 : 200_000));
        f.write(at, ByteBuffer.wrap(expected, at, n));
        at += n;
        int from = r.nextInt(at), len = Math.min(at - from, 1 + r.nextInt(10_000));
        ByteBuffer back = ByteBuffer.allocate(len);
        f.read(from, back);
        assertArrayEquals(
            java.util.Arrays.copyOfRange(expected, from, from + len),
            back.array(),
            "read back below the tail at " + from);
      }
      f.sync();
      assertEquals(expected.length, f.size(), "no padding");
    }
    long[] bytes = s.directWriteBytes();
    assertTrue(bytes[0] > expected.length / 2, "most bytes went direct: " + bytes[0]);
    try (StorageFile f = s.open("seg")) { // a reopened file (a segment's tail resumed) too
      byte[] patch = new byte[70_001];
      r.nextBytes(patch);
      System.arraycopy(patch, 0, expected, 12_345, patch.length);
      f.write(12_345, ByteBuffer.wrap(patch));
    }
    assertArrayEquals(expected, Files.readAllBytes(dir.resolve("seg")));
    assertTrue(s.directWriteBytes()[0] > bytes[0], "the reopened file wrote direct too");
  }

  @Test
  void directWrites_bypassThePageCacheWhereAligned_andEverythingElseStillLands() throws Exception {
    FileStorage s = new FileStorage(dir);
    boolean directIo;
    Path probe = dir.resolve("probe");
    Files.write(probe, new byte[0]);
    try (java.nio.channels.FileChannel ch =
        java.nio.channels.FileChannel.open(
            probe,
            java.nio.file.StandardOpenOption.WRITE,
            com.sun.nio.file.ExtendedOpenOption.DIRECT)) {
      directIo = true;
    } catch (IOException | UnsupportedOperationException e) {
      directIo = false;
    }
    int a = Storage.DIRECT_ALIGNMENT;
    byte[] expected = new byte[8 * a + 100];
    new Random(11).nextBytes(expected);
    ByteBuffer aligned = ByteBuffer.allocateDirect(4 * a + a).alignedSlice(a).limit(4 * a).slice();
    try (StorageFile f = s.createUnsyncedDirect("d")) {
      assertEquals(
          directIo, f instanceof DirectWriteFile, "direct where the file system takes O_DIRECT");
      aligned.put(expected, 0, 4 * a).flip();
      f.write(0, aligned); // aligned: O_DIRECT
      assertEquals(0, aligned.remaining());
      f.write(4 * a, ByteBuffer.wrap(expected, 4 * a, a)); // a heap buffer: the page cache
      aligned.clear();
      aligned.put(expected, 5 * a, a + 10).flip();
      f.write(5 * a, aligned); // an unaligned length: the page cache
      aligned.clear();
      aligned.put(expected, 6 * a, 2 * a).flip();
      Thread.currentThread()
          .interrupt(); // the JDK closes the direct channel: the rest goes through the other
      try {
        f.write(6 * a, aligned);
        assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status is kept");
      } finally {
        Thread.interrupted();
      }
      f.write(8 * a, ByteBuffer.wrap(expected, 8 * a, 100)); // the unaligned tail
      aligned.clear();
      aligned.put(expected, 0, a).flip();
      f.write(0, aligned); // after the interrupt: the page cache, same bytes again
      f.sync();
      assertEquals(expected.length, f.size());
      ByteBuffer back = ByteBuffer.allocate(expected.length);
      assertEquals(expected.length, f.read(0, back));
      assertArrayEquals(expected, back.array());
    }
    assertArrayEquals(expected, Files.readAllBytes(dir.resolve("d")));
    assertThrows(StorageException.class, () -> s.createUnsyncedDirect("d"), "an existing name");
  }

  /**
   * With direct reads, every read bypasses the page cache through an O_DIRECT channel, widened to
   * whole blocks: any offset and length reads what was written, including bytes written through the
   * page cache a moment before and reads across the end of the file.
   */
  @Test
  void directReads_readWhatWasWritten_atAnyOffsetAndLength() throws Exception {
    FileStorage s = new FileStorage(dir.resolve("direct"), true);
    assertTrue(s.directReads());
    byte[] data = new byte[300_000];
    new Random(3).nextBytes(data);
    try (StorageFile f = s.create("f")) {
      assertTrue(f.direct());
      f.write(0, ByteBuffer.wrap(data, 0, 200_000)); // not synced: still in the page cache
      f.write(200_000, ByteBuffer.wrap(data, 200_000, 100_000));
      Random r = new Random(4);
      for (int i = 0; i < 300; i++) {
        int at = r.nextInt(data.length), len = 1 + r.nextInt(i % 10 == 0 ? 2_000_000 : 10_000);
        ByteBuffer dst =
            r.nextBoolean() ? ByteBuffer.allocate(len + 3) : ByteBuffer.allocateDirect(len + 3);
        dst.position(3);
        int expected = Math.min(len, data.length - at);
        assertEquals(expected, f.read(at, dst), "read of " + len + " at " + at);
        assertEquals(3 + expected, dst.position());
        byte[] got = new byte[expected];
        dst.get(3, got);
        assertArrayEquals(Arrays.copyOfRange(data, at, at + expected), got);
      }
      assertEquals(0, f.read(data.length, ByteBuffer.allocate(10)), "at the end");
      assertEquals(0, f.read(data.length + 10_000, ByteBuffer.allocate(10)), "past the end");
      Thread.currentThread().interrupt(); // the JDK closes the direct channel: the read reopens it
      try {
        ByteBuffer dst = ByteBuffer.allocate(100);
        assertEquals(100, f.read(5, dst));
        assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status is kept");
        assertArrayEquals(Arrays.copyOfRange(data, 5, 105), dst.array());
      } finally {
        Thread.interrupted();
      }
    }
    StorageFile reread = s.openForReading("f");
    assertTrue(reread.direct());
    ByteBuffer all = ByteBuffer.allocate(data.length);
    assertEquals(data.length, reread.read(0, all));
    assertArrayEquals(data, all.array());
    reread.close();
    assertThrows(io.basaltdb.ClosedException.class, () -> reread.read(0, ByteBuffer.allocate(1)));
    assertEquals(false, new FileStorage(dir.resolve("plain")).directReads());
  }
}
