package io.basaltdb.jmh;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The size of a store's directory on disk, measured two ways, and a background thread that samples
 * it about once a second to keep the peak of a phase of {@link Race}. Apparent size is the sum of
 * {@code Files.size} of every regular file (it counts a preallocated tail that extends the length,
 * as Basalt's segments have, but not RocksDB's {@code FALLOC_FL_KEEP_SIZE} reservations); allocated
 * size is {@code du -s -B1} (blocks actually held, sparse holes excluded, reservations included),
 * -1 if {@code du} failed. Files deleted during a walk are skipped.
 *
 * <p>Thread-safety: the peaks are guarded by this object's monitor; the sampler thread and the
 * phase that reads and resets them share nothing else. {@code closed} is volatile so the sampler
 * sees a close.
 */
final class SpaceSampler implements AutoCloseable {
  static final long PERIOD_MILLIS = 1000;

  /** One measurement, both ways, in bytes. */
  record Sample(long apparent, long allocated) {
    Sample max(Sample o) {
      return new Sample(Math.max(apparent, o.apparent), Math.max(allocated, o.allocated));
    }
  }

  private final Path dir;
  private final Thread thread;

  /** Set once by close(); read by the sampler thread. */
  private volatile boolean closed;

  /** The largest sizes since the last resetPeak(); guarded by this. */
  private Sample peak = new Sample(0, -1);

  private SpaceSampler(Path dir) {
    this.dir = dir;
    this.thread = new Thread(this::run, "race-space-sampler");
    thread.setDaemon(true);
  }

  static SpaceSampler start(Path dir) {
    SpaceSampler s = new SpaceSampler(dir);
    s.thread.start();
    return s;
  }

  /** Starts a new peak from a measurement taken now, and returns that measurement. */
  Sample resetPeak() {
    Sample now = measure(dir);
    synchronized (this) {
      peak = now;
    }
    return now;
  }

  /** The largest sizes sampled since the last {@link #resetPeak()}, including {@code now}. */
  Sample peak(Sample now) {
    synchronized (this) {
      peak = peak.max(now);
      return peak;
    }
  }

  private void run() {
    while (!closed) {
      Sample s = measure(dir);
      synchronized (this) {
        peak = peak.max(s);
      }
      try {
        Thread.sleep(PERIOD_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  static Sample measure(Path dir) {
    return new Sample(apparentSize(dir), allocatedSize(dir));
  }

  /** The sum of {@code Files.size} of the regular files under {@code dir}. */
  static long apparentSize(Path dir) {
    long sum = 0;
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        try {
          BasicFileAttributes a =
              Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
          if (a.isDirectory()) sum += apparentSize(p);
          else if (a.isRegularFile()) sum += a.size();
        } catch (NoSuchFileException e) {
          // deleted since it was listed
        }
      }
    } catch (NoSuchFileException e) {
      return 0;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return sum;
  }

  /** Bytes allocated under {@code dir} by {@code du -s -B1}; -1 if du failed or printed nothing. */
  static long allocatedSize(Path dir) {
    try {
      Process p =
          new ProcessBuilder("du", "-s", "-B1", dir.toString())
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
      String out;
      try (InputStream in = p.getInputStream()) {
        out = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
      }
      p.waitFor(); // du exits 1 when a file vanished under it; its total is still good
      String[] parts = out.split("\\s+");
      return parts.length > 0 && !parts[0].isEmpty() ? Long.parseLong(parts[0]) : -1;
    } catch (IOException | NumberFormatException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  @Override
  public void close() throws InterruptedException {
    closed = true;
    thread.interrupt();
    thread.join();
  }
}
