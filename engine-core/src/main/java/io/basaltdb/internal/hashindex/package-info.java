/**
 * The lazy-trie (CedrusDB, seed 004 section 2): the key index of a hashed keyspace. A hash trie of
 * equal-size nodes over a 64-bit key hash, with path compression (section 2.2) and lists of up to s
 * hashes at the leaves (sluggish splitting, section 2.3).
 *
 * <p>Owns: {@link io.basaltdb.internal.hashindex.LazyTrie} (the structure, its single writer and
 * lock-free readers), {@link io.basaltdb.internal.hashindex.TrieList} (the byte layout of a leaf
 * list, documented in docs/format.md, "Lazy-trie") and {@link
 * io.basaltdb.internal.hashindex.KeyHasher}.
 *
 * <p>Callers: the engine's flusher is the one writer; reads come from any thread. Nodes and lists
 * live off the heap in a {@link io.basaltdb.internal.memory.SlabAllocator}, and are freed through
 * the skiplist's {@link io.basaltdb.internal.skiplist.AccessBarrier} only when no reader can reach
 * them.
 */
package io.basaltdb.internal.hashindex;
