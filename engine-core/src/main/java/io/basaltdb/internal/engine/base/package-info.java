/**
 * What every engine component shares and that depends on nothing else of the engine: the keyspace
 * catalog ({@link io.basaltdb.internal.engine.base.KeyspaceCatalog}: the live keyspaces, name to id
 * and back), the store's state ({@link io.basaltdb.internal.engine.base.StoreState}: open and
 * healthy or not, the first write, flush or compaction failure, which refuses writes from then on
 * while reads still work, and the signal stalled writers wait on), the {@link
 * io.basaltdb.internal.engine.base.Notifier} (events to the user's listener and the log), how the
 * background workers wake each other ({@link io.basaltdb.internal.engine.base.WorkerEvents}) and
 * the test hook that hears of discarded versions ({@link
 * io.basaltdb.internal.engine.base.DiscardListener}).
 *
 * <p>Used by every other engine package; uses none. All five types are public because those
 * packages use them.
 */
package io.basaltdb.internal.engine.base;
