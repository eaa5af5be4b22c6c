package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.VersionEdit;
import io.basaltdb.internal.engine.version.VersionSet;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The VersionSet is the one writer of manifests (STYLE item 16), and edits apply as documented:
 * every manifest file a store creates or renames, through a whole life (a new store, keyspaces
 * created and dropped, flushes, compactions, recovery's inline flushes, checkpoints, a rollback),
 * is written from inside {@link VersionSet}; and a segment replacement edit keeps the seqno order.
 */
class VersionSetTest {
  private static Options options() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(256 << 10)
        .blockSize(1024)
        .l0CompactionTrigger(2)
        .level1Bytes(64 << 10)
        .tableTargetBytes(16 << 10);
  }

  @Test
  void everyManifestWrite_comesFromTheVersionSet() {
    MemStorage storage = new MemStorage(3);
    List<String> outsiders = new ArrayList<>();
    int[] manifestWrites = new int[1];
    storage.setFaultInjector(
        (op, name) -> {
          if ((op == MemStorage.Op.CREATE || op == MemStorage.Op.RENAME)
              && name.startsWith(FileNames.MANIFEST_DIR + "/")) {
            manifestWrites[0]++;
            boolean fromVersionSet =
                StackWalker.getInstance()
                    .walk(
                        s -> s.anyMatch(f -> f.getClassName().equals(VersionSet.class.getName())));
            if (!fromVersionSet)
              outsiders.add(
                  op
                      + " "
                      + name
                      + " from "
                      + StackWalker.getInstance()
                          .walk(
                              s ->
                                  s.skip(1)
                                      .limit(8)
                                      .map(f -> f.getClassName() + "." + f.getMethodName())
                                      .toList()));
          }
          return MemStorage.Fault.NONE;
        });
    long checkpoint;
    try (Engine e = Engine.open(storage, options())) {
      int second = e.createKeyspace("second");
      for (int round = 0; round < 6; round++) {
        Batch b = new Batch(400);
        for (int i = 0; i < 200; i++) {
          byte[] key = ("k" + (i * 7 + round) % 500).getBytes(StandardCharsets.UTF_8);
          b.add(1, Batch.PUT, key, new byte[300]);
          b.add(
              second,
              i % 5 == 0 ? Batch.DELETE : Batch.PUT,
              key,
              i % 5 == 0 ? null : new byte[100]);
        }
        e.write(b);
        e.flush();
      }
      assertTrue(e.waitForCompactions(30_000));
      assertTrue((long) e.stats().get("compactions") > 0, "compactions committed edits");
      checkpoint = e.checkpoint().id();
      e.dropKeyspace("second");
      Batch b = new Batch(1);
      b.add(1, Batch.PUT, "after".getBytes(StandardCharsets.UTF_8), new byte[10]);
      e.write(b);
    }
    try (Engine e = Engine.open(storage, options())) { // replays "after"
      assertArrayEquals(new byte[10], e.get(1, "after".getBytes(StandardCharsets.UTF_8)));
    }
    Engine.rollback(storage, checkpoint);
    try (Engine e = Engine.open(storage, options())) {
      assertNull(
          e.get(1, "after".getBytes(StandardCharsets.UTF_8)), "rolled back to before the write");
      assertEquals(
          List.of("default", "second"), e.keyspaceNames(), "the drop came after the checkpoint");
    }
    assertTrue(
        manifestWrites[0] >= 2 * 12, "manifest creates and renames seen: " + manifestWrites[0]);
    assertEquals(List.of(), outsiders, "manifest files written outside the VersionSet");
  }

  private static void writeRounds(Engine e, int rounds, int salt) {
    for (int round = 0; round < rounds; round++) {
      Batch b = new Batch(300);
      for (int i = 0; i < 300; i++) {
        b.add(
            1,
            Batch.PUT,
            ("k" + (i * 7 + round + salt) % 400).getBytes(StandardCharsets.UTF_8),
            new byte[200]);
      }
      e.write(b);
      e.flush();
    }
  }

  private static long files(MemStorage storage, String dir) {
    return storage.list(dir).stream().filter(n -> !n.endsWith(".tmp")).count();
  }

  @Test
  void periodicCheckpoints_otherManifestsAndTheTablesOnlyTheyNamedGoAtOnce() throws Exception {
    MemStorage storage = new MemStorage(4);
    Options o = options().checkpointIntervalMillis(3_600_000).checkpointRetentionMillis(3_600_000);
    try (Engine e = Engine.open(storage, o)) {
      writeRounds(e, 12, 0);
      assertTrue(e.waitForCompactions(30_000));
      assertTrue(e.stats().get("compactions") > 0);
      // the new store's first manifest (found at open, so kept) and the current one
      assertEquals(
          2,
          files(storage, FileNames.MANIFEST_DIR),
          storage.list(FileNames.MANIFEST_DIR).toString());
      assertEquals(2, e.versionSet().checkpoints().size());
      long deadline =
          System.currentTimeMillis() + 10_000; // replaced tables go once no version holds them
      while (files(storage, FileNames.indexDir(1)) > e.versions().current().files(1).tables.size()
          && System.currentTimeMillis() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(
          e.versions().current().files(1).tables.size(),
          files(storage, FileNames.indexDir(1)),
          "only the live tables are on disk: " + storage.list(FileNames.indexDir(1)));
      assertEquals(0, e.stats().get("checkpointOnlyBytes"));
    }
  }

  @Test
  void aCheckpointAskedFor_staysHoldsItsTablesAndRollsBack() throws Exception {
    MemStorage storage = new MemStorage(6);
    Options o = options().checkpointIntervalMillis(3_600_000).checkpointRetentionMillis(3_600_000);
    Engine.CheckpointInfo cp;
    try (Engine e = Engine.open(storage, o)) {
      writeRounds(e, 3, 0);
      cp = e.checkpoint();
      writeRounds(e, 10, 1); // overwrites: compaction replaces the checkpoint's tables
      assertTrue(e.waitForCompactions(30_000));
      assertTrue(
          e.checkpoints().stream().anyMatch(c -> c.id() == cp.id()), e.checkpoints().toString());
      assertTrue(
          e.stats().get("checkpointOnlyBytes") > 0,
          "the checkpoint holds replaced tables: " + e.stats());
      assertTrue(
          files(storage, FileNames.MANIFEST_DIR) <= 3,
          storage.list(FileNames.MANIFEST_DIR).toString());
    }
    Engine.rollback(storage, cp.id());
    try (Engine e = Engine.open(storage, o)) {
      assertEquals(cp.seqno(), e.versions().lastSeqno());
      assertArrayEquals(
          new byte[200], e.get(1, ("k" + (299 * 7 + 2) % 400).getBytes(StandardCharsets.UTF_8)));
    }
  }

  @Test
  void intervalZero_keepsEveryManifest() {
    MemStorage storage = new MemStorage(5);
    try (Engine e =
        Engine.open(
            storage,
            options()
                .checkpointIntervalMillis(0)
                .checkpointRetentionMillis(3_600_000)
                .checkpointSpaceRatio(100))) {
      writeRounds(e, 6, 0);
      assertTrue(
          files(storage, FileNames.MANIFEST_DIR) >= 8,
          storage.list(FileNames.MANIFEST_DIR).toString());
    }
  }

  @Test
  void checkpointsHoldingMoreThanTheirSpaceRatio_areDroppedOldestFirst_butNotOnesAskedFor()
      throws Exception {
    MemStorage storage = new MemStorage(8);
    Options o =
        options()
            .checkpointIntervalMillis(0)
            .checkpointRetentionMillis(3_600_000)
            .checkpointSpaceRatio(0.25);
    Engine.CheckpointInfo asked;
    try (Engine e = Engine.open(storage, o)) {
      writeRounds(e, 3, 0);
      asked = e.checkpoint();
      writeRounds(e, 20, 1); // overwrites: every checkpoint holds tables compaction replaced
      assertTrue(e.waitForCompactions(30_000));
      Map<String, Long> s = e.stats();
      assertTrue(s.get("checkpointsDroppedForSpace") > 0, s.toString());
      assertTrue(
          e.checkpoints().stream().anyMatch(c -> c.id() == asked.id()), "the asked-for one stays");
      assertTrue(e.checkpoints().size() > 2, "the newest periodic ones stay: " + e.checkpoints());
    }
    Engine.rollback(storage, asked.id());
    try (Engine e = Engine.open(storage, o)) {
      assertArrayEquals(
          new byte[200], e.get(1, ("k" + (299 * 7 + 2) % 400).getBytes(StandardCharsets.UTF_8)));
    }
  }

  private static SegmentState seg(long id, long startSeqno, long tailOffset) {
    return new SegmentState(
        id, startSeqno, startSeqno + 99, tailOffset, 0, 1, 100, tailOffset, 0, 0, 4096, 4096);
  }

  @Test
  void segmentReplacement_removesAndPutsInOneEdit_keepingSeqnoOrder() {
    SegmentState a = seg(10, 1, 4096);
    SegmentState b = seg(11, 500, 4096);
    SegmentState c = seg(12, 900, 4096);
    Manifest base =
        new Manifest(
            5,
            0,
            1000,
            20,
            3,
            3,
            2,
            List.of(
                new Manifest.KeyspaceMeta(
                    1, "default", List.of(), List.of(a, b, c), Manifest.Counters.ZERO)));
    // b's live documents rewritten into segment 13 (start seqno 500, as documents keep their
    // seqnos)
    SegmentState d = seg(13, 500, 2048);
    Manifest next = new VersionEdit().removeSegment(1, 11).putSegment(1, d).applyTo(base, 6, 0, 21);
    assertEquals(List.of(a, d, c), next.keyspaces().get(0).segments());
    assertEquals(1000, next.flushedSeqno(), "an edit without a flushed seqno keeps the base's");
    assertEquals(3, next.walHead());
  }
}
