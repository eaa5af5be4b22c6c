package io.basaltdb;

/** When a write reaches the disk with respect to its acknowledgement. */
public enum SyncMode {
  /**
   * The write-ahead log is fsynced before a write returns (the default). Concurrent writers share
   * one write and one fsync (group commit). An acknowledged write survives a crash or a power loss.
   */
  SYNC,
  /**
   * The log is written before a write returns and fsynced every {@link Options#syncIntervalMillis}
   * milliseconds. A process crash loses nothing; a power loss loses at most that interval.
   */
  PERIODIC,
  /**
   * The log is written before a write returns and fsynced only when a flush rotates it or the store
   * closes. A process crash loses nothing; a power loss may lose everything since the last flush.
   */
  NONE
}
