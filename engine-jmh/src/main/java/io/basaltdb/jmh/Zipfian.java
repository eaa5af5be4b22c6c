package io.basaltdb.jmh;

import java.util.SplittableRandom;

/**
 * YCSB's scrambled zipfian choice of an item among {@code n} (Gray et al., "Quickly generating
 * billion-record synthetic databases", SIGMOD 1994, as YCSB's {@code ZipfianGenerator} implements
 * it, constant 0.99): rank 0 is the most popular; a rank is then hashed onto the items so the
 * popular ones are spread over the key space, as YCSB's {@code ScrambledZipfianGenerator} does.
 * Computing zeta(n) walks every item once, in the constructor.
 *
 * <p>Thread-safety: immutable; each caller passes its own random source.
 */
final class Zipfian {
  static final double THETA = 0.99;

  private final long n;
  private final double alpha;
  private final double zetaN;
  private final double eta;
  private final double half;

  Zipfian(long n) {
    if (n < 2) throw new IllegalArgumentException("a zipfian needs at least 2 items, got " + n);
    this.n = n;
    double zeta2 = 1 + Math.pow(0.5, THETA);
    double z = 0;
    for (long i = 1; i <= n; i++) z += 1 / Math.pow(i, THETA);
    this.zetaN = z;
    this.alpha = 1 / (1 - THETA);
    this.eta = (1 - Math.pow(2.0 / n, 1 - THETA)) / (1 - zeta2 / zetaN);
    this.half = 1 + Math.pow(0.5, THETA);
  }

  /** A zipfian rank in [0, n), 0 the most likely. */
  long nextRank(SplittableRandom r) {
    double u = r.nextDouble();
    double uz = u * zetaN;
    if (uz < 1) return 0;
    if (uz < half) return 1;
    return Math.min(n - 1, (long) (n * Math.pow(eta * u - eta + 1, alpha)));
  }

  /** An item in [0, n): a zipfian rank, scrambled (FNV-1a of the rank, modulo n). */
  long next(SplittableRandom r) {
    long rank = nextRank(r);
    long h = 0xCBF29CE484222325L;
    for (int i = 0; i < 8; i++) {
      h ^= (rank >>> (8 * i)) & 0xFF;
      h *= 0x100000001B3L;
    }
    return Math.floorMod(h, n);
  }
}
