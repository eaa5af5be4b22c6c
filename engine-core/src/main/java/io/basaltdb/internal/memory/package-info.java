/**
 * Off-heap memory: the one accessor every native read and write goes through ({@link
 * io.basaltdb.internal.memory.Mem}), its debug mode, and the slab allocator.
 *
 * <h2>Memory-access naming scheme</h2>
 *
 * Borrowed from JCTools and used for every non-plain access in the engine:
 *
 * <ul>
 *   <li>{@code lp*} / {@code sp*}: plain load / store. No ordering; for data that is immutable once
 *       published, or owned by one thread.
 *   <li>{@code lv*} / {@code sv*}: volatile load / store. Sequentially consistent with every other
 *       volatile and CAS access.
 *   <li>{@code so*}: ordered (release) store: earlier writes become visible no later than this one.
 *   <li>{@code cas*}: compare-and-swap, with volatile semantics on both sides.
 * </ul>
 *
 * Addresses are raw {@code long}s; 0 is null. Every call site that uses anything but a plain access
 * states, on the same line or the line above, which happens-before edge it relies on.
 *
 * <h2>Debug mode</h2>
 *
 * With {@code -Dbasalt.memory.debug=true} every access is bounds-checked against the live
 * allocation it falls in, frees are checked for double free and size mismatch, freed memory is
 * poisoned, and allocators report leaked blocks with the stack trace of their allocation. The test
 * suite runs with it on. With it off the checks compile away ({@link
 * io.basaltdb.internal.memory.Mem#DEBUG} is a static final).
 */
package io.basaltdb.internal.memory;
