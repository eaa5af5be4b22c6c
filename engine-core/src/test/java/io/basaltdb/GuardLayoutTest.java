package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Key index guards ({@link Options#keyIndexGuards}) through the public API: a store keeps the
 * layout it was created with (the other setting is refused before anything is written), a guarded
 * store reopens and reads what it holds, and a rollback brings its guards back with its tables.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class GuardLayoutTest {
  private static Options guarded() {
    return ModelTest.tinyGuards(ModelTest.tinyLevels(ModelTest.tiny()).syncMode(SyncMode.NONE));
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Writes {@code n} random updates of keys k0..k299, flushes and lets compaction settle; returns
   * the model.
   */
  private static Map<String, byte[]> fill(Basalt db, Map<String, byte[]> model, Random rnd, int n) {
    Keyspace ks = db.keyspace("default");
    for (int i = 0; i < n; i++) {
      String k = "k" + rnd.nextInt(300);
      if (rnd.nextInt(6) == 0) {
        ks.delete(b(k));
        model.remove(k);
      } else {
        byte[] v = new byte[1 + rnd.nextInt(200)];
        rnd.nextBytes(v);
        ks.put(b(k), v);
        model.put(k, v);
      }
    }
    db.flush();
    assertTrue(db.waitForCompactions(30_000), "compaction settled");
    return model;
  }

  private static void check(Basalt db, Map<String, byte[]> model) {
    Keyspace ks = db.keyspace("default");
    for (int i = 0; i < 300; i++) {
      String k = "k" + i;
      byte[] want = model.get(k);
      if (want == null) assertNull(ks.get(b(k)), k);
      else assertArrayEquals(want, ks.get(b(k)), k);
    }
  }

  /** The refused open wrote nothing: the same files with the same bytes. */
  private static void assertSameFiles(Map<String, byte[]> before, Map<String, byte[]> after) {
    assertEquals(before.keySet(), after.keySet(), "the refused open created or deleted no file");
    before.forEach((name, bytes) -> assertArrayEquals(bytes, after.get(name), name + " unchanged"));
  }

  @Test
  void aGuardedStore_openedLeveled_isRefusedNamingTheSetting_andNothingIsWritten() {
    MemStorage storage = new MemStorage(1);
    Map<String, byte[]> model = new HashMap<>();
    try (Basalt db = Basalt.open(storage, guarded())) {
      fill(db, model, new Random(1), 3000);
      assertTrue(db.stats().get("guardsAdded") > 0, "guards chosen");
    }
    var files = storage.snapshot();
    InvalidArgumentException e =
        assertThrows(
            InvalidArgumentException.class,
            () -> Basalt.open(storage, guarded().keyIndexGuards(false)));
    assertTrue(
        e.getMessage().contains("created with Options.keyIndexGuards(true)"), e.getMessage());
    assertSameFiles(files, storage.snapshot());
    try (Basalt db = Basalt.open(storage, guarded())) { // and the store is as it was
      check(db, model);
      fill(db, model, new Random(2), 2000);
      check(db, model);
    }
    try (Basalt db = Basalt.open(storage, guarded())) {
      check(db, model);
      assertTrue(db.stats().get("guards") > 1, "guards survive the reopen: " + db.stats());
    }
  }

  @Test
  void aLeveledStore_openedWithGuards_isRefusedNamingTheSetting() {
    MemStorage storage = new MemStorage(2);
    try (Basalt db = Basalt.open(storage, guarded().keyIndexGuards(false))) {
      db.keyspace("default").put(b("a"), b("1"));
      db.flush();
    }
    var files = storage.snapshot();
    InvalidArgumentException e =
        assertThrows(InvalidArgumentException.class, () -> Basalt.open(storage, guarded()));
    assertTrue(
        e.getMessage().contains("created with Options.keyIndexGuards(false)"), e.getMessage());
    assertSameFiles(files, storage.snapshot());
  }

  @Test
  void aRollback_bringsBackTheGuardsWithTheTables() {
    MemStorage storage = new MemStorage(3);
    Map<String, byte[]> model = new HashMap<>();
    long id;
    long guardsThen;
    try (Basalt db = Basalt.open(storage, guarded().checkpointIntervalMillis(0))) {
      fill(db, model, new Random(3), 1500);
      id = db.checkpoint().id();
      guardsThen = db.stats().get("guards");
      Map<String, byte[]> later = fill(db, new HashMap<>(model), new Random(4), 4000);
      assertTrue(!later.equals(model), "the store moved on");
    }
    Basalt.rollback(storage, id);
    try (Basalt db = Basalt.open(storage, guarded())) {
      check(db, model);
      assertEquals(guardsThen, db.stats().get("guards"), "the checkpoint's guards");
      fill(db, model, new Random(5), 2000); // and compaction goes on from them
      check(db, model);
    }
  }
}
