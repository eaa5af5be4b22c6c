/**
 * Nitro's lock-free MVCC skiplist (seed 001) with its nodes off the Java heap: {@link
 * io.basaltdb.internal.skiplist.SkipList} and its snapshots and iterators, the node layout ({@link
 * io.basaltdb.internal.skiplist.Node}), per-thread writer state, the access barrier and the garbage
 * collector.
 *
 * <h2>Memory-access modes</h2>
 *
 * Accessors of shared memory are named by access mode as in the scheme of {@link
 * io.basaltdb.internal.memory} ({@code lp}/{@code sp} plain, {@code lv}/{@code sv} volatile, {@code
 * so} ordered, {@code cas}), on and off the heap, and every use of a non-plain one says on its
 * line, or the line above, which happens-before edge it relies on. This package uses one mode that
 * scheme does not name:
 *
 * <ul>
 *   <li>{@code lu*} / {@code su*}: opaque ("unordered") load / store ({@code VarHandle.getOpaque} /
 *       {@code setOpaque}). Atomic, and coherent per variable (a reader never sees a value older
 *       than one it has seen), but unordered with every other variable; for a statistic that one
 *       thread writes and others read racily.
 * </ul>
 *
 * Fields read through {@link java.util.concurrent.atomic} classes or declared {@code volatile} keep
 * their own names; the comment at the field states its rule.
 */
package io.basaltdb.internal.skiplist;
