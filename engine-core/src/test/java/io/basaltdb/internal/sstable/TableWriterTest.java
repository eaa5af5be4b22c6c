package io.basaltdb.internal.sstable;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Argument checks, lifecycle, separators, block-read accounting and concurrent readers. */
class TableWriterTest {
  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  @Test
  void add_refusesKeysOutOfOrderOrDuplicated() {
    TableWriter w = new TableWriter(TableModel.newFile(), TableOptions.defaults());
    w.add(b("b"), 1, 1, false, 1);
    assertThrows(InvalidArgumentException.class, () -> w.add(b("b"), 2, 1, false, 1));
    assertThrows(InvalidArgumentException.class, () -> w.add(b("a"), 2, 1, false, 1));
    assertThrows(InvalidArgumentException.class, () -> w.add(new byte[0], 2, 1, false, 1));
    w.add(b("b\0"), 2, 1, false, 1);
    w.add(new byte[] {(byte) 0x80}, 3, 1, false, 1); // unsigned: 0x80 sorts after 'b'
    assertEquals(3, w.entryCount());
  }

  /** Format 3's flag bit 2: written per record, read back by iterators and gets, off by default. */
  @Test
  void olderReported_roundTripsPerRecord() {
    StorageFile f = TableModel.newFile();
    TableWriter w = new TableWriter(f, TableOptions.defaults());
    for (int i = 0; i < 3000; i++) {
      byte[] k = String.format("k%06d", i).getBytes(UTF_8);
      if (i % 3 == 0) w.add(k, i, 10, i % 2 == 0, i);
      else w.add(k, i, 10, i % 2 == 0, i, i % 3 == 1);
    }
    w.finish();
    try (TableReader r = TableReader.open(f, "t.sst");
        TableIterator it = r.iterator()) {
      int i = 0;
      for (it.seekFirst(); it.valid(); it.next(), i++) {
        assertEquals(i % 3 == 1, it.olderReported(), "record " + i);
        assertEquals(i % 2 == 0, it.tombstone(), "record " + i);
        assertEquals(i, it.hint());
      }
      assertEquals(3000, i);
      KeyRecord rec = new KeyRecord();
      for (int j = 0; j < 3000; j += 7) {
        assertTrue(r.get(String.format("k%06d", j).getBytes(UTF_8), rec));
        assertEquals(j % 3 == 1, rec.olderReported, "get " + j);
        assertEquals(j % 2 == 0, rec.tombstone, "get " + j);
      }
    }
  }

  /**
   * Format 6: a table with a tombstone counts them in its meta block (what the approximate key
   * count subtracts) and says version 6; one without stays version 4, which earlier builds read.
   */
  @Test
  void tombstones_areCounted_andOnlyATableWithOneIsVersion6() {
    StorageFile f = TableModel.newFile();
    TableWriter w = new TableWriter(f, TableOptions.defaults());
    int tombstones = 0;
    for (int i = 0; i < 2000; i++) {
      boolean t = i % 7 == 3;
      if (t) tombstones++;
      w.add(String.format("k%06d", i).getBytes(UTF_8), i, 10, t, i);
    }
    assertEquals(tombstones, w.finish().tombstones());
    assertEquals(6, footerVersion(f));
    try (TableReader r = TableReader.open(f, "t.sst")) {
      assertEquals(tombstones, r.info().tombstones());
      assertEquals(2000, r.info().entryCount());
    }
    StorageFile plain = TableModel.newFile();
    TableWriter p = new TableWriter(plain, TableOptions.defaults());
    p.add(b("a"), 1, 1, false, 1);
    assertEquals(0, p.finish().tombstones());
    assertEquals(4, footerVersion(plain));
    try (TableReader r = TableReader.open(plain, "p.sst")) {
      assertEquals(0, r.info().tombstones());
    }
  }

