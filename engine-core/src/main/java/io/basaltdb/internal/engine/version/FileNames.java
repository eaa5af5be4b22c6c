package io.basaltdb.internal.engine.version;

/**
 * Every path of a store, built and parsed in one place (LevelDB's {@code db/filename.h}). Paths are
 * relative to the store's directory and use '/'; the {@link io.basaltdb.internal.storage.Storage}
 * seam resolves them. Layout (docs/format.md, "Directory layout"):
 *
 * <pre>
 *   LOCK                                  the process lock
 *   manifest/MANIFEST-{number:012}        one per committed manifest (checkpoints); .tmp while written
 *   wal/{number:012}.log                  write-ahead log files
 *   keyspaces/{id}/index/{number:012}.sst key index tables
 *   keyspaces/{id}/log/{number:012}.seg   log segments
 *   keyspaces/{id}/deletes/{number:012}.sst delete list tables (garbage collection)
 * </pre>
 *
 * File numbers come from one counter shared by WAL files, tables and segments.
 *
 * <p>Thread-safety: stateless.
 */
public final class FileNames {
  private FileNames() {}

  public static final String LOCK = "LOCK";
  public static final String MANIFEST_DIR = "manifest";
  public static final String WAL_DIR = "wal";
  static final String KEYSPACES_DIR = "keyspaces";
  private static final String MANIFEST_PREFIX = "MANIFEST-";
  private static final String TMP = ".tmp";

  /** The manifest numbered {@code number}. */
  public static String manifest(long number) {
    return MANIFEST_DIR + "/" + manifestShortName(number);
  }

  /** The manifest's name inside {@link #MANIFEST_DIR}. */
  static String manifestShortName(long number) {
    return MANIFEST_PREFIX + digits(number);
  }

  /** The temporary name a manifest is written under before its rename. */
  static String manifestTemp(long number) {
    return manifest(number) + TMP;
  }

  /**
   * Whether a name listed in {@link #MANIFEST_DIR} is a manifest commit that crashed before its
   * rename.
   */
  static boolean isManifestTemp(String name) {
    return name.startsWith(MANIFEST_PREFIX) && name.endsWith(TMP);
  }

  /**
   * The manifest number of a name listed in {@link #MANIFEST_DIR}, or -1 if it is not a manifest's.
   */
  public static long manifestNumber(String name) {
    if (!name.startsWith(MANIFEST_PREFIX) || name.endsWith(TMP)) return -1;
    return parse(name.substring(MANIFEST_PREFIX.length()));
  }

  /** The WAL file numbered {@code number}. */
  public static String wal(long number) {
    return WAL_DIR + "/" + digits(number) + ".log";
  }

  /** The file number of a name listed in {@link #WAL_DIR}, or -1. */
  public static long walNumber(String name) {
    return name.endsWith(".log") ? parse(name.substring(0, name.length() - 4)) : -1;
  }

  /** WAL file numbers present in {@link #WAL_DIR}, ascending. */
  public static java.util.List<Long> walNumbers(io.basaltdb.internal.storage.Storage storage) {
    java.util.List<Long> out = new java.util.ArrayList<>();
    for (String n : storage.list(WAL_DIR)) {
      long v = walNumber(n);
      if (v >= 0) out.add(v);
    }
    out.sort(null);
    return out;
  }

  /** The directory of a keyspace's key index tables. */
  public static String indexDir(int keyspace) {
    return KEYSPACES_DIR + "/" + keyspace + "/index";
  }

  /** The directory of a keyspace's log segments. */
  public static String logDir(int keyspace) {
    return KEYSPACES_DIR + "/" + keyspace + "/log";
  }

  /** The directory of a keyspace's delete list tables. */
  public static String deleteDir(int keyspace) {
    return KEYSPACES_DIR + "/" + keyspace + "/deletes";
  }

  public static String deleteTable(int keyspace, long fileNumber) {
    return deleteDir(keyspace) + "/" + digits(fileNumber) + ".sst";
  }

  /** Every directory of a keyspace's data files: key index, log, delete list. */
  public static java.util.List<String> dataDirs(int keyspace) {
    return java.util.List.of(indexDir(keyspace), logDir(keyspace), deleteDir(keyspace));
  }

  /**
   * The directory of a hashed keyspace's trie checkpoint (not a data directory: its files are named
   * by no manifest and are rewritten in place).
   */
  public static String trieDir(int keyspace) {
    return KEYSPACES_DIR + "/" + keyspace + "/trie";
  }

  /** Keyspace {@code keyspace}'s trie checkpoint: its space, page by page. */
  public static String trieSpace(int keyspace) {
    return trieDir(keyspace) + "/space";
  }

  /**
   * Keyspace {@code keyspace}'s double-write file: a checkpoint's pages before they go in place.
   */
  public static String trieDoubleWrite(int keyspace) {
    return trieDir(keyspace) + "/double-write";
  }

  public static String table(int keyspace, long fileNumber) {
    return indexDir(keyspace) + "/" + digits(fileNumber) + ".sst";
  }

  public static String segment(int keyspace, long fileNumber) {
    return logDir(keyspace) + "/" + digits(fileNumber) + ".seg";
  }

  /**
   * The file number of a name listed in an index or log directory (digits before the first dot), or
   * 0.
   */
  static long dataFileNumber(String name) {
    int dot = name.indexOf('.');
    long n = parse(dot < 0 ? name : name.substring(0, dot));
    return Math.max(n, 0);
  }

  /**
   * {@code n} in 12 digits, zero-padded (as {@code %012d}, without the formatter: the obsolete-file
   * sweep names every file of every live version at each commit).
   */
  /**
   * The directory of an in-memory store's backup files (docs/format.md, "In-memory backup files").
   */
  public static final String MEMORY_BACKUP_DIR = "memory";

  /** The manifest of an in-memory store's backup: its seqno, keyspaces, shards and delta files. */
  public static final String MEMORY_BACKUP_MANIFEST = MEMORY_BACKUP_DIR + "/MANIFEST";

  /** Shard {@code i} of an in-memory store's backup; shards sort in key order by name. */
  public static String backupShard(int i) {
    return MEMORY_BACKUP_DIR + "/shard-" + digits(i);
  }

  /** Delta file {@code i} of an in-memory store's non-intrusive backup. */
  public static String backupDelta(int i) {
    return MEMORY_BACKUP_DIR + "/delta-" + digits(i);
  }

  static String digits(long n) {
    String d = Long.toString(n);
    return d.length() >= 12 ? d : "000000000000".substring(d.length()) + d;
  }

  private static long parse(String digits) {
    try {
      return Long.parseLong(digits);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
