/**
 * The durable and in-memory engines' facade and their assembly: {@link
 * io.basaltdb.internal.engine.Engine} (what {@code io.basaltdb.Basalt} calls), {@code StoreOpener}
 * (opens or recovers a store: builds the components below and wires them), {@code DiskStore} and
 * {@code MemoryStore} (the two kinds of {@code Store}: what runs in the background and how a store
 * closes), {@code StatsReport} (the stats map) and {@code StoreMBean} (JMX).
 *
 * <p>The engine is split by Magma's components, each a subpackage with its own design block; they
 * form layers, each using only those before it, and none uses this package (checked by {@code
 * EnginePackagesTest}):
 *
 * <ol>
 *   <li>{@code base}: what every component shares that depends on nothing (keyspace catalog, store
 *       state and events);
 *   <li>{@code writecache}: the write caches (Nitro skiplists) and the batch format;
 *   <li>{@code version}: the store's file set (versions, version edits, the manifest, checkpoints,
 *       recovery, file names, the table cache) and the engine's counters;
 *   <li>{@code gc}: garbage collection (the delete list and segment compaction);
 *   <li>{@code backup}: backups of disk and in-memory stores;
 *   <li>{@code read}: the read path, merges, cursors, snapshots and the change feed;
 *   <li>{@code index}: key index compaction (picker, level targets, guards' cuts, older versions);
 *   <li>{@code write}: the commit pipeline, the WAL, the flusher and WAL replay.
 * </ol>
 *
 * <p>Types and members are public only where another of these packages uses them (the compiler says
 * which); nothing here is API: {@code io.basaltdb} is, and no type of this tree appears in it.
 */
package io.basaltdb.internal.engine;
