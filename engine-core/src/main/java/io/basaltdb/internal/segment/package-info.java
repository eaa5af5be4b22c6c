/**
 * Log segments: Magma's log-structured storage of documents in seqno order, with a per-segment
 * seqno index (seed 000 section 3, "Log Structured Object Store" and 3.4). Byte layouts:
 * docs/format.md, "Log segment"; {@link io.basaltdb.internal.segment.SegmentFormat} mirrors them.
 *
 * <h2>Flow</h2>
 *
 * At each flush of the write cache the engine appends the flushed documents, in increasing seqno
 * order, to the tail segment through its {@link io.basaltdb.internal.segment.SegmentWriter},
 * records each returned location hint in the key index, then calls {@code checkpoint()} and {@code
 * sync()} and keeps the returned {@link io.basaltdb.internal.segment.SegmentState} in its manifest.
 * A read goes seqno -> segment (the engine's array of segments sorted by start seqno) -> that
 * segment's {@link io.basaltdb.internal.segment.SegmentReader} -> seqno index -> block -> document;
 * a valid hint skips the index.
 *
 * <h2>Files</h2>
 *
 * <ul>
 *   <li>{@code SegmentWriter}: appends, packs blocks, keeps one in-memory tail page per index
 *       level, checkpoints copy-on-write, reopens after a restart.
 *   <li>{@code SegmentReader}, {@code DocumentIterator}: point reads and seqno-ordered scans of one
 *       checkpointed state.
 *   <li>{@code BlockBuilder} / {@code Block}: data block encoding, LZ4 compression, decoding and
 *       checks.
 *   <li>{@code IndexPage}: seqno-index pages, in memory and on disk.
 *   <li>{@code SegmentIo}: bounded, checked reads of records; {@code SegmentFormat}: layout
 *       constants.
 * </ul>
 *
 * <p>No shared mutable memory here besides the file itself and a reader's {@code LongAdder}
 * counter: the writer is confined to the flusher thread and readers see immutable states.
 * Visibility of the file's bytes to readers on other threads comes from the storage layer and from
 * the engine publishing each new reader (after the checkpoint that wrote them) through its own
 * volatile or locked reference.
 */
package io.basaltdb.internal.segment;
