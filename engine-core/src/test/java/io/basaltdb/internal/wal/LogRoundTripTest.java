package io.basaltdb.internal.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Records written by {@link LogWriter} come back from {@link LogReader} unchanged and in order. */
class LogRoundTripTest {
  @Test
  void manyRandomRecords_roundTrip() {
    long seed = LogTestSupport.seed();
    Random random = new Random(seed);
    String where = "seed=" + seed;
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      records.add(LogTestSupport.payload(random, random.nextInt(50) == 0 ? 200_000 : 300));
    }
    MemStorage storage = new MemStorage(seed);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      List<Long> offsets = LogTestSupport.write(writer, records, 1 + random.nextInt(20));
      assertEquals(file.size(), writer.offset(), where);
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(records.size(), r.records().size(), where);
      for (int i = 0; i < records.size(); i++) {
        assertArrayEquals(records.get(i), r.records().get(i), where + " record " + i);
      }
      assertEquals(offsets, r.offsets(), where);
      assertEquals(LogReader.Stop.END, r.stop(), where);
      assertEquals(file.size(), r.stopOffset(), where);
    }
  }

  @Test
  void frame_isLengthThenCrc32cOfLengthAndPayload_littleEndian() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      writer.add(ByteBuffer.wrap(new byte[] {7, 8, 9}));
      assertEquals(11, writer.pending());
      assertEquals(0, writer.offset());
      assertEquals(0, file.size(), "add does not write");
      assertEquals(11, writer.flush());
      assertEquals(0, writer.pending());
    }
    ByteBuffer bytes = ByteBuffer.wrap(storage.contents("1.log")).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(3, bytes.getInt(0));
    CRC32C crc = new CRC32C();
    crc.update(new byte[] {3, 0, 0, 0, 7, 8, 9});
    assertEquals((int) crc.getValue(), bytes.getInt(4));
    assertEquals(7, bytes.get(8));
  }

  @Test
  void flush_writesEverythingAddedWithOneWrite() {
    MemStorage storage = new MemStorage(1);
    AtomicInteger writes = new AtomicInteger();
    storage.setFaultInjector(
        (op, name) -> {
          if (op == MemStorage.Op.WRITE) {
            writes.incrementAndGet();
          }
          return MemStorage.Fault.NONE;
        });
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      ByteBuffer payload = ByteBuffer.wrap(new byte[100]);
      for (int i = 0; i < 5000; i++) { // 540 KB: the buffer grows past its initial size
        writer.add(payload);
        assertEquals(100, payload.remaining(), "add leaves the caller's buffer alone");
      }
      assertEquals(5000 * 108, writer.flush());
      assertEquals(1, writes.get());
      assertEquals(5000 * 108, writer.flush(), "nothing pending: no write");
      assertEquals(1, writes.get());
      writer.sync();
      assertEquals(5000 * 108, storage.durableSize("1.log"));
    }
  }

  @Test
  void add_framesAnyBuffer_direct_sliced_orPositioned_andLeavesItAlone() {
    MemStorage storage = new MemStorage(1);
    byte[] backing = new byte[64];
    new Random(9).nextBytes(backing);
    ByteBuffer direct = ByteBuffer.allocateDirect(20);
    direct.put(backing, 0, 20).flip();
    ByteBuffer sliced = ByteBuffer.wrap(backing, 10, 40).slice(); // arrayOffset 10
    ByteBuffer positioned = ByteBuffer.wrap(backing, 30, 5); // position 30, limit 35
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      for (ByteBuffer payload : List.of(direct, sliced, positioned)) {
        int position = payload.position();
        writer.add(payload);
        assertEquals(position, payload.position(), "add leaves the payload's position alone");
      }
      writer.flush();
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(LogReader.Stop.END, r.stop(), r.reason());
      assertArrayEquals(java.util.Arrays.copyOfRange(backing, 0, 20), r.records().get(0));
      assertArrayEquals(java.util.Arrays.copyOfRange(backing, 10, 50), r.records().get(1));
      assertArrayEquals(java.util.Arrays.copyOfRange(backing, 30, 35), r.records().get(2));
    }
  }

  @Test
  void payload_isLittleEndian_likeEveryIntegerOfTheLog() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      writer.add(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 0x01020304));
      writer.flush();
      LogReader reader = new LogReader(file);
      assertTrue(reader.next());
      assertEquals(ByteOrder.LITTLE_ENDIAN, reader.payload().order());
      assertEquals(0x01020304, reader.payload().getInt(0));
      assertEquals(ByteOrder.LITTLE_ENDIAN, LogReader.recordAt(file, 0).order());
    }
  }

  @Test
  void writer_appendsAtItsStartOffset() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter first = new LogWriter(file, 0);
      first.add(ByteBuffer.wrap(new byte[] {1}));
      long end = first.flush();
      LogWriter second = new LogWriter(file, end);
      second.add(ByteBuffer.wrap(new byte[] {2, 2}));
      assertEquals(end + 10, second.flush());
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(2, r.records().size());
      assertArrayEquals(new byte[] {2, 2}, r.records().get(1));
      assertEquals(List.of(0L, end), r.offsets());
    }
  }

  @Test
  void badRecords_areRefusedBeforeAnythingIsAdded() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      assertThrows(InvalidArgumentException.class, () -> writer.add(ByteBuffer.allocate(0)));
      assertThrows(InvalidArgumentException.class, () -> writer.add(null));
      ByteBuffer huge = ByteBuffer.allocate(LogWriter.MAX_PAYLOAD + 1);
      assertThrows(InvalidArgumentException.class, () -> writer.add(huge));
      assertEquals(0, writer.pending());
      assertThrows(InvalidArgumentException.class, () -> new LogWriter(file, -1));
    }
  }

  @Test
  void reader_refusesAccessorsOutOfState() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogReader reader = new LogReader(file);
      assertThrows(IllegalStateException.class, reader::stop);
      assertThrows(IllegalStateException.class, reader::payload);
      assertFalse(reader.next());
      assertEquals(LogReader.Stop.END, reader.stop());
      assertEquals(0, reader.stopOffset());
      assertThrows(IllegalStateException.class, reader::payload);
      assertFalse(reader.next(), "stays stopped");
    }
  }

  @Test
  void roundTrip_onRealFiles(@TempDir Path dir) {
    FileStorage storage = new FileStorage(dir);
    storage.mkdirs("wal");
    Random random = new Random(3);
    List<byte[]> records = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      records.add(LogTestSupport.payload(random, 5000));
    }
    try (StorageFile file = storage.create("wal/000001.log")) {
      LogWriter writer = new LogWriter(file, 0);
      LogTestSupport.write(writer, records, 7);
      writer.sync();
    }
    try (StorageFile file = storage.open("wal/000001.log")) {
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(records.size(), r.records().size());
      LogTestSupport.assertPrefix(records, r.records(), "real files");
      assertTrue(r.stop() == LogReader.Stop.END);
    }
  }

  @Test
  void add_withAnEncoder_framesInPlace_andAddsNothingWhenTheEncoderFails() {
    MemStorage storage = new MemStorage(1);
    try (StorageFile file = storage.create("1.log")) {
      LogWriter writer = new LogWriter(file, 0);
      writer.add(12, out -> out.putInt(0x01020304).putLong(-2L));
      assertThrows(
          IllegalStateException.class, () -> writer.add(8, out -> out.putInt(1)), "4 of 8 bytes");
      assertThrows(
          java.nio.BufferOverflowException.class, () -> writer.add(2, out -> out.putInt(1)));
      assertThrows(io.basaltdb.InvalidArgumentException.class, () -> writer.add(0, out -> {}));
      assertEquals(20, writer.pending(), "a failed add leaves no bytes behind");
      writer.add(ByteBuffer.wrap(new byte[] {9}));
      writer.flush();
      LogTestSupport.Result r = LogTestSupport.readAll(file);
      assertEquals(LogReader.Stop.END, r.stop(), r.reason());
      assertEquals(2, r.records().size());
      ByteBuffer first = ByteBuffer.wrap(r.records().get(0)).order(ByteOrder.LITTLE_ENDIAN);
      assertEquals(0x01020304, first.getInt(0));
      assertEquals(-2L, first.getLong(4));
      assertArrayEquals(new byte[] {9}, r.records().get(1));
    }
  }
}
