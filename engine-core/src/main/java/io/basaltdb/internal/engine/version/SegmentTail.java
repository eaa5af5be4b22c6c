package io.basaltdb.internal.engine.version;

import io.basaltdb.Options;
import io.basaltdb.internal.segment.SegmentOptions;
import io.basaltdb.internal.segment.SegmentWriter;
import io.basaltdb.internal.storage.StorageFile;

/**
 * A keyspace's log segment being appended to (the flusher's), its file, and the file's block cache
 * owner (for its index pages); recovery reopens it.
 */
public record SegmentTail(SegmentWriter writer, StorageFile file, long cacheOwner) {
  /**
   * The segment options the store's {@code options} give: block size, segment size, preallocation.
   */
  public static SegmentOptions segmentOptions(Options o) {
    return SegmentOptions.defaults()
        .withBlockSize(o.blockSize())
        .withMaxSegmentSize(o.segmentSize())
        .withPreallocateBytes(o.segmentSize());
  }
}
