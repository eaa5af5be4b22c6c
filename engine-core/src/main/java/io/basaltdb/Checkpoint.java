package io.basaltdb;

import java.util.List;

/**
 * A checkpoint of a disk store: a committed state that {@link Basalt#rollback} can return the store
 * to. The store takes one whenever it commits a manifest (each flush of the write cache, each
 * compaction, each keyspace created or dropped; {@link Basalt#checkpoint()} takes one on demand)
 * and keeps it for {@link Options#checkpointRetentionMillis}, with the files it needs.
 *
 * @param id the checkpoint's number; later checkpoints have larger ones
 * @param createdMillis when it was taken, in milliseconds since the epoch
 * @param seqno the last write it holds: it holds every write up to this seqno and none after
 * @param keyspaces the names of the keyspaces it holds, sorted
 *     <p>Thread-safety: immutable.
 */
public record Checkpoint(long id, long createdMillis, long seqno, List<String> keyspaces) {
  public Checkpoint {
    keyspaces = List.copyOf(keyspaces);
  }
}
