package io.basaltdb.internal.wal;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * Reads the records of a write-ahead log file from offset 0 and finds where its valid prefix ends.
 *
 * <p>A record is valid when its header fits in the file, its length is 1 to {@link
 * LogWriter#MAX_PAYLOAD}, its payload fits in the file and its CRC32C matches. Reading stops at the
 * first record that is not: {@link Stop#END} if nothing at all follows the last valid record, else
 * {@link Stop#TORN} with the reason. Whether TORN is a torn tail (the last log file after a crash:
 * truncate it at {@link #stopOffset()}) or corruption (any other file) is for the caller to decide;
 * the reader never returns a payload that failed its checksum.
 *
 * <p>The reader sees the file as long as it was when the reader was made. I/O failures surface as
 * StorageException from {@link #next()}.
 *
 * <p>Thread-safety: none; one thread uses a reader.
 */
public final class LogReader {
  /** Why reading stopped. */
  public enum Stop {
    /** The file ends exactly after the last valid record. */
    END,
    /** Bytes follow the last valid record that are not a valid record. */
    TORN
  }

  private static final int WINDOW = 64 << 10;

  private final StorageFile file;
  private final long fileSize;
  private final CRC32C crc = new CRC32C();

  /** Read-ahead: bytes [windowStart, windowStart + window.limit()) of the file. */
  private final ByteBuffer window = ByteBuffer.allocate(WINDOW).order(ByteOrder.LITTLE_ENDIAN);

  private long windowStart;

  /** Offset of the next record to read. */
  private long position;

  private long recordOffset = -1;
  private ByteBuffer payload;
  private Stop stop;
  private String stopReason;

  public LogReader(StorageFile file) {
    if (file == null) {
      throw new InvalidArgumentException("log file is null");
    }
    this.file = file;
    this.fileSize = file.size();
    window.limit(0);
  }

  /** Moves to the next valid record; false when reading stopped (see {@link #stop()}). */
  public boolean next() {
    payload = null;
    if (stop != null) {
      return false;
    }
    long remaining = fileSize - position;
    if (remaining == 0) {
      return stopped(Stop.END, "end of file");
    }
    if (remaining < LogFormat.HEADER_SIZE) {
      return stopped(Stop.TORN, "header extends past end of file (" + remaining + " bytes left)");
    }
    ByteBuffer header = bytes(position, LogFormat.HEADER_SIZE);
    if (header == null) {
      return stopped(Stop.TORN, "file shrank while being read");
    }
    int length = header.getInt(LogFormat.LENGTH_OFFSET);
    int storedCrc = header.getInt(LogFormat.CRC_OFFSET);
    if (length == 0) {
      return stopped(Stop.TORN, "length 0");
    }
    if (length < 0 || length > LogFormat.MAX_PAYLOAD) {
      return stopped(
          Stop.TORN,
          "length "
              + Integer.toUnsignedLong(length)
              + " exceeds the maximum of "
              + LogFormat.MAX_PAYLOAD);
    }
    if (length > remaining - LogFormat.HEADER_SIZE) {
      return stopped(Stop.TORN, "record of " + length + " bytes extends past end of file");
    }
    ByteBuffer body = bytes(position + LogFormat.HEADER_SIZE, length);
    if (body == null) {
      return stopped(Stop.TORN, "file shrank while being read");
    }
    if (LogFormat.checksum(crc, length, body) != storedCrc) {
      return stopped(Stop.TORN, "checksum mismatch in record of " + length + " bytes");
    }
    recordOffset = position;
    payload =
        body.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN); // asReadOnlyBuffer resets the order
    position += LogFormat.HEADER_SIZE + length;
    return true;
  }

  /**
   * The current record's payload, read-only and little-endian; valid until the next call of {@link
   * #next()}.
   */
  public ByteBuffer payload() {
    if (payload == null) {
      throw new IllegalStateException(
          "no current record: call next() and check that it returned true");
    }
    return payload;
  }

  /** File offset of the current record's header. */
  public long recordOffset() {
    if (payload == null) {
      throw new IllegalStateException(
          "no current record: call next() and check that it returned true");
    }
    return recordOffset;
  }

  /** Why reading stopped; only after {@link #next()} returned false. */
  public Stop stop() {
    requireStopped();
    return stop;
  }

  /** End of the valid prefix: the offset just past the last valid record (0 if none). */
  public long stopOffset() {
    requireStopped();
    return position;
  }

  /**
   * What was wrong at {@link #stopOffset()} ("checksum mismatch ...", "length 0", ...; "end of
   * file" at END).
   */
  public String stopReason() {
    requireStopped();
    return stopReason;
  }

  private boolean stopped(Stop why, String reason) {
    stop = why;
    stopReason = reason;
    return false;
  }

  private void requireStopped() {
    if (stop == null) {
      throw new IllegalStateException(
          "the reader has not stopped yet: call next() until it returns false");
    }
  }

  /**
   * Bytes [at, at + length) of the file, in the read-ahead window when they fit in one, else in a
   * buffer of their own; null if the file has fewer bytes than that (it shrank since the reader was
   * made).
   */
  private ByteBuffer bytes(long at, int length) {
    if (length > WINDOW) {
      ByteBuffer own = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
      return file.read(at, own) == length ? own.flip() : null;
    }
    if (at < windowStart || at + length > windowStart + window.limit()) {
      window.clear();
      windowStart = at;
      file.read(at, window);
      window.flip();
      if (window.limit() < length) {
        return null;
      }
    }
    int from = (int) (at - windowStart);
    return window.slice(from, length).order(ByteOrder.LITTLE_ENDIAN);
  }

  /**
   * The payload of a valid record framed at {@code offset}, or null if the bytes there are not one
   * (recovery uses it to look past a damaged record for a later, intact one). Allocates at most the
   * record's length, and only once the length is known to fit in the file.
   */
  public static ByteBuffer recordAt(StorageFile file, long offset) {
    long total = frameLengthAt(file, offset);
    if (total < 0) {
      return null;
    }
    int length = (int) (total - LogFormat.HEADER_SIZE);
    ByteBuffer frame =
        ByteBuffer.allocate(LogFormat.HEADER_SIZE + length).order(ByteOrder.LITTLE_ENDIAN);
    if (file.read(offset, frame) != frame.capacity()
        || frame.getInt(LogFormat.LENGTH_OFFSET) != length) {
      return null; // the file shrank or changed since frameLengthAt looked
    }
    ByteBuffer payload =
        frame.position(LogFormat.HEADER_SIZE).slice().order(ByteOrder.LITTLE_ENDIAN);
    int storedCrc = frame.getInt(LogFormat.CRC_OFFSET);
    return LogFormat.checksum(new CRC32C(), length, payload) == storedCrc ? payload : null;
  }

  /**
   * The total length (header and payload) of the frame at {@code offset} if its length field is
   * valid (1 to {@link LogWriter#MAX_PAYLOAD}) and the frame fits in the file, else -1.
   */
  public static long frameLengthAt(StorageFile file, long offset) {
    long size = file.size();
    if (offset < 0 || offset > size - LogFormat.HEADER_SIZE) {
      return -1;
    }
    ByteBuffer field = ByteBuffer.allocate(LogFormat.LENGTH_SIZE).order(ByteOrder.LITTLE_ENDIAN);
    if (file.read(offset + LogFormat.LENGTH_OFFSET, field) != LogFormat.LENGTH_SIZE) {
      return -1;
    }
    int length = field.getInt(0);
    if (length <= 0
        || length > LogFormat.MAX_PAYLOAD
        || length > size - offset - LogFormat.HEADER_SIZE) {
      return -1;
    }
    return LogFormat.HEADER_SIZE + (long) length;
  }
}
