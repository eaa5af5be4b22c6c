package io.basaltdb.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The storage contract against real files in a temporary directory, and what only FileStorage does. */
class FileStorageTest extends StorageContractTest {
  @TempDir Path dir;
  private int storages;

  @Override
  Storage storage() {
    return new FileStorage(dir.resolve("store" + storages++));
  }

  @Test
  void constructor_createsTheRootAndItsParents() {
    Path root = dir.resolve("a/b/c");
    FileStorage s = new FileStorage(root);
    assertTrue(Files.isDirectory(root));
    assertEquals(root.toAbsolutePath(), s.root());
    assertEquals(root.resolve("wal/1.log").toAbsolutePath().toString(), s.describe("wal/1.log"));
  }

  @Test
  void contents_landInTheFileOnDisk() throws IOException {
    FileStorage s = new FileStorage(dir);
    byte[] data = new byte[3 << 20];
    new Random(7).nextBytes(data);
    s.mkdirs("wal");
    try (StorageFile f = s.create("wal/1.log")) {
      f.write(0, ByteBuffer.wrap(data));
      f.sync();
      ByteBuffer back = ByteBuffer.allocate(data.length);
      assertEquals(data.length, f.read(0, back));
      assertArrayEquals(data, back.array());
    }
    assertArrayEquals(data, Files.readAllBytes(dir.resolve("wal/1.log")));
  }

  @Test
  void failures_nameTheOperationAndTheAbsolutePath() {
    FileStorage s = new FileStorage(dir);
    StorageException e = org.junit.jupiter.api.Assertions.assertThrows(StorageException.class, () -> s.open("nope"));
    assertTrue(e.getMessage().startsWith("open of " + dir.toAbsolutePath().resolve("nope")), e.getMessage());
  }

  @Test
  void noSpaceLeftOnDevice_saysWhatToDo() {
    IOException enospc = new IOException("No space left on device");
    StorageException e = StorageErrors.failure("write of 10 bytes at offset 0 to /x/wal/1.log",
        new IOException("wrapped", enospc));
    assertEquals("write of 10 bytes at offset 0 to /x/wal/1.log failed: no space left on device; "
        + "free space, then reopen the store", e.getMessage());
    assertSame(enospc, e.getCause().getCause());
    StorageException other = StorageErrors.failure("sync of /x", new IOException("Input/output error"));
    assertTrue(other.getMessage().startsWith("sync of /x failed: ") && other.getMessage().contains("Input/output error"));
  }
}
