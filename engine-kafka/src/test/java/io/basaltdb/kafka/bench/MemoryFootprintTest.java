package io.basaltdb.kafka.bench;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * 8 and 96 Basalt state stores (a quarter of them window stores) in one JVM each ({@link
 * StoreFootprint} in a child with its heap pre-touched, so the heap's resident share is fixed, and
 * {@code MALLOC_ARENA_MAX=2}, as docs/kafka-streams.md advises): the resident anonymous memory
 * beyond the heap stays within the memory quota plus {@value #CONSTANT_MIB} MiB (the JVM's own
 * native memory and Basalt's fixed overhead) and grows by less than {@value #GROWTH_MIB} MiB from 8
 * to 96 stores; the native memory Basalt allocates itself (the JVM's native memory tracking puts
 * {@code Unsafe.allocateMemory} and direct buffers under "Other") stays within the quota and grows
 * by less than {@value #OWN_GROWTH_MIB} MiB. The resident growth is mostly the JVM's (code cache,
 * metaspace, and C2's transient arenas, which the child avoids by compiling with C1 only) and the C
 * library's.
 */
class MemoryFootprintTest {
  static final long QUOTA_MIB = 64;
  static final long CONSTANT_MIB = 64;
  static final long GROWTH_MIB = 16;
  static final long OWN_GROWTH_MIB = 8;

  @TempDir Path tmp;

  private Map<String, Long> run(int stores, int records) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xms256m");
    cmd.add("-Xmx256m");
    cmd.add("-XX:+AlwaysPreTouch");
    // C1 only: the 96-store run compiles more, and C2's transient arenas (5-10 MiB at the moment of
    // measurement) made the growth vary from 7 to 21 MiB between runs; with C1 it is 4-6 MiB.
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-XX:NativeMemoryTracking=summary");
    cmd.add("-Dfootprint.nmt=true");
    cmd.add("@" + Path.of("..", "jvm.flags").toAbsolutePath().normalize());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(StoreFootprint.class.getName());
    cmd.add("basalt");
    cmd.add(String.valueOf(stores));
    cmd.add(String.valueOf(records));
    cmd.add(tmp.resolve("s" + stores).toString());
    cmd.add(String.valueOf(QUOTA_MIB));
    Path log = tmp.resolve("footprint-" + stores + ".log");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("MALLOC_ARENA_MAX", "2");
    Process p = pb.start();
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the footprint run finished");
    String out = Files.readString(log);
    assertTrue(p.exitValue() == 0 && out.contains("stores="), "the footprint run:\n" + out);
    Map<String, Long> m = new HashMap<>();
    String line = out.substring(out.indexOf("stores=")).lines().findFirst().orElseThrow();
    for (String field : line.trim().split("\\s+")) {
      String[] kv = field.split("=");
      if (kv.length == 2 && kv[1].matches("\\d+")) m.put(kv[0], Long.parseLong(kv[1]));
    }
    java.util.regex.Matcher other =
        java.util.regex.Pattern.compile("-\\s+Other \\(reserved=\\d+KB, committed=(\\d+)KB\\)")
            .matcher(out);
    assertTrue(other.find(), "the native memory summary:\n" + out);
    m.put("nmtOtherKiB", Long.parseLong(other.group(1)));
    return m;
  }

  @Test
  void residentMemoryBeyondTheHeap_staysWithinTheQuotaPlusAConstant_from8To96Stores()
      throws Exception {
    // 96 stores x 6,000 records of 116 bytes: 67 MB of data, more than the quota holds.
    Map<String, Long> few = run(8, 6_000);
    Map<String, Long> many = run(96, 6_000);
    long fewOff = few.get("rssAnonKiB") - few.get("heapCommittedKiB");
    long manyOff = many.get("rssAnonKiB") - many.get("heapCommittedKiB");
    long bound = (QUOTA_MIB + CONSTANT_MIB) << 10;
    assertTrue(fewOff <= bound, "8 stores: " + fewOff + " KiB beyond the heap, bound " + bound);
    assertTrue(manyOff <= bound, "96 stores: " + manyOff + " KiB beyond the heap, bound " + bound);
    long own = many.get("nmtOtherKiB");
    assertTrue(own <= QUOTA_MIB << 10, "96 stores: Basalt's own native memory " + own + " KiB");
    assertTrue(
        own - few.get("nmtOtherKiB") < OWN_GROWTH_MIB << 10,
        "Basalt's own native memory grew from " + few.get("nmtOtherKiB") + " to " + own + " KiB");
    assertTrue(
        manyOff - fewOff < GROWTH_MIB << 10,
        "from 8 to 96 stores the memory beyond the heap grew by "
            + (manyOff - fewOff)
            + " KiB: "
            + few
            + " / "
            + many);
  }
}
