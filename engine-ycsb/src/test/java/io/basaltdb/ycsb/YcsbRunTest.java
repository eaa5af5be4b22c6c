package io.basaltdb.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The official harness, {@code site.ycsb.Client}, drives the binding through a load phase and a run
 * phase of a small workload A and workload E (scans and inserts); every operation must return OK.
 * The client ends with {@code System.exit}, so it runs in a child JVM on this test's class path.
 */
class YcsbRunTest {
  private static final Pattern RESULT =
      Pattern.compile("^\\[(\\w+)\\], Return=(\\w+), (\\d+)$", Pattern.MULTILINE);

  @TempDir Path dir;

  private String ycsb(String phase, String workload, int records, int ops) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens") || a.startsWith("--add-exports"))
        cmd.add(a); // Chronicle's flags
    }
    cmd.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            "site.ycsb.Client",
            phase,
            "-db",
            BasaltClient.class.getName(),
            "-P",
            Path.of("workloads", workload).toString(),
            "-p",
            "recordcount=" + records,
            "-p",
            "operationcount=" + ops,
            "-p",
            "basalt.dir=" + dir.resolve("db"),
            "-p",
            "basalt.memory=64m",
            "-threads",
            "4"));
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(phase + ".out").toFile())
            .start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "YCSB finished");
    String out = Files.readString(dir.resolve(phase + ".out"), StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), out);
    return out;
  }

  /** Operation counts by "[OP] Return=STATUS". */
  private static Map<String, Long> results(String out) {
    Map<String, Long> m = new TreeMap<>();
    Matcher mt = RESULT.matcher(out);
    while (mt.find())
      m.merge(mt.group(1) + "=" + mt.group(2), Long.parseLong(mt.group(3)), Long::sum);
    return m;
  }

  private static void assertAllOk(String out, long expected) {
    Map<String, Long> r = results(out);
    long ok = 0;
    for (Map.Entry<String, Long> e : r.entrySet()) {
      assertTrue(e.getKey().endsWith("=OK"), "every operation returns OK: " + r + "\n" + out);
      if (!e.getKey().startsWith("CLEANUP")) ok += e.getValue();
    }
    assertEquals(expected, ok, "operations counted: " + r);
  }

  @Test
  void officialClient_loadsAndRunsWorkloadAAndE_everyOperationOk() throws Exception {
    assertTrue(new File("workloads/workloada").isFile(), "run from engine-ycsb (Maven does)");
    assertAllOk(ycsb("-load", "workloada", 2000, 0), 2000);
    String run = ycsb("-t", "workloada", 2000, 4000);
    assertAllOk(run, 4000);
    assertTrue(results(run).containsKey("READ=OK") && results(run).containsKey("UPDATE=OK"), run);
    String scans = ycsb("-t", "workloade", 2000, 1000);
    assertAllOk(scans, 1000);
    assertTrue(results(scans).containsKey("SCAN=OK"), scans);
  }
}
