package io.basaltdb.internal.engine.version;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Level 0's order (newest first) through the edits that change it: reads take the first level-0
 * table holding a key, so a level-0 merge's output must take its inputs' place, behind the tables
 * flushed while it ran, and a flush's table goes in front ({@link VersionEdit}, invariant 1 of
 * {@link CompactionPicker}).
 */
class LevelZeroOrderTest {
  private static Manifest withTables(long... level0NewestFirst) {
    List<Manifest.TableMeta> tables = new ArrayList<>();
    for (long n : level0NewestFirst) tables.add(new Manifest.TableMeta(n, 0));
    tables.add(new Manifest.TableMeta(3, 6));
    return new Manifest(
        7,
        0,
        0,
        100,
        1,
        1,
        2,
        List.of(new Manifest.KeyspaceMeta(1, "ks", tables, List.of(), Manifest.Counters.ZERO)));
  }

  private static List<Long> level0(Manifest m) {
    List<Long> out = new ArrayList<>();
    for (Manifest.TableMeta t : m.keyspaces().get(0).tables()) {
      if (t.level() == 0) out.add(t.fileNumber());
    }
    return out;
  }

  @Test
  void flushedTable_goesInFront() {
    Manifest m =
        new VersionEdit()
            .addTable(1, new Manifest.TableMeta(50, 0))
            .applyTo(withTables(40, 30, 20), 8, 0, 100);
    assertEquals(List.of(50L, 40L, 30L, 20L), level0(m));
  }

  @Test
  void mergeOfMiddleTables_takesTheNewestInputsPlace_behindTablesFlushedMeanwhile() {
    // Level 0 was 40, 30, 20, 10 when the merge of 30 and 20 began; 50 and 60 were flushed while it
    // ran.
    Manifest m = withTables(60, 50, 40, 30, 20, 10);
    VersionEdit merge =
        new VersionEdit()
            .removeTable(1, 30)
            .removeTable(1, 20)
            .addTable(1, new Manifest.TableMeta(70, 0));
    assertEquals(List.of(60L, 50L, 40L, 70L, 10L), level0(merge.applyTo(m, 8, 0, 100)));
  }

  @Test
  void mergeOfTheOldestTables_staysLast() {
    Manifest m = withTables(40, 30, 20, 10);
    VersionEdit merge =
        new VersionEdit()
            .removeTable(1, 20)
            .removeTable(1, 10)
            .addTable(1, new Manifest.TableMeta(70, 0));
    Manifest after = merge.applyTo(m, 8, 0, 100);
    assertEquals(List.of(40L, 30L, 70L), level0(after));
    assertEquals(
        new Manifest.TableMeta(3, 6),
        after.keyspaces().get(0).tables().get(3),
        "deeper levels untouched");
  }

  @Test
  void mergeIntoTheBaseLevel_leavesTheNewerLevel0TablesInOrder() {
    Manifest m = withTables(40, 30, 20);
    VersionEdit merge =
        new VersionEdit()
            .removeTable(1, 30)
            .removeTable(1, 20)
            .removeTable(1, 3)
            .addTable(1, new Manifest.TableMeta(71, 6))
            .addTable(1, new Manifest.TableMeta(72, 6));
    Manifest after = merge.applyTo(m, 8, 0, 100);
    assertEquals(List.of(40L), level0(after));
    assertEquals(
        List.of(
            new Manifest.TableMeta(40, 0),
            new Manifest.TableMeta(71, 6),
            new Manifest.TableMeta(72, 6)),
        after.keyspaces().get(0).tables());
  }
}
