package io.basaltdb.internal.storage;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.basaltdb.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FileStorage#lock} must keep the kernel's lock for the first holder while it refuses a
 * second one in the same process: POSIX record locks belong to the process, and closing any
 * descriptor of the file drops all of them, so the refusal must not open (and close) the lock file
 * again. Checked in /proc/locks (Linux), the only place that shows what another process would see.
 */
class FileStorageLockTest {
  @TempDir Path dir;

  @Test
  void refusingASecondLockInTheSameProcess_keepsTheFirstHoldersKernelLock() throws Exception {
    assumeTrue(Files.isReadable(Path.of("/proc/locks")), "needs Linux /proc/locks");
    FileStorage storage = new FileStorage(dir);
    long inode;
    try (AutoCloseable first = storage.lock("LOCK")) {
      inode = (Long) Files.getAttribute(dir.resolve("LOCK"), "unix:ino");
      assertTrue(kernelLockHeld(inode), "the first lock is not in /proc/locks");

      StorageException e =
          assertThrows(StorageException.class, () -> new FileStorage(dir).lock("LOCK"));
      assertTrue(e.getMessage().contains("already open"), e.getMessage());
      assertTrue(
          kernelLockHeld(inode),
          "refusing the second lock released the first holder's lock in the"
              + " kernel: another process could now open the same store");
    }
    assertFalse(kernelLockHeld(inode), "closing the holder did not release the lock");
    try (AutoCloseable again = storage.lock("LOCK")) { // released for good: it can be taken again
      assertTrue(kernelLockHeld(inode));
    }
  }

  /** Whether /proc/locks lists a lock on the file with this inode number. */
  private static boolean kernelLockHeld(long inode) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/locks"))) {
      String[] fields = line.trim().split("\\s+");
      for (String field : fields) { // "major:minor:inode"
        String[] parts = field.split(":");
        if (parts.length == 3 && parts[2].equals(Long.toString(inode))) {
          return true;
        }
      }
    }
    return false;
  }
}
