package io.basaltdb.jmh.ffm;

import io.basaltdb.internal.memory.Mem;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The skiplist's hottest memory path both ways: comparing a search key on the heap with keys off the
 * heap, eight bytes at a time big-endian, as {@code skiplist.Keys.compareFull} does for every node a
 * search passes. {@code unsafe} is Basalt's {@link Mem} as it is (Chronicle-Core's {@code UnsafeMemory},
 * {@code Mem.lpLongBE} with a heap base for the search key and a null base for the node's key);
 * {@code ffm} is the plan's replacement (docs/architecture.md, "Leaving sun.misc.Unsafe"): one global
 * segment of unbounded size read at absolute addresses with an unaligned big-endian long layout, and
 * the heap key through {@code MemorySegment.ofArray}; {@code ffm-arrayview} reads the heap key through the
 * JDK's {@code byteArrayViewVarHandle} instead. The keys are the same memory for both (an arena's
 * segment; its addresses are what Basalt's nodes hold): {@code keys} keys of 24 bytes that share their
 * first 8 bytes, so a compare reads two or three words of each key, at random indexes.
 *
 * <p>Run on JDK 22 or later (the module builds only there):
 * {@code java @jvm.flags @jvm-23.flags -jar engine-jmh-ffm/target/benchmarks-ffm.jar}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class KeyCompareBenchmark {
  static final int KEY_SIZE = 24;
  static final int COMPARES = 1024;
  /** Every address, as one segment: the plan's way to keep {@code long} addresses on the hot paths. */
  static final MemorySegment ALL = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
  static final ValueLayout.OfLong LONG_BE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
  static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;

  @Param({"unsafe", "ffm", "ffm-arrayview"})
  public String access;

  @Param({"1000000"})
  public int keys;

  Arena arena;
  long base;
  byte[] probe;
  MemorySegment probeSegment;
  int[] order;

  @Setup(Level.Trial)
  public void setUp() {
    SplittableRandom r = new SplittableRandom(7);
    arena = Arena.ofShared();
    MemorySegment s = arena.allocate((long) keys * KEY_SIZE, 8);
    base = s.address();
    for (long i = 0; i < (long) keys * KEY_SIZE; i += 8) {
      long v = i % KEY_SIZE == 0 ? 0x0102030405060708L : r.nextLong();
      s.set(LONG_BE, i, v);
    }
    probe = new byte[KEY_SIZE];
    MemorySegment.copy(s, (long) (keys / 2) * KEY_SIZE, MemorySegment.ofArray(probe), 0, KEY_SIZE);
    probe[KEY_SIZE - 1] ^= 1; // equal to a stored key but for its last byte: compares read every word
    probeSegment = MemorySegment.ofArray(probe);
    order = new int[COMPARES];
    for (int i = 0; i < COMPARES; i++) order[i] = r.nextInt(keys);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    arena.close();
  }

  @Benchmark
  @OperationsPerInvocation(COMPARES)
  public int compare() {
    int sum = 0;
    if (access.equals("unsafe")) {
      for (int i = 0; i < COMPARES; i++) sum += Integer.signum(compareUnsafe(probe, base + (long) order[i] * KEY_SIZE, KEY_SIZE));
    } else if (access.equals("ffm-arrayview")) {
      for (int i = 0; i < COMPARES; i++) sum += Integer.signum(compareArrayView(probe, base + (long) order[i] * KEY_SIZE, KEY_SIZE));
    } else {
      for (int i = 0; i < COMPARES; i++) sum += Integer.signum(compareFfm(probeSegment, base + (long) order[i] * KEY_SIZE, KEY_SIZE));
    }
    return sum;
  }

  /** {@code skiplist.Keys.compareFull} over {@link Mem}: the search key on the heap, the node's key off it. */
  static int compareUnsafe(byte[] key, long nodeKey, int nodeLen) {
    int min = Math.min(key.length, nodeLen);
    int i = 0;
    for (; i + 8 <= min; i += 8) {
      long a = Mem.lpLongBE(key, Mem.ARRAY_BASE + i);
      long b = Mem.lpLongBE(null, nodeKey + i);
      if (a != b) return Long.compareUnsigned(a, b);
    }
    for (; i < min; i++) {
      int a = Mem.lpUnsignedByte(key, Mem.ARRAY_BASE + i);
      int b = Mem.lpUnsignedByte(null, nodeKey + i);
      if (a != b) return a - b;
    }
    return key.length - nodeLen;
  }

  /** Big-endian longs of a {@code byte[]}: the JDK's array view, bounds-checked as arrays are. */
  static final java.lang.invoke.VarHandle ARRAY_LONG_BE =
      java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

  /** As {@link #compareFfm}, the heap key read through the array view instead of a heap segment. */
  static int compareArrayView(byte[] key, long nodeKey, int nodeLen) {
    int min = Math.min(key.length, nodeLen);
    int i = 0;
    for (; i + 8 <= min; i += 8) {
      long a = (long) ARRAY_LONG_BE.get(key, i);
      long b = ALL.get(LONG_BE, nodeKey + i);
      if (a != b) return Long.compareUnsigned(a, b);
    }
    for (; i < min; i++) {
      int a = key[i] & 0xFF;
      int b = ALL.get(BYTE, nodeKey + i) & 0xFF;
      if (a != b) return a - b;
    }
    return key.length - nodeLen;
  }

  /** The same compare through {@code java.lang.foreign}. */
  static int compareFfm(MemorySegment key, long nodeKey, int nodeLen) {
    int len = (int) key.byteSize();
    int min = Math.min(len, nodeLen);
    int i = 0;
    for (; i + 8 <= min; i += 8) {
      long a = key.get(LONG_BE, i);
      long b = ALL.get(LONG_BE, nodeKey + i);
      if (a != b) return Long.compareUnsigned(a, b);
    }
    for (; i < min; i++) {
      int a = key.get(BYTE, i) & 0xFF;
      int b = ALL.get(BYTE, nodeKey + i) & 0xFF;
      if (a != b) return a - b;
    }
    return len - nodeLen;
  }
}
