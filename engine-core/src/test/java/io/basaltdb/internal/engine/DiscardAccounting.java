package io.basaltdb.internal.engine;

import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Manifest;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.sstable.TableIterator;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.internal.storage.Storage;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Checks the key index accounting a manifest persists ({@link Manifest.Counters}) against the
 * tables it names: per keyspace, {@code flushedVersions} = records in the tables not yet reported
 * stale + {@code discardedVersions}, and the same for the document bytes; and {@code
 * discardedVersions} = the segments' garbage counts + {@code collectedVersions} (garbage
 * collection's), bytes alike. A version counted as discarded twice, or never, or as garbage twice,
 * breaks it. Used by {@link DiscardAccountingCrashTest} and by the crash writer of {@code
 * bin/crashtest}.
 *
 * <p>Thread-safety: stateless; {@link #census(Engine)} takes the engine's manifest lock.
 */
public final class DiscardAccounting {
  private DiscardAccounting() {}

  /**
   * What one keyspace's tables hold that is not yet reported stale: records, their document sizes
   * summed, their seqnos. A record the next newer version of its key carries {@code olderReported}
   * over (a flush with {@link io.basaltdb.Options#flushLookups} reported it) is counted as
   * discarded already, and left out.
   */
  record Census(long records, long docBytes, Set<Long> seqnos) {}

  /** Every version in some tables, by key: {seqno, docSize, olderReported}. */
  private static final class Versions {
    final Map<java.nio.ByteBuffer, java.util.List<long[]>> byKey = new HashMap<>();

    void add(TableReader r) {
      try (TableIterator it = r.iterator()) {
        for (it.seekFirst(); it.valid(); it.next()) {
          byKey
              .computeIfAbsent(java.nio.ByteBuffer.wrap(it.key()), k -> new java.util.ArrayList<>())
              .add(new long[] {it.seqno(), it.docSize(), it.olderReported() ? 1 : 0});
        }
      }
    }

    Census census() {
      long records = 0, bytes = 0;
      Set<Long> seqnos = new HashSet<>();
      for (java.util.List<long[]> vs : byKey.values()) {
        vs.sort((a, b) -> Long.compare(b[0], a[0])); // newest first
        for (int i = 0; i < vs.size(); i++) {
          if (i > 0 && vs.get(i - 1)[2] == 1)
            continue; // reported by the flush of the version above it
          records++;
          bytes += vs.get(i)[1];
          seqnos.add(vs.get(i)[0]);
        }
      }
      return new Census(records, bytes, seqnos);
    }
  }

  /**
   * Null if the newest manifest in {@code storage} (a store that is not open) agrees with its
   * tables, else what disagrees. A store without a manifest yet passes.
   */
  public static String checkStore(Storage storage) {
    Manifest m = newest(storage);
    return m == null ? null : check(m, census(storage, m));
  }

  /** The highest-numbered manifest (what recovery loads when every manifest is intact), or null. */
  static Manifest newest(Storage storage) {
    long best = -1;
    for (String name : storage.list(FileNames.MANIFEST_DIR))
      best = Math.max(best, FileNames.manifestNumber(name));
    if (best < 0) return null;
    return Manifest.read(storage, best);
  }

  /** Reads every table {@code m} names, from storage. */
  static Map<Integer, Census> census(Storage storage, Manifest m) {
    Map<Integer, Census> out = new HashMap<>();
    for (Manifest.KeyspaceMeta k : m.keyspaces()) {
      Versions c = new Versions();
      for (Manifest.TableMeta t : k.tables()) {
        String name = FileNames.table(k.id(), t.fileNumber());
        try (TableReader r = TableReader.open(storage.open(name), name)) {
          c.add(r);
        }
      }
      out.put(k.id(), c.census());
    }
    return out;
  }

  /**
   * The open engine's current manifest and the tables of its current version, read under the
   * manifest lock.
   */
  static Map.Entry<Manifest, Map<Integer, Census>> census(Engine e) {
    synchronized (e.versionSet().lock) {
      Map<Integer, Census> out = new HashMap<>();
      for (Manifest.KeyspaceMeta k : e.versionSet().manifest().keyspaces()) {
        Versions c = new Versions();
        for (KeyspaceFiles.Table t : e.versions().current().files(k.id()).tables) c.add(t.reader());
        out.put(k.id(), c.census());
      }
      return Map.entry(e.versionSet().manifest(), out);
    }
  }

  /**
   * Null if the open engine's current manifest agrees with the tables of its current version, both
   * taken in one {@link #census(Engine)}: under the manifest lock, so no commit falls between them.
   */
  static String check(Engine e) {
    Map.Entry<Manifest, Map<Integer, Census>> c = census(e);
    return check(c.getKey(), c.getValue());
  }

  /**
   * Null if every keyspace's counters in {@code m} agree with {@code census}, else the first
   * disagreement.
   */
  static String check(Manifest m, Map<Integer, Census> census) {
    for (Manifest.KeyspaceMeta k : m.keyspaces()) {
      Manifest.Counters c = k.counters();
      Census t = census.get(k.id());
      if (c.flushedVersions() != t.records() + c.discardedVersions()
          || c.flushedBytes() != t.docBytes() + c.discardedBytes()) {
        return "manifest "
            + m.number()
            + ", keyspace #"
            + k.id()
            + ": "
            + c
            + " but the tables hold "
            + t.records()
            + " records of "
            + t.docBytes()
            + " document bytes (flushed must equal unreported table records + discarded)";
      }
      long garbage = 0, garbageBytes = 0;
      for (Manifest.SegmentGarbage g : k.garbage()) {
        garbage += g.count();
        garbageBytes += g.bytes();
      }
      if (c.discardedVersions() != garbage + c.collectedVersions()
          || c.discardedBytes() != garbageBytes + c.collectedBytes()) {
        return "manifest "
            + m.number()
            + ", keyspace #"
            + k.id()
            + ": "
            + c
            + " but the segments' garbage is "
            + garbage
            + " versions of "
            + garbageBytes
            + " bytes (discarded must equal garbage + collected)";
      }
    }
    return null;
  }
}
