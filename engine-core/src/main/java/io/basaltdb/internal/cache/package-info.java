/**
 * The store's off-heap block cache ({@link io.basaltdb.internal.cache.BlockCache}): blocks of the
 * key index, index pages of the log segments and single documents, pinned by readers and freed
 * after their last release.
 *
 * <h2>Memory-access modes</h2>
 *
 * Accessors of shared state are named by access mode as in the scheme of {@link
 * io.basaltdb.internal.memory} ({@code lp}/{@code sp} plain, {@code lv}/{@code sv} volatile, {@code
 * so} ordered, {@code cas}), and every use of a non-plain one says on its line, or the line above,
 * which happens-before edge it relies on. This package uses one operation that scheme does not
 * name:
 *
 * <ul>
 *   <li>{@code faa*}: atomic fetch-and-add ({@code VarHandle.getAndAdd}), returning the value
 *       before the add; volatile semantics on both sides, like {@code cas*}.
 * </ul>
 *
 * Fields read through {@link java.util.concurrent.atomic} classes, {@link
 * java.util.concurrent.atomic.LongAdder}s or declared {@code volatile} keep their own names; the
 * comment at the field states its rule.
 */
package io.basaltdb.internal.cache;
