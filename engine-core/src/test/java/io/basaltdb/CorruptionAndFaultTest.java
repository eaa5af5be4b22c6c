package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Damaged files and failing file operations. A flipped byte in any kind of file makes the open or
 * the read fail with {@link CorruptionException}, never a wrong answer; injected I/O errors and "no
 * space left" give a clear {@link StorageException} and lose nothing acknowledged.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class CorruptionAndFaultTest {
  static Options options() {
    return Options.defaults().memoryQuota(16L << 20).writeCacheSize(256 << 10).blockSize(1024);
  }

  /**
   * A store with flushed data (a table, a segment, manifests) and WAL-only data (two WAL files).
   */
  static TreeMap<String, byte[]> populate(MemStorage storage) {
    return populate(storage, options());
  }

  static TreeMap<String, byte[]> populate(MemStorage storage, Options options) {
    TreeMap<String, byte[]> model = new TreeMap<>();
    Random rnd = new Random(7);
    try (Basalt db = Basalt.open(storage, options)) {
      Keyspace ks = db.keyspace("default");
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 150; i++) {
          String k = "key-" + rnd.nextInt(400);
          byte[] v = new byte[rnd.nextInt(300)];
          rnd.nextBytes(v);
          ks.put(k.getBytes(), v);
          model.put(k, v);
        }
        if (round == 0) db.flush();
      }
    }
    try (Basalt db = Basalt.open(storage, options)) { // a second WAL file
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 50; i++) {
        String k = "late-" + i;
        ks.put(k.getBytes(), k.getBytes());
        model.put(k, k.getBytes());
      }
    }
    return model;
  }

  /** Files of one kind in the populated store. */
  static List<String> files(MemStorage storage, String kind) {
    List<String> out = new ArrayList<>();
    switch (kind) {
      case "wal" ->
          storage.list("wal").stream()
              .filter(n -> !n.startsWith("recycle-")) // pooled: not replayed
              .forEach(n -> out.add("wal/" + n));
      case "manifest" -> {
        List<String> ms = storage.list("manifest");
        out.add("manifest/" + ms.get(ms.size() - 1));
      }
      case "table" ->
          storage.list("keyspaces/1/index").forEach(n -> out.add("keyspaces/1/index/" + n));
      case "segment" ->
          storage.list("keyspaces/1/log").forEach(n -> out.add("keyspaces/1/log/" + n));
      default -> throw new IllegalArgumentException(kind);
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"wal", "manifest", "table", "segment"})
  void flippedByte_failsLoudlyNeverAnswersWrong(String kind) {
    Random rnd = new Random(kind.hashCode());
    int detected = 0, trials = 0;
    // A damaged newest manifest is survivable while an older checkpoint and the WAL it needs remain
    // (every open commits a manifest naming its WAL file, so there always is one): keep only the
    // newest, so damage to it must be reported.
    Options o = kind.equals("manifest") ? options().checkpointRetentionMillis(0) : options();
    MemStorage pristine = new MemStorage(11);
    TreeMap<String, byte[]> model = populate(pristine, o);
    for (String file : files(pristine, kind)) {
      byte[] bytes = pristine.contents(file);
      int size = bytes.length;
      while (size > 0 && bytes[size - 1] == 0)
        size--; // segments are preallocated: flip written bytes
      for (int t = 0; t < 12; t++) {
        MemStorage storage = new MemStorage(11);
        populate(storage, o); // deterministic: same files as the pristine store
        long offset = rnd.nextInt(size);
        storage.flipByte(file, offset);
        trials++;
        try (Basalt db = Basalt.open(storage, o)) {
          Keyspace ks = db.keyspace("default");
          for (var e : model.entrySet()) {
            byte[] got = ks.get(e.getKey().getBytes());
            if (got == null || !java.util.Arrays.equals(got, e.getValue())) {
              fail(
                  "flipping byte "
                      + offset
                      + " of "
                      + file
                      + " gave a wrong answer for "
                      + e.getKey());
            }
          }
        } catch (CorruptionException expected) {
          detected++;
          assertTrue(
              expected.getMessage().contains("corrupt")
                  || expected.getMessage().contains("checksum")
                  || expected.getMessage().contains("missing"),
              expected.getMessage());
        }
      }
    }
    assertTrue(
        detected > trials / 2,
        kind
            + ": only "
            + detected
            + " of "
            + trials
            + " flips were detected in "
            + files(pristine, kind)
            + " of "
            + pristine.list(kind.equals("manifest") ? "manifest" : "wal"));
  }

  @Test
  void keyIndexRecord_pointingAtAnotherKeysDocument_isCorruptionNotItsValue() {
    // A table whose checksums all match but whose record for "a" names the seqno of "b"'s document
    // (a writer bug, or damage the checksum missed): the read must not return b's value for a.
    MemStorage storage = new MemStorage(5);
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      ks.put("a".getBytes(), "value of a".getBytes()); // seqno 1
      ks.put("b".getBytes(), "value of b".getBytes()); // seqno 2
      db.flush();
    }
    List<String> tables = files(storage, "table");
    assertEquals(1, tables.size());
    storage.delete(tables.get(0));
    try (io.basaltdb.internal.storage.StorageFile f = storage.create(tables.get(0))) {
      var w =
          new io.basaltdb.internal.sstable.TableWriter(
              f, io.basaltdb.internal.sstable.TableOptions.defaults());
      w.add("a".getBytes(), 2, 10, false, 0);
      w.add("b".getBytes(), 2, 10, false, 0);
      w.finish();
      f.sync();
    }
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      assertArrayEquals("value of b".getBytes(), ks.get("b".getBytes()));
      CorruptionException e = assertThrows(CorruptionException.class, () -> ks.get("a".getBytes()));
      assertTrue(e.getMessage().contains("another key"), e.getMessage());
      assertThrows(
          CorruptionException.class,
          () -> {
            try (Cursor c = ks.scan(null, null)) {
              while (c.next()) c.value();
            }
          });
    }
  }

  @Test
  void damagedLengthField_beforeSyncedGroups_isCorruptionNotATornTail() {
    // Recovery cannot follow a damaged length to the next record; it must find the synced group
    // after
    // it by scanning, or it would trim acknowledged writes as if they were a torn tail.
    MemStorage pristine = new MemStorage(11);
    populate(pristine);
    List<String> wal = files(pristine, "wal");
    String last = wal.get(wal.size() - 1);
    java.nio.ByteBuffer bytes =
        java.nio.ByteBuffer.wrap(pristine.contents(last)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    List<Integer> records = new ArrayList<>();
    for (int at = 0; at + 8 <= bytes.limit() && bytes.getInt(at) > 0; at += 8 + bytes.getInt(at))
      records.add(at);
    assertTrue(records.size() > 40, "records in " + last + ": " + records.size());
    for (int r = 0; r < records.size() - 1; r++) { // every record but the clean-close marker
      MemStorage storage = new MemStorage(11);
      populate(storage);
      storage.flipByte(
          last, records.get(r) + 3); // the length's high byte: the frame runs past the file
      int at = records.get(r);
      CorruptionException e =
          assertThrows(
              CorruptionException.class,
              () -> Basalt.open(storage, options()).close(),
              "length of record " + at + " damaged");
      assertTrue(
          e.getMessage().contains(last) && e.getMessage().contains("offset " + at), e.getMessage());
    }
  }

  @Test
  void noSpaceOnWalWrite_refusesTheWriteAndLosesNothing() {
    MemStorage storage = new MemStorage(5);
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      ks.put("before".getBytes(), "1".getBytes());
      storage.setFaultInjector(
          (op, name) ->
              op == MemStorage.Op.WRITE && name.startsWith("wal/")
                  ? MemStorage.Fault.NO_SPACE
                  : MemStorage.Fault.NONE);
      StorageException e =
          assertThrows(StorageException.class, () -> ks.put("failed".getBytes(), "2".getBytes()));
      assertTrue(e.getMessage().contains("no space left on device"), e.getMessage());
      StorageException after =
          assertThrows(StorageException.class, () -> ks.put("later".getBytes(), "3".getBytes()));
      assertTrue(after.getMessage().contains("reopen"), after.getMessage());
      assertArrayEquals(
          "1".getBytes(), ks.get("before".getBytes()), "reads go on after a write failure");
    } catch (StorageException closeFailure) {
      // close cannot write its marker while the disk is full; the test checks recovery below
    }
    storage.setFaultInjector(null);
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      assertArrayEquals("1".getBytes(), ks.get("before".getBytes()));
      assertNull(ks.get("failed".getBytes()));
      ks.put("later".getBytes(), "3".getBytes());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sst", "seg", "MANIFEST", ".log"})
  void ioErrorDuringFlush_failsTheFlushAndLosesNothing(String victim) {
    MemStorage storage = new MemStorage(6);
    TreeMap<String, byte[]> model = new TreeMap<>();
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 200; i++) {
        ks.put(("k" + i).getBytes(), ("v" + i).getBytes());
        model.put("k" + i, ("v" + i).getBytes());
      }
      storage.setFaultInjector(
          (op, name) ->
              (op == MemStorage.Op.CREATE || op == MemStorage.Op.SYNC) && name.contains(victim)
                  ? MemStorage.Fault.IO_ERROR
                  : MemStorage.Fault.NONE);
      StorageException e = assertThrows(StorageException.class, db::flush);
      assertTrue(e.getMessage().contains("failed"), e.getMessage());
      assertThrows(StorageException.class, () -> ks.put("x".getBytes(), "y".getBytes()));
      for (var en : model.entrySet())
        assertArrayEquals(en.getValue(), ks.get(en.getKey().getBytes()));
    } catch (StorageException closeFailure) {
      // closing may hit the same injected fault
    }
    storage.setFaultInjector(null);
    try (Basalt db = Basalt.open(storage, options())) {
      Keyspace ks = db.keyspace("default");
      for (var en : model.entrySet())
        assertArrayEquals(en.getValue(), ks.get(en.getKey().getBytes()));
      assertNull(ks.get("x".getBytes()));
      db.flush();
    }
  }
}
