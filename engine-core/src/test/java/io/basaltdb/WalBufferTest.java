package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The WAL buffer ({@link Options#walBufferBytes}, {@link Basalt#flushWal}): buffered writes cost no
 * WAL write, {@code flushWal}, a full buffer, a write cache switch and close write them, and a
 * process crash ({@link MemStorage.CrashMode#KEEP_ALL}: every write issued reached the device)
 * keeps every write up to some point and none after it.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class WalBufferTest {
  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static Options options(long buffer) {
    return Options.defaults()
        .syncMode(SyncMode.NONE)
        .walBufferBytes(buffer)
        .checkpointIntervalMillis(0);
  }

  @Test
  void flushWal_writesTheBuffer_andAProcessCrashLosesOnlyWhatCameAfter() {
    MemStorage storage = new MemStorage(3);
    Basalt db = Basalt.open(storage, options(1 << 20));
    try {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 100; i++) ks.put(b("k" + i), b("v" + i));
      long before = db.stats().get("walBytesWritten");
      db.flushWal();
      assertTrue(db.stats().get("walBytesWritten") > before, "flushWal wrote the buffer");
      long flushed = db.stats().get("walBytesWritten");
      for (int i = 0; i < 50; i++) ks.put(b("m" + i), b("v" + i));
      assertEquals(flushed, db.stats().get("walBytesWritten"), "buffered: no WAL write");
      assertArrayEquals(b("v7"), ks.get(b("m7")), "visible before it is written");
      storage.crash(MemStorage.CrashMode.KEEP_ALL);
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, options(1 << 20))) {
      Keyspace ks = again.keyspace("default");
      for (int i = 0; i < 100; i++) assertArrayEquals(b("v" + i), ks.get(b("k" + i)), "k" + i);
      for (int i = 0; i < 50; i++) assertNull(ks.get(b("m" + i)), "m" + i + " was still buffered");
    }
  }

  @Test
  void aFullBuffer_isWrittenOnItsOwn_andACrashKeepsAPrefixOfTheWrites() {
    MemStorage storage = new MemStorage(5);
    int n = 400;
    Basalt db = Basalt.open(storage, options(4096));
    try {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < n; i++) ks.put(b(String.format("k%04d", i)), new byte[100]);
      storage.crash(MemStorage.CrashMode.KEEP_ALL);
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, options(4096))) {
      Keyspace ks = again.keyspace("default");
      int kept = 0;
      while (kept < n && ks.get(b(String.format("k%04d", kept))) != null) kept++;
      for (int i = kept; i < n; i++)
        assertNull(ks.get(b(String.format("k%04d", i))), "a write after a lost one survived");
      // 400 records of about 130 bytes: all but the last buffer's (under 4 KiB) were written
      assertTrue(kept >= n - 4096 / 100 && kept < n, "kept " + kept);
    }
  }

  @Test
  void aWriteCacheSwitch_andClose_writeTheBufferFirst() {
    MemStorage storage = new MemStorage(8);
    Basalt db = Basalt.open(storage, options(1 << 20));
    try {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 20; i++) ks.put(b("a" + i), b("v"));
      db.flush(); // the rotation writes the buffer before its link record
      for (int i = 0; i < 20; i++) ks.put(b("b" + i), b("v"));
      db.flushWal();
      for (int i = 0; i < 20; i++) ks.put(b("c" + i), b("v"));
      storage.crash(MemStorage.CrashMode.KEEP_ALL);
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, options(1 << 20))) {
      Keyspace ks = again.keyspace("default");
      for (int i = 0; i < 20; i++) {
        assertArrayEquals(b("v"), ks.get(b("a" + i)));
        assertArrayEquals(b("v"), ks.get(b("b" + i)));
        assertNull(ks.get(b("c" + i)));
      }
      for (int i = 0; i < 20; i++) ks.put(b("d" + i), b("v"));
    } // a clean close writes the buffer
    try (Basalt again = Basalt.open(storage, options(0))) {
      for (int i = 0; i < 20; i++)
        assertArrayEquals(b("v"), again.keyspace("default").get(b("d" + i)));
    }
  }

  @Test
  void aBatchThatSkipsTheWal_keepsTheBufferedWritesBeforeIt() {
    MemStorage storage = new MemStorage(11);
    Options o = options(1 << 20).walSkipBytes(16 << 10);
    Basalt db = Basalt.open(storage, o);
    try {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 30; i++) ks.put(b("before" + i), b("v")); // buffered
      WriteBatch big = new WriteBatch();
      for (int i = 0; i < 40; i++) big.put(ks, b("big" + i), new byte[1024]); // skips the WAL
      db.write(big);
      assertTrue(db.stats().get("walSkippedBatches") > 0);
      for (int i = 0; i < 30; i++) ks.put(b("after" + i), b("v")); // buffered, then lost
      storage.crash(MemStorage.CrashMode.KEEP_ALL);
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    try (Basalt again = Basalt.open(storage, o)) {
      Keyspace ks = again.keyspace("default");
      for (int i = 0; i < 30; i++) assertArrayEquals(b("v"), ks.get(b("before" + i)), "before" + i);
      for (int i = 0; i < 40; i++) assertEquals(1024, ks.get(b("big" + i)).length, "big" + i);
      for (int i = 0; i < 30; i++) assertNull(ks.get(b("after" + i)), "after" + i);
    }
  }

  @Test
  void aFailureElsewhere_leavesTheBufferedWritesToClose() {
    MemStorage storage = new MemStorage(13);
    Basalt db = Basalt.open(storage, options(1 << 20));
    try {
      Keyspace ks = db.keyspace("default");
      db.createKeyspace("other");
      for (int i = 0; i < 20; i++) ks.put(b("buffered" + i), b("v")); // acknowledged, buffered
      storage.setFaultInjector( // a manifest write fails: the store fails, the log is untouched
          (op, name) ->
              op == MemStorage.Op.WRITE && name.startsWith("manifest/")
                  ? MemStorage.Fault.IO_ERROR
                  : MemStorage.Fault.NONE);
      assertThrows(StorageException.class, () -> db.dropKeyspace("other"));
      assertThrows(BasaltException.class, () -> ks.put(b("refused"), b("v")));
    } finally {
      ChangeFeedTest.closeCrashed(db); // writes the buffer: the log itself is intact
    }
    storage.setFaultInjector(null);
    storage.crash(MemStorage.CrashMode.KEEP_ALL); // then the process dies
    try (Basalt again = Basalt.open(storage, options(1 << 20))) {
      Keyspace ks = again.keyspace("default");
      for (int i = 0; i < 20; i++) assertArrayEquals(b("v"), ks.get(b("buffered" + i)), "" + i);
      assertNull(ks.get(b("refused")));
    }
  }

  @Test
  void aFailedWalWrite_neverWritesTheGroupItRefused() {
    MemStorage storage = new MemStorage(17);
    Basalt db = Basalt.open(storage, options(256));
    try {
      Keyspace ks = db.keyspace("default");
      // about 130 bytes a record: the second put fills the 256-byte buffer, which is written
      for (int i = 0; i < 2; i++) ks.put(b("ok" + i), new byte[100]);
      ks.put(b("buffered"), b("v")); // waits in the buffer
      java.util.concurrent.atomic.AtomicBoolean fail =
          new java.util.concurrent.atomic.AtomicBoolean(true);
      storage.setFaultInjector(
          (op, name) ->
              fail.get() && op == MemStorage.Op.WRITE && name.startsWith("wal/")
                  ? MemStorage.Fault.IO_ERROR
                  : MemStorage.Fault.NONE);
      assertThrows(StorageException.class, () -> ks.put(b("refused"), new byte[300]));
      fail.set(false); // the device recovers: the close below still writes nothing more
    } finally {
      ChangeFeedTest.closeCrashed(db);
    }
    storage.crash(MemStorage.CrashMode.KEEP_ALL);
    try (Basalt again = Basalt.open(storage, options(256))) {
      Keyspace ks = again.keyspace("default");
      for (int i = 0; i < 2; i++) assertEquals(100, ks.get(b("ok" + i)).length);
      assertNull(ks.get(b("refused")), "a write that threw never reappears");
      assertNull(ks.get(b("buffered")), "lost with the log's failure, as in a crash");
    }
  }

  @Test
  void badSettings_areRefused_andAnInMemoryStoreHasNothingToWrite() {
    assertThrows(
        InvalidArgumentException.class,
        () -> Basalt.open(new MemStorage(1), options(4096).syncMode(SyncMode.SYNC)));
    assertThrows(InvalidArgumentException.class, () -> options(-1).validate());
    assertThrows(
        InvalidArgumentException.class, () -> options(Options.MAX_WAL_BUFFER_BYTES + 1).validate());
    try (Basalt db = Basalt.openInMemory(Options.defaults())) {
      db.keyspace("default").put(b("k"), b("v"));
      db.flushWal();
      assertArrayEquals(b("v"), db.keyspace("default").get(b("k")));
    }
  }
}
