package io.basaltdb.internal.wal;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The write-ahead log's record frame, mirroring docs/format.md ("Write-ahead log record"): a header
 * of the payload length and a CRC32C, then the payload; little-endian. Records follow each other
 * with no padding from offset 0 of the file, so the file's valid prefix is the longest run of
 * records that check out.
 *
 * <p>Thread-safety: stateless.
 */
final class LogFormat {
  /** Offset in the header of the payload length, a u32. */
  static final int LENGTH_OFFSET = 0;

  static final int LENGTH_SIZE = 4;

  /** Offset in the header of the CRC32C over the 4 length bytes and then the payload, a u32. */
  static final int CRC_OFFSET = 4;

  static final int CRC_SIZE = 4;
  static final int HEADER_SIZE = LENGTH_SIZE + CRC_SIZE;

  /**
   * Largest payload, 256 MiB. A length of 0 is invalid, so the zeros of a preallocated or
   * hole-filled tail never read as a record.
   */
  static final int MAX_PAYLOAD = 256 << 20;

  private LogFormat() {}

  /**
   * The checksum of a record: CRC32C over the length field's 4 little-endian bytes, then the
   * payload's remaining bytes ({@code payload}'s position is restored, and nothing is allocated).
   */
  static int checksum(CRC32C crc, int length, ByteBuffer payload) {
    crc.reset();
    for (int i = 0; i < LENGTH_SIZE; i++) {
      crc.update(length >>> (8 * i)); // the length's little-endian bytes, as stored
    }
    int start = payload.position();
    crc.update(payload);
    payload.position(start);
    return (int) crc.getValue();
  }

  /**
   * The checksum of the record framed at {@code frame[at]} whose length field is already stored:
   * CRC32C over that field, then the {@code length} payload bytes after the header.
   */
  static int checksum(CRC32C crc, byte[] frame, int at, int length) {
    crc.reset();
    crc.update(frame, at + LENGTH_OFFSET, LENGTH_SIZE);
    crc.update(frame, at + HEADER_SIZE, length);
    return (int) crc.getValue();
  }
}
