package io.basaltdb.internal.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RegionTest {
  @Test
  void refAndAddress_roundTrip_andZeroIsNull() {
    long span = Region.allocate(Region.PAGE, Region.PAGE);
    try {
      long ref = Region.ref(span + 8);
      assertNotEquals(0, ref, "no block may have reference 0");
      assertTrue(ref < (1L << 32), "references fit in 32 bits");
      assertEquals(span + 8, Region.address(ref));
      assertEquals(0, Region.ref(0));
    } finally {
      Region.free(span, Region.PAGE);
    }
  }

  @Test
  void allocate_honoursAlignment_andRoundsToPages() {
    long before = Region.inUse();
    long a = Region.allocate(1, Region.PAGE);
    long b = Region.allocate(2L << 20, 2L << 20);
    try {
      assertEquals(0, (a - Region.BASE) % Region.PAGE);
      assertEquals(0, (b - Region.BASE) % (2L << 20));
      assertEquals(before + Region.PAGE + (2L << 20), Region.inUse());
      assertEquals(7, writeAndRead(b + (2L << 20) - 8, 7)); // the whole span is usable
    } finally {
      Region.free(a, 1);
      Region.free(b, 2L << 20);
    }
    assertEquals(before, Region.inUse());
  }

  @Test
  void onLinux_theRangeIsAReservedMapping_madeThroughJffi() {
    if (!System.getProperty("os.name", "").startsWith("Linux")) return;
    assertTrue(Region.mapped(), "mmap(MAP_NORESERVE) through jffi, not a malloc of the range");
    assertTrue(Region.SIZE >= (256L << 20), "reserved: " + Region.SIZE);
    assertEquals(0, Region.BASE & ((2L << 20) - 1), "2 MiB-aligned");
  }

  @Test
  void freedSpans_coalesce_andAreReused_zeroFilled() {
    long a = Region.allocate(Region.PAGE, Region.PAGE);
    long b = Region.allocate(Region.PAGE, Region.PAGE);
    long c = Region.allocate(Region.PAGE, Region.PAGE);
    assertEquals(42, writeAndRead(a, 42));
    Region.free(a, Region.PAGE);
    Region.free(b, Region.PAGE);
    try {
      if (b
          == a
              + Region
                  .PAGE) { // neighbours (no other test allocated in between): one span of two pages
        long ab = Region.allocate(2 * Region.PAGE, Region.PAGE);
        assertEquals(a, ab, "two freed neighbours serve a two-page request");
        assertEquals(0, read(ab), "freed pages go back to the OS and come back zeroed");
        Region.free(ab, 2 * Region.PAGE);
      }
    } finally {
      Region.free(c, Region.PAGE);
    }
  }

  @Test
  void doubleFree_andForeignFree_throw() {
    long a = Region.allocate(Region.PAGE, Region.PAGE);
    long guard = Region.allocate(Region.PAGE, Region.PAGE); // keeps a's span below the top
    Region.free(a, Region.PAGE);
    try {
      assertThrows(IllegalStateException.class, () -> Region.free(a, Region.PAGE));
      assertThrows(IllegalStateException.class, () -> Region.free(Region.BASE, Region.PAGE));
      assertThrows(IllegalStateException.class, () -> Region.free(guard + 8, Region.PAGE));
    } finally {
      Region.free(guard, Region.PAGE);
    }
  }

  /** Raw spans are not allocator blocks: in debug mode, register the word for the access. */
  private static long writeAndRead(long a, long v) {
    Object owner = new Object();
    if (Mem.DEBUG) MemoryDebug.recordAllocation(a, 8, owner);
    try {
      Mem.spLong(a, v);
      return Mem.lpLong(a);
    } finally {
      if (Mem.DEBUG) MemoryDebug.recordFree(a, 8, owner);
    }
  }

  private static long read(long a) {
    Object owner = new Object();
    if (Mem.DEBUG) MemoryDebug.recordAllocation(a, 8, owner);
    try {
      return Mem.lpLong(a);
    } finally {
      if (Mem.DEBUG) MemoryDebug.recordFree(a, 8, owner);
    }
  }

  @Test
  void parseSize_acceptsSuffixes_andRejectsNonsense() {
    assertEquals(8L << 30, Region.parseSize("8g"));
    assertEquals(512L << 20, Region.parseSize("512M"));
    assertEquals(Region.MAX_SIZE, Region.parseSize("32g"));
    assertThrows(IllegalArgumentException.class, () -> Region.parseSize("33g"));
    assertThrows(IllegalArgumentException.class, () -> Region.parseSize("1m"));
    assertThrows(IllegalArgumentException.class, () -> Region.parseSize("lots"));
  }
}
