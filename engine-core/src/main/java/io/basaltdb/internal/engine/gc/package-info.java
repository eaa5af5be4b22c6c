/**
 * Magma's garbage collection (section 3.5), which never looks a key up: the {@link
 * io.basaltdb.internal.engine.gc.DeleteList} (tables of the seqnos and sizes of versions key index
 * compaction and flushes found superseded, per segment) and {@link
 * io.basaltdb.internal.engine.gc.SegmentCompactor} (picks segments by fragmentation, rewrites their
 * live documents by skipping the delete list's seqnos, and commits the new segments through a
 * version edit; paces and, past its thresholds, slows or stalls writers).
 *
 * <p>Invariants: a document is dropped only if the delete list names its seqno or its key index
 * record says it expired; a segment is replaced only in an edit that also drops the delete list
 * entries it consumed; a segment a live snapshot or checkpoint can read stays on disk. Used by
 * {@code read} (the change feed merges the delete list), {@code index} (compaction writes it),
 * {@code write} (flushes write level 0 and ask for pressure) and the facade; uses {@code version},
 * {@code writecache} and {@code base}.
 *
 * <p>{@code SegmentCompactor.quietNanos} (how long without a flush makes the store quiet, and
 * collection go down to half its threshold) is public and settable: tests shorten it.
 */
package io.basaltdb.internal.engine.gc;
