package io.basaltdb.internal.hashindex;

import static org.jetbrains.lincheck.datastructures.ManagedStrategyGuaranteeKt.forClasses;

import io.basaltdb.internal.memory.Mem;
import io.basaltdb.internal.memory.MemoryQuota;
import io.basaltdb.internal.memory.SlabAllocator;
import io.basaltdb.internal.sstable.KeyRecord;
import java.util.HashMap;
import java.util.Map;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.jetbrains.lincheck.datastructures.Validate;
import org.junit.jupiter.api.Test;

/**
 * Linearizability of {@link LazyTrie}'s lock-free gets against its one writer (issue 39), with
 * Lincheck in model-checking and stress mode against a {@link HashMap}. Puts and deletes form a
 * non-parallel group (Lincheck runs them from one thread at a time, as the flusher does); gets run
 * beside them. The hash puts keys 1 to 6 on paths that share their first characters (b = 2, s = 1),
 * so a put splits a list into a chain of nodes and a delete merges it back: gets race with splits,
 * merges and the retirement of replaced lists and nodes, which are freed (and poisoned by the debug
 * allocator) once their barrier sessions end. Mem and the slab allocator are atomic steps for the
 * model checker, as in {@code SkipListLincheckTest}.
 */
class LazyTrieLincheckTest {
  /**
   * Keys 1..6 hash to their value in the top three bits: a shared prefix, split one bit a level.
   */
  static long hashOf(byte[] key) {
    return ((long) key[0]) << 61;
  }

  @Param(name = "key", gen = IntGen.class, conf = "1:6")
  @Param(name = "value", gen = IntGen.class, conf = "1:5")
  public static class Ops {
    protected final LazyTrie trie =
        new LazyTrie(2, 1, LazyTrieLincheckTest::hashOf, new MemoryQuota(8L << 20), "lincheck");

    @Operation(nonParallelGroup = "writer")
    public boolean put(@Param(name = "key") int key, @Param(name = "value") int value) {
      boolean had = trie.put(new byte[] {(byte) key}, value, 1, 0, 0, 0, null);
      trie.publishRetired();
      return had;
    }

    @Operation(nonParallelGroup = "writer")
    public boolean delete(@Param(name = "key") int key) {
      boolean had = trie.delete(new byte[] {(byte) key}, null);
      trie.publishRetired();
      return had;
    }

    @Operation
    public Integer get(@Param(name = "key") int key) {
      KeyRecord r = new KeyRecord();
      return trie.get(new byte[] {(byte) key}, r) ? (int) r.seqno : null;
    }

    @Validate
    public void check() {
      shutdown();
    }

    /**
     * Declared ignored to the model checker, so it runs unanalyzed: an analyzed close would have
     * its effect on the allocators' static count undone with the rest of the static state.
     */
    public void shutdown() {
      trie.checkInvariants();
      trie.close(); // MemoryLeakException if a block was lost
    }
  }

  /** The sequential specification. */
  public static final class Model {
    private final Map<Integer, Integer> map = new HashMap<>();

    public boolean put(int key, int value) {
      return map.put(key, value) != null;
    }

    public boolean delete(int key) {
      return map.remove(key) != null;
    }

    public Integer get(int key) {
      return map.get(key);
    }
  }

  private static boolean isClass(String name, Class<?> c) {
    String n = name.replace('/', '.').replace('$', '.');
    return n.equals(c.getCanonicalName());
  }

  static int scaled(int n) {
    return Math.max(2, n / Math.max(1, Integer.getInteger("basalt.lincheck.divisor", 1)));
  }

  @Test
  void modelChecking() {
    new ModelCheckingOptions()
        .addGuarantee(forClasses(n -> isClass(n, Mem.class)).allMethods().treatAsAtomic())
        .addGuarantee(
            forClasses(n -> isClass(n, SlabAllocator.class))
                .methods("allocate", "free")
                .treatAsAtomic())
        .addGuarantee(forClasses(n -> isClass(n, Ops.class)).methods("shutdown").ignore())
        .sequentialSpecification(Model.class)
        .iterations(scaled(6))
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(3)
        .actorsBefore(3)
        .actorsAfter(2)
        .check(Ops.class);
  }

  @Test
  void stress() {
    new StressOptions()
        .sequentialSpecification(Model.class)
        .iterations(scaled(10))
        .invocationsPerIteration(300)
        .threads(3)
        .actorsPerThread(3)
        .actorsBefore(3)
        .actorsAfter(2)
        .check(Ops.class);
  }
}
