package io.basaltdb.internal.skiplist;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * Per-thread state of one skiplist: the term the thread is writing in, its search scratch arrays,
 * its dead list (Nitro section 4) and its retire buffer (section 6), and its statistics counters.
 * Every thread that mutates the skiplist, including garbage collection workers, has one.
 *
 * <p>Concurrency: {@code activeTerm} is volatile and padded; the snapshot creator reads it to wait
 * for writers still in the term being closed. The dead list and retire buffer are guarded by this
 * object's monitor: the owner appends, the snapshot creator and the collector drain. The scratch
 * arrays belong to the owner alone. Counters are written by the owner with opaque stores ({@code
 * su}, see the package's access modes) and read racily by statistics (a slightly stale sum is
 * fine).
 */
final class Writer extends WriterActiveTerm {
  static final int ITEMS = 0;
  static final int NODES = 1;
  static final int USER_BYTES = 2;
  static final int LEVELS = 3; // LEVELS + l: nodes with a tower of more than l levels
  static final int COUNTERS = LEVELS + SkipList.MAX_HEIGHT;
  private static final VarHandle COUNTER = MethodHandles.arrayElementVarHandle(long[].class);

  final Thread owner;
  final long[] preds = new long[SkipList.MAX_HEIGHT];
  final long[] succs = new long[SkipList.MAX_HEIGHT];
  private final long[] counters = new long[COUNTERS];

  /** Nodes this writer marked dead, not yet stitched onto a snapshot. Guarded by this. */
  long[] dead = new long[64];

  int deadCount;

  /** Nodes this writer unlinked, not yet handed to a barrier session. Guarded by this. */
  long[] retired;

  int retiredCount;

  Writer(Thread owner) {
    this.owner = owner;
  }

  /** Adds {@code delta} to a counter; only the owner thread calls this. */
  void count(int counter, long delta) {
    // lu: the owner is the only writer, so it reads its own last store; su: atomic, so a racy
    // reader
    // sees the old sum or the new one, never half of each
    suCounter(counter, luCounter(counter) + delta);
  }

  /** A counter's value, read racily by statistics: it may lag the owner's latest counts. */
  long counter(int counter) {
    return luCounter(counter); // lu: no edge needed, a stale but untorn value is fine
  }

  private long luCounter(int counter) {
    return (long) COUNTER.getOpaque(counters, counter);
  }

  private void suCounter(int counter, long value) {
    COUNTER.setOpaque(counters, counter, value);
  }

  /** Adds every counter to {@code sum[counter]}. */
  void addCountersTo(long[] sum) {
    for (int c = 0; c < COUNTERS; c++) {
      sum[c] += counter(c);
    }
  }

  synchronized void addDead(long node) {
    if (deadCount == dead.length) {
      dead = Arrays.copyOf(dead, dead.length * 2);
    }
    dead[deadCount++] = node;
  }
}

/** Left padding, so activeTerm does not share a cache line with the previous object. */
abstract class WriterPadL {
  long p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13, p14, p15;
}

/** The term this writer is operating in, 0 when idle. */
abstract class WriterActiveTerm extends WriterPadR {
  /**
   * Volatile: the writer stores it and then re-reads the skiplist's term (a StoreLoad pair), the
   * snapshot creator stores the term and then reads this; one of them sees the other.
   */
  volatile long activeTerm;
}

/** Right padding between activeTerm and the writer's other fields. */
abstract class WriterPadR extends WriterPadL {
  long q01, q02, q03, q04, q05, q06, q07, q08, q09, q10, q11, q12, q13, q14, q15;
}
