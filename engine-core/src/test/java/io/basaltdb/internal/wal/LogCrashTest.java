package io.basaltdb.internal.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The log under failure: a failed flush changes nothing and can be retried, and a crash at any of
 * the workload's mutation points loses no synced record and yields no wrong one.
 */
class LogCrashTest {
  @Test
  void failedFlush_keepsOffsetAndRecords_andARetrySucceeds() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      writer.add(ByteBuffer.wrap(new byte[] {1}));
      long end = writer.flush();
      writer.add(ByteBuffer.wrap(new byte[] {2, 2}));
      writer.add(ByteBuffer.wrap(new byte[] {3, 3, 3}));
      int pending = writer.pending();
      storage.setFaultInjector(
          (op, name) ->
              op == MemStorage.Op.WRITE ? MemStorage.Fault.NO_SPACE : MemStorage.Fault.NONE);
      StorageException e =
          org.junit.jupiter.api.Assertions.assertThrows(StorageException.class, writer::flush);
      assertTrue(e.getMessage().contains("still ends at offset " + end), e.getMessage());
      assertTrue(
          e.getMessage().contains("no space left on device; free space, then reopen the store"),
          e.getMessage());
      assertEquals(end, writer.offset());
      assertEquals(pending, writer.pending());
      assertEquals(end, file.size());
      storage.setFaultInjector(null);
      assertEquals(end + pending, writer.flush());
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(3, r.records().size());
      assertArrayEquals(new byte[] {3, 3, 3}, r.records().get(2));
      assertEquals(LogReader.Stop.END, r.stop());
    }
  }

  /** Appends records, flushing and sometimes syncing; returns how many records were synced. */
  private static int workload(
      MemStorage storage, List<byte[]> records, Random random, int[] synced) {
    storage.mkdirs("wal");
    try (StorageFile file = storage.create("wal/1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      for (int i = 0; i < records.size(); i++) {
        writer.add(ByteBuffer.wrap(records.get(i)));
        if (random.nextInt(3) == 0) {
          writer.flush();
          if (random.nextBoolean()) {
            writer.sync();
            synced[0] = i + 1;
          }
        }
      }
      writer.flush();
      writer.sync();
      synced[0] = records.size();
    }
    return synced[0];
  }

  @Test
  void crashAtEveryMutationPoint_losesNoSyncedRecord() {
    long seed = LogTestSupport.seed();
    Random random = new Random(seed);
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 150; i++) {
      records.add(LogTestSupport.payload(random, 40));
    }
    long workloadSeed = random.nextLong();
    MemStorage dry = new MemStorage(seed);
    workload(dry, records, new Random(workloadSeed), new int[1]);
    long points = dry.mutationCount();
    assertTrue(points > 50, "the workload offers " + points + " crash points");
    for (long n = 0; n <= points; n++) {
      for (MemStorage.CrashMode mode : MemStorage.CrashMode.values()) {
        MemStorage storage = new MemStorage(seed + n);
        storage.crashAfterMutations(n);
        int[] synced = new int[1];
        try {
          workload(storage, records, new Random(workloadSeed), synced);
          assertEquals(points, n, "only the last point lets the workload finish");
        } catch (StorageException e) {
          assertTrue(e.getMessage().contains("simulated crash"), e.getMessage());
        }
        storage.crash(mode);
        String where = "seed=" + seed + " crash point=" + n + " mode=" + mode;
        if (!storage.exists("wal/1.log")) {
          assertEquals(0, synced[0], where);
          continue;
        }
        try (StorageFile file = storage.open("wal/1.log")) {
          LogTestSupport.Result r = LogTestSupport.readAll(file);
          where += " reason=" + r.reason();
          assertTrue(r.records().size() >= synced[0], where + ": a synced record was lost");
          LogTestSupport.assertPrefix(records, r.records(), where);
          if (mode == MemStorage.CrashMode.KEEP_NONE) {
            assertEquals(synced[0], r.records().size(), where);
            assertSame(LogReader.Stop.END, r.stop(), where);
          }
        }
      }
    }
  }
}
