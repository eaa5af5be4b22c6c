package io.basaltdb.internal.wal;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * Appends framed records (see {@link LogFormat}) to a write-ahead log file. {@link #add} only
 * frames a record into an on-heap buffer; {@link #flush} writes every added record with one
 * positional write, so a group of commits costs one system call; {@link #sync} makes them durable.
 *
 * <p>Failure: a flush that fails leaves the offset where it was and keeps the records pending, so
 * the caller may retry the flush (it rewrites the same bytes at the same offset) or truncate the
 * file to {@link #offset()} and give up on them; bytes the failed write may have left past the
 * offset are overwritten by a retry and cut by a truncate.
 *
 * <p>Thread-safety: none; one owner (the WAL's committer) calls every method, or callers serialize.
 */
public final class LogWriter {
  /** Largest record payload, 256 MiB (docs/format.md); a larger one is refused by {@link #add}. */
  public static final int MAX_PAYLOAD = LogFormat.MAX_PAYLOAD;

  private static final int INITIAL_CAPACITY = 64 << 10;

  /** A buffer grown past this by a big record is given back after the flush. */
  private static final int RETAINED_CAPACITY = 4 << 20;

  private final StorageFile file;
  private final CRC32C crc = new CRC32C();

  /**
   * Framed records not yet written, from 0 to position; little-endian, on the heap (array-backed).
   */
  private ByteBuffer buffer = newBuffer(INITIAL_CAPACITY);

  /** End of the flushed data in the file: where the next flush writes. */
  private long offset;

  /**
   * A writer appending at {@code startOffset} (0 for a new file, the valid end when reusing one).
   */
  public LogWriter(StorageFile file, long startOffset) {
    if (file == null) {
      throw new InvalidArgumentException("log file is null");
    }
    if (startOffset < 0) {
      throw new InvalidArgumentException("negative log start offset " + startOffset);
    }
    this.file = file;
    this.offset = startOffset;
  }

  /**
   * Writes a record's payload straight into the writer's buffer (see {@link #add(int,
   * PayloadEncoder)}).
   */
  @FunctionalInterface
  public interface PayloadEncoder {
    /** Puts exactly the announced number of bytes into {@code out}, from its position on. */
    void encode(ByteBuffer out);
  }

  /**
   * Frames the remaining bytes of {@code payload} (1 to {@link #MAX_PAYLOAD} of them) into the
   * pending buffer; the payload's position is not moved. Nothing is written yet.
   */
  public void add(ByteBuffer payload) {
    if (payload == null) {
      throw new InvalidArgumentException("log record payload is null");
    }
    int length = payload.remaining();
    int at = reserve(length);
    buffer.put(at + LogFormat.HEADER_SIZE, payload, payload.position(), length);
    frame(at, length);
  }

  /**
   * Frames a record of {@code length} payload bytes that {@code encoder} puts directly into the
   * pending buffer (a little-endian view of exactly {@code length} bytes), so a caller that
   * serializes its records needs neither a buffer of its own nor a copy. If the encoder throws, or
   * leaves bytes unwritten, nothing is added.
   */
  public void add(int length, PayloadEncoder encoder) {
    if (encoder == null) {
      throw new InvalidArgumentException("log record encoder is null");
    }
    int at = reserve(length);
    int start = at + LogFormat.HEADER_SIZE;
    // The encoder writes into the pending buffer itself, limited to its record: no view is made per
    // record.
    buffer.limit(start + length).position(start);
    int written;
    try {
      encoder.encode(buffer);
      written = buffer.position() - start;
    } finally {
      buffer
          .order(ByteOrder.LITTLE_ENDIAN)
          .limit(buffer.capacity())
          .position(at); // nothing added yet
    }
    if (written != length) {
      throw new IllegalStateException(
          "log record encoder wrote "
              + written
              + " of the "
              + length
              + " bytes it announced; nothing was added");
    }
    frame(at, length);
  }

  /** Checks a payload length and makes room for its frame; returns where the frame starts. */
  private int reserve(int length) {
    if (length <= 0) {
      throw new InvalidArgumentException(
          length == 0 ? "log record payload is empty" : "negative log record length " + length);
    }
    if (length > LogFormat.MAX_PAYLOAD) {
      throw new InvalidArgumentException(
          "log record payload of "
              + length
              + " bytes exceeds the maximum of "
              + LogFormat.MAX_PAYLOAD);
    }
    ensureRoom(LogFormat.HEADER_SIZE + length);
    return buffer.position();
  }

  /** Writes the header of the payload already at {@code at + HEADER_SIZE} and adds the record. */
  private void frame(int at, int length) {
    // One copy of the payload and no allocation: frame it in place, then checksum the framed bytes.
    buffer.putInt(at + LogFormat.LENGTH_OFFSET, length);
    buffer.putInt(
        at + LogFormat.CRC_OFFSET,
        LogFormat.checksum(crc, buffer.array(), buffer.arrayOffset() + at, length));
    buffer.position(at + LogFormat.HEADER_SIZE + length);
  }

  /**
   * Writes every pending record at {@link #offset()} with one positional write and returns the new
   * end offset. On failure throws StorageException and changes nothing: the offset stays and the
   * records stay pending.
   */
  public long flush() {
    int pending = buffer.position();
    if (pending == 0) {
      return offset;
    }
    boolean written = false;
    try {
      file.write(
          offset, buffer.flip()); // the buffer itself, not a view of it: a flush allocates nothing
      written = true;
    } catch (StorageException e) {
      throw new StorageException(
          "log write of "
              + pending
              + " bytes at offset "
              + offset
              + " to "
              + file
              + " failed; the log still ends at offset "
              + offset
              + " and the records stay pending"
              + " (retry the flush, or truncate the file to "
              + offset
              + "): "
              + e.getMessage(),
          e);
    } finally {
      if (!written) buffer.limit(buffer.capacity()).position(pending); // the records stay pending
    }
    offset += pending;
    if (buffer.capacity() > RETAINED_CAPACITY) {
      buffer = newBuffer(INITIAL_CAPACITY);
    } else {
      buffer.clear();
    }
    return offset;
  }

  /** Makes everything flushed so far durable. */
  public void sync() {
    file.sync();
  }

  /** End of the flushed data in the file. */
  public long offset() {
    return offset;
  }

  /** Bytes (headers included) added but not yet flushed. */
  public int pending() {
    return buffer.position();
  }

  private void ensureRoom(int bytes) {
    if (buffer.remaining() >= bytes) {
      return;
    }
    long needed = (long) buffer.position() + bytes;
    if (needed > Integer.MAX_VALUE - 16) {
      throw new InvalidArgumentException(
          "log writer holds "
              + buffer.position()
              + " unflushed bytes; flush before adding a record of "
              + bytes
              + " more");
    }
    long grown = Math.min(Integer.MAX_VALUE - 16, Math.max(needed, 2L * buffer.capacity()));
    ByteBuffer bigger = newBuffer((int) grown);
    bigger.put(buffer.flip());
    buffer = bigger;
  }

  private static ByteBuffer newBuffer(int capacity) {
    return ByteBuffer.allocate(capacity).order(ByteOrder.LITTLE_ENDIAN);
  }
}
