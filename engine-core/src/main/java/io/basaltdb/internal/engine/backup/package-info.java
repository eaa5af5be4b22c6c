/**
 * Backups: of a disk store ({@link io.basaltdb.internal.engine.backup.Backups}: a checkpoint's
 * files copied or hard-linked, each checksummed in a marker written last; restore checks every file
 * before it writes) and of an in-memory store ({@link
 * io.basaltdb.internal.engine.backup.MemoryBackups}: Nitro's shard files written in parallel from a
 * snapshot, and the bottom-up rebuild; {@link
 * io.basaltdb.internal.engine.backup.MemoryBackupManifest} names them).
 *
 * <p>Invariants: a backup without its marker is not a backup; a restore writes nothing until every
 * file checks. Used by the facade; uses {@code version} and {@code writecache} only.
 */
package io.basaltdb.internal.engine.backup;
