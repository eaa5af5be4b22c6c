package io.basaltdb.internal.skiplist;

import static org.jetbrains.lincheck.datastructures.ManagedStrategyGuaranteeKt.forClasses;

import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.SlabAllocator;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of {@link SkipList} against a {@link TreeMap} model, with Lincheck 3.7 in
 * model-checking and stress mode. See {@link ModelChecked} for how the off-heap skiplist is fitted
 * to the model checker and what it does and does not explore.
 *
 * <p>JVM flags: none beyond the suite's. On JDK 17 Lincheck attaches its agent at run time by
 * itself (Byte Buddy, through a helper process since self-attach is off by default).
 */
class SkipListLincheckTest {

  // ---- the operations, shared by both modes
  // --------------------------------------------------------

  /**
   * The operations under test. Keys 1..4 and values 1..5 travel as one-byte arrays; results are
   * converted to Integer/Boolean/String so Lincheck can compare them with the model's.
   */
  @Param(name = "key", gen = IntGen.class, conf = "1:4")
  @Param(name = "value", gen = IntGen.class, conf = "1:5")
  public abstract static class Ops {
    protected final SkipList list;

    protected Ops(SkipListConfig config) {
      this.list = new SkipList(config);
    }

    @Operation
    public void put(@Param(name = "key") int key, @Param(name = "value") int value) {
      list.put(new byte[] {(byte) key}, new byte[] {(byte) value});
    }

    @Operation
    public boolean delete(@Param(name = "key") int key) {
      return list.delete(new byte[] {(byte) key});
    }

    @Operation
    public Integer get(@Param(name = "key") int key) {
      byte[] v = list.get(new byte[] {(byte) key});
      return v == null ? null : (int) v[0];
    }

    /** Takes a snapshot, iterates it from the first key, closes iterator and snapshot. */
    @Operation
    public String scan() {
      StringBuilder sb = new StringBuilder();
      try (Snapshot s = list.snapshot();
          SnapshotIterator it = s.iterator()) {
        for (it.seekFirst(); it.valid(); it.next()) {
          sb.append(it.key()[0]).append('=').append(it.value()[0]).append(';');
        }
      }
      return sb.toString();
    }
  }

  /** The sequential specification: a plain sorted map. */
  public static final class Model {
    private final TreeMap<Integer, Integer> map = new TreeMap<>();

    public void put(int key, int value) {
      map.put(key, value);
    }

    public boolean delete(int key) {
      return map.remove(key) != null;
    }

    public Integer get(int key) {
      return map.get(key);
    }

    public String scan() {
      StringBuilder sb = new StringBuilder();
      for (Map.Entry<Integer, Integer> e : map.entrySet()) {
        sb.append(e.getKey()).append('=').append(e.getValue()).append(';');
      }
      return sb.toString();
    }
  }

  // ---- model checking
  // --------------------------------------------------------------------------------

  /**
   * Model-checking target. Lincheck creates one instance per invocation (outside the analyzed code)
   * and calls the {@code @Validate} function after each one, which closes the skiplist, so native
   * memory and collector threads do not pile up, and every invocation ends with close()'s leak
   * check. (The JUnit class is a separate class so that JUnit's own instance creates no skiplist.)
   *
   * <p>How the skiplist is fitted to the model checker:
   *
   * <ul>
   *   <li>Native memory: every off-heap access goes through {@link Mem}, whose methods are declared
   *       atomic ({@code treatAsAtomic}): each is one indivisible step with a switch point before
   *       it, i.e. the model checker interleaves the threads at every off-heap load, store and CAS.
   *       Without this, Lincheck 3.7 inspects the raw address-only {@code Unsafe} calls beneath and
   *       fails in its own code ("Failed to determine unsafe object access location", "Failed to
   *       find field descriptor by offset 0 in java.lang.Long"). The debug-mode checks inside Mem
   *       run too, but unanalyzed: analyzed, {@code MemoryDebug}'s global map (whose entries hold
   *       allocation stack traces) is a static that Lincheck snapshots by walking everything
   *       reachable from it, which took longer than the invocation timeout.
   *   <li>{@link SlabAllocator#allocate}/{@code free} are atomic too: the allocator has its own
   *       tests, and Lincheck would otherwise also snapshot and restore its global static state
   *       (the count of open allocators) after every invocation.
   *   <li>The garbage collector's worker thread is started by the constructor, outside the analyzed
   *       code, so Lincheck cannot schedule it; and analyzed threads do not really take Java
   *       monitors (Lincheck emulates them), so an unscheduled thread running collector tasks
   *       during the parallel part would race on monitor-guarded state and break the model
   *       checker's assumptions. So the collector is kept idle while threads are analyzed: the
   *       periodic tick is an hour away, the backlog and retire batch are never reached, and a gate
   *       task occupies the single worker so that collection requested by {@link Snapshot#close()}
   *       queues until the validation function opens the gate and closes the list (unanalyzed).
   *       Submitting to the executor is one atomic step with real locks. Model checking therefore
   *       explores the operations, snapshot creation with its wait for writers, iteration, in-term
   *       unlinking and the access barrier, but not concurrent collection; {@link Stressed} runs
   *       the real collector.
   * </ul>
   */
  public static class ModelChecked extends Ops {
    /** The default retire batch (4,096 nodes) is never filled by a scenario of a few operations. */
    static final SkipListConfig CONFIG =
        SkipListConfig.defaults()
            .withMemoryQuota(2L << 20)
            .withGcIntervalMillis(3_600_000L)
            .withGcBacklog(1 << 20);

