package io.basaltdb.internal.engine.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.Options;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.sstable.TableOptions;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.sstable.TableWriter;
import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Level 0's tiers ({@link CompactionPicker}): which level-0 job the picker chooses for level-0
 * tables of given sizes over a base level of a given size. Tables are real, of {@code n} records
 * each, so their bytes grow with {@code n}.
 */
class CompactionPickerTest {
  private final MemStorage storage = new MemStorage(1);
  private final List<TableReader> readers = new ArrayList<>();
  private long nextFile = 1;

  @AfterEach
  void close() {
    for (TableReader r : readers) r.close();
  }

  private KeyspaceFiles.Table table(int level, int records, int keyFrom) {
    long n = nextFile++;
    StorageFile f = storage.create(n + ".sst");
    TableWriter w = new TableWriter(f, TableOptions.defaults());
    for (int i = 0; i < records; i++) {
      w.add(
          String.format("key-%08d", keyFrom + i).getBytes(StandardCharsets.US_ASCII),
          n * 1_000_000 + i,
          100,
          false,
          0);
    }
    w.finish();
    TableReader r = TableReader.open(f, n + ".sst");
    readers.add(r);
    return new KeyspaceFiles.Table(n, level, r);
  }

  /**
   * Level 0 of tables of these record counts (newest first) over a last level of {@code base}
   * records.
   */
  private KeyspaceFiles files(int base, int... level0) {
    List<KeyspaceFiles.Table> t = new ArrayList<>();
    for (int n : level0) t.add(table(0, n, 0));
    if (base > 0) t.add(table(6, base, 0));
    return new KeyspaceFiles(t, List.of());
  }

  private static CompactionPicker picker(double ratio) {
    return new CompactionPicker(
        Options.defaults().l0CompactionTrigger(4).l0StopWritesTrigger(20).l0BaseRatio(ratio),
        null,
        null);
  }

  private static List<Long> numbers(List<KeyspaceFiles.Table> tables) {
    List<Long> out = new ArrayList<>();
    for (KeyspaceFiles.Table t : tables) out.add(t.fileNumber());
    return out;
  }

  @Test
  void fourFlushedTablesOfASize_mergeIntoOneLevel0Table() {
    KeyspaceFiles f = files(100_000, 1000, 1000, 1000, 1000);
    CompactionPicker.Job j = picker(0.125).pick(1, f, false);
    assertEquals(0, j.level());
    assertEquals(0, j.outputLevel());
    assertEquals(numbers(f.level(0)), numbers(j.inputs()));
    assertTrue(j.next().isEmpty());
    assertFalse(j.bottom(), "a level-0 merge keeps its tombstones");
  }

  @Test
  void theNewestRunOfASize_isMerged_evenBehindNewerSmallerTables() {
    KeyspaceFiles f = files(400_000, 1000, 1000, 4000, 4000, 4000, 4000);
    CompactionPicker.Job j = picker(0.125).pick(1, f, false);
    assertEquals(numbers(f.level(0).subList(2, 6)), numbers(j.inputs()));
    assertEquals(0, j.outputLevel());
  }

  @Test
  void tablesOfDifferentTiers_waitForTheirOwnKind() {
    assertNull(picker(0.125).pick(1, files(400_000, 1000, 1000, 1000, 4000, 16_000), false));
  }

  @Test
  void level0HoldingItsShareOfTheBase_mergesIntoTheBaseLevel_whole() {
    KeyspaceFiles f = files(40_000, 1000, 4000, 4000, 4000, 16_000); // 29,000 records over 40,000
    CompactionPicker.Job j = picker(0.5).pick(1, f, false);
    assertEquals(6, j.outputLevel());
    assertEquals(numbers(f.level(0)), numbers(j.inputs()));
    assertEquals(1, j.next().size());
    // The same level 0 under a lower share of a bigger base: the newest run of a size merges
    // instead.
    assertNull(picker(0.5).pick(1, files(400_000, 1000, 4000, 4000, 4000, 16_000), false));
  }

  @Test
  void anEmptyBase_takesLevel0OnceItHoldsTheTriggerCount() {
    assertNull(picker(0.125).pick(1, files(0, 1000, 4000, 16_000), false));
    CompactionPicker.Job j = picker(0.125).pick(1, files(0, 1000, 4000, 16_000, 64_000), false);
    assertEquals(6, j.outputLevel());
    assertEquals(4, j.inputs().size());
  }

  @Test
  void aQuietStore_mergesLevel0IntoTheBase_onceItHoldsAQuarterOfItsDueShare() {
    // Due at 0.125 of 100,000 records: 12,500; a quiet store merges from 3,125 (QUIET_SHARE).
    assertNull(picker(0.125).pick(1, files(100_000, 4000), false));
    CompactionPicker.Job j = picker(0.125).pick(1, files(100_000, 4000), true);
    assertEquals(6, j.outputLevel());
    assertEquals(1, j.inputs().size());
    assertNull(
        picker(0.125).pick(1, files(100_000, 1000, 1000), true),
        "too little to rewrite the base level for");
  }

  @Test
  void level0AtTheForceCount_mergesIntoTheBase_whateverItsSizes() {
    CompactionPicker p = picker(0.125);
    assertEquals(16, p.l0ForceCount()); // 20 - 4
    int[] sizes = new int[16];
    for (int i = 0; i < sizes.length; i++)
      sizes[i] = 100 << (i % 2 == 0 ? 0 : 2); // no run of a size
    CompactionPicker.Job j = p.pick(1, files(1_000_000, sizes), false);
    assertEquals(6, j.outputLevel());
    assertEquals(16, j.inputs().size());
  }
}
