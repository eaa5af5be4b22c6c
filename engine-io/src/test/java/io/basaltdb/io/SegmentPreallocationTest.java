package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With engine-io on the class path, a store's log segments get real disk blocks, not sparse holes.
 */
class SegmentPreallocationTest {
  @TempDir Path dir;

  @Test
  void segmentFiles_haveTheirBlocksReserved() throws Exception {
    assumeTrue(new LinuxFileCalls().isSupported(), "not Linux");
    long segmentSize = 8L << 20;
    // Fixed segment sizes (segmentSizeRatio 0): a tail is preallocated to segmentSize, not to a
    // size
    // derived from a small log (SegmentSizingTest covers those).
    Options options =
        Options.defaults().memoryQuota(64L << 20).segmentSize(segmentSize).segmentSizeRatio(0);
    try (Basalt db = Basalt.open(dir, options)) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(("k" + i).getBytes(), new byte[100]);
      db.flush();
      assertArrayEquals(new byte[100], ks.get("k7".getBytes()));
    }
    List<Path> segments;
    try (Stream<Path> files = Files.walk(dir)) {
      segments = files.filter(p -> p.getParent().getFileName().toString().equals("log")).toList();
    }
    assertFalse(segments.isEmpty(), "the flush wrote a log segment");
    for (Path p : segments) {
      long allocated = LinuxFileCallsTest.allocatedBytes(p);
      assertTrue(
          allocated >= segmentSize,
          p
              + " has "
              + allocated
              + " bytes of blocks, expected the "
              + segmentSize
              + " it was preallocated with");
    }
    try (Basalt db = Basalt.open(dir, options)) { // and the preallocated zeros read back as nothing
      assertArrayEquals(new byte[100], db.keyspace("default").get("k99".getBytes()));
    }
  }
}