    private final CountDownLatch gate = new CountDownLatch(1);

    public ModelChecked() {
      super(CONFIG);
      CountDownLatch started = new CountDownLatch(1);
      collectorExecutor(list)
          .execute(
              () -> {
                started.countDown();
                try {
                  gate.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              });
      // Wait until the worker is inside the gate task: from then on it holds no lock of the
      // executor's
      // queue, so an analyzed thread that submits collection never blocks on the unscheduled
      // worker.
      try {
        started.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }

    @Validate
    public void closeList() {
      shutdown(); // declared ignored: runs unanalyzed, with real monitors and parking
    }

    public void shutdown() {
      gate.countDown();
      list.close(); // MemoryLeakException if a node was lost
    }
  }

  /** The collector's executor is private; the gate needs it. */
  private static ScheduledThreadPoolExecutor collectorExecutor(SkipList list) {
    try {
      Field f = GarbageCollector.class.getDeclaredField("executor");
      f.setAccessible(true);
      return (ScheduledThreadPoolExecutor) f.get(list.gc);
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(
          "cannot reach the skiplist collector's executor; update this test", e);
    }
  }

  /** Lincheck hands guarantees internal (a/b/C$D) or canonical (a.b.C.D) class names. */
  private static boolean isClass(String name, Class<?> c) {
    String n = name.replace('/', '.').replace('$', '.');
    return n.equals(c.getCanonicalName());
  }

  /**
   * Regression scenario, checked before the random ones: a delete or get of key 2 races with the
   * insertion of the smaller key 1 right in front of it. This is the first violation this test
   * found: {@code SkipList.remove} and {@code findCurrent} re-read {@code pred.next} after the
   * search and take a newly inserted smaller key for "key absent".
   */
  private static ExecutionScenario smallerKeyInsertedBefore(String op) {
    return new ExecutionScenario(
        List.of(actor("put", 2, 5)),
        List.of(List.of(actor(op, 2)), List.of(actor("put", 1, 1))),
        List.of(actor("scan")),
        null);
  }

  private static Actor actor(String name, Object... args) {
    for (Method m : Ops.class.getDeclaredMethods()) {
      if (m.getName().equals(name) && m.isAnnotationPresent(Operation.class)) {
        return new Actor(m, List.of(args));
      }
    }
    throw new IllegalArgumentException("no operation " + name);
  }

  @Test
  void modelChecking() {
    new ModelCheckingOptions()
        .addCustomScenario(smallerKeyInsertedBefore("delete"))
        .addCustomScenario(smallerKeyInsertedBefore("get"))
        .addGuarantee(forClasses(n -> isClass(n, Mem.class)).allMethods().treatAsAtomic())
        .addGuarantee(
            forClasses(n -> isClass(n, SlabAllocator.class))
                .methods("allocate", "free")
                .treatAsAtomic())
        .addGuarantee(
            forClasses(n -> isClass(n, ScheduledThreadPoolExecutor.class))
                .methods("execute")
                .treatAsAtomic())
        .addGuarantee(forClasses(n -> isClass(n, ModelChecked.class)).methods("shutdown").ignore())
        .sequentialSpecification(Model.class)
        .iterations(scaled(8))
        .invocationsPerIteration(250)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(1)
        .check(ModelChecked.class);
  }

  // ---- stress
  // ---------------------------------------------------------------------------------------

  /**
   * Stress target: real threads, and a collector configured to work all the time (tick every
   * millisecond, internal snapshot at the first dead node, retire batches of one node) so
   * collection, unlinking and reclamation run during the scenarios.
   */
  public static class Stressed extends Ops {
    static final SkipListConfig CONFIG =
        SkipListConfig.defaults()
            .withMemoryQuota(2L << 20)
            .withGcIntervalMillis(1)
            .withGcBacklog(1)
            .withRetireBatch(1);

    public Stressed() {
      super(CONFIG);
    }

    @Validate
    public void closeList() {
      list.close(); // MemoryLeakException if a node was lost
    }
  }

  /**
   * {@code n} iterations divided by {@code -Dbasalt.lincheck.divisor} (default 1, at least 2 left):
   * the JDK 25 rerun in .ci/run runs fewer, the full count runs on JDK 17.
   */
  static int scaled(int n) {
    return Math.max(2, n / Math.max(1, Integer.getInteger("basalt.lincheck.divisor", 1)));
  }

  @Test
  void stress() {
    new StressOptions()
        .sequentialSpecification(Model.class)
        .iterations(scaled(15))
        .invocationsPerIteration(300)
        .threads(3)
        .actorsPerThread(3)
        .actorsBefore(2)
        .actorsAfter(1)
        .check(Stressed.class);
  }
}
