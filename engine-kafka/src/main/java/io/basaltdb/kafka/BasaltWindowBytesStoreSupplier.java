package io.basaltdb.kafka;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Supplies Basalt window stores ({@link BasaltStores#persistentWindowStore}, {@link
 * BasaltStores#persistentTimestampedWindowStore}).
 *
 * <p>Thread-safety: immutable.
 */
public final class BasaltWindowBytesStoreSupplier implements WindowBytesStoreSupplier {
  private final String name;
  private final long retentionPeriod;
  private final long segmentInterval;
  private final long windowSize;
  private final boolean retainDuplicates;
  private final boolean timestamped;

  BasaltWindowBytesStoreSupplier(
      String name,
      long retentionPeriod,
      long segmentInterval,
      long windowSize,
      boolean retainDuplicates,
      boolean timestamped) {
    this.name = name;
    this.retentionPeriod = retentionPeriod;
    this.segmentInterval = segmentInterval;
    this.windowSize = windowSize;
    this.retainDuplicates = retainDuplicates;
    this.timestamped = timestamped;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public WindowStore<Bytes, byte[]> get() {
    return timestamped
        ? new BasaltTimestampedWindowStore(
            name, retentionPeriod, segmentInterval, windowSize, retainDuplicates)
        : new BasaltWindowStore(
            name, retentionPeriod, segmentInterval, windowSize, retainDuplicates);
  }

  @Override
  public String metricsScope() {
    return "basalt-window";
  }

  @Override
  public long segmentIntervalMs() {
    return segmentInterval;
  }

  @Override
  public long windowSize() {
    return windowSize;
  }

  @Override
  public boolean retainDuplicates() {
    return retainDuplicates;
  }

  @Override
  public long retentionPeriod() {
    return retentionPeriod;
  }

  @Override
  public String toString() {
    return "BasaltWindowBytesStoreSupplier{name='"
        + name
        + "', retentionPeriod="
        + retentionPeriod
        + ", segmentInterval="
        + segmentInterval
        + ", windowSize="
        + windowSize
        + ", retainDuplicates="
        + retainDuplicates
        + ", timestamped="
        + timestamped
        + "}";
  }
}
