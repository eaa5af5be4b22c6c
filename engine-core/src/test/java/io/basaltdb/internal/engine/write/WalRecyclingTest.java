package io.basaltdb.internal.engine.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * WAL files are recycled (CommitLog): a rotation overwrites an obsolete file whose old records stay
 * behind the new ones. Replay must never take an old record for a write, whatever a crash kept.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class WalRecyclingTest {

  @ParameterizedTest
  @EnumSource(MemStorage.CrashMode.class)
  void aRecycledWalFile_replaysOnlyItsNewRecords_afterACrash(MemStorage.CrashMode crash) {
    MemStorage storage = new MemStorage(31);
    Options o =
        Options.defaults()
            .memoryQuota(8L << 20)
            .writeCacheSize(64 << 10)
            .segmentSize(64 << 10)
            .syncMode(SyncMode.SYNC);
    int rounds = 12;
    boolean sawOldRecords = false;
    Engine e = Engine.open(storage, o);
    try {
      for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < 100; i++) put(e, "k" + i, "v" + round + "-" + "x".repeat(200));
        // The current WAL file is longer than what this session wrote to it: a recycled file's old
        // records
        var files = CommitLog.list(storage);
        try {
          sawOldRecords |= storage.size(FileNames.wal(files.get(files.size() - 1))) > 100L * 260;
        } catch (io.basaltdb.StorageException retiredMeanwhile) {
          // a background cleanup moved it since the listing
        }
        if (round % 3 == 2) e.flush();
      }
      assertTrue(sawOldRecords, "rotations reused obsolete WAL files");
      storage.crash(
          crash); // SYNC: every acknowledged write is durable; the old records lie behind them
    } finally {
      try {
        e.close(); // its handles died with the crash
      } catch (io.basaltdb.BasaltException expected) {
        // closed by the simulated crash
      }
    }
    try (Engine reopened = Engine.open(storage, o)) {
      for (int i = 0; i < 100; i++) {
        assertArrayEquals(
            ("v" + (rounds - 1) + "-" + "x".repeat(200)).getBytes(),
            reopened.get(1, ("k" + i).getBytes()),
            "k" + i + " holds its last acknowledged value, not an old record's");
      }
    }
  }

  @org.junit.jupiter.api.Test
  void walFilesARollbackLeftBehind_areDeleted_neverRecycled() {
    MemStorage storage = new MemStorage(41);
    Options o =
        Options.defaults()
            .memoryQuota(8L << 20)
            .writeCacheSize(64 << 10)
            .segmentSize(64 << 10)
            .syncMode(SyncMode.SYNC);
    String pad = "x".repeat(200);
    long checkpoint;
    try (Engine e = Engine.open(storage, o)) {
      for (int i = 0; i < 100; i++) put(e, "k" + i, "kept");
      checkpoint = e.checkpoint().id();
      for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 100; i++) put(e, "k" + i, "rolled-back-" + round + pad);
      }
    }
    // The rollback commits, then its clean-up fails to delete the WAL files of the discarded
    // history.
    storage.setFaultInjector(
        (op, name) ->
            op == MemStorage.Op.DELETE && name.startsWith("wal/")
                ? MemStorage.Fault.IO_ERROR
                : MemStorage.Fault.NONE);
    assertThrows(io.basaltdb.StorageException.class, () -> Engine.rollback(storage, checkpoint));
    storage.setFaultInjector(null);
    java.util.List<Long> leftBehind = CommitLog.list(storage);
    assertTrue(!leftBehind.isEmpty(), "the discarded history's WAL files are still there");
    try (Engine e = Engine.open(storage, o)) {
      for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 100; i++) put(e, "k" + i, "new-" + round + pad);
        if (round % 2 == 1) e.flush();
        for (String pooled : CommitLog.pooled(storage)) {
          for (long n : leftBehind) {
            assertFalse(
                pooled.endsWith("-" + n + ".log"),
                "a file of the discarded history was pooled: " + pooled);
          }
        }
      }
      for (long n : leftBehind) assertFalse(storage.exists(FileNames.wal(n)), "deleted: " + n);
    }
    try (Engine e = Engine.open(storage, o)) {
      for (int i = 0; i < 100; i++) {
        assertArrayEquals(("new-5" + pad).getBytes(), e.get(1, ("k" + i).getBytes()), "k" + i);
      }
    }
  }

  private static void put(Engine e, String key, String value) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key.getBytes(), value.getBytes());
    e.write(b);
  }
}
