package io.basaltdb.internal.engine.base;

/**
 * Receives every key index record version a compaction discards, or a flush reports superseded
 * ({@link io.basaltdb.Options#flushLookups}), as {@code (keyspace, seqno, doc size)}: called once
 * per version, on a compaction or the flusher's thread, just before the {@link
 * io.basaltdb.internal.engine.version.VersionEdit} that drops (or reports) the version is
 * committed; a version a flush reported is not named again by the compaction that later drops it.
 * That edit also adds the version to the keyspace's persisted {@link
 * io.basaltdb.internal.engine.version.Manifest.Counters} ({@code discardedVersions}, {@code
 * discardedBytes}).
 *
 * <p>At a crash (or a failed commit, which fails the store) after the calls and before the commit
 * is durable, what the calls did in memory dies with the process, and the store reopens from the
 * manifest before the compaction: the versions are still in its tables and its counters do not
 * count them. The compaction runs again after recovery and calls the listener again for the
 * versions it discards then. Once the commit is durable, no call repeats a version. So the calls of
 * one open never name a version twice, but a version named just before a crash is named again after
 * it. A consumer that persists what it learns must commit it through the same edit, atomically with
 * the drop, as the counters do (the garbage collector's delete list is next): anything persisted
 * elsewhere counts a version twice or never.
 *
 * <p>Thread-safety: implementations are called from compaction threads and the flusher, several at
 * once.
 */
public interface DiscardListener {
  DiscardListener NONE = (ks, seqno, size) -> {};

  void discarded(int keyspace, long seqno, int docSize);
}
