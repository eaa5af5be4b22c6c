package io.basaltdb.internal.segment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Reopening a segment writer from a checkpoint, write failures, and the encoded segment state. */
class SegmentRecoveryTest {
  private static final long SEED = Long.getLong("basalt.test.seed", System.nanoTime());

  static {
    System.out.println(
        "SegmentRecoveryTest seed: " + SEED + " (rerun with -Dbasalt.test.seed=" + SEED + ")");
  }

  @Test
  void reopen_restoresTheExactTailPages() {
    // Two writers append the same documents; one restarts after every checkpoint. Same bytes
    // result.
    SegmentOptions o = SegmentOptions.defaults().withBlockSize(100).withPageSize(64);
    ByteArrayFile a = new ByteArrayFile();
    ByteArrayFile b = new ByteArrayFile();
    SegmentWriter wa = SegmentWriter.create(a, 4, 1, o);
    SegmentWriter wb = SegmentWriter.create(b, 4, 1, o);
    TestDocs t = new TestDocs(SEED + 2, 1);
    for (int round = 0; round < 40; round++) {
      int n = t.random.nextInt(30);
      for (int i = 0; i < n; i++) {
        Document d = t.next();
        assertEquals(t.append(wa, d), wb.append(d.seqno(), d.key(), d.value(), d.tombstone()));
      }
      SegmentState sa = wa.checkpoint();
      SegmentState sb = wb.checkpoint();
      assertEquals(sa, sb);
      wb = SegmentWriter.reopen(b, sb, o);
    }
    assertArrayEquals(a.contents(), b.contents());
    t.checkAllReads(new SegmentReader(b, wb.checkpoint()));
  }

  @Test
  void staleBytes_countSupersededCheckpointPages() {
    SegmentWriter w =
        SegmentWriter.create(
            new ByteArrayFile(), 0, 1, SegmentOptions.defaults().withPageSize(128));
    SegmentState prev = w.checkpoint();
    for (int i = 1; i <= 100; i++) {
      w.append(i, new byte[] {(byte) i}, new byte[10], false);
      SegmentState s = w.checkpoint();
      assertEquals(prev.staleBytes() + prev.spineBytes(), s.staleBytes());
      // At least the root; at most one page per level (levels a full page just emptied write none).
      assertTrue(s.spineBytes() >= 28 && s.spineBytes() <= s.levels() * 128L, s.toString());
      prev = s;
    }
    assertTrue(prev.levels() >= 2);
  }

  @Test
  void reopen_refusesAnotherSegmentsFileOrAShortFile() {
    ByteArrayFile file = new ByteArrayFile();
    SegmentWriter w = SegmentWriter.create(file, 1, 1, SegmentOptions.defaults());
    w.append(1, new byte[3], new byte[300], false);
    SegmentState s = w.checkpoint();
    ByteArrayFile other = new ByteArrayFile();
    SegmentWriter.create(other, 2, 1, SegmentOptions.defaults())
        .append(1, new byte[3], new byte[300], false);
    assertThrows(
        CorruptionException.class, () -> SegmentWriter.reopen(other, s, SegmentOptions.defaults()));
    file.truncate(s.tailOffset() - 1);
    assertThrows(
        CorruptionException.class, () -> SegmentWriter.reopen(file, s, SegmentOptions.defaults()));
  }

  @Test
  void failedWrite_poisonsTheWriter_untilReopened() {
    MemStorage storage = new MemStorage(SEED);
    StorageFile file = storage.create("s.log");
    SegmentWriter w =
        SegmentWriter.create(file, 0, 1, SegmentOptions.defaults().withMaxSegmentSize(1 << 20));
    w.append(1, new byte[1], new byte[100], false);
    SegmentState s = w.checkpoint();
    storage.setFaultInjector(
        (op, name) ->
            op == MemStorage.Op.WRITE ? MemStorage.Fault.NO_SPACE : MemStorage.Fault.NONE);
    // Sealed blocks wait in the writer's buffer: the failed write surfaces at the latest at the
    // checkpoint.
    assertThrows(
        StorageException.class,
        () -> {
          w.append(2, new byte[1], new byte[10_000], false);
          w.checkpoint();
        });
    storage.setFaultInjector(null);
    assertThrows(StorageException.class, () -> w.append(3, new byte[1], new byte[1], false));
    assertThrows(StorageException.class, w::checkpoint);
    assertThrows(StorageException.class, w::sync);
    SegmentWriter again = SegmentWriter.reopen(file, s, SegmentOptions.defaults());
    again.append(2, new byte[1], new byte[1], true);
    SegmentReader r = new SegmentReader(file, again.checkpoint());
    assertTrue(r.read(2, -1).tombstone());
    assertEquals(100, r.read(1, -1).value().length);
  }

  @Test
  void state_encodeDecode_roundTripsAndDetectsDamage() {
    SegmentWriter w = SegmentWriter.create(new ByteArrayFile(), 77, 5, SegmentOptions.defaults());
    for (int i = 5; i < 2000; i += 2) {
      w.append(i, new byte[8], new byte[40], i % 3 == 0);
    }
    for (SegmentState s : List.of(SegmentState.decode(encoded(w.checkpoint())), w.checkpoint())) {
      ByteBuffer buf = ByteBuffer.allocate(SegmentState.ENCODED_SIZE + 3);
      buf.position(3);
      s.encode(buf);
      assertFalse(buf.hasRemaining());
      buf.position(3);
      assertEquals(s, SegmentState.decode(buf));
      byte[] e = encoded(s).array();
      for (int i = 0; i < e.length; i++) {
        e[i] ^= 0x10;
        ByteBuffer damaged = ByteBuffer.wrap(e);
        assertThrows(CorruptionException.class, () -> SegmentState.decode(damaged), "byte " + i);
        e[i] ^= 0x10;
      }
      assertThrows(
          CorruptionException.class,
          () -> SegmentState.decode(ByteBuffer.wrap(e, 0, e.length - 1)));
    }
  }

  @Test
  void state_withByteCountsWhoseSumOverflows_isRefused() {
    SegmentState s =
        SegmentWriter.create(new ByteArrayFile(), 1, 1, SegmentOptions.defaults()).checkpoint();
    SegmentState bad =
        new SegmentState(
            s.segmentId(),
            s.startSeqno(),
            s.lastSeqno(),
            s.tailOffset(),
            s.rootOffset(),
            s.levels(),
            s.documentCount(),
            s.documentBytes(),
            Long.MAX_VALUE,
            Long.MAX_VALUE,
            s.blockSize(),
            s.pageSize());
    assertThrows(InvalidArgumentException.class, () -> new SegmentReader(new ByteArrayFile(), bad));
    assertThrows(CorruptionException.class, () -> SegmentState.decode(encoded(bad)));
  }

  private static ByteBuffer encoded(SegmentState s) {
    ByteBuffer b = ByteBuffer.allocate(SegmentState.ENCODED_SIZE);
    s.encode(b);
    return b.flip();
  }
}
