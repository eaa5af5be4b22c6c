package io.basaltdb.example;

import io.basaltdb.Basalt;
import io.basaltdb.ChangeFeed;
import io.basaltdb.Checkpoint;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.Options;
import io.basaltdb.Snapshot;
import io.basaltdb.Stats;
import io.basaltdb.WriteBatch;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/**
 * The README's example, compiled and run by {@code ReadmeExampleTest}, which also checks that the
 * README holds the lines between the markers below verbatim. Only the public API, from a package of
 * its own, as a user's code would be. {@code main(dir)} runs it in directory {@code dir}.
 */
public final class ReadmeExample {
  private ReadmeExample() {}

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Runs the example in {@code args[0]}; returns (for the test) how many changes the feed returned.
   */
  public static long run(Path dir) {
    byte[] key = b("key"),
        value = b("value"),
        k1 = b("k1"),
        v1 = b("v1"),
        k2 = b("k2"),
        k3 = b("k3");
    byte[] from = b("a"), to = b("z"), session = b("session"), token = b("token");
    long resumeFrom = 0;
    long changes = 0;
    // spotless:off (the README holds these lines verbatim)
    // README begin
    Checkpoint cp;
    try (Basalt db = Basalt.open(dir, Options.defaults().memoryQuota(256L << 20))) {
      Keyspace ks = db.keyspace("default");          // a new store has "default"; createKeyspace adds more
      ks.put(key, value);
      byte[] v = ks.get(key);
      ks.delete(key);
      db.write(new WriteBatch().put(ks, k1, v1).delete(ks, k2));   // atomic
      List<byte[]> values = ks.getAll(List.of(k1, k2, k3));         // batched: reads in flight together
      try (Snapshot s = db.snapshot(); Cursor c = s.scan(ks, from, to)) {
        while (c.next()) { /* c.key(), c.value() */ }
      }
      try (ChangeFeed feed = ks.changes(resumeFrom, ChangeFeed.NOW)) {  // 0: the whole keyspace
        while (feed.next()) { /* feed.seqno(), feed.key(), feed.value() (null: deleted) */ changes++; }
        resumeFrom = feed.endSeqno() + 1;
      }
      ks.put(session, token, System.currentTimeMillis() + 3_600_000);  // expires in an hour
      Stats stats = db.stats();                     // counters and gauges; db.health() says if it takes writes
      cp = db.checkpoint();                         // flushed; kept for checkpointRetentionMillis
    }
    Basalt.rollback(dir, cp.id());                  // on the closed store: back to the checkpoint
    // README end
    // spotless:on
    return changes;
  }

  public static void main(String[] args) {
    System.out.println(
        "the example ran; its change feed returned "
            + run(Path.of(args.length > 0 ? args[0] : "data"))
            + " changes");
  }
}
