package io.basaltdb.kafka;

import org.apache.kafka.streams.state.TimestampedBytesStore;

/**
 * The window store of a timestamped DSL window aggregation: values stored as Streams gives them, an
 * 8-byte timestamp before the value ({@link TimestampedBytesStore}).
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
public class BasaltTimestampedWindowStore extends BasaltWindowStore
    implements TimestampedBytesStore {
  public BasaltTimestampedWindowStore(
      String name,
      long retentionPeriod,
      long segmentInterval,
      long windowSize,
      boolean retainDuplicates) {
    super(name, retentionPeriod, segmentInterval, windowSize, retainDuplicates);
  }
}
