package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Options#directWrites} as the kernel sees it: the store's open files are asked for their
 * flags ({@code /proc/self/fdinfo}). Segments and tables are open with O_DIRECT beside their
 * ordinary descriptor; under {@link SyncMode#SYNC} the WAL is open with O_DSYNC (a write and its
 * sync in one call), and without direct writes nothing is. What was written reads back after a
 * reopen.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class DirectWritesTest {
  /** Octal open flags of Linux x86-64 and arm64 (asm-generic). */
  static final int O_DIRECT_X86 = 040000, O_DIRECT_ARM = 0200000, O_DSYNC = 010000;

  @TempDir Path dir;

  /** File name suffix to the union of the open flags of the descriptors open on such files. */
  private Map<String, Integer> openFlags() throws Exception {
    Map<String, Integer> out = new HashMap<>();
    Path root = dir.toRealPath();
    try (var fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        Path target;
        try {
          target = Files.readSymbolicLink(fd);
        } catch (Exception gone) {
          continue; // closed meanwhile
        }
        if (!target.startsWith(root)) continue;
        String name = target.getFileName().toString();
        String suffix = name.substring(name.lastIndexOf('.') + 1);
        int flags = 0;
        try {
          for (String line :
              Files.readAllLines(Path.of("/proc/self/fdinfo", fd.getFileName().toString())))
            if (line.startsWith("flags:")) flags = Integer.parseInt(line.substring(6).trim(), 8);
        } catch (Exception gone) {
          continue;
        }
        out.merge(suffix, flags, (a, b) -> a | b);
      }
    }
    return out;
  }

  private static boolean direct(int flags) {
    return (flags & (isArm() ? O_DIRECT_ARM : O_DIRECT_X86)) != 0;
  }

  private static boolean isArm() {
    return System.getProperty("os.arch").contains("aarch64");
  }

  static byte[] value(int i) {
    byte[] v = new byte[1000];
    new java.util.Random(i).nextBytes(v);
    return v;
  }

  /**
   * A store whose directory refuses the O_DIRECT probe write is refused at the open with the
   * option's name, having written nothing. (This kernel's tmpfs takes O_DIRECT, so the probe is
   * made to fail here by a directory where it would create its file.)
   */
  @Test
  void aDirectoryRefusingTheDirectWriteProbe_isRefusedAtTheOpen_havingWrittenNothing()
      throws Exception {
    Path db = dir.resolve("refused");
    Files.createDirectories(db.resolve(".direct-write-probe"));
    InvalidArgumentException e =
        org.junit.jupiter.api.Assertions.assertThrows(
            InvalidArgumentException.class,
            () -> Basalt.open(db, Options.defaults().directWrites(true)));
    assertTrue(e.getMessage().startsWith("directWrites: the file system of"), e.getMessage());
    try (var files = Files.list(db)) {
      assertEquals(0, files.count(), "nothing written, the probe gone");
    }
    try (Basalt ok = Basalt.open(db, Options.defaults())) { // without the option it opens
      ok.keyspace("default").put("k".getBytes(), "v".getBytes());
    }
  }

  @Test
  void directWrites_openSegmentsAndTablesWithODirect_andASyncWalWithODsync() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.isDirectory(Path.of("/proc/self/fdinfo")), "Linux only");
    Options o =
        Options.defaults()
            .memoryQuota(64L << 20)
            .writeCacheSize(1L << 20)
            .segmentSize(1L << 20)
            .syncMode(SyncMode.SYNC)
            .directWrites(true);
    try (Basalt db = Basalt.open(dir.resolve("db"), o)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 3000; i++) ks.put(("key-" + i).getBytes(), value(i));
      db.flush();
      Map<String, Integer> flags = openFlags();
      assertTrue(direct(flags.getOrDefault("seg", 0)), "a segment open with O_DIRECT: " + flags);
      assertTrue((flags.getOrDefault("log", 0) & O_DSYNC) != 0, "the WAL with O_DSYNC: " + flags);
      Map<String, Long> st = db.stats().asMap();
      assertTrue(st.get("writeBufferBytes") > 0, "staged: " + st);
      // 3 MB of documents flushed: most of the segments' bytes went around the page cache
      assertTrue(st.get("directWriteBytes") > 2_000_000, "direct: " + st);
      assertTrue(
          st.get("directWriteBytes") > st.get("directWriteBufferedBytes"), "mostly direct: " + st);
    }
    try (Basalt db = Basalt.open(dir.resolve("db"), o.syncMode(SyncMode.NONE))) {
      Map<String, Integer> flags = openFlags();
      assertEquals(0, flags.getOrDefault("log", 0) & O_DSYNC, "no O_DSYNC without SYNC: " + flags);
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 3000; i++) assertArrayEquals(value(i), ks.get(("key-" + i).getBytes()));
    }
    try (Basalt db =
        Basalt.open(dir.resolve("db"), o.syncMode(SyncMode.SYNC).directWrites(false))) {
      Map<String, Integer> flags = openFlags();
      Keyspace first = db.keyspace("default");
      for (int i = 0; i < 100; i++) first.put(("more-" + i).getBytes(), value(i));
      db.flush();
      assertEquals(0, db.stats().asMap().get("directWriteBytes"), "nothing direct without it");
      for (Map.Entry<String, Integer> e : flags.entrySet()) {
        assertTrue(!direct(e.getValue()), "nothing direct without directWrites: " + flags);
        assertEquals(0, e.getValue() & O_DSYNC, "nothing O_DSYNC without directWrites: " + flags);
      }
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 3000; i++) assertArrayEquals(value(i), ks.get(("key-" + i).getBytes()));
    }
  }
}
