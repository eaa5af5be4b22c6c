/**
 * The write-ahead log: record framing ({@link io.basaltdb.internal.wal.LogWriter}, {@link
 * io.basaltdb.internal.wal.LogReader}; byte layout in docs/format.md, "Write-ahead log record"). A
 * log file is a sequence of length-and-CRC32C-framed records; a reader returns the valid prefix and
 * says whether anything invalid follows it.
 */
package io.basaltdb.internal.wal;
