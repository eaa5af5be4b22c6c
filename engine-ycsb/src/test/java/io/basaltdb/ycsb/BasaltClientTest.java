package io.basaltdb.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.InvalidArgumentException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/** Each operation of the binding, its status codes and the shared store's lifecycle. */
class BasaltClientTest {
  @TempDir Path dir;

  private BasaltClient client(String mode) throws DBException {
    Properties p = new Properties();
    p.setProperty("basalt.mode", mode);
    p.setProperty("basalt.dir", dir.resolve("db").toString());
    p.setProperty("basalt.memory", "32m");
    p.setProperty("basalt.sync", "none");
    BasaltClient c = new BasaltClient();
    c.setProperties(p);
    c.init();
    return c;
  }

  private static Map<String, ByteIterator> fields(String... kv) {
    Map<String, ByteIterator> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put(kv[i], new StringByteIterator(kv[i + 1]));
    return m;
  }

  private static Map<String, String> strings(Map<String, ByteIterator> m) {
    Map<String, String> out = new HashMap<>();
    m.forEach((k, v) -> out.put(k, v.toString()));
    return out;
  }

  @Test
  void operations_onDiskAndInMemory() throws Exception {
    for (String mode : new String[] {"disk", "memory"}) {
      BasaltClient c = client(mode);
      try {
        Map<String, ByteIterator> out = new HashMap<>();
        assertEquals(Status.NOT_FOUND, c.read("usertable", "user1", null, out), mode);
        assertEquals(
            Status.NOT_FOUND,
            c.update("usertable", "user1", fields("f0", "x")),
            "update of a missing record");
        assertEquals(
            Status.OK, c.insert("usertable", "user1", fields("f0", "a", "f1", "b", "f2", "c")));
        assertEquals(Status.OK, c.update("usertable", "user1", fields("f1", "B", "f3", "d")));
        assertEquals(Status.OK, c.read("usertable", "user1", null, out));
        assertEquals(
            Map.of("f0", "a", "f1", "B", "f2", "c", "f3", "d"),
            strings(out),
            "update merges fields");
        out.clear();
        assertEquals(Status.OK, c.read("usertable", "user1", Set.of("f2"), out));
        assertEquals(Map.of("f2", "c"), strings(out), "only the fields asked for");
        for (int i = 5; i >= 2; i--)
          assertEquals(Status.OK, c.insert("usertable", "user" + i, fields("f0", "v" + i)));
        assertEquals(Status.OK, c.insert("other", "user3", fields("f0", "elsewhere")));
        Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
        assertEquals(Status.OK, c.scan("usertable", "user2", 3, Set.of("f0"), rows));
        assertEquals(3, rows.size());
        for (int i = 0; i < 3; i++)
          assertEquals("v" + (i + 2), rows.get(i).get("f0").toString(), "scan in key order");
        assertEquals(Status.OK, c.delete("usertable", "user1"));
        assertEquals(Status.NOT_FOUND, c.read("usertable", "user1", null, out));
        out.clear();
        assertEquals(Status.OK, c.read("other", "user3", null, out));
        assertEquals("elsewhere", out.get("f0").toString(), "a table is a keyspace of its own");
      } finally {
        c.cleanup();
      }
    }
  }

  @Test
  void instancesShareOneStore_closedByTheLastCleanup_andDataSurvivesOnDisk() throws Exception {
    BasaltClient a = client("disk");
    BasaltClient b =
        client("disk"); // a second open of the directory would fail: it is the same store
    assertEquals(Status.OK, a.insert("usertable", "k", fields("f", "1")));
    a.cleanup();
    Map<String, ByteIterator> out = new HashMap<>();
    assertEquals(Status.OK, b.read("usertable", "k", null, out), "still open for b");
    b.cleanup();
    b.cleanup(); // a second cleanup of one instance does not close anyone else's store
    BasaltClient c = client("disk");
    try {
      out.clear();
      assertEquals(Status.OK, c.read("usertable", "k", null, out), "reopened: the insert was kept");
      assertEquals("1", out.get("f").toString());
    } finally {
      c.cleanup();
    }
  }

  @Test
  void badProperties_areRefusedWithTheirName() {
    Properties p = new Properties();
    p.setProperty("basalt.mode", "tape");
    assertTrue(
        assertThrows(InvalidArgumentException.class, () -> BasaltClient.open(p))
            .getMessage()
            .contains("basalt.mode"));
    assertTrue(
        assertThrows(InvalidArgumentException.class, () -> BasaltClient.parseBytes("lots"))
            .getMessage()
            .contains("basalt.memory"));
    assertTrue(
        assertThrows(InvalidArgumentException.class, () -> BasaltClient.parseSync("often"))
            .getMessage()
            .contains("basalt.sync"));
    assertEquals(256L << 20, BasaltClient.parseBytes("256m"));
    assertEquals(3L << 30, BasaltClient.parseBytes("3G"));
    assertEquals(1000, BasaltClient.parseBytes("1000"));
  }

  @Test
  void fields_roundTrip_andADamagedRecordIsReported() {
    Map<String, byte[]> f = new LinkedHashMap<>();
    f.put("field0", new byte[0]);
    f.put("ünïcode", "v".getBytes(StandardCharsets.UTF_8));
    f.put("big", new byte[70_000]);
    byte[] enc = Fields.encode(f);
    Map<String, byte[]> back = Fields.decodeAll(enc);
    assertEquals(f.keySet(), back.keySet());
    for (String k : f.keySet()) assertArrayEquals(f.get(k), back.get(k), k);
    assertThrows(
        CorruptionException.class,
        () -> Fields.decodeAll(java.util.Arrays.copyOf(enc, enc.length - 1)));
    assertThrows(CorruptionException.class, () -> Fields.decodeAll(new byte[] {5}));
  }
}
