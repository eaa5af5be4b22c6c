package io.basaltdb.internal.segment;

import static io.basaltdb.internal.segment.SegmentFormat.BLOCK_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FILE_HEADER_SIZE;
import static io.basaltdb.internal.segment.SegmentFormat.FORMAT_VERSION;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_LEVELS;
import static io.basaltdb.internal.segment.SegmentFormat.MAX_SEGMENT_ID;
import static io.basaltdb.internal.segment.SegmentFormat.MIN_DOC_SIZE;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * A checkpointed state of one log segment: everything needed to read it ({@link SegmentReader}) or
 * to continue appending after a restart ({@link SegmentWriter#reopen}). The engine keeps it in its
 * manifest through {@link #encode}/{@link #decode}; the layout is docs/format.md, "Segment state".
 *
 * <p>Thread-safety: immutable.
 *
 * @param segmentId the segment's id, 0 to 2^31-1; the high half of its location hints
 * @param startSeqno no document of the segment has a smaller seqno
 * @param lastSeqno seqno of the last document, {@code startSeqno - 1} while the segment is empty
 * @param tailOffset bytes of the file that belong to this state; nothing past it is ever read
 * @param rootOffset offset of the seqno index's root page; 0 while the segment is empty
 * @param levels levels of the seqno index (1 = the root is a leaf); 0 while the segment is empty
 * @param documentCount documents in the segment
 * @param documentBytes sum of the documents' encoded, uncompressed sizes
 * @param staleBytes bytes of index pages that later checkpoints superseded (dead space)
 * @param spineBytes bytes of this checkpoint's partial index pages, the last bytes before the tail;
 *     they become stale at the next checkpoint
 * @param blockSize the writer's target block size, used by readers to size their reads
 * @param pageSize size of a full index page
 * @param zstd whether its writer compressed its data blocks with zstd (a cold segment; LZ4
 *     otherwise), so the background cold pass knows not to rewrite it again
 */
public record SegmentState(
    long segmentId,
    long startSeqno,
    long lastSeqno,
    long tailOffset,
    long rootOffset,
    int levels,
    long documentCount,
    long documentBytes,
    long staleBytes,
    long spineBytes,
    int blockSize,
    int pageSize,
    boolean zstd) {

  /** A state of an LZ4 segment. */
  public SegmentState(
      long segmentId,
      long startSeqno,
      long lastSeqno,
      long tailOffset,
      long rootOffset,
      int levels,
      long documentCount,
      long documentBytes,
      long staleBytes,
      long spineBytes,
      int blockSize,
      int pageSize) {
    this(
        segmentId,
        startSeqno,
        lastSeqno,
        tailOffset,
        rootOffset,
        levels,
        documentCount,
        documentBytes,
        staleBytes,
        spineBytes,
        blockSize,
        pageSize,
        false);
  }

  static final int VERSION_OFFSET = 0;
  static final int LEVELS_OFFSET = 2;

  /** One byte of flags: {@link #FLAG_ZSTD}; no other bit is set. */
  static final int FLAGS_OFFSET = 3;

  /** The data blocks are zstd frames (a cold segment). */
  static final int FLAG_ZSTD = 1;

  static final int SEGMENT_ID_OFFSET = 4;
  static final int PAGE_SIZE_OFFSET = 8;
  static final int BLOCK_SIZE_OFFSET = 12;
  static final int START_SEQNO_OFFSET = 16;
  static final int LAST_SEQNO_OFFSET = 24;
  static final int TAIL_OFFSET_OFFSET = 32;
  static final int ROOT_OFFSET_OFFSET = 40;
  static final int DOCUMENT_COUNT_OFFSET = 48;
  static final int DOCUMENT_BYTES_OFFSET = 56;
  static final int STALE_BYTES_OFFSET = 64;
  static final int SPINE_BYTES_OFFSET = 72;
  static final int CRC_OFFSET = 80;

  /** More than any 4 GiB file can hold, small enough that byte-count arithmetic cannot overflow. */
  private static final long MAX_DOCUMENTS = 1L << 40;

  /** Bytes {@link #encode} writes. */
  public static final int ENCODED_SIZE = 84;

  public boolean isEmpty() {
    return documentCount == 0;
  }

  /** Writes the state's {@link #ENCODED_SIZE} bytes at {@code dst}'s position and advances it. */
  public void encode(ByteBuffer dst) {
    ByteBuffer b = ByteBuffer.allocate(ENCODED_SIZE).order(ByteOrder.LITTLE_ENDIAN);
    b.putShort(VERSION_OFFSET, (short) FORMAT_VERSION)
        .put(LEVELS_OFFSET, (byte) levels)
        .put(FLAGS_OFFSET, (byte) (zstd ? FLAG_ZSTD : 0))
        .putInt(SEGMENT_ID_OFFSET, (int) segmentId)
        .putInt(PAGE_SIZE_OFFSET, pageSize)
        .putInt(BLOCK_SIZE_OFFSET, blockSize)
        .putLong(START_SEQNO_OFFSET, startSeqno)
        .putLong(LAST_SEQNO_OFFSET, lastSeqno)
        .putLong(TAIL_OFFSET_OFFSET, tailOffset)
        .putLong(ROOT_OFFSET_OFFSET, rootOffset)
        .putLong(DOCUMENT_COUNT_OFFSET, documentCount)
        .putLong(DOCUMENT_BYTES_OFFSET, documentBytes)
        .putLong(STALE_BYTES_OFFSET, staleBytes)
        .putLong(SPINE_BYTES_OFFSET, spineBytes);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, CRC_OFFSET);
    b.putInt(CRC_OFFSET, (int) crc.getValue());
    dst.put(b.array());
  }

  /**
   * Reads a state written by {@link #encode} from {@code src}'s position and advances it; throws
   * CorruptionException if the checksum or any invariant fails.
   */
  public static SegmentState decode(ByteBuffer src) {
    if (src.remaining() < ENCODED_SIZE) {
      throw new CorruptionException(
          "segment state truncated: " + src.remaining() + " of " + ENCODED_SIZE + " bytes");
    }
    byte[] a = new byte[ENCODED_SIZE];
    src.get(a);
    ByteBuffer b = ByteBuffer.wrap(a).order(ByteOrder.LITTLE_ENDIAN);
    CRC32C crc = new CRC32C();
    crc.update(a, 0, CRC_OFFSET);
    if (b.getInt(CRC_OFFSET) != (int) crc.getValue()) {
      throw new CorruptionException("segment state: checksum mismatch");
    }
    int version = b.getShort(VERSION_OFFSET) & 0xFFFF;
    if (version != FORMAT_VERSION || (a[FLAGS_OFFSET] & ~FLAG_ZSTD) != 0) {
      throw new CorruptionException(
          "segment state: unknown format version " + version + " or flags " + a[FLAGS_OFFSET]);
    }
    SegmentState s =
        new SegmentState(
            b.getInt(SEGMENT_ID_OFFSET) & 0xFFFF_FFFFL,
            b.getLong(START_SEQNO_OFFSET),
            b.getLong(LAST_SEQNO_OFFSET),
            b.getLong(TAIL_OFFSET_OFFSET),
            b.getLong(ROOT_OFFSET_OFFSET),
            a[LEVELS_OFFSET] & 0xFF,
            b.getLong(DOCUMENT_COUNT_OFFSET),
            b.getLong(DOCUMENT_BYTES_OFFSET),
            b.getLong(STALE_BYTES_OFFSET),
            b.getLong(SPINE_BYTES_OFFSET),
            b.getInt(BLOCK_SIZE_OFFSET),
            b.getInt(PAGE_SIZE_OFFSET),
            (a[FLAGS_OFFSET] & FLAG_ZSTD) != 0);
    String bad = s.problem();
    if (bad != null) {
      throw new CorruptionException("segment state: " + bad);
    }
    return s;
  }

  /**
   * Throws InvalidArgumentException if the fields break an invariant (a state not from a writer).
   */
  void validate() {
    String bad = problem();
    if (bad != null) {
      throw new InvalidArgumentException("invalid segment state " + this + ": " + bad);
    }
  }

  /** The first broken invariant, or null. */
  private String problem() {
    if (segmentId < 0 || segmentId > MAX_SEGMENT_ID) {
      return "segment id " + segmentId + " out of range";
    }
    if (startSeqno < 0 || lastSeqno < startSeqno - 1 || lastSeqno == Long.MAX_VALUE) {
      return "seqno range [" + startSeqno + ", " + lastSeqno + "] is invalid";
    }
    if (pageSize < SegmentOptions.MIN_PAGE_SIZE
        || pageSize > SegmentOptions.MAX_PAGE_SIZE
        || blockSize < SegmentOptions.MIN_BLOCK_SIZE
        || blockSize > SegmentOptions.MAX_BLOCK_SIZE) {
      return "page size " + pageSize + " or block size " + blockSize + " out of range";
    }
    if (tailOffset < FILE_HEADER_SIZE || tailOffset > 0xFFFF_FFFFL) {
      return "tail offset " + tailOffset + " out of range";
    }
    if (levels < 0 || levels > MAX_LEVELS) {
      return "index levels " + levels + " out of range";
    }
    boolean empty = documentCount == 0;
    if (empty != (levels == 0)
        || empty != (rootOffset == 0)
        || empty != (lastSeqno == startSeqno - 1)) {
      return "document count, levels, root and last seqno disagree on emptiness";
    }
    if (!empty
        && (rootOffset < FILE_HEADER_SIZE + BLOCK_HEADER_SIZE
            || rootOffset >= tailOffset
            || documentCount < 0
            || documentCount > MAX_DOCUMENTS
            || documentCount - 1 > lastSeqno - startSeqno)) {
      return "root offset " + rootOffset + " or document count " + documentCount + " out of range";
    }
    // Written so that no sum can overflow: two huge counts must not add up to a small negative one.
    if (documentBytes < MIN_DOC_SIZE * documentCount
        || staleBytes < 0
        || spineBytes < 0
        || staleBytes > tailOffset
        || spineBytes > tailOffset - staleBytes) {
      return "byte counts out of range";
    }
    return null;
  }
}
