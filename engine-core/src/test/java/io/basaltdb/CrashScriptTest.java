package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Runs the real crash test, {@code bin/crashtest}, for {@code basalt.crashtest.cycles} cycles
 * (default 20): writer JVMs killed with SIGKILL at random moments, each reopening and verifying the
 * store.
 */
class CrashScriptTest {
  @Test
  void survivesSigkillCycles() throws Exception {
    File script = new File("../bin/crashtest").getCanonicalFile();
    assertTrue(script.canExecute(), "missing " + script);
    int cycles = Integer.getInteger("basalt.crashtest.cycles", 20);
    ProcessBuilder pb = new ProcessBuilder(script.getPath(), "--cycles", String.valueOf(cycles));
    pb.environment().put("BASALT_CRASHTEST_CP", System.getProperty("java.class.path"));
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(10, TimeUnit.MINUTES), "crashtest timed out");
    assertEquals(0, p.exitValue(), "bin/crashtest failed:\n" + out);
    assertTrue(out.contains("crashtest passed"), out);
    assertTrue(out.contains("verified"), "no writer ever verified the store:\n" + out);
  }
}
