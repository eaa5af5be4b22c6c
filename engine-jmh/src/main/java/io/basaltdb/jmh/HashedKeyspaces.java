package io.basaltdb.jmh;

import io.basaltdb.Basalt;
import io.basaltdb.Keyspace;
import io.basaltdb.KeyspaceOptions;
import io.basaltdb.Options;
import io.basaltdb.Stats;
import io.basaltdb.SyncMode;
import io.basaltdb.WriteBatch;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * Issue 39's memory and recovery figures for hashed keyspaces, beside the ordered default: for each
 * kind, a child JVM loads {@code --keys} 16-byte keys ({@link EngineBenchmark#key}) with random
 * {@code --value-size}-byte values (default 100) into a fresh store, in batches of 1,000 at {@code
 * SyncMode.NONE}, flushes (so every key is in the index and the open replays no WAL), prints its
 * memory figures ({@code hashedIndexBytes}, of which {@code hashedIndexNodeBytes}, per key), says
 * READY and is killed with SIGKILL; a second child then times {@code Basalt.open} of what it left
 * (the page cache warm, as after a process crash), prints what the open loaded and replayed, and
 * checks 1,000 random keys. One line per kind: {@code kind=.. keys=.. indexBytesPerKey=..
 * nodeBytesPerKey=.. openMillis=.. checkpointRecords=.. replayedBytes=..}.
 *
 * <p>Usage: {@code java @jvm.flags -cp benchmarks.jar io.basaltdb.jmh.HashedKeyspaces --dir D
 * --keys N [--value-size V] [--memory-mb M] [--kinds hashed,ordered]}.
 */
public final class HashedKeyspaces {
  private HashedKeyspaces() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) a.put(args[i].substring(2), args[i + 1]);
    Path dir = Path.of(a.getOrDefault("dir", "target/hashed-keyspaces"));
    long keys = Long.parseLong(a.getOrDefault("keys", "1000000"));
    int valueSize = Integer.parseInt(a.getOrDefault("value-size", "100"));
    long memory = Long.parseLong(a.getOrDefault("memory-mb", "1024")) << 20;
    String kind = a.get("kind");
    switch (a.getOrDefault("phase", "parent")) {
      case "load" -> load(dir, kind, keys, valueSize, memory);
      case "updates" ->
          updates(dir, kind, keys, valueSize, memory, Long.parseLong(a.getOrDefault("ops", "0")));
      case "open" -> open(dir, kind, keys, memory);
      default -> {
        for (String k : a.getOrDefault("kinds", "ordered,hashed").split(",")) {
          Path store = dir.resolve(k + "-" + keys);
          delete(store);
          Process load = child("load", store, k, keys, valueSize, memory);
          String figures = awaitReady(load);
          load.destroyForcibly().waitFor(); // SIGKILL: no close, no checkpoint at close
          Process open = child("open", store, k, keys, valueSize, memory);
          String opened = new String(open.getInputStream().readAllBytes()).trim();
          if (open.waitFor() != 0) throw new IllegalStateException("open failed: " + opened);
          System.out.println("kind=" + k + " keys=" + keys + " " + figures + " " + opened);
          long ops = Long.parseLong(a.getOrDefault("update-ops", "0"));
          if (ops > 0) {
            Process u = child("updates", store, k, keys, valueSize, memory, "--ops", "" + ops);
            String updated = new String(u.getInputStream().readAllBytes()).trim();
            if (u.waitFor() != 0) throw new IllegalStateException("updates failed: " + updated);
            System.out.println("kind=" + k + " keys=" + keys + " " + updated);
          }
        }
      }
    }
  }

  static Options options(long memory) {
    return Options.defaults().memoryQuota(memory).syncMode(SyncMode.NONE);
  }

  static Keyspace keyspace(Basalt db, String kind) {
    if (db.keyspaceNames().contains(kind)) return db.keyspace(kind);
    return db.createKeyspace(
        kind,
        kind.equals("hashed")
            ? KeyspaceOptions.defaults().kind(KeyspaceOptions.Kind.HASHED)
            : KeyspaceOptions.defaults());
  }

  static void load(Path dir, String kind, long keys, int valueSize, long memory) throws Exception {
    Basalt db = Basalt.open(dir, options(memory));
    Keyspace ks = keyspace(db, kind);
    SplittableRandom rnd = new SplittableRandom(1);
    byte[] value = new byte[valueSize];
    long t0 = System.nanoTime();
    for (long i = 0; i < keys; ) {
      WriteBatch b = new WriteBatch();
      for (int j = 0; j < 1000 && i < keys; j++, i++) {
        rnd.nextBytes(value);
        b.put(ks, EngineBenchmark.key(i), value.clone());
      }
      db.write(b);
    }
    double loadSeconds = (System.nanoTime() - t0) / 1e9;
    db.flush(); // every key in the index (and the WAL covered): the open's work is the index's
    Stats s = db.stats();
    System.out.printf(
        "loadSeconds=%.1f indexBytesPerKey=%.1f nodeBytesPerKey=%.2f trieCheckpoints=%d%n",
        loadSeconds,
        (double) s.get("hashedIndexBytes") / keys,
        (double) s.get("hashedIndexNodeBytes") / keys,
        s.get("trieCheckpoints"));
    System.out.println("READY");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE); // killed here, with the store open
  }

  static void open(Path dir, String kind, long keys, long memory) {
    long t0 = System.nanoTime();
    try (Basalt db = Basalt.open(dir, options(memory))) {
      double millis = (System.nanoTime() - t0) / 1e6;
      Keyspace ks = db.keyspace(kind);
      SplittableRandom rnd = new SplittableRandom(2);
      for (int i = 0; i < 1000; i++) {
        long k = rnd.nextLong(keys);
        if (ks.get(EngineBenchmark.key(k)) == null)
          throw new IllegalStateException("key " + k + " lost");
      }
      Stats s = db.stats();
      System.out.printf(
          "openMillis=%.0f checkpointRecords=%d replayedBytes=%d walReplayedPuts=%d%n",
          millis,
          s.get("trieCheckpointRecordsLoaded"),
          s.get("trieLogBytesReplayed"),
          s.get("puts"));
    }
  }

  /**
   * YCSB workload A's mix on the loaded store: {@code ops} operations, half gets and half
   * overwrites of keys from a scrambled zipfian, one thread; prints the throughput, the key index
   * bytes written per update (tables for an ordered keyspace; checkpoints for a hashed one) and
   * delete list bytes per update, and the peak space amplification (the directory's size, sampled
   * every 100,000 operations, over the live keys and values).
   */
  static void updates(Path dir, String kind, long keys, int valueSize, long memory, long ops)
      throws IOException {
    try (Basalt db = Basalt.open(dir, options(memory))) {
      Keyspace ks = keyspace(db, kind);
      Zipfian zipf = new Zipfian(keys);
      SplittableRandom rnd = new SplittableRandom(3);
      byte[] value = new byte[valueSize];
      Stats s0 = db.stats();
      long live = keys * (16L + valueSize), peak = 0, updates = 0;
      long t0 = System.nanoTime();
      for (long i = 0; i < ops; i++) {
        byte[] key = EngineBenchmark.key(zipf.next(rnd));
        if (rnd.nextBoolean()) {
          ks.get(key);
        } else {
          rnd.nextBytes(value);
          ks.put(key, value);
          updates++;
        }
        if (i % 100_000 == 0) peak = Math.max(peak, size(dir));
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      db.flush();
      peak = Math.max(peak, size(dir));
      Stats s = db.stats();
      System.out.printf(
          "mixOpsPerSec=%.0f indexBytesPerUpdate=%.1f deleteListBytesPerUpdate=%.1f"
              + " peakSpaceAmp=%.2f gcStallSeconds=%.1f l0StallSeconds=%.1f trieCheckpoints=%d"
              + " checkpointPages=%d segmentBytesPerUpdate=%.1f%n",
          ops / seconds,
          (double) (s.get("indexBytesWritten") - s0.get("indexBytesWritten")) / updates,
          (double) (s.get("deleteListBytesWritten") - s0.get("deleteListBytesWritten")) / updates,
          (double) peak / live,
          s.get("gcStallNanos") / 1e9,
          s.get("l0StallNanos") / 1e9,
          s.get("trieCheckpoints") - s0.get("trieCheckpoints"),
          s.get("trieCheckpointPages") - s0.get("trieCheckpointPages"),
          (double) (s.get("segmentBytesWritten") - s0.get("segmentBytesWritten")) / updates);
    }
  }

  static long size(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  return 0; // deleted while walked
                }
              })
          .sum();
    }
  }

  static Process child(
      String phase, Path store, String kind, long keys, int valueSize, long memory, String... more)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
    cmd.addAll(
        List.of("-cp", System.getProperty("java.class.path"), HashedKeyspaces.class.getName()));
    cmd.addAll(
        List.of(
            "--phase",
            phase,
            "--dir",
            store.toString(),
            "--kind",
            kind,
            "--keys",
            "" + keys,
            "--value-size",
            "" + valueSize,
            "--memory-mb",
            "" + (memory >> 20)));
    cmd.addAll(List.of(more));
    return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  static String awaitReady(Process p) throws IOException {
    BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()));
    String figures = "";
    for (String line; (line = r.readLine()) != null; ) {
      if (line.equals("READY")) return figures;
      figures = line.trim();
    }
    throw new IllegalStateException("the load child ended before READY");
  }

  static void delete(Path dir) throws IOException {
    if (!Files.exists(dir)) return;
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
    }
  }
}
