package io.basaltdb.internal.engine.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.Engine;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import io.basaltdb.internal.wal.LogReader;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The WAL chain (issue 13 item 5): rotation ends a WAL file with a link to its successor, the link
 * replays as a no-op, and {@link WalChain#verify} fails the open naming a missing WAL file. Files
 * are written with {@link CommitLog} itself on a {@link MemStorage}.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class WalChainTest {
  private static final long WAL = 1000; // above every number the first open hands out

  private static Options options(SyncMode mode) {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(256 << 10).syncMode(mode);
  }

  private static Batch put(long seqno, String key) {
    return put(seqno, key, ("value-" + key).getBytes());
  }

  private static Batch put(long seqno, String key, byte[] value) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key.getBytes(), value);
    b.firstSeqno = seqno;
    return b;
  }

  /** Every record of a WAL file, decoded; the file must read to its end. */
  private static List<Batch> records(Storage storage, long number) {
    List<Batch> out = new ArrayList<>();
    try (StorageFile f = storage.open(CommitLog.fileName(number))) {
      LogReader r = new LogReader(f);
      while (r.next())
        out.add(Batch.decode(r.payload(), CommitLog.fileName(number), r.recordOffset()));
      assertEquals(LogReader.Stop.END, r.stop(), r.stopReason());
    }
    return out;
  }

  /** Files 1000 -> 1002 -> 1005, the last closed cleanly: seqnos 1, 2, 3 in turn. */
  private static MemStorage chain() {
    MemStorage storage = new MemStorage(1);
    storage.mkdirs(CommitLog.DIR);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), false);
    log.rotate(WAL + 2);
    log.append(List.of(put(2, "b")), false);
    log.rotate(WAL + 5);
    log.append(List.of(put(3, "c")), false);
    log.close(3);
    return storage;
  }

  @Test
  void rotate_endsTheOldFileWithASyncedLinkToTheNewOne() {
    MemStorage storage = chain();
    List<Batch> first = records(storage, WAL);
    assertEquals(2, first.size());
    Batch link = first.get(1);
    assertTrue(link.isLink());
    assertEquals(0, link.count());
    assertEquals(WAL + 2, link.successor);
    assertEquals(2, link.firstSeqno, "one past the last seqno logged");
    assertEquals(Batch.GROUP_START | Batch.SYNCED | Batch.LINK, link.flags);
    assertEquals(WAL + 5, records(storage, WAL + 2).get(1).successor);
    List<Batch> last = records(storage, WAL + 5);
    assertFalse(last.get(last.size() - 1).isLink(), "the newest file ends with the close marker");

    assertEquals(WAL + 2, WalChain.tailLink(storage, WAL));
    assertEquals(WAL + 5, WalChain.tailLink(storage, WAL + 2));
    assertEquals(-1, WalChain.tailLink(storage, WAL + 5));
    assertEquals(
        storage.contents(CommitLog.fileName(WAL)).length,
        storage.durableSize(CommitLog.fileName(WAL)),
        "the link is synced");
  }

  @Test
  void rotate_thenPowerLoss_keepsTheLinkAndTheFileItNames() {
    MemStorage storage = new MemStorage(2);
    storage.mkdirs(CommitLog.DIR);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), false);
    log.rotate(WAL + 1); // nothing logged yet in the new file
    storage.crash(MemStorage.CrashMode.KEEP_NONE);
    assertEquals(WAL + 1, WalChain.tailLink(storage, WAL));
    assertTrue(storage.exists(CommitLog.fileName(WAL + 1)));
    WalChain.verify(storage, WAL, WAL);
  }

  @Test
  void linkRecord_bytes() {
    Batch link = Batch.link(5, 42);
    ByteBuffer out = ByteBuffer.allocate(link.encodedSize());
    link.encode(out);
    ByteBuffer expected = ByteBuffer.allocate(21).order(ByteOrder.LITTLE_ENDIAN);
    expected.putLong(5).putInt(0).put((byte) 7).putLong(42);
    assertArrayEquals(expected.array(), out.array());
    assertEquals(WalChain.LINK_FRAME_SIZE, 8 + out.capacity());
  }

  @Test
  void decode_refusesALinkWithOperations_andTrailingBytesAfterAnythingElse() {
    ByteBuffer linkWithOps = ByteBuffer.allocate(21).order(ByteOrder.LITTLE_ENDIAN);
    linkWithOps.putLong(5).putInt(1).put((byte) 7).putLong(42).flip();
    assertThrows(CorruptionException.class, () -> Batch.decode(linkWithOps, "f", 0));
    ByteBuffer markerPlus8 = ByteBuffer.allocate(21).order(ByteOrder.LITTLE_ENDIAN);
    markerPlus8.putLong(5).putInt(0).put((byte) 3).putLong(42).flip();
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Batch.decode(markerPlus8, "f", 0));
    assertTrue(e.getMessage().contains("8 trailing bytes"), e.getMessage());
    ByteBuffer linkCut = ByteBuffer.allocate(17).order(ByteOrder.LITTLE_ENDIAN);
    linkCut.putLong(5).putInt(0).put((byte) 7).putInt(42).flip();
    assertThrows(CorruptionException.class, () -> Batch.decode(linkCut, "f", 0));
  }

  @Test
  void decode_readsRecordsWrittenBeforeLinks() {
    // A put and a close marker byte for byte as written before the link flag existed.
    ByteBuffer put = ByteBuffer.allocate(13 + 1 + 4 + 4 + 1 + 4 + 2).order(ByteOrder.LITTLE_ENDIAN);
    put.putLong(7)
        .putInt(1)
        .put((byte) 3)
        .put(Batch.PUT)
        .putInt(1)
        .putInt(1)
        .put((byte) 'k')
        .putInt(2)
        .put(new byte[] {'v', 'w'})
        .flip();
    Batch b = Batch.decode(put, "f", 0);
    assertEquals(7, b.firstSeqno);
    assertEquals(1, b.count());
    assertFalse(b.isLink());
    assertEquals(-1, b.successor);
    assertArrayEquals(new byte[] {'v', 'w'}, b.value(0));
    ByteBuffer marker = ByteBuffer.allocate(13).order(ByteOrder.LITTLE_ENDIAN);
    marker.putLong(8).putInt(0).put((byte) 3).flip();
    Batch m = Batch.decode(marker, "f", 0);
    assertEquals(0, m.count());
    assertFalse(m.isLink());
  }

  @Test
  void verify_passesOnAHealthyChain() {
    MemStorage storage = chain();
    WalChain.verify(storage, WAL, WAL);
    WalChain.verify(storage, WAL, WAL + 5);
    WalChain.verify(storage, WAL + 2, WAL + 2); // file 1000 obsolete
    WalChain.verify(storage, WAL, 0);
  }

  @Test
  void verify_failsNamingTheNewestFile_whenItIsDeleted() {
    MemStorage storage = chain();
    storage.delete(
        CommitLog.fileName(WAL + 5)); // issue 13 item 5: the newest file, with acknowledged writes
    for (long head : new long[] {0, WAL, WAL + 2}) {
      CorruptionException e =
          assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, head));
      assertTrue(
          e.getMessage().contains(storage.describe(CommitLog.fileName(WAL + 5)) + " is missing"),
          e.getMessage());
      assertTrue(e.getMessage().contains("restore the store from a backup"), e.getMessage());
    }
  }

  @Test
  void verify_failsNamingAMiddleFile_whenItIsDeleted() {
    MemStorage storage = chain();
    storage.delete(CommitLog.fileName(WAL + 2));
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, 0));
    assertTrue(
        e.getMessage().contains(storage.describe(CommitLog.fileName(WAL + 2)) + " is missing"),
        e.getMessage());
  }

  @Test
  void verify_failsWhenWalHeadIsMissing() {
    // One session, one file: nothing links to it, only the manifest names it.
    MemStorage storage = new MemStorage(3);
    storage.mkdirs(CommitLog.DIR);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), true);
    log.abandon();
    storage.delete(CommitLog.fileName(WAL));
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, WAL));
    assertTrue(e.getMessage().contains(storage.describe(CommitLog.fileName(WAL))), e.getMessage());
    assertTrue(e.getMessage().contains("current when it was committed"), e.getMessage());
    WalChain.verify(storage, WAL, 0); // a manifest without walHead cannot tell
    WalChain.verify(storage, WAL + 1, WAL); // nor one whose walHead is below walStart (a rollback)
  }

  @Test
  void verify_failsWhenWalStartIsMissingBelowAPresentWalHead() {
    MemStorage storage = chain();
    storage.delete(
        CommitLog.fileName(WAL)); // holds seqno 1, unflushed: the newer files do not replace it
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, WAL + 2));
    assertTrue(e.getMessage().contains(storage.describe(CommitLog.fileName(WAL))), e.getMessage());
    assertTrue(e.getMessage().contains("first WAL file to replay"), e.getMessage());
  }

  @Test
  void verify_passesWithWalHead0_onFilesWithoutLinks() {
    // Files as written before links: each session's only file, closed cleanly or crashed.
    MemStorage storage = new MemStorage(4);
    storage.mkdirs(CommitLog.DIR);
    CommitLog one = new CommitLog(storage, WAL);
    one.append(List.of(put(1, "a")), false);
    one.close(1);
    CommitLog two = new CommitLog(storage, WAL + 3);
    two.append(List.of(put(2, "b")), true);
    two.abandon();
    WalChain.verify(storage, WAL, 0);
    WalChain.verify(storage, 0, 0);
    storage.delete(CommitLog.fileName(WAL + 3));
    WalChain.verify(
        storage, WAL, 0); // nothing to tell it from: what the chain cannot catch without walHead
  }

  @Test
  void verify_failsOnAFileInNoChain_betweenALinkAndItsSuccessor() {
    MemStorage storage = chain();
    storage.create(CommitLog.fileName(WAL + 1)).close();
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, WAL));
    assertTrue(
        e.getMessage().contains(storage.describe(CommitLog.fileName(WAL + 1)) + " is in no chain"),
        e.getMessage());
  }

  @Test
  void verify_ignoresAUserValueEndingInBytesThatFrameALink() {
    MemStorage scratch = new MemStorage(5);
    scratch.mkdirs(CommitLog.DIR);
    CommitLog s = new CommitLog(scratch, 1);
    s.rotate(999_999); // a link to a file that never exists
    s.close();
    byte[] file = scratch.contents(CommitLog.fileName(1));
    byte[] fakeLink = Arrays.copyOfRange(file, file.length - WalChain.LINK_FRAME_SIZE, file.length);

    MemStorage storage = new MemStorage(6);
    storage.mkdirs(CommitLog.DIR);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(
        List.of(put(1, "k", fakeLink)), true); // the file's last 29 bytes are a valid link frame
    log.abandon(); // a crash: no close marker after it
    assertEquals(999_999, WalChain.tailLink(storage, WAL), "the hint is fooled");
    assertFalse(WalChain.endsWithLink(storage, WAL, 999_999));
    WalChain.verify(storage, WAL, WAL);
  }

  @Test
  void verify_leavesATornNewestFileToReplay() {
    MemStorage storage = new MemStorage(7);
    storage.mkdirs(CommitLog.DIR);
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), false);
    log.rotate(WAL + 2);
    log.append(List.of(put(2, "b")), false);
    log.append(List.of(put(3, "c")), false);
    log.abandon();
    byte[] newest = storage.contents(CommitLog.fileName(WAL + 2));
    storage.flipByte(CommitLog.fileName(WAL + 2), newest.length - 1);
    WalChain.verify(storage, WAL, WAL);
  }

  @Test
  void check_undoesARotationCutShortAfterItsLink() {
    MemStorage storage = new MemStorage(10);
    Engine.open(storage, options(SyncMode.SYNC)).close(); // a manifest, seqno 0
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), true);
    log.rotate(WAL + 2);
    log.abandon();
    // The state a crash between the link's sync and the rename leaves.
    storage.rename(CommitLog.fileName(WAL + 2), CommitLog.pendingName(WAL + 2));
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> WalChain.verify(storage, WAL, WAL));
    assertTrue(
        e.getMessage().contains(CommitLog.fileName(WAL + 2) + " is missing"), e.getMessage());

    WalChain.check(storage, WAL, WAL);
    assertFalse(storage.exists(CommitLog.pendingName(WAL + 2)));
    assertEquals(-1, WalChain.tailLink(storage, WAL));
    assertEquals(1, records(storage, WAL).size());
    assertEquals(
        storage.contents(CommitLog.fileName(WAL)).length,
        storage.durableSize(CommitLog.fileName(WAL)));
    try (Engine en = Engine.open(storage, options(SyncMode.SYNC))) {
      assertArrayEquals("value-a".getBytes(), en.get(1, "a".getBytes()));
    }
  }

  @Test
  void check_leavesAPendingFileWhoseRotationFinishedAlone() {
    MemStorage storage = chain();
    storage
        .create(CommitLog.pendingName(WAL + 7))
        .close(); // a rotation that failed before its link
    WalChain.check(storage, WAL, WAL);
    assertFalse(storage.exists(CommitLog.pendingName(WAL + 7)));
    assertEquals(2, records(storage, WAL).size(), "links to present files are kept");
  }

  /** A power loss after each storage operation of a rotation in turn: every state recovers. */
  @Test
  void rotate_crashAtEveryStep_recoversEveryAcknowledgedWrite() {
    for (long k = 0; ; k++) {
      MemStorage storage = new MemStorage(100 + k);
      Engine.open(storage, options(SyncMode.SYNC)).close();
      CommitLog log = new CommitLog(storage, WAL);
      log.append(List.of(put(1, "a")), true);
      storage.crashAfterMutations(k);
      boolean acknowledged = false;
      try {
        log.rotate(WAL + 2);
        log.append(List.of(put(2, "b")), true);
        acknowledged = true;
      } catch (io.basaltdb.StorageException e) {
        // the simulated crash
      }
      try {
        log.abandon();
      } catch (io.basaltdb.StorageException e) {
        // the handle is gone with the crash
      }
      storage.crash();
      String at = "crash after " + k + " mutations, seed " + storage.seed();
      // Today's recovery, which does not call WalChain yet, then the check at a later open: the new
      // session's WAL file (1001) may sit below a successor the crash left unmade (1002).
      for (int open = 0; open < 2; open++) {
        if (open == 1) WalChain.check(storage, WAL, 0);
        try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
          assertArrayEquals("value-a".getBytes(), e.get(1, "a".getBytes()), at);
          if (acknowledged) assertArrayEquals("value-b".getBytes(), e.get(1, "b".getBytes()), at);
        }
      }
      if (acknowledged) {
        assertTrue(k >= 5, "only " + k + " crash points: create, sync, link, sync, rename, ...");
        return;
      }
    }
  }

  @Test
  void open_replaysFilesEndingInLinks() {
    MemStorage storage = new MemStorage(8);
    Engine.open(storage, options(SyncMode.SYNC)).close(); // a manifest, seqno 0
    CommitLog log = new CommitLog(storage, WAL);
    log.append(List.of(put(1, "a")), true);
    log.rotate(WAL + 2);
    log.append(List.of(put(2, "b")), true);
    log.rotate(WAL + 4);
    log.abandon(); // a crash right after a rotation: the newest file is empty
    WalChain.verify(storage, WAL, WAL);
    try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
      assertArrayEquals("value-a".getBytes(), e.get(1, "a".getBytes()));
      assertArrayEquals("value-b".getBytes(), e.get(1, "b".getBytes()));
      Batch c = new Batch(1);
      c.add(1, Batch.PUT, "c".getBytes(), "value-c".getBytes());
      e.write(c); // seqno 3: the links (seqno 2 and 3 as first, no operations) used up none
    }
    try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
      assertArrayEquals("value-c".getBytes(), e.get(1, "c".getBytes()));
    }
  }

  @Test
  void open_afterFlushAndClose_keepsEveryWrite() {
    MemStorage storage = new MemStorage(9);
    try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
      for (int i = 0; i < 300; i++) write(e, i, "v1-" + i);
      e.flush(); // rotates the WAL: the old file ends with a link
      for (int i = 0; i < 300; i += 2) write(e, i, "v2-" + i);
      Batch d = new Batch(1);
      d.add(1, Batch.DELETE, key(7), null);
      e.write(d);
    }
    try (Engine e = Engine.open(storage, options(SyncMode.SYNC))) {
      for (int i = 0; i < 300; i++) {
        byte[] v = e.get(1, key(i));
        if (i == 7) {
          assertNull(v);
        } else {
          assertArrayEquals(
              (i % 2 == 0 ? "v2-" : "v1-").concat(String.valueOf(i)).getBytes(), v, "key " + i);
        }
      }
    }
  }

  private static byte[] key(int i) {
    return String.format("key-%05d", i).getBytes();
  }

  private static void write(Engine e, int i, String value) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, key(i), value.getBytes());
    e.write(b);
  }
}
