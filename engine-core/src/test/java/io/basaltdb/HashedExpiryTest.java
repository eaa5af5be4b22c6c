package io.basaltdb;

import static io.basaltdb.HashedRecoveryTest.HASHED;
import static io.basaltdb.HashedRecoveryTest.key;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.engine.QuietTime;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A hashed keyspace's expiry sweep: no compaction ever rewrites its key index, so expired records
 * leave the trie only through the sweep, and their documents become garbage in the commit of the
 * checkpoint that no longer holds them; never twice, never not at all, across crashes.
 */
@ExtendWith({NoLeakedAllocatorsExtension.class, QuietTime.Short.class})
class HashedExpiryTest {
  static final long T0 = 1_000_000;
  static final int KEYS = 1000;

  /** Keys below this expire at T0 + 500 (but in the crash test); the rest never do. */
  static final int EXPIRING = 400;

  static Options options(AtomicLong clock) {
    return HashedRecoveryTest.options()
        .clock(clock::get)
        .expiryCheckMillis(1)
        .syncMode(SyncMode.SYNC)
        .trieCheckpointBytes(1L << 30); // checkpoints only at close
  }

  static byte[] value(int k) {
    byte[] v = new byte[40 + k % 50];
    new Random(k).nextBytes(v);
    return v;
  }

  /**
   * Writes every key (the expiring ones with their expiry), then deletes the last and writes it
   * again: the checkpoint that commits the tombstone raises the purge seqno above every expiring
   * record's seqno (and the last write is a put, so the flushed seqno stays above the purge seqno).
   */
  static void load(Basalt db, Keyspace ks) {
    load(db, ks, EXPIRING);
  }

  static void load(Basalt db, Keyspace ks, int expiring) {
    for (int k = 0; k < KEYS; k++) ks.put(key(k), value(k), k < expiring ? T0 + 500 : 0);
    db.flush();
    ks.delete(key(KEYS - 1));
    db.flush(); // each version flushed, none folded in the write cache
    ks.put(key(KEYS - 1), value(KEYS - 1));
    db.flush();
  }

  /** The keys live once the expiring ones are gone. */
  static final int LIVE = KEYS - EXPIRING;

