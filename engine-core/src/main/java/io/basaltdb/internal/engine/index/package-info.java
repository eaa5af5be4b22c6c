/**
 * Key index compaction (Magma section 3.2; guards from PebblesDB): the {@link
 * io.basaltdb.internal.engine.index.Compactor} runs jobs the {@code CompactionPicker} chooses by
 * {@link io.basaltdb.internal.engine.index.LevelTargets} (level 0 tiered, then leveled, or guarded
 * with {@code GuardCutter}), writes their output through {@link
 * io.basaltdb.internal.engine.index.TableOutput}, reports the versions it drops to the delete list
 * and, with {@code OlderVersions}, the versions a level-0 merge reveals below it.
 *
 * <p>Invariants: a merge keeps the newest version of every key and every older version a live
 * snapshot or checkpoint can read; every version it drops reaches the delete list in the same edit
 * as its output. Used by {@code write} (a flush writes its level-0 table with {@code TableOutput})
 * and the facade; uses {@code read} (merges), {@code gc}, {@code version} and {@code base}. The
 * picker, the guard cutter and older-version lookups stay package-private.
 */
package io.basaltdb.internal.engine.index;
