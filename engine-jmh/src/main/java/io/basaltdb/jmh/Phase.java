package io.basaltdb.jmh;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One phase of {@link Race} (the load, an update round, the settle after the last one, a soak):
 * takes the process's I/O counters, the engine's counters and the directory size when it starts,
 * and reports the phase when it ends as a line {@code phase engine=E name=N k=v ...}:
 *
 * <ul>
 *   <li>{@code ops}, {@code seconds} (of writing: a load's settle is not in it), {@code opsPerSec};
 *   <li>{@code writeMiB} ({@code write_bytes} of {@code /proc/self/io} over the whole phase,
 *       background work included) and {@code writeAmp} (that over the phase's user bytes, keys plus
 *       values);
 *   <li>{@code spaceAmpEnd} and {@code spaceAmpPeak}: the directory's apparent size (sum of {@code
 *       Files.size}) at the end and its peak, sampled about once a second, over the live user data;
 *       {@code allocSpaceAmpEnd} and {@code allocSpaceAmpPeak} the same with {@code du}'s allocated
 *       bytes (see {@link SpaceSampler}); {@code diskMiBEnd}, {@code diskMiBPeak} the apparent
 *       sizes;
 *   <li>the engine's own figures for the phase ({@link Race.Store#phaseFigures}).
 * </ul>
 *
 * <p>Thread-safety: used by the race's main thread only.
 */
final class Phase {
  private final String engine;
  private final String name;
  private final Race.Store store;
  private final SpaceSampler sampler;
  private final long liveBytes;
  private final Map<String, Long> io0;
  private final Map<String, Long> counters0;
  private final long start = System.nanoTime();

  /**
   * Starts a phase; {@code liveBytes} is the live user data at its end, for space amplification.
   */
  Phase(String engine, String name, Race.Store store, SpaceSampler sampler, long liveBytes)
      throws Exception {
    this.engine = engine;
    this.name = name;
    this.store = store;
    this.sampler = sampler;
    this.liveBytes = liveBytes;
    sampler.resetPeak();
    this.counters0 = store.counters();
    this.io0 = Race.procIo();
  }

  /**
   * Ends the phase: {@code ops} operations of {@code userBytes} in {@code writeNanos} of writing.
   * Returns its figures, in print order; {@link #print} prints them.
   */
  Map<String, String> finish(long ops, long writeNanos, long userBytes) throws Exception {
    Map<String, Long> io1 = Race.procIo();
    long wallNanos = System.nanoTime() - start;
    SpaceSampler.Sample end = SpaceSampler.measure(store.directory());
    SpaceSampler.Sample peak = sampler.peak(end);
    Map<String, Long> counters1 = store.counters();
    long written = io1.get("write_bytes") - io0.get("write_bytes");
    Map<String, String> m = new LinkedHashMap<>();
    m.put("engine", engine);
    m.put("name", name);
    m.put("ops", Long.toString(ops));
    m.put("seconds", Race.fmt(writeNanos / 1e9));
    m.put("wallSeconds", Race.fmt(wallNanos / 1e9));
    m.put("opsPerSec", ops == 0 ? "0" : Race.fmt(ops / (writeNanos / 1e9)));
    m.put("writeMiB", mib(written));
    if (userBytes > 0) m.put("writeAmp", Race.fmt((double) written / userBytes));
    m.put("spaceAmpEnd", Race.fmt((double) end.apparent() / liveBytes));
    m.put("spaceAmpPeak", Race.fmt((double) peak.apparent() / liveBytes));
    m.put(
        "allocSpaceAmpEnd",
        end.allocated() < 0 ? "-1" : Race.fmt((double) end.allocated() / liveBytes));
    m.put(
        "allocSpaceAmpPeak",
        peak.allocated() < 0 ? "-1" : Race.fmt((double) peak.allocated() / liveBytes));
    m.put("diskMiBEnd", mib(end.apparent()));
    m.put("diskMiBPeak", mib(peak.apparent()));
    m.putAll(store.phaseFigures(counters0, counters1));
    return m;
  }

  static void print(Map<String, String> figures) {
    StringBuilder line = new StringBuilder("phase");
    figures.forEach((k, v) -> line.append(' ').append(k).append('=').append(v));
    System.out.println(line);
  }

  static String mib(long bytes) {
    return String.format(java.util.Locale.ROOT, "%.1f", bytes / 1048576.0);
  }
}
