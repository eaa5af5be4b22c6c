package io.basaltdb.jmh;

import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The update workloads of {@link Race}, run on the loaded and settled store.
 *
 * <ul>
 *   <li>{@link #rounds}: Magma's update workload (paper section 9.2.3): each round updates every
 *       loaded key exactly once, in a fresh random order (a seeded shuffle per round), with new 1
 *       KiB values in batches of 100 at the load's durability; the rounds run back to back, and
 *       after the last one the store settles (flush, then key index compaction and garbage
 *       collection run dry). Each round and the settle are a {@link Phase}; the settle's line adds
 *       {@code updatesWriteAmp}, the bytes written from the first round's start to the settle's end
 *       over the user bytes of all rounds.
 *   <li>{@link #soak}: YCSB-like zipfian updates ({@link Zipfian}) for a fixed time, printing a
 *       line {@code soak t=.. engine=.. spaceamp=.. allocspaceamp=.. opsPerSec=.. writeAmp=..}
 *       every {@link #SOAK_REPORT_MILLIS} ({@code spaceamp}: the directory's apparent size over the
 *       live user data; {@code opsPerSec} of the last interval; {@code writeAmp} since the soak
 *       began), for {@code bin/plot-soak}; then a {@code soak} phase and a {@code soak-settled}
 *       phase.
 * </ul>
 *
 * <p>Thread-safety: run by the race's main thread; writer threads share only the store, an atomic
 * operation count, a stop flag and the first failure.
 */
final class Updates {
  static final long SOAK_REPORT_MILLIS = 5000;

  private Updates() {}

  static void rounds(
      String engine,
      Race.Store store,
      SpaceSampler sampler,
      long keys,
      int writers,
      int rounds,
      long seed,
      Race.Values values)
      throws Exception {
    if (keys > Integer.MAX_VALUE)
      throw new IllegalArgumentException("update rounds need at most 2^31-1 keys");
    long user = keys * (Race.KEY_SIZE + Race.VALUE_SIZE);
    long written0 = Race.procIo().get("write_bytes");
    for (int round = 1; round <= rounds; round++) {
      int[] order = shuffled((int) keys, new SplittableRandom(seed + 1000 + round));
      Phase phase = new Phase(engine, "update" + round, store, sampler, user);
      long t0 = System.nanoTime();
      Race.writeAll(store, writers, keys, i -> order[(int) i], round, values);
      Phase.print(phase.finish(keys, System.nanoTime() - t0, user));
    }
    Phase settle = new Phase(engine, "settled", store, sampler, user);
    long t0 = System.nanoTime();
    store.settle();
    Map<String, String> m = settle.finish(0, System.nanoTime() - t0, 0);
    long written = Race.procIo().get("write_bytes") - written0;
    m.put("updatesWriteAmp", Race.fmt((double) written / (rounds * user)));
    Phase.print(m);
  }

  /** 0 to n-1 in a random order (Fisher-Yates). */
  static int[] shuffled(int n, SplittableRandom r) {
    int[] a = new int[n];
    for (int i = 0; i < n; i++) a[i] = i;
    for (int i = n - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
    return a;
  }

  static void soak(
      String engine,
      Race.Store store,
      SpaceSampler sampler,
      long keys,
      int writers,
      long seconds,
      long seed,
      Race.Values values)
      throws Exception {
    long user = keys * (Race.KEY_SIZE + Race.VALUE_SIZE);
    Zipfian zipf = new Zipfian(keys);
    AtomicLong ops = new AtomicLong();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    Phase phase = new Phase(engine, "soak", store, sampler, user);
    long written0 = Race.procIo().get("write_bytes");
    long t0 = System.nanoTime();
    Thread[] threads = new Thread[writers];
    for (int w = 0; w < writers; w++) {
      SplittableRandom r = new SplittableRandom(seed + 2000 + w);
      threads[w] =
          new Thread(
              () -> {
                try {
                  long salt = 0;
                  while (System.nanoTime() < deadline && failed.get() == null) {
                    byte[][] ks = new byte[Race.batch][];
                    byte[][] vs = new byte[Race.batch][];
                    for (int j = 0; j < Race.batch; j++) {
                      long i = zipf.next(r);
                      ks[j] = Race.key(i);
                      vs[j] = values.value(i, ++salt);
                    }
                    store.write(ks, vs);
                    ops.addAndGet(Race.batch);
                  }
                } catch (Throwable e) {
                  failed.compareAndSet(null, e);
                }
              },
              "race-soak-" + w);
      threads[w].start();
    }
    long lastOps = 0;
    long lastT = t0;
    for (long next = t0 + SOAK_REPORT_MILLIS * 1_000_000L;
        next <= deadline && failed.get() == null;
        next += SOAK_REPORT_MILLIS * 1_000_000L) {
      long sleep = (next - System.nanoTime()) / 1_000_000L;
      if (sleep > 0) Thread.sleep(sleep);
      long now = System.nanoTime();
      long n = ops.get();
      SpaceSampler.Sample s = SpaceSampler.measure(store.directory());
      long written = Race.procIo().get("write_bytes") - written0;
      System.out.printf(
          java.util.Locale.ROOT,
          "soak t=%.1f engine=%s spaceamp=%.3f allocspaceamp=%.3f opsPerSec=%.0f ops=%d writeAmp=%.3f%n",
          (now - t0) / 1e9,
          engine,
          (double) s.apparent() / user,
          s.allocated() < 0 ? -1.0 : (double) s.allocated() / user,
          (n - lastOps) / ((now - lastT) / 1e9),
          n,
          n == 0 ? 0.0 : (double) written / (n * (Race.KEY_SIZE + Race.VALUE_SIZE)));
      lastOps = n;
      lastT = now;
    }
    for (Thread t : threads) t.join();
    if (failed.get() != null) throw new IllegalStateException("a soak writer failed", failed.get());
    long n = ops.get();
    Phase.print(phase.finish(n, System.nanoTime() - t0, n * (Race.KEY_SIZE + Race.VALUE_SIZE)));
    Phase settle = new Phase(engine, "soak-settled", store, sampler, user);
    long t1 = System.nanoTime();
    store.settle();
    Phase.print(settle.finish(0, System.nanoTime() - t1, 0));
  }
}
