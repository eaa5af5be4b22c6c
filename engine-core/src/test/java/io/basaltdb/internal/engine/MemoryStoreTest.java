package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.basaltdb.ChangesPurgedException;
import io.basaltdb.Options;
import io.basaltdb.StorageException;
import io.basaltdb.internal.engine.writecache.Batch;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The in-memory store's rollback, relief and background pass at the points a black-box test cannot
 * reach: a rollback that stops part way ({@link MemoryStore.RollbackHooks}) and one whose
 * checkpoint expires while it reads it. {@code io.basaltdb.InMemoryChangesTest} covers the rest
 * through the public API.
 */
class MemoryStoreTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static void put(Engine e, String k, String v) {
    Batch b = new Batch(1);
    b.add(1, Batch.PUT, b(k), b(v));
    e.write(b);
  }

  static Options mem() {
    return Options.defaults().memoryQuota(64L << 20);
  }

  /**
   * A rollback that stops part way (a bug: the hook throws after the 11th version put back) fails
   * the store, so nothing is written over the half-rolled-back state, and has already spent its
   * seqno and made it the purge seqno, so a feed consumer past it starts over.
   */
  @Test
  void aRollbackThatStopsPartWay_failsTheStore_andTellsFeedConsumers() {
    try (Engine e = Engine.open(null, mem())) {
      for (int i = 0; i < 100; i++) put(e, "k" + i, "old");
      Engine.CheckpointInfo cp = e.checkpoint();
      for (int i = 0; i < 100; i++) put(e, "k" + i, "new");
      long last = e.versions().lastSeqno();
      MemoryStore store = e.memoryStore();
      store.rollbackHooks =
          new MemoryStore.RollbackHooks(
              () -> {},
              i -> {
                if (i == 10) throw new IllegalStateException("injected");
              });

      StorageException x = assertThrows(StorageException.class, () -> e.rollback(cp.id()));

      assertSame(x, e.failure(), "the store failed with the rollback's error");
      assertEquals(last + 1, e.versions().lastSeqno(), "the rollback's seqno is spent");
      assertEquals(last + 1, store.purgeSeqno(1));
      assertThrows(
          ChangesPurgedException.class, () -> e.changes(null, 1, last, Long.MAX_VALUE, false));
      assertThrows(StorageException.class, () -> put(e, "x", "y"));
      assertThrows(StorageException.class, () -> e.rollback(cp.id()));
      assertArrayEquals(b("new"), e.get(1, b("k99")), "the versions after the failure stay");
    }
  }

  /**
   * A checkpoint that expires (the background pass closes its snapshot) after a rollback found it
   * is still rolled back to: the rollback reads a reference of its own, not a closed snapshot.
   */
  @Test
  void aCheckpointThatExpiresWhileARollbackReadsIt_isRolledBackTo() {
    AtomicLong clock = new AtomicLong(1_000_000);
    try (Engine e = Engine.open(null, mem().clock(clock::get).checkpointRetentionMillis(60_000))) {
      for (int i = 0; i < 100; i++) put(e, "k" + i, "old");
      Engine.CheckpointInfo cp = e.checkpoint();
      for (int i = 0; i < 100; i++) put(e, "k" + i, "new");
      MemoryStore store = e.memoryStore();
      store.rollbackHooks =
          new MemoryStore.RollbackHooks(
              () -> {
                clock.addAndGet(60_000);
                store.expireCheckpoints(clock.get());
                assertEquals(List.of(), store.checkpoints(), "the checkpoint expired");
              },
              i -> {});

      Engine.CheckpointInfo now = e.rollback(cp.id());

      for (int i = 0; i < 100; i++) assertArrayEquals(b("old"), e.get(1, b("k" + i)));
      assertEquals(List.of(now), e.checkpoints());
    }
  }

  /**
   * The background pass looks for deletions to forget at a period of the deletion retention alone
   * (never with a retention of 0, which forgets each deletion as it is applied), not at the
   * shortest of both retentions; and it takes a (time, seqno) mark only when the seqno moved, so a
   * short checkpoint retention beside a long deletion retention no longer ticks every 10 ms and
   * piles up marks.
   */
  @Test
  void theBackgroundPass_timesPurgesByTheDeletionRetention_andMarksOnlyNewSeqnos() {
    try (Engine e = Engine.open(null, mem().deletionRetentionMillis(0))) {
      assertEquals(0, e.memoryStore().purgeEveryMillis, "nothing to purge in the background");
      assertEquals(10_000, e.memoryStore().expireEveryMillis, "10 minutes' checkpoints");
    }
    AtomicLong clock = new AtomicLong(1_000_000);
    Options o =
        mem().clock(clock::get).deletionRetentionMillis(3_600_000).checkpointRetentionMillis(80);
    try (Engine e = Engine.open(null, o)) {
      MemoryStore store = e.memoryStore();
      assertEquals(10_000, store.purgeEveryMillis);
      assertEquals(10, store.expireEveryMillis);
      put(e, "a", "1");
      store.purgeOld(clock.incrementAndGet());
      store.purgeOld(clock.incrementAndGet());
      assertEquals(1, store.marks(), "no mark for a seqno that did not move");
      put(e, "b", "2");
      store.purgeOld(clock.incrementAndGet());
      assertEquals(2, store.marks());
    }
  }
}
