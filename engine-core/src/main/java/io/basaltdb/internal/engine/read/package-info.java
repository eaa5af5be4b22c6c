/**
 * Reads (Magma sections 3.3, 4 and 6): {@link io.basaltdb.internal.engine.read.ReadPath} (a get:
 * the write caches, then the key index tables newest first, then the document the record names;
 * batched gets with their reads pipelined through the read transport, made in place where the
 * file's mapping holds them), {@link io.basaltdb.internal.engine.read.MergingIterator} and {@link
 * io.basaltdb.internal.engine.read.MergeSources} (merges over caches and tables, also used by
 * compaction), {@link io.basaltdb.internal.engine.read.EngineSnapshot} and {@link
 * io.basaltdb.internal.engine.read.EngineCursor} (scans with read-ahead, ascending or descending),
 * {@link io.basaltdb.internal.engine.read.EngineFeed} (the change feed) and the built-in read
 * transports.
 *
 * <p>Invariants: a reader pins one version for its whole operation and takes no lock; a cursor or
 * feed never returns a key without its value; a damaged block is reported, never skipped. Used by
 * {@code index} (merges), {@code write} and the facade; uses {@code gc} (the feed's delete list),
 * {@code version}, {@code writecache} and {@code base}.
 */
package io.basaltdb.internal.engine.read;
