package io.basaltdb.internal.sstable;

import io.basaltdb.CorruptionException;
import java.util.Arrays;

/**
 * When a table's expiring documents expire (Magma section 7.1; docs/format.md, "Meta block"): the
 * records with an expiry, sorted by it and cut into at most {@link #MAX_BUCKETS} buckets of about
 * equal counts, each with its latest expiry, its record count and the document bytes its records
 * name; and the document bytes of the whole table. A bucket counts as expired once its latest
 * expiry has passed, so {@link #expiredBytes} never overstates and lags by at most one bucket.
 * Written in the meta block of a version-5 table; a table without expiring records has {@link
 * #NONE}.
 *
 * <p>Thread-safety: immutable once built.
 */
public final class ExpiryHistogram {
  /** Buckets a table keeps at most. */
  static final int MAX_BUCKETS = 32;

  public static final ExpiryHistogram NONE =
      new ExpiryHistogram(new long[0], new long[0], new long[0], 0);

  private final long[] ends;
  private final long[] counts;
  private final long[] bytes;
  private final long tableBytes;

  private ExpiryHistogram(long[] ends, long[] counts, long[] bytes, long tableBytes) {
    this.ends = ends;
    this.counts = counts;
    this.bytes = bytes;
    this.tableBytes = tableBytes;
  }

  /**
   * The histogram of {@code n} expiring records, {@code expiries[i]} (above 0) with document size
   * {@code sizes[i]}; {@code tableBytes}: every record's document bytes. Sorts the arrays' first n.
   */
  static ExpiryHistogram build(long[] expiries, int[] sizes, int n, long tableBytes) {
    if (n == 0) return new ExpiryHistogram(new long[0], new long[0], new long[0], tableBytes);
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) order[i] = i;
    Arrays.sort(order, (a, b) -> Long.compare(expiries[a], expiries[b]));
    int buckets = Math.min(MAX_BUCKETS, n);
    long[] ends = new long[buckets], counts = new long[buckets], bytes = new long[buckets];
    for (int b = 0; b < buckets; b++) {
      int from = (int) ((long) n * b / buckets), to = (int) ((long) n * (b + 1) / buckets);
      for (int j = from; j < to; j++) {
        int i = order[j];
        bytes[b] += sizes[i];
        ends[b] = Math.max(ends[b], expiries[i]);
      }
      counts[b] = to - from;
    }
    return new ExpiryHistogram(ends, counts, bytes, tableBytes);
  }

  /** Document bytes of the records whose bucket has expired at {@code now} (ms since the epoch). */
  public long expiredBytes(long now) {
    long sum = 0;
    for (int b = 0; b < ends.length && ends[b] <= now; b++) sum += bytes[b];
    return sum;
  }

  /** Records whose bucket has expired at {@code now}. */
  public long expiredRecords(long now) {
    long sum = 0;
    for (int b = 0; b < ends.length && ends[b] <= now; b++) sum += counts[b];
    return sum;
  }

  /** The document bytes every record of the table names. */
  public long tableBytes() {
    return tableBytes;
  }

  /** Whether the table holds an expiring record. */
  public boolean isEmpty() {
    return ends.length == 0;
  }

  /** The earliest time a bucket expires, or Long.MAX_VALUE for none. */
  public long firstExpiry() {
    return ends.length == 0 ? Long.MAX_VALUE : ends[0];
  }

  /**
   * Appends {@code varint tableBytes | varint n | n x (varint end, varint count, varint bytes)}.
   */
  void encode(Output out) {
    out.putVarint(tableBytes);
    out.putVarint(ends.length);
    for (int b = 0; b < ends.length; b++) {
      out.putVarint(ends[b]);
      out.putVarint(counts[b]);
      out.putVarint(bytes[b]);
    }
  }

  /**
   * Decodes what {@link #encode} wrote at {@code pos[0]} of {@code b[0, end)}; advances {@code
   * pos[0]}.
   */
  static ExpiryHistogram decode(byte[] b, int end, int[] pos, long fileOffset, String file) {
    long table = readVarint(b, end, pos, fileOffset, file);
    long n = readVarint(b, end, pos, fileOffset, file);
    if (n < 1 || n > MAX_BUCKETS)
      throw new CorruptionException(
          file, fileOffset + pos[0], "an expiry histogram of " + n + " buckets");
    long[] ends = new long[(int) n], counts = new long[(int) n], bytes = new long[(int) n];
    for (int i = 0; i < n; i++) {
      ends[i] = readVarint(b, end, pos, fileOffset, file);
      counts[i] = readVarint(b, end, pos, fileOffset, file);
      bytes[i] = readVarint(b, end, pos, fileOffset, file);
      if (ends[i] <= 0 || counts[i] < 1 || bytes[i] < 0 || (i > 0 && ends[i] < ends[i - 1])) {
        throw new CorruptionException(file, fileOffset + pos[0], "a bad expiry histogram bucket");
      }
    }
    return new ExpiryHistogram(ends, counts, bytes, table);
  }

  private static long readVarint(byte[] b, int end, int[] pos, long fileOffset, String file) {
    long v = 0;
    int p = pos[0];
    for (int shift = 0; shift < 63; shift += 7) {
      if (p >= end) break;
      byte x = b[p++];
      v |= (long) (x & 0x7F) << shift;
      if (x >= 0) {
        pos[0] = p;
        if (v < 0) break;
        return v;
      }
    }
    throw new CorruptionException(
        file, fileOffset + pos[0], "a bad varint in the meta block's expiry histogram");
  }
}
