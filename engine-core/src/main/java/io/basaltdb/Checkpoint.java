package io.basaltdb;

import java.util.List;

/**
 * A checkpoint: a committed state that a rollback can return the store to. A store on disk takes
 * one whenever it commits a manifest (each flush of the write cache, each compaction, each keyspace
 * created or dropped; {@link Basalt#checkpoint()} takes one on demand) and keeps it for {@link
 * Options#checkpointRetentionMillis}, with the files it needs; {@link
 * Basalt#rollback(java.nio.file.Path, long)} rolls the closed store back. An in-memory store takes
 * one only on demand, as a snapshot held for the same time, and {@link Basalt#rollback(long)} rolls
 * it back while open.
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
