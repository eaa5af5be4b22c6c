package io.basaltdb.internal.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/** Helpers shared by the WAL tests: random payloads, and reading a log back into a list. */
final class LogTestSupport {
  private LogTestSupport() {}

  /** The seed of a randomized test: -Dbasalt.seed=N reproduces a failure, else a fresh one. */
  static long seed() {
    return Long.getLong("basalt.seed", System.nanoTime());
  }

  /** A payload of 1 to {@code max} random bytes, sometimes exactly one byte. */
  static byte[] payload(Random random, int max) {
    int length = random.nextInt(8) == 0 ? 1 : 1 + random.nextInt(max);
    byte[] bytes = new byte[length];
    random.nextBytes(bytes);
    return bytes;
  }

  /** What a reader returned: the records, their offsets, and where and why it stopped. */
  record Result(
      List<byte[]> records,
      List<Long> offsets,
      LogReader.Stop stop,
      long stopOffset,
      String reason) {}

  static Result readAll(StorageFile file) {
    LogReader reader = new LogReader(file);
    List<byte[]> records = new ArrayList<>();
    List<Long> offsets = new ArrayList<>();
    while (reader.next()) {
      ByteBuffer p = reader.payload();
      byte[] bytes = new byte[p.remaining()];
      p.get(bytes);
      records.add(bytes);
      offsets.add(reader.recordOffset());
    }
    return new Result(records, offsets, reader.stop(), reader.stopOffset(), reader.stopReason());
  }

  /** Asserts that {@code actual} are the first records of {@code expected}, byte for byte. */
  static void assertPrefix(List<byte[]> expected, List<byte[]> actual, String where) {
    for (int i = 0; i < actual.size(); i++) {
      assertEquals(
          true,
          i < expected.size() && Arrays.equals(expected.get(i), actual.get(i)),
          where + ": record " + i + " differs from what was written");
    }
  }

  /**
   * Writes {@code records} with a flush after each {@code perFlush} of them; returns their offsets.
   */
  static List<Long> write(LogWriter writer, List<byte[]> records, int perFlush) {
    List<Long> offsets = new ArrayList<>();
    long at = writer.offset();
    for (int i = 0; i < records.size(); i++) {
      offsets.add(at);
      at += LogFormat.HEADER_SIZE + records.get(i).length;
      writer.add(ByteBuffer.wrap(records.get(i)));
      if ((i + 1) % perFlush == 0) {
        writer.flush();
      }
    }
    writer.flush();
    return offsets;
  }
}
