/**
 * The store's file set and how it changes (Magma section 3.2): a {@link
 * io.basaltdb.internal.engine.version.Version} is an immutable view (the write caches and, per
 * keyspace, its {@link io.basaltdb.internal.engine.version.KeyspaceFiles}: key index tables by
 * level or guard, log segments, delete list tables, garbage per segment); {@link
 * io.basaltdb.internal.engine.version.Versions} publishes the current one and counts its readers;
 * {@link io.basaltdb.internal.engine.version.VersionSet} applies {@link
 * io.basaltdb.internal.engine.version.VersionEdit}s, writes each as a new {@link
 * io.basaltdb.internal.engine.version.Manifest}, keeps {@link
 * io.basaltdb.internal.engine.version.Checkpoints}, and deletes files no version and no checkpoint
 * names; {@link io.basaltdb.internal.engine.version.Recovery} reads it all back at open. Also here:
 * {@link io.basaltdb.internal.engine.version.FileNames} (every file's name), the {@link
 * io.basaltdb.internal.engine.version.TableCache}, guards' keys, the log segment being appended to
 * ({@link io.basaltdb.internal.engine.version.SegmentTail}), exact item counts, and the engine's
 * counters ({@link io.basaltdb.internal.engine.version.EngineStats}), which sit here because they
 * count bytes per table of a version (they cannot sit lower) and the version set reports into them
 * (they cannot sit higher).
 *
 * <p>Invariants: a version never changes once published; an edit is durable (its manifest synced)
 * before its version is installed; a file is deleted only when no live version, snapshot or
 * retained checkpoint names it. Used by every component above it; uses {@code base} and {@code
 * writecache}. Most of its types are public, as every component reads versions and writes edits.
 * Recovery's {@code State} keeps public fields: it is what recovery hands the opening code, once.
 */
package io.basaltdb.internal.engine.version;
