package io.basaltdb.internal.engine.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recovery's decision between a torn tail of the newest WAL file (trim it) and corruption of
 * records that were acknowledged (fail the open), on WAL files crafted with {@link CommitLog}
 * itself.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class WalTornOrCorruptTest {
  private static final long WAL = 1000; // above every number the first open hands out

  private static Options options(SyncMode mode) {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(256 << 10).syncMode(mode);
  }

  /** A store with a manifest and nothing written (seqno 0), then closed. */
  private static void initialize(Storage storage, SyncMode mode) {
    Engine.open(storage, options(mode)).close();
  }

  private static Batch put(long seqno, String key) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key.getBytes(), ("value-" + key).getBytes());
    b.firstSeqno = seqno;
    return b;
  }

  @Test
  void bitRotInASyncedGroup_isCorruption_evenWhenTheNextRecordIsInTheSameGroup() {
    MemStorage storage = new MemStorage(1);
    initialize(storage, SyncMode.SYNC);
    // Group 1 holds two records (one write, one fsync, both acknowledged); group 2 is a synced
    // group.
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a"), put(2, "b")), true);
    log.append(List.of(put(3, "c")), true);
    log.abandon(); // a crash: no clean-close marker
    storage.flipByte(
        CommitLog.fileName(WAL), 8 + Batch.HEADER_SIZE + 2); // bit rot in record 1's payload

    CorruptionException e =
        assertThrows(
            CorruptionException.class,
            () -> Engine.open(storage, options(SyncMode.SYNC)).close(),
            "three acknowledged writes were trimmed as if they were a torn tail");
    assertTrue(e.getMessage().contains(CommitLog.fileName(WAL)), e.getMessage());
  }

  @Test
  void tornWrite_inATwoRecordGroup_thatWasNeverSynced_isTrimmed() {
    MemStorage storage = new MemStorage(2);
    initialize(storage, SyncMode.SYNC);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), true);
    log.append(List.of(put(2, "b"), put(3, "c")), false); // written, never synced nor acknowledged
    log.abandon();
    long second = 8 + put(1, "a").encodedSize();
    storage.flipByte(
        CommitLog.fileName(WAL), second + 8 + Batch.HEADER_SIZE + 2); // b torn, c intact

    try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
      assertArrayEquals("value-a".getBytes(), e.get(1, "a".getBytes()));
      assertNull(e.get(1, "b".getBytes()));
      assertNull(e.get(1, "c".getBytes()));
    }
  }

  @Test
  void tornTail_fartherThan256MiBFromTheEnd_isTrimmed_notCalledCorruption(@TempDir Path dir) {
    FileStorage storage = new FileStorage(dir);
    initialize(storage, SyncMode.NONE);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), false);
    log.append(List.of(put(2, "b")), false);
    log.abandon(); // a crash: no clean-close marker
    long second = 8 + put(1, "a").encodedSize();
    try (StorageFile f = storage.open(CommitLog.fileName(WAL))) {
      ByteBuffer one = ByteBuffer.allocate(1);
      f.read(second + 8 + Batch.HEADER_SIZE + 2, one);
      one.put(0, (byte) ~one.get(0)).rewind();
      f.write(second + 8 + Batch.HEADER_SIZE + 2, one); // record 2 damaged: a reordered write-back
      f.truncate(
          f.size() + (300L << 20)); // and a long unsynced tail that never reached the disk (a hole)
    }

    try (Engine e = Engine.open(storage, options(SyncMode.NONE))) {
      assertArrayEquals("value-a".getBytes(), e.get(1, "a".getBytes()));
      assertNull(e.get(1, "b".getBytes()));
    }
  }

  @Test
  void replayedUnsyncedRecords_areMadeDurable_beforeNewWritesAreAcknowledged() {
    MemStorage storage = new MemStorage(3);
    initialize(storage, SyncMode.SYNC);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), false); // written, not yet synced: the process dies here
    log.abandon();

    // The restart replays "a" from the page cache and acknowledges "x" (seqno 2) after an fsync.
    Engine second = Engine.open(storage, options(SyncMode.SYNC));
    Batch x = new Batch(1);
    x.add(1, Batch.PUT, "x".getBytes(), "value-x".getBytes());
    second.write(x);
    storage.crashAfterMutations(0); // then the power fails
    try {
      second.close();
    } catch (io.basaltdb.BasaltException halted) {
      // closing on a halted storage fails; the crash below is what counts
    }
    storage.crash(MemStorage.CrashMode.KEEP_NONE);

    try (Engine third =
        Engine.open(storage, options(SyncMode.SYNC))) { // "x" was acknowledged: no gap
      assertArrayEquals("value-x".getBytes(), third.get(1, "x".getBytes()));
      assertArrayEquals("value-a".getBytes(), third.get(1, "a".getBytes()));
    }
  }
}
