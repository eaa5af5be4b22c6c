package io.basaltdb.kafka;

import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;

/**
 * Supplies Basalt session stores ({@link BasaltStores#persistentSessionStore}).
 *
 * <p>Thread-safety: immutable.
 */
public final class BasaltSessionBytesStoreSupplier implements SessionBytesStoreSupplier {
  private final String name;
  private final long retentionPeriod;

  BasaltSessionBytesStoreSupplier(String name, long retentionPeriod) {
    this.name = name;
    this.retentionPeriod = retentionPeriod;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public SessionStore<Bytes, byte[]> get() {
    return new BasaltSessionStore(name, retentionPeriod, segmentIntervalMs());
  }

  @Override
  public String metricsScope() {
    return "basalt-session";
  }

  /** As Kafka's persistent session stores: half the retention period, at least a minute. */
  @Override
  public long segmentIntervalMs() {
    return Math.max(retentionPeriod / 2, 60_000L);
  }

  @Override
  public long retentionPeriod() {
    return retentionPeriod;
  }
}
