package io.basaltdb.internal.hashindex;

import net.jpountz.xxhash.XXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * The 64-bit key hash a {@link LazyTrie} indexes by (seed 004, section 2.1; CedrusDB uses a 256-bit
 * HighwayHash, Basalt a seeded XXH64 from lz4-java, and keeps the whole key in each record, so a
 * collision costs a key comparison, never a wrong answer). Tests inject degenerate hashes
 * (constant, two values, long shared prefixes) to drive lists past the sluggishness at full depth.
 *
 * <p>Thread-safety: implementations must be stateless or thread-safe.
 */
@FunctionalInterface
public interface KeyHasher {
  long hash(byte[] key);

  /** Seeded XXH64 (lz4-java's fastest instance): the hash every hashed keyspace uses. */
  static KeyHasher xxh64(long seed) {
    XXHash64 h = XXHashFactory.fastestInstance().hash64();
    return key -> h.hash(key, 0, key.length, seed);
  }
}
