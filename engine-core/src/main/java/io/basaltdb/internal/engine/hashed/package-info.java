/**
 * Hashed keyspaces' key indexes (issue 39; CedrusDB, seed 004): each hashed keyspace's {@link
 * io.basaltdb.internal.engine.hashed.HashedIndex} (its lazy-trie, and the pre-images snapshots
 * still need), the store's {@link io.basaltdb.internal.engine.hashed.HashedIndexes}, and their
 * rebuild from the log at open.
 *
 * <p>Invariants: the trie holds, for each live key of the keyspace, its newest flushed version, and
 * no tombstone; every version a flush replaces or removes is in the delete list from that flush's
 * commit. Used by {@code read} (lookups), {@code write} (the flusher, the one writer) and the
 * facade (open, create, drop); uses {@code gc} (the rebuild reads the delete list), {@code version}
 * and {@code base}. Everything here is public only for those packages.
 */
package io.basaltdb.internal.engine.hashed;
