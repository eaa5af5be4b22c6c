package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import io.netty.channel.uring.IoUring;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * engine-core's model test once more, on disk, with engine-io on the class path: batched gets go
 * through the io_uring transport, and every file is read with O_DIRECT ({@link
 * Options#directReads}). Tiny levels, a tiny block cache and tiny segments, so batched gets read
 * key index blocks, documents bigger than a block and segments that collection replaces. A failure
 * names the seed; {@code -Dbasalt.model.seed=N} replays it.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class UringModelTest {
  @TempDir Path dir;

  @Test
  void matchesModel_throughIoUring_withDirectReads() {
    assumeTrue(IoUring.isAvailable(), "io_uring is not available here");
    Long only = Long.getLong("basalt.model.seed");
    long seed = only != null ? only : new Random().nextLong();
    Options options = ModelTest.tinyLevels(ModelTest.tiny()).directReads(true).readQueueDepth(32);
    ModelTest.Run run =
        new ModelTest.Run(seed, options, false, dir) {
          @Override
          void verifyAll() {
            super.verifyAll();
            // The transport starts at the store's first batch of reads (LazyReadTransport), not at
            // open: by
            // the end of the run the model's batched gets and scans of flushed data have started
            // it.
            assertTrue(
                Thread.getAllStackTraces().keySet().stream()
                    .anyMatch(t -> t.getName().startsWith("basalt-uring-")),
                "batched reads run on an io_uring event loop");
          }
        };
    run.ops =
        Math.min(
            ModelTest.OPS,
            800); // the engine-core suite runs the model test in full; this checks the transport
    try {
      run.run();
    } catch (Throwable t) {
      throw new AssertionError(
          "model test through io_uring failed, seed "
              + seed
              + " (replay: -Dbasalt.model.seed="
              + seed
              + "): "
              + t,
          t);
    }
  }
}
