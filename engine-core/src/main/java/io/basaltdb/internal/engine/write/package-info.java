/**
 * Writes (Magma sections 3.1 and 3.4): the {@link io.basaltdb.internal.engine.write.CommitPipeline}
 * (group commit: a leader writes a group's WAL records, applies it to the active write cache and
 * publishes its seqnos), the WAL ({@link io.basaltdb.internal.engine.write.CommitLog}, its files
 * chained and recycled by {@link io.basaltdb.internal.engine.write.WalChain}), {@link
 * io.basaltdb.internal.engine.write.DiskWrites} (write cache switches, admission: slowdowns and
 * stalls), the {@link io.basaltdb.internal.engine.write.Flusher} (an immutable write cache to log
 * segments and a level-0 key index table, or a large batch straight there when it skips the WAL)
 * and {@link io.basaltdb.internal.engine.write.WalReplay} (recovery's replay of the WAL above the
 * manifest).
 *
 * <p>Invariants: a write is acknowledged only after its group's WAL write (and sync, per the sync
 * mode); a write either applies whole or throws having written nothing; a flush's files are
 * committed in one version edit with the WAL position it covers. Used by the facade; uses every
 * package before it.
 *
 * <p>{@code Flusher.parallelLookups} (the flush size from which a flush's key lookups run on two
 * threads) is public and settable: tests lower it.
 */
package io.basaltdb.internal.engine.write;
