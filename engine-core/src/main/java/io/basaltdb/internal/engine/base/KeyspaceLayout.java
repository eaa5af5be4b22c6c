package io.basaltdb.internal.engine.base;

/**
 * The one int a manifest keeps per keyspace for how its key index is laid out (docs/format.md,
 * "Manifest"): 0 for block tables, 4, 8 or 16 for HB+-trie tables of that chunk size, or {@link
 * #HASHED} with the lazy-trie's branching (bits 0-8) and sluggishness (bits 9-19) for a hashed
 * keyspace. Fixed when the keyspace is created.
 *
 * <p>Thread-safety: static functions only.
 */
public final class KeyspaceLayout {
  /** Flag of a hashed keyspace's code (manifest format 8). */
  public static final int HASHED = 1 << 30;

  private static final int BRANCHING_MASK = 0x1FF;
  private static final int SLUGGISHNESS_SHIFT = 9;
  private static final int SLUGGISHNESS_MASK = 0x7FF;

  private KeyspaceLayout() {}

  public static int hashed(int branching, int sluggishness) {
    return HASHED | (sluggishness << SLUGGISHNESS_SHIFT) | branching;
  }

  public static boolean isHashed(int code) {
    return (code & HASHED) != 0;
  }

  /** The HB+-trie chunk size of a code: 0 for block tables and hashed keyspaces. */
  public static int trieChunkBytes(int code) {
    return isHashed(code) ? 0 : code;
  }

  public static int branching(int code) {
    return code & BRANCHING_MASK;
  }

  public static int sluggishness(int code) {
    return (code >>> SLUGGISHNESS_SHIFT) & SLUGGISHNESS_MASK;
  }

  /** Whether {@code code} is one a manifest of {@code version} may hold. */
  public static boolean valid(int code, int version) {
    if (code == 0 || code == 4 || code == 8 || code == 16) return version >= 7 || code == 0;
    if (!isHashed(code) || version < 8) return false;
    int b = branching(code), s = sluggishness(code);
    return (code & ~(HASHED | (SLUGGISHNESS_MASK << SLUGGISHNESS_SHIFT) | BRANCHING_MASK)) == 0
        && b >= 2
        && b <= 256
        && Integer.bitCount(b) == 1
        && s >= 1
        && s <= 1024;
  }
}
