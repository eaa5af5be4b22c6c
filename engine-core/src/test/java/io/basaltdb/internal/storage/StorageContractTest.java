package io.basaltdb.internal.storage;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.ClosedException;
import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link Storage} shares, run against each implementation by a subclass, so the
 * in-memory storage tests stand for the real one.
 */
abstract class StorageContractTest {
  /** A fresh, empty storage. */
  abstract Storage storage();

  static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(UTF_8));
  }

  static String readAll(StorageFile f) {
    ByteBuffer dst = ByteBuffer.allocate((int) f.size());
    assertEquals(dst.capacity(), f.read(0, dst));
    return new String(dst.array(), UTF_8);
  }

  @Test
  void createWriteRead_roundTrip() {
    Storage s = storage();
    try (StorageFile f = s.create("a.log")) {
      assertEquals("a.log", f.name());
      assertEquals(0, f.size());
      f.write(0, bytes("hello"));
      f.write(5, bytes(" world"));
      f.write(0, bytes("J"));
      f.sync();
      assertEquals(11, f.size());
      assertEquals("Jello world", readAll(f));
    }
    try (StorageFile f = s.open("a.log")) {
      assertEquals("Jello world", readAll(f));
    }
  }

  @Test
  void read_returnsShortCountOnlyAtEndOfFile() {
    Storage s = storage();
    try (StorageFile f = s.create("f")) {
      f.write(0, bytes("0123456789"));
      ByteBuffer dst = ByteBuffer.allocate(8);
      assertEquals(4, f.read(6, dst));
      assertEquals(4, dst.position());
      assertEquals(0, f.read(10, ByteBuffer.allocate(3)));
      assertEquals(0, f.read(100, ByteBuffer.allocate(3)));
      ByteBuffer full = ByteBuffer.allocate(5);
      assertEquals(5, f.read(2, full));
      assertEquals("23456", new String(full.array(), UTF_8));
    }
  }

  @Test
  void write_pastEnd_fillsTheGapWithZeros() {
    Storage s = storage();
    try (StorageFile f = s.create("f")) {
      f.write(4, bytes("x"));
      ByteBuffer dst = ByteBuffer.allocate(5);
      f.read(0, dst);
      assertArrayEquals(new byte[] {0, 0, 0, 0, 'x'}, dst.array());
    }
  }

  @Test
  void create_failsIfTheFileExists_openFailsIfMissing_createFailsWithoutDirectory() {
    Storage s = storage();
    s.create("x").close();
    assertThrows(StorageException.class, () -> s.create("x"));
    StorageException missing = assertThrows(StorageException.class, () -> s.open("y"));
    assertTrue(missing.getMessage().contains(s.describe("y")), missing.getMessage());
    assertThrows(StorageException.class, () -> s.create("nodir/x"));
    assertTrue(s.exists("x"));
    assertFalse(s.exists("y"));
  }

  @Test
  void createTemporary_replacesAnyFileOfItsName_andRenamesIntoPlace() {
    Storage s = storage();
    try (StorageFile f = s.create("t.tmp")) {
      f.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5}));
    }
    try (StorageFile f = s.createTemporary("t.tmp")) {
      assertEquals(0, f.size(), "a leftover file of the name is replaced, empty");
      f.write(0, ByteBuffer.wrap(new byte[] {9}));
      f.sync();
    }
    try (StorageFile f = s.createTemporary("fresh.tmp")) {
      assertEquals(0, f.size());
    }
    s.rename("t.tmp", "t");
    try (StorageFile f = s.open("t")) {
      assertEquals(1, f.size());
    }
    assertThrows(StorageException.class, () -> s.createTemporary("no-such-dir/x.tmp"));
  }

  @Test
  void deleteGarbage_removesTheFile_andAMissingOneIsNoError() {
    Storage s = storage();
    s.create("g").close();
    s.create("h").close();
    s.deleteGarbage("g");
    assertEquals(List.of("h"), s.list(""));
    s.deleteGarbage("g");
    s.deleteGarbage("never");
    assertEquals(List.of("h"), s.list(""));
  }

  @Test
  void list_namesFilesOfOneDirectory_sorted() {
    Storage s = storage();
    assertEquals(List.of(), s.list(""));
    assertEquals(List.of(), s.list("wal"));
    s.mkdirs("wal/sub");
    assertTrue(s.exists("wal"));
    s.create("wal/000002.log").close();
    s.create("wal/000001.log").close();
    s.create("wal/sub/deeper").close();
    s.create("CURRENT").close();
    assertEquals(List.of("000001.log", "000002.log"), s.list("wal"));
    assertEquals(List.of("CURRENT"), s.list(""));
    assertEquals(List.of("deeper"), s.list("wal/sub"));
    s.mkdirs("wal"); // already there: fine
  }

  @Test
  void rename_replacesTheTarget_andMovesAcrossDirectories() {
    Storage s = storage();
    s.mkdirs("d");
    try (StorageFile a = s.create("a");
        StorageFile b = s.create("b")) {
      a.write(0, bytes("new"));
      b.write(0, bytes("old"));
    }
    s.rename("a", "b");
    assertFalse(s.exists("a"));
    try (StorageFile b = s.open("b")) {
      assertEquals("new", readAll(b));
    }
    s.rename("b", "d/c");
    assertEquals(List.of("c"), s.list("d"));
    assertEquals(List.of(), s.list(""));
    assertThrows(StorageException.class, () -> s.rename("missing", "z"));
    assertFalse(s.exists("z"));
  }

  @Test
  void openHandle_followsTheContentsThroughARename() {
    Storage s = storage();
    try (StorageFile f = s.create("tmp")) {
      s.rename("tmp", "final");
      f.write(0, bytes("data"));
    }
    try (StorageFile f = s.open("final")) {
      assertEquals("data", readAll(f));
    }
  }

  @Test
  void delete_removesTheFile_andAMissingFileIsNoError() {
    Storage s = storage();
    s.create("a").close();
    s.delete("a");
    assertFalse(s.exists("a"));
    s.delete("a");
    s.delete("never");
    s.delete("no-such-dir/never");
  }

  @Test
  void truncate_shrinks_andExtendsWithZeros() {
    Storage s = storage();
    try (StorageFile f = s.create("f")) {
      f.write(0, bytes("abcdef"));
      f.truncate(3);
      assertEquals("abc", readAll(f));
      f.truncate(5);
      ByteBuffer dst = ByteBuffer.allocate(5);
      f.read(0, dst);
      assertArrayEquals(new byte[] {'a', 'b', 'c', 0, 0}, dst.array());
    }
  }

  @Test
  void preallocate_growsButNeverShrinks_andKeepsBytes() {
    Storage s = storage();
    try (StorageFile f = s.create("f")) {
      f.write(0, bytes("abc"));
      f.preallocate(4096);
      assertEquals(4096, f.size());
      ByteBuffer dst = ByteBuffer.allocate(4);
      f.read(0, dst);
      assertArrayEquals(new byte[] {'a', 'b', 'c', 0}, dst.array());
      f.preallocate(10);
      assertEquals(4096, f.size());
      f.write(1, bytes("X"));
      f.preallocate(4096);
      dst.clear();
      f.read(0, dst);
      assertArrayEquals(new byte[] {'a', 'X', 'c', 0}, dst.array());
    }
  }

  @Test
  void everyOperation_afterClose_throwsClosedException() {
    Storage s = storage();
    StorageFile f = s.create("f");
    f.close();
    f.close(); // idempotent
    List<Runnable> uses =
        List.of(
            () -> f.read(0, ByteBuffer.allocate(1)),
            () -> f.write(0, bytes("x")),
            f::size,
            () -> f.truncate(0),
            () -> f.preallocate(10),
            f::sync);
    for (Runnable use : uses) {
      ClosedException e = assertThrows(ClosedException.class, use::run);
      assertTrue(
          e.getMessage().contains("is closed") && e.getMessage().contains(s.describe("f")),
          e.getMessage());
    }
  }

  @Test
  void emptyWrite_pastTheEnd_changesNothing() {
    Storage s = storage();
    try (StorageFile f = s.create("f")) {
      f.write(0, bytes("ab"));
      f.write(100, ByteBuffer.allocate(0));
      assertEquals(2, f.size(), "a write of no bytes does not extend the file");
      assertEquals("ab", readAll(f));
    }
  }

  @Test
  void badNamesAndPositions_areRefused() {
    Storage s = storage();
    for (String bad : new String[] {"", "/abs", "a//b", "a/", "../up", "a/./b", "a\\b"}) {
      assertThrows(InvalidArgumentException.class, () -> s.create(bad), bad);
    }
    assertThrows(InvalidArgumentException.class, () -> s.open(null));
    try (StorageFile f = s.create("f")) {
      assertThrows(InvalidArgumentException.class, () -> f.write(-1, bytes("x")));
      assertThrows(InvalidArgumentException.class, () -> f.read(-1, ByteBuffer.allocate(1)));
      assertThrows(InvalidArgumentException.class, () -> f.truncate(-1));
    }
  }
}
