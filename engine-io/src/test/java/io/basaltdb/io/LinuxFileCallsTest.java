package io.basaltdb.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.spi.NativeFileCalls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LinuxFileCallsTest {
  @TempDir Path dir;

  @Test
  void serviceLoader_findsTheProvider() {
    assertTrue(
        ServiceLoader.load(NativeFileCalls.class).stream()
            .anyMatch(p -> p.type() == LinuxFileCalls.class),
        "META-INF/services names LinuxFileCalls");
  }

  @Test
  void allocate_reservesBlocks_keepsData_neverShrinks() throws Exception {
    LinuxFileCalls calls = new LinuxFileCalls();
    assumeTrue(calls.isSupported(), "not Linux");
    Path f = dir.resolve("seg");
    Files.write(f, new byte[] {1, 2, 3});
    assertTrue(calls.allocate(f, 4 << 20));
    assertEquals(4 << 20, Files.size(f));
    assertTrue(
        allocatedBytes(f) >= 4 << 20, "blocks reserved, not a sparse hole: " + allocatedBytes(f));
    byte[] head = new byte[8];
    System.arraycopy(Files.readAllBytes(f), 0, head, 0, 8);
    assertArrayEquals(new byte[] {1, 2, 3, 0, 0, 0, 0, 0}, head);
    assertTrue(calls.allocate(f, 1 << 20));
    assertEquals(4 << 20, Files.size(f), "a smaller length does not truncate");
  }

  @Test
  void allocate_missingFile_namesIt() {
    LinuxFileCalls calls = new LinuxFileCalls();
    assumeTrue(calls.isSupported(), "not Linux");
    Path f = dir.resolve("absent");
    IOException e = assertThrows(IOException.class, () -> calls.allocate(f, 4096));
    assertTrue(
        e.getMessage().contains(f.toString()) && e.getMessage().contains("No such file"),
        e.getMessage());
  }

  /** st_blocks * 512, from stat(1). */
  static long allocatedBytes(Path f) throws Exception {
    Process p =
        new ProcessBuilder("stat", "-c", "%b %B", f.toString()).redirectErrorStream(true).start();
    String[] out = new String(p.getInputStream().readAllBytes()).trim().split(" ");
    assertEquals(0, p.waitFor(), String.join(" ", out));
    return Long.parseLong(out[0]) * Long.parseLong(out[1]);
  }
}
