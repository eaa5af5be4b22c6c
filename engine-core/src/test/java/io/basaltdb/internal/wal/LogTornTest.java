package io.basaltdb.internal.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A damaged log never yields a wrong record: the reader stops at the first bad one and says where.
 */
class LogTornTest {
  private static List<byte[]> records(Random random, int count, int max) {
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      records.add(LogTestSupport.payload(random, max));
    }
    return records;
  }

  @Test
  void tornTail_atEveryByteOfTheLastRecord_stopsRightBeforeIt() {
    long seed = LogTestSupport.seed();
    Random random = new Random(seed);
    List<byte[]> records = records(random, 20, 200);
    records.add(new byte[300]);
    random.nextBytes(records.get(records.size() - 1));
    MemStorage storage = new MemStorage(seed);
    try (StorageFile file = storage.create("1.log")) {
      List<Long> offsets = LogTestSupport.write(new LogWriter(file, 0), records, 3);
      long lastStart = offsets.get(offsets.size() - 1);
      long end = file.size();
      for (long cut = end - 1; cut >= lastStart; cut--) {
        file.truncate(cut);
        LogTestSupport.Result r = LogTestSupport.readAll(file);
        String where = "seed=" + seed + " cut=" + cut + " reason=" + r.reason();
        assertEquals(records.size() - 1, r.records().size(), where);
        LogTestSupport.assertPrefix(records, r.records(), where);
        assertEquals(lastStart, r.stopOffset(), where);
        assertEquals(cut == lastStart ? LogReader.Stop.END : LogReader.Stop.TORN, r.stop(), where);
      }
    }
  }

  @Test
  void flippedByte_anywhere_stopsExactlyAtTheDamagedRecord() {
    long seed = LogTestSupport.seed();
    Random random = new Random(seed);
    List<byte[]> records = records(random, 30, 60);
    MemStorage storage = new MemStorage(seed);
    List<Long> offsets;
    long size;
    try (StorageFile file = storage.create("1.log")) {
      offsets = LogTestSupport.write(new LogWriter(file, 0), records, 4);
      size = file.size();
    }
    for (long at = 0; at < size; at++) {
      int damaged = 0;
      while (damaged + 1 < offsets.size() && offsets.get(damaged + 1) <= at) {
        damaged++;
      }
      storage.flipByte("1.log", at);
      try (StorageFile file = storage.open("1.log")) {
        LogTestSupport.Result r = LogTestSupport.readAll(file);
        String where = "seed=" + seed + " flipped=" + at + " reason=" + r.reason();
        assertEquals(damaged, r.records().size(), where);
        LogTestSupport.assertPrefix(records, r.records(), where);
        assertEquals(LogReader.Stop.TORN, r.stop(), where);
        assertEquals((long) offsets.get(damaged), r.stopOffset(), where);
      }
      storage.flipByte("1.log", at); // undo
    }
  }

  @Test
  void preallocatedZeros_afterTheRecords_areTorn_lengthZero() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      file.preallocate(4096);
      LogWriter writer = new LogWriter(file, 0);
      writer.add(ByteBuffer.wrap(new byte[] {1, 2, 3}));
      long end = writer.flush();
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(1, r.records().size());
      assertEquals(LogReader.Stop.TORN, r.stop());
      assertEquals(end, r.stopOffset());
      assertEquals("length 0", r.reason());
    }
  }

  @Test
  void shortGarbage_andAnOversizedLength_areTorn() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      file.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(LogReader.Stop.TORN, r.stop());
      assertEquals(0, r.stopOffset());
      assertTrue(r.reason().contains("header extends past end of file"), r.reason());

      ByteBuffer header = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
      header.putInt(0, LogWriter.MAX_PAYLOAD + 1);
      file.write(0, header);
      r = LogTestSupport.readAll(file);
      assertTrue(r.reason().contains("exceeds the maximum"), r.reason());

      header.putInt(0, -1);
      file.write(0, header.rewind());
      r = LogTestSupport.readAll(file);
      assertTrue(r.reason().contains("length 4294967295 exceeds"), r.reason());

      header.putInt(0, 100);
      file.write(0, header.rewind());
      r = LogTestSupport.readAll(file);
      assertTrue(r.reason().contains("extends past end of file"), r.reason());

      header.putInt(0, 8);
      file.write(0, header.rewind());
      r = LogTestSupport.readAll(file);
      assertTrue(r.reason().startsWith("checksum mismatch"), r.reason());
      assertEquals(0, r.records().size());
    }
  }

  @Test
  void recordAt_andFrameLengthAt_refuseDamagedFrames_withoutAllocatingForAHugeLength() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      writer.add(ByteBuffer.wrap(new byte[] {1, 2, 3}));
      long end = writer.flush();
      assertEquals(11, LogReader.frameLengthAt(file, 0));
      ByteBuffer payload = LogReader.recordAt(file, 0);
      assertEquals(ByteBuffer.wrap(new byte[] {1, 2, 3}), payload);
      for (long bad : new long[] {-1, 1, end, end - 1, Long.MAX_VALUE}) {
        assertEquals(-1, LogReader.frameLengthAt(file, bad), "offset " + bad);
        assertEquals(null, LogReader.recordAt(file, bad), "offset " + bad);
      }
      ByteBuffer header = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      for (int length :
          new int[] {
            0, -1, Integer.MIN_VALUE, LogWriter.MAX_PAYLOAD + 1, LogWriter.MAX_PAYLOAD, 4
          }) {
        header.putInt(0, length);
        file.write(end, header.rewind());
        String where = "length " + length;
        assertEquals(
            -1, LogReader.frameLengthAt(file, end), where); // 8 bytes of file: no payload fits
        assertEquals(null, LogReader.recordAt(file, end), where);
        LogTestSupport.Result r = LogTestSupport.readAll(file);
        assertEquals(1, r.records().size(), where);
        assertEquals(LogReader.Stop.TORN, r.stop(), where);
        assertEquals(end, r.stopOffset(), where);
      }
      file.write(
          end + 8,
          ByteBuffer.wrap(new byte[] {9, 9, 9, 9})); // the payload fits, the checksum does not
      assertEquals(12, LogReader.frameLengthAt(file, end));
      assertEquals(null, LogReader.recordAt(file, end));
      assertTrue(LogTestSupport.readAll(file).reason().startsWith("checksum mismatch"));
    }
  }
}
