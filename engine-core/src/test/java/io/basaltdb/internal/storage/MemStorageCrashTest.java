package io.basaltdb.internal.storage;

import static io.basaltdb.internal.storage.StorageContractTest.bytes;
import static io.basaltdb.internal.storage.StorageContractTest.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.MemStorage.CrashMode;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a simulated power loss of {@link MemStorage} keeps, loses and kills. */
class MemStorageCrashTest {
  /** A file with "synced" durable, then unsynced: an overwrite, an append and a truncate. */
  private static MemStorage withUnsyncedChanges(long seed) {
    MemStorage s = new MemStorage(seed);
    StorageFile f = s.create("f");
    f.write(0, bytes("synced"));
    f.sync();
    f.write(0, bytes("S"));
    f.write(6, bytes("+more"));
    f.truncate(9);
    return s;
  }

  @Test
  void keepNone_leavesTheLastSyncedImage() {
    MemStorage s = withUnsyncedChanges(1);
    assertEquals("Synced+mo", new String(s.contents("f")));
    assertEquals(6, s.durableSize("f"));
    s.crash(CrashMode.KEEP_NONE);
    assertEquals("synced", new String(s.contents("f")));
  }

  @Test
  void keepAll_keepsEveryUnsyncedOperation() {
    MemStorage s = withUnsyncedChanges(1);
    s.crash(CrashMode.KEEP_ALL);
    assertEquals("Synced+mo", new String(s.contents("f")));
    assertEquals(9, s.durableSize("f"));
  }

  @Test
  void random_alwaysKeepsSyncedData_andOnlyBytesThatWereWritten() {
    byte[] synced = "0123456789".getBytes();
    int kept = 0;
    int dropped = 0;
    int torn = 0;
    for (long seed = 0; seed < 400; seed++) {
      MemStorage s = new MemStorage(seed);
      byte[] expected = new byte[10 + 5 * 8];
      System.arraycopy(synced, 0, expected, 0, 10);
      try (StorageFile f = s.create("f")) {
        f.write(0, ByteBuffer.wrap(synced));
        f.sync();
        for (int i = 0; i < 5; i++) { // five unsynced appends of 8 distinct nonzero bytes
          byte[] chunk = new byte[8];
          Arrays.fill(chunk, (byte) ('a' + i));
          System.arraycopy(chunk, 0, expected, 10 + 8 * i, 8);
          f.write(10 + 8 * i, ByteBuffer.wrap(chunk));
        }
      }
      s.crash();
      byte[] after = s.contents("f");
      String where = "seed=" + seed + " after=" + new String(after);
      assertTrue(after.length >= 10 && after.length <= expected.length, where);
      assertArrayEquals(synced, Arrays.copyOf(after, 10), where);
      for (int i = 10; i < after.length; i++) {
        assertTrue(after[i] == expected[i] || after[i] == 0, where);
      }
      kept += after.length == expected.length && Arrays.equals(after, expected) ? 1 : 0;
      dropped += after.length == 10 ? 1 : 0;
      torn += (after.length - 10) % 8 != 0 ? 1 : 0;
      assertEquals(after.length, s.durableSize("f"), "a crash's result is what is on the device");
    }
    assertTrue(
        kept > 0 && dropped > 0 && torn > 0,
        "kept=" + kept + " dropped=" + dropped + " torn=" + torn);
  }

  /**
   * True if some 8-byte chunk of the unsynced appends is lost (zeros) while a later one is kept.
   */
  private static boolean hasHole(byte[] after, int from, int chunks) {
    boolean lost = false;
    for (int i = 0; i < chunks && from + 8 * i < after.length; i++) {
      boolean zero = after[from + 8 * i] == 0;
      if (!zero && lost) {
        return true;
      }
      lost |= zero;
    }
    return false;
  }

  @Test
  void random_neighbouringSeeds_crashDifferently() {
    // Tests sweep crash points with new MemStorage(seed + n); java.util.Random's first draws are
    // nearly
    // the same for neighbouring seeds, so without mixing every point got in-order write-back.
    int reordered = 0;
    for (long seed = 1; seed <= 64; seed++) {
      MemStorage s = new MemStorage(seed);
      try (StorageFile f = s.create("f")) {
        for (int i = 0; i < 6; i++) {
          byte[] chunk = new byte[8];
          Arrays.fill(chunk, (byte) ('a' + i));
          f.write(8L * i, ByteBuffer.wrap(chunk));
        }
      }
      s.crash();
      reordered += hasHole(s.contents("f"), 0, 6) ? 1 : 0;
    }
    assertTrue(
        reordered > 5,
        "only " + reordered + " of 64 neighbouring seeds lost a write but kept a later one");
  }

