/**
 * The write caches and the batch: {@link io.basaltdb.internal.engine.writecache.WriteCache}
 * (Magma's write cache over a Nitro skiplist: entries keyed by keyspace and key, each carrying its
 * seqno, flags, expiry and value; the active cache takes writes, the immutable one waits for its
 * flush), {@link io.basaltdb.internal.engine.writecache.Lookup} (a thread's reusable lookup state,
 * so a get allocates nothing but its value) and {@link
 * io.basaltdb.internal.engine.writecache.Batch} (a group of writes as the WAL records it and the
 * pipeline applies it).
 *
 * <p>Invariants: a cache's entries are never changed in place (a newer version goes in front); an
 * entry is visible to readers only once its group's seqno is published; a cache is freed only when
 * no version or snapshot can reach it. Used by {@code version} (a version holds its caches), {@code
 * read}, {@code write}, {@code backup} and the facade; uses nothing of the engine. The three types
 * are public for those packages; the cache's entry layout stays inside its static helpers.
 */
package io.basaltdb.internal.engine.writecache;
