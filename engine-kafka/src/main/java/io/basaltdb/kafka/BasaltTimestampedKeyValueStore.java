package io.basaltdb.kafka;

import org.apache.kafka.streams.state.TimestampedBytesStore;

/**
 * The key-value store of a timestamped DSL table: values are stored as Streams gives them, an
 * 8-byte timestamp before the value ({@link TimestampedBytesStore}), so Streams does not wrap it in
 * an adapter that adds and strips timestamps on every access.
 *
 * <p>Thread-safety: as {@link BasaltStateStore}.
 */
public class BasaltTimestampedKeyValueStore extends BasaltKeyValueStore
    implements TimestampedBytesStore {
  public BasaltTimestampedKeyValueStore(String name) {
    super(name);
  }
}
