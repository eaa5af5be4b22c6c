package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.internal.storage.MemStorage;
import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link Options#jmx}: a store's stats and health as a JMX bean while it is open, and only then.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class JmxTest {
  static Set<ObjectName> basaltBeans(MBeanServer server) throws Exception {
    return server.queryNames(new ObjectName("io.basaltdb:type=Store,*"), null);
  }

  @Test
  void aStoresStatsAndHealth_areAttributesOfItsBean_whileItIsOpen() throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    Set<ObjectName> before = basaltBeans(server);
    ObjectName name;
    try (Basalt db = Basalt.open(new MemStorage(31), ChangeFeedTest.tiny().jmx(true))) {
      Set<ObjectName> now = basaltBeans(server);
      now.removeAll(before);
      assertEquals(1, now.size(), "one bean for the store: " + now);
      name = now.iterator().next();
      Keyspace ks = db.keyspace("default");
      for (int i = 0; i < 10; i++) ks.put(("k" + i).getBytes(), new byte[10]);
      assertEquals(10L, server.getAttribute(name, "puts"));
      assertEquals("OK", server.getAttribute(name, "Health"));
      assertEquals("", server.getAttribute(name, "Failure"));
      Set<String> attrs =
          Arrays.stream(server.getMBeanInfo(name).getAttributes())
              .map(a -> a.getName())
              .collect(Collectors.toSet());
      assertTrue(
          attrs.containsAll(
              Set.of(
                  "puts",
                  "gets",
                  "flushes",
                  "pendingCompactionBytes",
                  "segmentBytes",
                  "keyspace.default.segmentBytes",
                  "keyspace.default.pendingCompactionBytes",
                  "Health")),
          attrs.toString());
      assertEquals(db.stats().get("lastSeqno"), server.getAttribute(name, "lastSeqno"));
      assertThrows(
          javax.management.AttributeNotFoundException.class,
          () -> server.getAttribute(name, "noSuchStat"));
      assertEquals(2, server.getAttributes(name, new String[] {"puts", "Health"}).size());
    }
    assertFalse(server.isRegistered(name), "close unregisters the bean");
    try (Basalt db = Basalt.openInMemory(Options.defaults().memoryQuota(16L << 20).jmx(true))) {
      Set<ObjectName> now = basaltBeans(server);
      now.removeAll(before);
      assertEquals(1, now.size());
      assertTrue(now.iterator().next().toString().contains("in-memory-"), now.toString());
    }
    try (Basalt db = Basalt.open(new MemStorage(32), ChangeFeedTest.tiny())) {
      assertEquals(before, basaltBeans(server), "no bean without Options.jmx");
    }
  }
}
