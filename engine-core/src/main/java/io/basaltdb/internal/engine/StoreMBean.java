package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.internal.engine.base.Notifier;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * An open store's statistics over JMX ({@link io.basaltdb.Options#jmx}): one read-only attribute
 * per stat of {@code Basalt.stats()} (counters, gauges and the per-keyspace figures, named as
 * there), plus {@code Health} ({@code OK}, {@code FAILED} or {@code CLOSED}) and {@code Failure}
 * (the failure's message, or empty). Registered as {@code io.basaltdb:type=Store,name=<the store's
 * directory>} (an in-memory store: {@code in-memory-<n>}) while the store is open. The attribute
 * list is read from the stats when a client asks for the bean's info, so keyspaces created later
 * appear on its next look.
 *
 * <p>Thread-safety: any thread; every read takes a fresh reading of the store's stats.
 */
final class StoreMBean implements DynamicMBean {
  private static final AtomicLong inMemoryStores = new AtomicLong();
  private final Engine engine;
  private final ObjectName name;

  private StoreMBean(Engine engine, ObjectName name) {
    this.engine = engine;
    this.name = name;
  }

  /** Registers {@code engine}'s bean; {@code store}: its directory, or null in memory. */
  static StoreMBean register(Engine engine, String store) {
    try {
      String label = store == null ? "in-memory-" + inMemoryStores.incrementAndGet() : store;
      ObjectName n = new ObjectName("io.basaltdb:type=Store,name=" + ObjectName.quote(label));
      StoreMBean bean = new StoreMBean(engine, n);
      ManagementFactory.getPlatformMBeanServer().registerMBean(bean, n);
      return bean;
    } catch (JMException e) {
      throw new BasaltException(
          "cannot register the store's JMX bean ("
              + e
              + "); open it with Options.jmx(false)"
              + " or close the store already registered under that name",
          e);
    }
  }

  ObjectName name() {
    return name;
  }

  /** Removes the bean; quietly if it is gone already. Never throws: close must go on. */
  void unregister() {
    try {
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      if (server.isRegistered(name)) server.unregisterMBean(name);
    } catch (JMException | RuntimeException e) {
      Notifier.LOG.warn("cannot unregister the JMX bean {}: {}", name, e.toString());
    }
  }

  @Override
  public Object getAttribute(String attribute) throws AttributeNotFoundException {
    BasaltException f = engine.failure();
    switch (attribute) {
      case "Health":
        return engine.isClosed() ? "CLOSED" : f == null ? "OK" : "FAILED";
      case "Failure":
        return f == null ? "" : f.getMessage();
      default:
        Long v = stats().get(attribute);
        if (v == null)
          throw new AttributeNotFoundException("no stat named " + attribute + " in " + name);
        return v;
    }
  }

  /**
   * The store's stats, or none once it is closed (a read racing close sees none, never an
   * exception).
   */
  private Map<String, Long> stats() {
    if (engine.isClosed()) return Map.of();
    try {
      return engine.stats();
    } catch (BasaltException closedMeanwhile) {
      return Map.of();
    }
  }

  @Override
  public AttributeList getAttributes(String[] attributes) {
    AttributeList out = new AttributeList();
    Map<String, Long> stats = stats();
    for (String a : attributes) {
      try {
        out.add(new Attribute(a, stats.containsKey(a) ? stats.get(a) : getAttribute(a)));
      } catch (AttributeNotFoundException e) {
        // JMX's contract: attributes that cannot be read are left out of the list
      }
    }
    return out;
  }

  @Override
  public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
    throw new AttributeNotFoundException(attribute.getName() + " is read-only");
  }

  @Override
  public AttributeList setAttributes(AttributeList attributes) {
    return new AttributeList(); // every attribute is read-only: none set
  }

  @Override
  public Object invoke(String actionName, Object[] params, String[] signature)
      throws javax.management.ReflectionException {
    throw new javax.management.ReflectionException(
        new NoSuchMethodException(actionName), "the store's bean has no operations");
  }

  @Override
  public MBeanInfo getMBeanInfo() {
    List<MBeanAttributeInfo> attrs = new ArrayList<>();
    attrs.add(
        new MBeanAttributeInfo(
            "Health",
            "java.lang.String",
            "OK, FAILED (writes refused) or CLOSED",
            true,
            false,
            false));
    attrs.add(
        new MBeanAttributeInfo(
            "Failure",
            "java.lang.String",
            "the failure that stopped writes, or empty",
            true,
            false,
            false));
    {
      for (String stat : stats().keySet()) {
        attrs.add(
            new MBeanAttributeInfo(
                stat,
                "java.lang.Long",
                "Basalt stat " + stat + " (see io.basaltdb.Stats)",
                true,
                false,
                false));
      }
    }
    return new MBeanInfo(
        StoreMBean.class.getName(),
        "A Basalt store's statistics",
        attrs.toArray(new MBeanAttributeInfo[0]),
        null,
        new MBeanOperationInfo[0],
        null);
  }
}