  @Test
  void random_reorderedWriteBack_tearsOneWriteIntoSectors() {
    int sectors = 4;
    byte[] data = new byte[sectors * MemFile.SECTOR];
    for (int i = 0; i < sectors; i++) {
      Arrays.fill(data, i * MemFile.SECTOR, (i + 1) * MemFile.SECTOR, (byte) ('a' + i));
    }
    int holes = 0;
    int sizeWithoutData = 0;
    for (long seed = 0; seed < 300; seed++) {
      MemStorage s = new MemStorage(seed);
      try (StorageFile f = s.create("f")) {
        f.write(0, ByteBuffer.wrap(data)); // one write, never synced
      }
      s.crash();
      byte[] after = s.contents("f");
      String where = "seed=" + seed + " length=" + after.length;
      assertTrue(after.length <= data.length, where);
      boolean lost = false;
      for (int i = 0; i < after.length; i++) {
        assertTrue(after[i] == data[i] || after[i] == 0, where + " byte " + i);
        if (after[i] == 0 && i % MemFile.SECTOR == 0) {
          lost = true;
        } else if (after[i] != 0 && lost) {
          holes++; // a later sector reached the device, an earlier one of the same write did not
          break;
        }
      }
      if (after.length == data.length && after[after.length - 1] == 0) {
        sizeWithoutData++; // the size update reached the device, the last sector's data did not
      }
    }
    assertTrue(
        holes > 0 && sizeWithoutData > 0, "holes=" + holes + " sizeWithoutData=" + sizeWithoutData);
  }

  @Test
  void random_isReproducibleFromTheSeed() {
    for (long seed = 0; seed < 50; seed++) {
      MemStorage a = withUnsyncedChanges(seed);
      MemStorage b = withUnsyncedChanges(seed);
      a.crash();
      b.crash();
      assertArrayEquals(a.contents("f"), b.contents("f"), "seed=" + seed);
    }
  }

  @Test
  void crash_killsEveryOpenHandle_butTheStorageCanBeReopened() {
    MemStorage s = withUnsyncedChanges(3);
    StorageFile old = s.open("f");
    s.crash(CrashMode.KEEP_NONE);
    List<Runnable> uses =
        List.of(
            () -> old.read(0, ByteBuffer.allocate(1)),
            () -> old.write(0, bytes("x")),
            old::size,
            () -> old.truncate(0),
            () -> old.preallocate(100),
            old::sync);
    for (Runnable use : uses) {
      StorageException e = assertThrows(StorageException.class, use::run);
      assertTrue(e.getMessage().contains("closed by a simulated crash"), e.getMessage());
    }
    old.close();
    try (StorageFile f = s.open("f")) {
      assertEquals("synced", readAll(f));
      f.write(6, bytes("!"));
      f.sync();
    }
    s.crash(CrashMode.KEEP_NONE);
    assertEquals("synced!", new String(s.contents("f")));
  }

  @Test
  void metadataOperations_areDurableAtOnce() {
    MemStorage s = new MemStorage(5);
    s.mkdirs("wal");
    s.create("wal/1.log").close();
    try (StorageFile f = s.create("tmp")) {
      f.write(0, bytes("unsynced"));
    }
    s.rename("tmp", "MANIFEST");
    s.create("gone").close();
    s.delete("gone");
    s.crash(CrashMode.KEEP_NONE);
    assertEquals(List.of("1.log"), s.list("wal"));
    assertEquals(List.of("MANIFEST"), s.list(""));
    assertFalse(s.exists("gone"));
    assertEquals(
        0, s.contents("MANIFEST").length, "the rename survived, the unsynced write did not");
  }

  @Test
  void flipByte_changesDurableAndCurrentContent_andSurvivesACrash() {
    MemStorage s = new MemStorage(9);
    try (StorageFile f = s.create("f")) {
      f.write(0, bytes("abcd"));
      f.sync();
      f.write(2, bytes("XY"));
    }
    s.flipByte("f", 1);
    s.flipByte("f", 3); // covered by the unsynced write: flipped in it too
    byte[] now = s.contents("f");
    assertEquals((byte) ~'b', now[1]);
    assertEquals((byte) ~'Y', now[3]);
    s.crash(CrashMode.KEEP_ALL);
    assertArrayEquals(now, s.contents("f"));
    s.flipByte("f", 0);
    s.crash(CrashMode.KEEP_NONE);
    assertEquals((byte) ~'a', s.contents("f")[0]);
    assertThrows(io.basaltdb.InvalidArgumentException.class, () -> s.flipByte("f", 4));
    assertThrows(StorageException.class, () -> s.contents("missing"));
  }
}
