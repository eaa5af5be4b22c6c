package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.SyncMode;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.writecache.Batch;
import io.basaltdb.internal.storage.FileStorage;
import io.basaltdb.internal.storage.MemStorage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a store's files must survive: a deleted WAL file fails the open naming it (issue 13 item 5:
 * it used to serve stale data silently), and a store written in the previous manifest format (a
 * test resource written by an older build) opens, serves its data, and is written in the current
 * format.
 */
class StoreFilesTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static Options options() {
    return Options.defaults()
        .memoryQuota(16L << 20)
        .writeCacheSize(256 << 10)
        .syncMode(SyncMode.SYNC);
  }

  /**
   * 1,200 keys with deletes in three sessions, the first flushed, so the store has several WAL
   * files (each open starts one); the last writes are only in the newest.
   */
  private static Map<String, byte[]> populate(MemStorage storage) {
    Map<String, byte[]> model = new HashMap<>();
    Random rnd = new Random(5);
    for (int session = 0; session < 3; session++) {
      try (Engine e = Engine.open(storage, options())) {
        for (int i = 0; i < 400; i++) {
          String k = "key-" + rnd.nextInt(600);
          Batch batch = new Batch(1);
          if (rnd.nextInt(5) == 0) {
            batch.add(1, Batch.DELETE, b(k), null);
            model.put(k, null);
          } else {
            byte[] v = b("v" + session + "-" + i);
            batch.add(1, Batch.PUT, b(k), v);
            model.put(k, v);
          }
          e.write(batch);
        }
        if (session == 0) e.flush();
      }
    }
    return model;
  }

  @Test
  void deletedNewestWalFile_failsTheOpenNamingIt() {
    MemStorage storage = new MemStorage(8);
    populate(storage);
    List<String> wal = storage.list(FileNames.WAL_DIR);
    String newest =
        FileNames.WAL_DIR
            + "/"
            + wal.stream()
                .filter(n -> FileNames.walNumber(n) >= 0)
                .sorted()
                .reduce((a, c) -> c)
                .orElseThrow();
    storage.delete(newest);
    CorruptionException e =
        assertThrows(CorruptionException.class, () -> Engine.open(storage, options()));
    assertTrue(e.getMessage().contains(storage.describe(newest)), e.getMessage());
  }

  @Test
  void everyWalFileDeletedInTurn_failsTheOpenNamingItOrLosesNothing() {
    MemStorage pristine = new MemStorage(8);
    Map<String, byte[]> model = populate(pristine);
    List<String> logs =
        pristine.list(FileNames.WAL_DIR).stream()
            .filter(n -> FileNames.walNumber(n) >= 0)
            .sorted()
            .toList();
    assertTrue(logs.size() >= 2, "several WAL files: " + logs);
    for (String log : logs) {
      MemStorage storage = new MemStorage(8);
      populate(storage);
      storage.delete(FileNames.WAL_DIR + "/" + log);
      try (Engine e = Engine.open(storage, options())) {
        for (Map.Entry<String, byte[]> kv : model.entrySet()) { // opened: then nothing was lost
          assertArrayEquals(
              kv.getValue(), e.get(1, b(kv.getKey())), log + " deleted, key " + kv.getKey());
        }
      } catch (CorruptionException expected) {
        // Every file is named: the manifest names the newest (walHead) and the first to replay
        // (walStart), and every other one is linked from its predecessor, across sessions too.
        assertTrue(expected.getMessage().contains(log), expected.getMessage());
      }
    }
  }

  @Test
  void storeWrittenInFormat2_opensServesItsDataAndMovesToTheCurrentFormat(@TempDir Path dir)
      throws Exception {
    copyResource("/stores/format2", dir);
    FileStorage storage = new FileStorage(dir);
    for (int round = 0;
        round < 2;
        round++) { // as written, then after this build rewrote its manifest
      try (Engine e = Engine.open(storage, options())) {
        assertEquals(List.of("default", "users"), e.keyspaceNames());
        int users = e.keyspaceId("users");
        for (int i = 0; i < 300; i++) {
          String k = String.format("k%04d", i);
          String want = i == 0 || i % 5 == 1 ? null : i % 3 == 0 ? "v2-" + i : "v1-" + i;
          assertArrayEquals(want == null ? null : b(want), e.get(1, b(k)), k);
          String u = String.format("u%04d", i);
          assertArrayEquals(b((i < 50 ? "wal-" : "user-") + i), e.get(users, b(u)), u);
        }
        if (round == 0) e.flush();
      }
    }
    Manifest newest =
        Manifest.read(
            storage,
            storage.list(FileNames.MANIFEST_DIR).stream()
                .mapToLong(FileNames::manifestNumber)
                .max()
                .orElseThrow());
    assertTrue(newest.walHead() > 0, "written by this build: names its WAL head");
    byte[] raw = Files.readAllBytes(dir.resolve(FileNames.manifest(newest.number())));
    assertEquals(
        6, raw[8], "the manifest is rewritten in the current format (6: no keyspace has tries)");
  }

  @Test
  void aDroppedKeyspace_leavesTheVersionAtOnce() {
    MemStorage storage = new MemStorage(2);
    try (Engine e = Engine.open(storage, options())) {
      int second = e.createKeyspace("second");
      Batch batch = new Batch(1);
      batch.add(second, Batch.PUT, b("k"), b("v"));
      e.write(batch);
      e.flush();
      assertTrue(e.versions().current().files.containsKey(second));
      e.dropKeyspace("second");
      assertTrue(
          !e.versions().current().files.containsKey(second),
          "the drop edit removed its files from the version");
      assertNull(
          e.versionSet().manifest().keyspaces().stream()
              .filter(k -> k.id() == second)
              .findAny()
              .orElse(null));
    }
  }

  @Test
  void aDroppedKeyspacesSegments_areDeletedAfterTheNextFlush_withoutAReopen() {
    MemStorage storage = new MemStorage(3);
    try (Engine e = Engine.open(storage, options().checkpointRetentionMillis(0))) {
      int first = e.createKeyspace("first");
      int second = e.createKeyspace("second");
      for (int round = 0; round < 3; round++) {
        Batch batch = new Batch(200);
        for (int i = 0; i < 200; i++) {
          batch.add(second, Batch.PUT, b("k" + i), new byte[512]);
          batch.add(first, Batch.PUT, b("k" + i), new byte[16]);
        }
        e.write(batch);
        e.flush();
      }
      assertFalse(storage.list(FileNames.logDir(second)).isEmpty(), "its segments exist");
      e.dropKeyspace("second");
      // The flusher held the tail's writer: its segments stay until a flush lets go of it.
      Batch batch = new Batch(1);
      batch.add(first, Batch.PUT, b("after"), b("v"));
      e.write(batch);
      e.flush();
      assertTrue(
          storage.list(FileNames.logDir(second)).isEmpty(),
          "the dropped keyspace's segments were deleted: "
              + storage.list(FileNames.logDir(second)));
      assertArrayEquals(new byte[16], e.get(first, b("k7")), "the other keyspace reads on");
    }
  }

  private static void copyResource(String resource, Path to)
      throws URISyntaxException, IOException {
    Path from = Path.of(StoreFilesTest.class.getResource(resource).toURI());
    try (Stream<Path> files = Files.walk(from)) {
      files.forEach(
          p -> {
            try {
              Path target = to.resolve(from.relativize(p).toString());
              if (Files.isDirectory(p)) Files.createDirectories(target);
              else Files.copy(p, target);
            } catch (IOException ex) {
              throw new UncheckedIOException(ex);
            }
          });
    }
  }
}