  static void awaitSwept(Basalt db, long records) {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (db.stats().get("trieExpiredRemoved") < records) {
      assertTrue(System.nanoTime() < deadline, "not swept: " + db.stats());
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
    assertEquals(records, db.stats().get("trieExpiredRemoved"));
  }

  static void checkKeys(Keyspace ks, boolean expired, String where) {
    checkKeys(ks, EXPIRING, expired, where);
  }

  static void checkKeys(Keyspace ks, int expiring, boolean expired, String where) {
    for (int k = 0; k < KEYS; k++) {
      byte[] got = ks.get(key(k));
      if (k < expiring && expired) assertNull(got, where + ": key " + k + " expired");
      else assertArrayEquals(value(k), got, where + ": key " + k);
    }
  }

  /**
   * Every version flushed is either one of the live records or garbage reported exactly once: a
   * sweep whose garbage were lost or reported twice breaks it.
   */
  static void checkGarbageExact(Basalt db, Keyspace ks, String where) {
    Stats st = db.stats();
    assertEquals(
        ks.approximateItemCount(),
        st.get("flushedRecords") - st.get("discardedVersions"),
        where + ": versions neither live nor garbage, or garbage twice: " + st);
  }

  /** With the default branching (256 root slots) a round takes 16 steps. */
  @Test
  void expiredRecords_areSwept_andTheirDocumentsBecomeGarbageOnce() {
    AtomicLong clock = new AtomicLong(T0);
    MemStorage storage = new MemStorage(1);
    try (Basalt db = Basalt.open(storage, options(clock))) {
      Keyspace ks =
          db.createKeyspace("h", KeyspaceOptions.defaults().kind(KeyspaceOptions.Kind.HASHED));
      load(db, ks);
      assertEquals(KEYS, ks.approximateItemCount());
      checkKeys(ks, false, "before the expiry");
      clock.set(T0 + 500); // at the expiry, not after it
      awaitSwept(db, EXPIRING);
      assertEquals(LIVE, ks.approximateItemCount(), "the trie holds the live keys");
      // as when compaction drops an expired record: a feed from below the swept records is
      // refused, since it could no longer tell of their expiry
      assertThrows(
          ChangesPurgedException.class,
          () -> ks.changes(2, ChangeFeed.NOW, ChangeFeed.Mode.EXACT),
          "a feed from before the sweep");
      checkKeys(ks, true, "swept");
      ks.put(key(0), value(0)); // a swept key written again
      db.flush();
    }
    try (Basalt db = Basalt.open(storage, options(clock))) {
      Keyspace ks = db.keyspace("h");
      assertTrue(db.stats().get("trieCheckpointRecordsLoaded") > 0, db.stats().toString());
      assertArrayEquals(value(0), ks.get(key(0)));
      for (int k = 1; k < EXPIRING; k++) assertNull(ks.get(key(k)), "key " + k);
      checkGarbageExact(db, ks, "reopened");
      db.flush();
      assertEquals(0, db.stats().get("trieExpiredRemoved"), "the checkpoint held none expired");
    }
  }

  @Test
  void aSnapshotFromBeforeTheExpiry_holdsTheSweepOff() throws InterruptedException {
    AtomicLong clock = new AtomicLong(T0);
    try (Basalt db = Basalt.open(new MemStorage(2), options(clock))) {
      Keyspace ks = db.createKeyspace("h", HASHED);
      load(db, ks);
      try (Snapshot snap = db.snapshot()) {
        clock.set(T0 + 1000);
        Thread.sleep(400); // four of the flusher's idle ticks
        assertEquals(0, db.stats().get("trieExpiredRemoved"), "swept under a snapshot");
        for (int k = 0; k < EXPIRING; k++) {
          assertArrayEquals(value(k), snap.get(ks, key(k)), "the snapshot judges at its instant");
          assertNull(ks.get(key(k)));
        }
      }
      awaitSwept(db, EXPIRING);
      checkKeys(ks, true, "swept once the snapshot closed");
    }
  }

  /**
   * Swept keys written again, then a crash before any checkpoint: the open loads the checkpoint
   * from before the sweep, whose records the new writes replace without a word. The swept documents
   * were reported by the flush of those writes, so none stays live for good.
   */
  @Test
  void sweptKeysWrittenAgain_thenACrash_leaveNoDocumentLiveForGood() {
    AtomicLong clock = new AtomicLong(T0);
    MemStorage storage = new MemStorage(5);
    try (Basalt db = Basalt.open(storage, options(clock))) {
      load(db, db.createKeyspace("h", HASHED)); // the close's checkpoint holds every record
    }
    Basalt db = Basalt.open(storage, options(clock));
    clock.set(T0 + 500);
    awaitSwept(db, EXPIRING);
    Keyspace ks = db.keyspace("h");
    for (int k = 0; k < 50; k++) ks.put(key(k), value(k)); // no expiry now
    db.flush();
    storage.crash(MemStorage.CrashMode.RANDOM);
    try {
      db.close();
    } catch (RuntimeException closing) {
      // the storage is halted
    }
    try (Basalt again = Basalt.open(storage, options(clock))) {
      Keyspace h = again.keyspace("h");
      for (int k = 0; k < KEYS; k++) {
        if (k >= 50 && k < EXPIRING) assertNull(h.get(key(k)), "key " + k + " expired");
        else assertArrayEquals(value(k), h.get(key(k)), "key " + k);
      }
      awaitSwept(again, EXPIRING - 50); // the old checkpoint's expired records, less those written
    }
    try (Basalt again = Basalt.open(storage, options(clock))) {
      checkGarbageExact(again, again.keyspace("h"), "after the crash and a second sweep");
    }
  }

  /**
   * A crash at every storage operation of the close that checkpoints after a sweep (the checkpoint,
   * the commit that makes the swept documents garbage): the open finds the expired keys absent and
   * the others intact, sweeps what its checkpoint still holds, and in the end every document is
   * either live or garbage once. 3 expired keys dirty a few pages (the double-write path), 400 most
   * (the whole rewrite).
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0} keys expire")
  @org.junit.jupiter.params.provider.ValueSource(ints = {3, 400})
  void crashAtEveryMutation_ofACheckpointAfterASweep(int expiring) {
    long seed = Long.getLong("basalt.test.seed", new Random().nextLong());
    AtomicLong clock = new AtomicLong(T0);
    long mutations = sweepAndClose(new MemStorage(seed), clock, -1, expiring);
    assertTrue(mutations > 5, "the checkpoint mutated " + mutations + " times");
    int applied = 0;
    for (int point = 0; point < mutations; point++) {
      MemStorage storage = new MemStorage(seed + point);
      clock.set(T0);
      sweepAndClose(storage, clock, point, expiring);
      storage.crash(MemStorage.CrashMode.RANDOM);
      String where = "crash after " + point + " mutations (-Dbasalt.test.seed=" + seed + ")";
      try (Basalt db = Basalt.open(storage, options(clock))) {
        Keyspace ks = db.keyspace("h");
        checkKeys(ks, expiring, true, where);
        applied += db.stats().get("trieDoubleWritesApplied");
        long left = ks.approximateItemCount() - (KEYS - expiring); // what the checkpoint held
        awaitSwept(db, left);
        db.flush();
      }
      try (Basalt db = Basalt.open(storage, options(clock))) {
        Keyspace ks = db.keyspace("h");
        checkKeys(ks, expiring, true, where + ", second open");
        checkGarbageExact(db, ks, where);
      }
    }
    if (expiring < 10) assertTrue(applied > 0, "no open completed a double-write file");
    else assertEquals(0, applied, "a whole rewrite writes no double-write file");
  }

  /**
   * Loads the keys and closes (a checkpoint holding them all); reopens, lets the clock pass their
   * expiry, waits for the sweep, and closes again, the storage halting after {@code crashPoint}
   * mutations of that close (never, if negative). Returns the close's mutations.
   */
  private static long sweepAndClose(
      MemStorage storage, AtomicLong clock, long crashPoint, int expiring) {
    try (Basalt db = Basalt.open(storage, options(clock))) {
      load(db, db.createKeyspace("h", HASHED), expiring);
    }
    Basalt db = Basalt.open(storage, options(clock));
    clock.set(T0 + 500);
    awaitSwept(db, expiring);
    long start = storage.mutationCount();
    if (crashPoint >= 0) storage.crashAfterMutations(crashPoint);
    try {
      db.close();
    } catch (StorageException e) {
      try {
        db.close();
      } catch (RuntimeException closing) {
        // the storage is halted
      }
    }
    return storage.mutationCount() - start;
  }
}
