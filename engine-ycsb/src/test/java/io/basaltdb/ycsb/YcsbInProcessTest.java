package io.basaltdb.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.htrace.core.HTraceConfiguration;
import org.apache.htrace.core.Tracer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBFactory;
import site.ycsb.Workload;
import site.ycsb.measurements.Measurements;
import site.ycsb.measurements.exporter.TextMeasurementsExporter;
import site.ycsb.workloads.CoreWorkload;

/**
 * The official harness in this JVM: {@code site.ycsb.Client}'s own parts, wired as its {@code main}
 * wires them (a {@link CoreWorkload} from the workload file, one {@link DBFactory} binding wrapped
 * in the harness's {@code DBWrapper} per {@link ClientThread}, the operation count split over the
 * threads, statuses recorded in {@link Measurements}), without the {@code System.exit} that ends
 * {@code main} (YcsbRunTest runs {@code main} itself in a child JVM). With YCSB's {@code
 * dataintegrity} on, every read checks each field against the value YCSB derives from the key and
 * field name, and reports the check as the VERIFY operation (scans are not checked by YCSB).
 */
class YcsbInProcessTest {
  private static final Pattern RESULT =
      Pattern.compile("^\\[(\\w+)\\], Return=(\\w+), (\\d+)$", Pattern.MULTILINE);

  @TempDir Path dir;

  private Properties properties(String workload, int records, int ops) throws Exception {
    Properties p = new Properties();
    try (InputStream in = new FileInputStream(Path.of("workloads", workload).toFile())) {
      p.load(in);
    }
    p.setProperty("recordcount", Integer.toString(records));
    p.setProperty("operationcount", Integer.toString(ops));
    p.setProperty("dataintegrity", "true");
    p.setProperty("fieldlengthdistribution", "constant"); // what dataintegrity requires
    p.setProperty("basalt.dir", dir.resolve("db").toString());
    p.setProperty("basalt.memory", "32m");
    return p;
  }

  /**
   * Runs one phase with {@code threads} client threads, as Client.main does; returns the status
   * counts.
   */
  private static Map<String, Long> phase(Properties p, boolean transactions, int threads)
      throws Exception {
    Measurements.setProperties(p);
    Map<String, Long> before = counts();
    Workload workload = new CoreWorkload();
    workload.init(p);
    Tracer tracer =
        new Tracer.Builder("YCSB in-process test").conf(HTraceConfiguration.EMPTY).build();
    int ops = Integer.parseInt(p.getProperty(transactions ? "operationcount" : "recordcount"));
    CountDownLatch done = new CountDownLatch(threads);
    List<Thread> running = new ArrayList<>();
    for (int id = 0; id < threads; id++) {
      DB db = DBFactory.newDB(BasaltClient.class.getName(), p, tracer);
      int share = ops / threads + (id < ops % threads ? 1 : 0);
      ClientThread t = new ClientThread(db, transactions, workload, p, share, -1, done);
      t.setThreadId(id);
      t.setThreadCount(threads);
      Thread th = new Thread(t, "ycsb-client-" + id);
      th.start();
      running.add(th);
    }
    for (Thread th : running) th.join(120_000);
    assertEquals(0, done.getCount(), "every client thread finished");
    workload.cleanup();
    Map<String, Long> after = counts();
    before.forEach((k, v) -> after.merge(k, -v, Long::sum));
    after.values().removeIf(v -> v == 0);
    return after;
  }

  /** The harness's status counts so far, by "OP=STATUS", from its own text export. */
  private static Map<String, Long> counts() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    TextMeasurementsExporter exporter = new TextMeasurementsExporter(out);
    Measurements.getMeasurements().exportMeasurements(exporter);
    exporter.close();
    Map<String, Long> m = new TreeMap<>();
    Matcher mt = RESULT.matcher(out.toString(StandardCharsets.UTF_8));
    while (mt.find())
      m.merge(mt.group(1) + "=" + mt.group(2), Long.parseLong(mt.group(3)), Long::sum);
    return m;
  }

  private static void assertAllOk(Map<String, Long> r, String op, long expected) {
    for (String k : r.keySet()) assertTrue(k.endsWith("=OK"), "every operation returns OK: " + r);
    long ops =
        r.entrySet().stream()
            .filter(e -> !e.getKey().startsWith("CLEANUP") && !e.getKey().startsWith("VERIFY"))
            .mapToLong(Map.Entry::getValue)
            .sum();
    assertEquals(expected, ops, "operations counted: " + r);
    assertTrue(r.getOrDefault(op + "=OK", 0L) > 0, op + " ran: " + r);
  }

  @Test
  void harnessThreads_loadAndRunWorkloadsAAndE_everyOperationOk_everyReadVerified()
      throws Exception {
    assertAllOk(phase(properties("workloada", 3000, 0), false, 4), "INSERT", 3000);

    Map<String, Long> a = phase(properties("workloada", 3000, 6000), true, 4);
    assertAllOk(a, "UPDATE", 6000);
    assertEquals(a.get("READ=OK"), a.get("VERIFY=OK"), "every read was verified: " + a);

    assertAllOk(
        phase(properties("workloade", 3000, 600), true, 4), "SCAN", 600); // YCSB verifies no scan

    Map<String, Long> c = phase(properties("workloadc", 3000, 3000), true, 2); // after E's inserts
    assertAllOk(c, "READ", 3000);
    assertEquals(3000L, c.get("VERIFY=OK"), "every read was verified: " + c);
  }
}