  private static int footerVersion(StorageFile f) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(Format.FOOTER_SIZE);
    f.read(f.size() - Format.FOOTER_SIZE, b);
    return Format.getIntLE(b.array(), Format.FOOTER_VERSION_OFFSET);
  }

  @Test
  void add_refusesBadArguments() {
    TableWriter w = new TableWriter(TableModel.newFile(), TableOptions.defaults());
    assertThrows(InvalidArgumentException.class, () -> w.add(null, 1, 1, false, 1));
    assertThrows(
        InvalidArgumentException.class,
        () -> w.add(new byte[KeyRecord.MAX_KEY_SIZE + 1], 1, 1, false, 1));
    assertThrows(InvalidArgumentException.class, () -> w.add(b("a"), -1, 1, false, 1));
    assertThrows(InvalidArgumentException.class, () -> w.add(b("a"), 1, -1, false, 1));
    w.add(new byte[KeyRecord.MAX_KEY_SIZE], Long.MAX_VALUE, Integer.MAX_VALUE, true, -1);
    assertEquals(1, w.finish().entryCount());
  }

  @Test
  void writer_refusesNonEmptyFileAndBadOptions() {
    assertThrows(
        InvalidArgumentException.class,
        () -> new TableWriter(TableModel.file(new byte[1]), TableOptions.defaults()));
    assertThrows(
        InvalidArgumentException.class,
        () -> new TableWriter(TableModel.newFile(), new TableOptions(31, 16, 10)));
    assertThrows(
        InvalidArgumentException.class,
        () -> new TableWriter(TableModel.newFile(), new TableOptions(4096, 0, 10)));
    assertThrows(
        InvalidArgumentException.class,
        () -> new TableWriter(TableModel.newFile(), new TableOptions(4096, 16, -1)));
    assertThrows(
        InvalidArgumentException.class,
        () -> new TableWriter(TableModel.newFile(), new TableOptions(4096, 16, 65)));
    TableOptions.defaults().validate();
    assertEquals(new TableOptions(4096, 16, 10), TableOptions.defaults());
  }

  @Test
  void writer_isDoneAfterFinish() {
    TableWriter w = new TableWriter(TableModel.newFile(), TableOptions.defaults());
    w.add(b("a"), 1, 1, false, 1);
    w.finish();
    assertThrows(ClosedException.class, () -> w.add(b("b"), 1, 1, false, 1));
    assertThrows(ClosedException.class, w::finish);
  }

  @Test
  void failedWrite_killsTheWriter() {
    MemStorage storage = new MemStorage(0);
    StorageFile f = storage.create("t.sst");
    TableWriter w = new TableWriter(f, new TableOptions(64, 4, 10));
    storage.setFaultInjector(
        (op, name) ->
            op == MemStorage.Op.WRITE ? MemStorage.Fault.IO_ERROR : MemStorage.Fault.NONE);
    // Blocks are gathered into a write buffer: the add that fills it writes, and fails.
    int added = 0;
    StorageException failed = null;
    while (failed == null && added < 100_000) {
      byte[] key = String.format("k%08d-%040d", added, added++).getBytes();
      try {
        w.add(key, 1, 100, false, 1);
      } catch (StorageException e) {
        failed = e;
      }
    }
    assertTrue(failed != null, "a write failed once the buffer filled");
    assertTrue(added > 1, "gathered first: " + added);
    storage.setFaultInjector(null);
    assertThrows(ClosedException.class, () -> w.add(b("z"), 1, 1, false, 1));
    assertThrows(ClosedException.class, w::finish);
  }

  @Test
  void failedSync_failsFinish() {
    MemStorage storage = new MemStorage(0);
    TableWriter w = new TableWriter(storage.create("t.sst"), TableOptions.defaults());
    w.add(b("a"), 1, 1, false, 1);
    storage.setFaultInjector(
        (op, name) -> op == MemStorage.Op.SYNC ? MemStorage.Fault.NO_SPACE : MemStorage.Fault.NONE);
    assertThrows(StorageException.class, w::finish);
    assertThrows(ClosedException.class, w::finish);
  }

  @Test
  void shortestSeparator_isBetweenItsArguments() {
    assertArrayEquals(b("abd"), TableWriter.shortestSeparator(b("abcxyz"), b("abzz")));
    assertArrayEquals(b("abc"), TableWriter.shortestSeparator(b("abc"), b("abcd"))); // prefix
    assertArrayEquals(
        b("abcxyz"), TableWriter.shortestSeparator(b("abcxyz"), b("abdz"))); // c+1 == d
    byte[] ax = {'a', (byte) 0xFF, 'x'};
    assertArrayEquals(
        ax, TableWriter.shortestSeparator(ax, new byte[] {'b'})); // 'a' + 1 is not below 'b'
    assertArrayEquals(
        new byte[] {(byte) 0xFF, 2},
        TableWriter.shortestSeparator(
            new byte[] {(byte) 0xFF, 1, 9}, new byte[] {(byte) 0xFF, 5})); // unsigned
    SplittableRandom r = new SplittableRandom(TableRoundTripTest.seed());
    for (int i = 0; i < 10_000; i++) {
      byte[] x = TableModel.bytes(r, r.nextInt(6));
      byte[] y = TableModel.bytes(r, r.nextInt(6));
      int c = KeyRecord.compareKeys(x, y);
      if (c == 0) continue;
      byte[] a = c < 0 ? x : y;
      byte[] z = c < 0 ? y : x;
      byte[] s = TableWriter.shortestSeparator(a, z);
      assertTrue(KeyRecord.compareKeys(a, s) <= 0 && KeyRecord.compareKeys(s, z) < 0);
      assertTrue(s.length <= a.length);
    }
  }

  @Test
  void blockReads_countDataBlocksOnly_andTheFilterSavesReads() {
    TableModel m = new TableModel();
    for (int i = 0; i < 1000; i++) m.put(b(String.format("key%05d", i * 2)), i, i, false, i);
    StorageFile f = TableModel.newFile();
    m.write(f, new TableOptions(256, 16, 10));
    try (TableReader t = TableReader.open(f, "t")) {
      assertEquals(0, t.blockReads(), "open reads no data block");
      KeyRecord out = new KeyRecord();
      int maybe = 0;
      for (int i = 0; i < 1000; i++) {
        byte[] absent = b(String.format("key%05d", i * 2 + 1));
        if (t.mayContain(absent)) maybe++;
        assertFalse(t.get(absent, out));
      }
      assertEquals(
          maybe, t.blockReads(), "a get reads a block only when the filter passes the key");
      assertTrue(maybe < 50, "filter passed " + maybe + " of 1000 absent keys");
      assertFalse(t.get(b("a"), out)); // below the smallest key
      assertFalse(t.get(b("z"), out)); // above the largest key
      assertEquals(maybe, t.blockReads());
      TableIterator it = t.iterator();
      long before = t.blockReads();
      it.seekFirst();
      while (it.valid()) it.next();
      assertEquals(before + t.blockCount(), t.blockReads(), "a scan reads each block once");
    }
  }

  @Test
  void closedReaderAndIterator_throwClosedException() {
    TableModel m = new TableModel();
    m.put(b("a"), 1, 1, false, 1);
    StorageFile f = TableModel.newFile();
    m.write(f, TableOptions.defaults());
    TableReader t = TableReader.open(f, "t");
    TableIterator it = t.iterator();
    assertThrows(NoSuchElementException.class, it::key);
    it.seekFirst();
    KeyRecord out = new KeyRecord();
    assertSame(out, it.record(out));
    assertEquals(1, it.seqno());
    it.next();
    assertThrows(NoSuchElementException.class, it::next);
    it.close();
    assertThrows(ClosedException.class, it::seekFirst);
    TableIterator it2 = t.iterator();
    t.close();
    t.close();
    assertTrue(TableModel.isClosed(f));
    assertThrows(ClosedException.class, () -> t.get(b("a"), out));
    assertThrows(ClosedException.class, it2::seekFirst);
    assertThrows(ClosedException.class, t::iterator);
  }

  /**
   * get reuses one cursor per thread across every table: lookups that alternate between tables with
   * long and short keys, and a lookup that fails on a damaged block, must not leave state behind
   * that changes the next answer.
   */
  @Test
  void get_alternatingTablesAndAFailedGet_eachAnswerRight() {
    SplittableRandom r = new SplittableRandom(TableRoundTripTest.seed());
    TableModel longKeys = TableModel.random(r, 300, 3000);
    TableModel shortKeys = TableModel.random(r, 300, 6);
    StorageFile lf = TableModel.newFile();
    longKeys.write(lf, new TableOptions(4096, 4, 10));
    StorageFile sf = TableModel.newFile();
    shortKeys.write(sf, new TableOptions(64, 2, 0));
    byte[] damaged = TableModel.contents(sf);
    damaged[0] ^= 1; // the first data block
    try (TableReader l = TableReader.open(lf, "long");
        TableReader s = TableReader.open(sf, "short");
        TableReader d = TableReader.open(TableModel.file(damaged), "damaged")) {
      List<KeyRecord> ls = new ArrayList<>(longKeys.map.values());
      List<KeyRecord> ss = new ArrayList<>(shortKeys.map.values());
      KeyRecord out = new KeyRecord();
      for (int i = 0; i < 300; i++) {
        KeyRecord wl = ls.get(i);
        assertTrue(l.get(wl.key, out));
        TableModel.assertRecord(wl, out, "long " + i);
        assertThrows(
            io.basaltdb.CorruptionException.class, () -> d.get(shortKeys.map.firstKey(), out));
        KeyRecord ws = ss.get(i);
        assertTrue(s.get(ws.key, out));
        TableModel.assertRecord(ws, out, "short " + i);
        byte[] absent =
            java.util.Arrays.copyOf(ws.key, ws.key.length + 1); // sorts right after ws.key
        assertEquals(
            shortKeys.map.containsKey(absent), s.get(absent, out), "short " + i + " + 1 byte");
      }
    }
  }

  @Test
  void concurrentGetsAndIterators_seeTheSameTable() throws Exception {
    SplittableRandom r = new SplittableRandom(TableRoundTripTest.seed());
    TableModel m = TableModel.random(r, 5000, 24);
    StorageFile f = TableModel.newFile();
    m.write(f, new TableOptions(512, 8, 10));
    List<KeyRecord> all = new ArrayList<>(m.map.values());
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (TableReader t = TableReader.open(f, "t")) {
      List<Future<?>> futures = new ArrayList<>();
      for (int thread = 0; thread < 4; thread++) {
        int id = thread;
        futures.add(
            pool.submit(
                () -> {
                  KeyRecord out = new KeyRecord();
                  for (int i = id; i < all.size(); i += 4) {
                    assertTrue(t.get(all.get(i).key, out));
                    TableModel.assertRecord(all.get(i), out, "thread " + id);
                  }
                  try (TableIterator it = t.iterator()) {
                    it.seekFirst();
                    TableModel.assertRest(it, all, "thread " + id);
                  }
                  return null;
                }));
      }
      for (Future<?> fu : futures) fu.get();
    } finally {
      pool.shutdownNow();
    }
  }
}
