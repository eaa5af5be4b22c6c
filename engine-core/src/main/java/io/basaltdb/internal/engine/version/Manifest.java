package io.basaltdb.internal.engine.version;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.engine.base.KeyspaceLayout;
import io.basaltdb.internal.segment.SegmentState;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The store's manifest (Magma section 5): every keyspace with its live key index tables and log
 * segments (each segment's checkpointed state, tail offset included) and its key index accounting
 * ({@link Counters}), the seqno up to which the files hold every write, the first WAL file recovery
 * must replay, and the WAL head: the WAL file current when it was committed, which recovery checks
 * is present (a deleted WAL file fails the open instead of losing writes silently). Each commit
 * writes a new numbered file (to a temporary name, fsynced, renamed, directory fsynced), so a
 * manifest under its final name is always complete; older ones stay for {@link
 * io.basaltdb.Options#checkpointRetentionMillis} as checkpoints. The byte layout is in
 * docs/format.md ("Manifest").
 *
 * <p>Thread-safety: immutable value; {@link #write} is called only by {@link VersionSet}, under its
 * lock.
 */
public record Manifest(
    long number,
    long createdMillis,
    long flushedSeqno,
    long nextFileNumber,
    long walStart,
    long walHead,
    int nextKeyspaceId,
    List<KeyspaceMeta> keyspaces,
    int flags) {

  static final long MAGIC = 0x42534c544d414e31L; // "BSLTMAN1"

  /**
   * 2: per-keyspace {@link Counters}. 3: {@code walHead}. 4: per-keyspace delete list tables and
   * segment garbage. 5: the flags word and, with {@link #FLAG_GUARDS}, each keyspace's guard keys.
   * 6: each keyspace's purge seqno and item count ({@link #FLAG_ITEM_COUNTS}); every store writes
   * it. Versions 2 to 5 are still read (walHead 0; no delete list, no garbage; a purge seqno of the
   * flushed seqno, item counts not exact). 7: each keyspace's key index table format ({@link
   * KeyspaceMeta#trieChunkBytes}); written only when some keyspace has HB+-trie tables, so a store
   * without one stays readable by builds that read up to 6. 8: the same int may name a hashed
   * keyspace ({@link io.basaltdb.internal.engine.base.KeyspaceLayout}); written only when some
   * keyspace is hashed.
   */
  public static final int FORMAT_VERSION = 8;

  /** The version a store with HB+-trie keyspaces but no hashed one writes. */
  static final int VERSION_WITHOUT_HASHED_KEYSPACES = 7;

  /** The version a store whose keyspaces all keep block tables writes. */
  static final int VERSION_WITHOUT_KEYSPACE_FORMATS = 6;

  /**
   * {@link #flags} bit: the key index keeps guards ({@link io.basaltdb.Options#keyIndexGuards};
   * formats 5 and 6).
   */
  static final int FLAG_GUARDS = 1;

  /**
   * {@link #flags} bit (format 6): every keyspace's {@link Counters#items} is its exact count of
   * live keys as of {@link #flushedSeqno} ({@link io.basaltdb.Options#exactItemCounts}).
   */
  public static final int FLAG_ITEM_COUNTS = 2;

  /** The oldest format this build reads. */
  static final int OLDEST_READABLE_VERSION = 2;

  /** A manifest of a store without key index guards. */
  public Manifest(
      long number,
      long createdMillis,
      long flushedSeqno,
      long nextFileNumber,
      long walStart,
      long walHead,
      int nextKeyspaceId,
      List<KeyspaceMeta> keyspaces) {
    this(
        number,
        createdMillis,
        flushedSeqno,
        nextFileNumber,
        walStart,
        walHead,
        nextKeyspaceId,
        keyspaces,
        0);
  }

  /** Whether the store's key index keeps guards (fixed when the store is created). */
  boolean guardedKeyIndex() {
    return (flags & FLAG_GUARDS) != 0;
  }

  /** Whether the keyspaces' item counters are exact. */
  public boolean itemsCounted() {
    return (flags & FLAG_ITEM_COUNTS) != 0;
  }

  /**
   * One keyspace: tables newest first, segments by start seqno, its counters as of these tables,
   * its delete list's tables (level 0 newest first, then level 1 by seqno), the garbage of its
   * segments (only segments with garbage or a garbage collection behind them are listed), its
   * guards, and its purge seqno: the highest seqno of a deletion whose tombstone a key index
   * compaction has dropped (0: none), so a change feed from at or below it may miss deletions
   * ({@link io.basaltdb.ChangeFeed}). {@code trieChunkBytes}: 0 if the keyspace's key index tables
   * are block tables, else the chunk size of its HB+-trie tables ({@link
   * io.basaltdb.KeyspaceOptions}), or a hashed keyspace's lazy-trie code ({@link KeyspaceLayout});
   * fixed when the keyspace is created.
   */
  public record KeyspaceMeta(
      int id,
      String name,
      List<TableMeta> tables,
      List<SegmentState> segments,
      Counters counters,
      List<DeleteTableMeta> deletes,
      List<SegmentGarbage> garbage,
      Guards guards,
      long purgeSeqno,
      int trieChunkBytes) {
    public KeyspaceMeta(
        int id,
        String name,
        List<TableMeta> tables,
        List<SegmentState> segments,
        Counters counters,
        List<DeleteTableMeta> deletes,
        List<SegmentGarbage> garbage,
        Guards guards,
        long purgeSeqno) {
      this(id, name, tables, segments, counters, deletes, garbage, guards, purgeSeqno, 0);
    }

    public KeyspaceMeta(
        int id,
        String name,
        List<TableMeta> tables,
        List<SegmentState> segments,
        Counters counters,
        List<DeleteTableMeta> deletes,
        List<SegmentGarbage> garbage,
        Guards guards) {
      this(id, name, tables, segments, counters, deletes, garbage, guards, 0);
    }

    public KeyspaceMeta(
        int id,
        String name,
        List<TableMeta> tables,
        List<SegmentState> segments,
        Counters counters) {
      this(id, name, tables, segments, counters, List.of(), List.of());
    }

    public KeyspaceMeta(
        int id,
        String name,
        List<TableMeta> tables,
        List<SegmentState> segments,
        Counters counters,
        List<DeleteTableMeta> deletes,
        List<SegmentGarbage> garbage) {
      this(id, name, tables, segments, counters, deletes, garbage, Guards.EMPTY);
    }

    /** The garbage entry of segment {@code id}, or null. */
    SegmentGarbage garbageOf(long id) {
      for (SegmentGarbage g : garbage) {
        if (g.segmentId() == id) return g;
      }
      return null;
    }
  }

  /**
   * A delete list table (Magma section 4): records of stale seqnos and their document sizes, sorted
   * by seqno. {@code addedIn}: every record of the table has been in some table of every manifest
   * numbered {@code addedIn} or above (so a segment compaction that started from such a manifest
   * consumed it). {@code logicalBytes}: the document sizes its records sum to. Level 0: one table
   * per key index compaction, overlapping; level 1: one sorted run.
   */
  public record DeleteTableMeta(
      long fileNumber,
      int level,
      long addedIn,
      long records,
      long logicalBytes,
      long minSeqno,
      long maxSeqno) {
    static final int ENCODED_SIZE = 52;

    DeleteTableMeta withAddedIn(long n) {
      return new DeleteTableMeta(fileNumber, level, n, records, logicalBytes, minSeqno, maxSeqno);
    }
  }

  /**
   * The garbage of one segment: the document bytes and count of its versions the key index dropped
   * and no segment compaction has removed yet. {@code gcBase}: the manifest number the segment
   * compaction that wrote the segment started from (0 for a segment a flush wrote); delete list
   * records of tables with {@code addedIn <= gcBase} in its seqno range were consumed by it.
   */
  public record SegmentGarbage(long segmentId, long bytes, long count, long gcBase) {
    static final int ENCODED_SIZE = 32;
  }

  /**
   * A keyspace's key index accounting since it was created, committed in the same manifest as the
   * tables it describes, so a crash can neither lose nor repeat a change: the records (and the
   * document sizes they carry) that flushes wrote into the key index, and those compactions dropped
   * from it.
   *
   * <p>Invariants (per keyspace, in every committed manifest):
   *
   * <ol>
   *   <li>{@code flushedVersions} = the entry counts of the manifest's tables summed + {@code
   *       discardedVersions}; the same for {@code flushedBytes}, the tables' document sizes and
   *       {@code discardedBytes}. Each discarded version is counted by exactly one committed
   *       compaction.
   *   <li>{@code flushedBytes - discardedBytes} is the document bytes the tables reference.
   *   <li>{@code discardedVersions} = the garbage counts of the keyspace's segments summed + {@code
   *       collectedVersions} (discarded versions segment compactions removed); the same for bytes.
   *       Each discarded version is garbage of one segment until one compaction removes it.
   * </ol>
   */
  public record Counters(
      long flushedVersions,
      long flushedBytes,
      long discardedVersions,
      long discardedBytes,
      long collectedVersions,
      long collectedBytes,
      long items) {
    public static final Counters ZERO = new Counters(0, 0, 0, 0, 0, 0, 0);

    /**
     * Bytes in format 6; formats 4 and 5 hold the first six (48 bytes), 2 and 3 the first four (32
     * bytes).
     */
    static final int ENCODED_SIZE = 56;

    Counters(long flushedVersions, long flushedBytes, long discardedVersions, long discardedBytes) {
      this(flushedVersions, flushedBytes, discardedVersions, discardedBytes, 0, 0, 0);
    }

    Counters(
        long flushedVersions,
        long flushedBytes,
        long discardedVersions,
        long discardedBytes,
        long collectedVersions,
        long collectedBytes) {
      this(
          flushedVersions,
          flushedBytes,
          discardedVersions,
          discardedBytes,
          collectedVersions,
          collectedBytes,
          0);
    }

    /** A change of the live key count ({@link io.basaltdb.Options#exactItemCounts}). */
    public static Counters items(long delta) {
      return new Counters(0, 0, 0, 0, 0, 0, delta);
    }

    public static Counters flushed(long versions, long bytes) {
      return new Counters(versions, bytes, 0, 0);
    }

    public static Counters discarded(long versions, long bytes) {
      return new Counters(0, 0, versions, bytes);
    }

    /** Discarded versions a segment compaction removed from the log (their garbage is gone). */
    public static Counters collected(long versions, long bytes) {
      return new Counters(0, 0, 0, 0, versions, bytes);
    }

    public Counters plus(Counters d) {
      return new Counters(
          flushedVersions + d.flushedVersions,
          flushedBytes + d.flushedBytes,
          discardedVersions + d.discardedVersions,
          discardedBytes + d.discardedBytes,
          collectedVersions + d.collectedVersions,
          collectedBytes + d.collectedBytes,
          items + d.items);
    }

    Counters minus(Counters d) {
      return new Counters(
          flushedVersions - d.flushedVersions,
          flushedBytes - d.flushedBytes,
          discardedVersions - d.discardedVersions,
          discardedBytes - d.discardedBytes,
          collectedVersions - d.collectedVersions,
          collectedBytes - d.collectedBytes,
          items - d.items);
    }

    /** Document bytes the keyspace's tables reference (older versions and tombstones included). */
    public long liveBytes() {
      return flushedBytes - discardedBytes;
    }
  }

  /** A key index table: its file number and level (all level 0 until compaction arrives). */
  public record TableMeta(long fileNumber, int level) {}

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    b = ensure(b, 72);
    boolean guarded = guardedKeyIndex();
    int version = VERSION_WITHOUT_KEYSPACE_FORMATS;
    for (KeyspaceMeta k : keyspaces) {
      if (KeyspaceLayout.isHashed(k.trieChunkBytes)) version = FORMAT_VERSION;
      else if (k.trieChunkBytes != 0 && version < VERSION_WITHOUT_HASHED_KEYSPACES)
        version = VERSION_WITHOUT_HASHED_KEYSPACES;
    }
    b.putLong(MAGIC).putInt(version).putInt(flags);
    b.putLong(number)
        .putLong(createdMillis)
        .putLong(flushedSeqno)
        .putLong(nextFileNumber)
        .putLong(walStart);
    b.putLong(walHead);
    b.putInt(nextKeyspaceId).putInt(keyspaces.size());
    for (KeyspaceMeta k : keyspaces) {
      byte[] name = k.name.getBytes(StandardCharsets.UTF_8);
      b = ensure(b, 16 + name.length + Counters.ENCODED_SIZE + k.tables.size() * 12);
      b.putInt(k.id).putInt(name.length).put(name);
      Counters c = k.counters;
      b.putLong(c.flushedVersions)
          .putLong(c.flushedBytes)
          .putLong(c.discardedVersions)
          .putLong(c.discardedBytes)
          .putLong(c.collectedVersions)
          .putLong(c.collectedBytes)
          .putLong(c.items);
      b.putInt(k.tables.size());
      for (TableMeta t : k.tables) b.putLong(t.fileNumber).putInt(t.level);
      b.putInt(k.segments.size());
      for (SegmentState s : k.segments) {
        b = ensure(b, 4 + SegmentState.ENCODED_SIZE);
        int at = b.position();
        b.putInt(0);
        s.encode(b);
        b.putInt(at, b.position() - at - 4);
      }
      b =
          ensure(
              b,
              8
                  + k.deletes.size() * DeleteTableMeta.ENCODED_SIZE
                  + k.garbage.size() * SegmentGarbage.ENCODED_SIZE);
      b.putInt(k.deletes.size());
      for (DeleteTableMeta d : k.deletes) {
        b.putLong(d.fileNumber)
            .putInt(d.level)
            .putLong(d.addedIn)
            .putLong(d.records)
            .putLong(d.logicalBytes)
            .putLong(d.minSeqno)
            .putLong(d.maxSeqno);
      }
      b.putInt(k.garbage.size());
      for (SegmentGarbage g : k.garbage)
        b.putLong(g.segmentId).putLong(g.bytes).putLong(g.count).putLong(g.gcBase);
      b = ensure(b, 12);
      b.putLong(k.purgeSeqno);
      if (version >= 7) b.putInt(k.trieChunkBytes);
      if (guarded) {
        for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
          List<byte[]> keys = k.guards.keys(l);
          b = ensure(b, 4);
          b.putInt(keys.size());
          for (byte[] key : keys) {
            b = ensure(b, 4 + key.length);
            b.putInt(key.length).put(key);
          }
        }
      } else if (!k.guards.isEmpty()) {
        throw new IllegalStateException("keyspace " + k.id + " has guards in a store without them");
      }
    }
    b = ensure(b, 4);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, b.position());
    b.putInt((int) crc.getValue());
    byte[] out = new byte[b.position()];
    System.arraycopy(b.array(), 0, out, 0, out.length);
    return out;
  }

  private static ByteBuffer ensure(ByteBuffer b, int more) {
    if (b.remaining() >= more) return b;
    ByteBuffer n =
        ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + more))
            .order(ByteOrder.LITTLE_ENDIAN);
    b.flip();
    n.put(b);
    return n;
  }

  static Manifest decode(byte[] data, String file) {
    if (data.length < 68)
      throw new CorruptionException(file, 0, "manifest of " + data.length + " bytes is too short");
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt(data.length - 4) != (int) crc.getValue()) {
      throw new CorruptionException(file, data.length - 4, "manifest checksum mismatch");
    }
    try {
      if (b.getLong() != MAGIC)
        throw new CorruptionException(file, 0, "not a Basalt manifest (bad magic)");
      int version = b.getInt();
      if (version < OLDEST_READABLE_VERSION || version > FORMAT_VERSION) {
        throw new CorruptionException(
            "manifest "
                + file
                + " has format version "
                + version
                + "; this build reads versions "
                + OLDEST_READABLE_VERSION
                + " to "
                + FORMAT_VERSION
                + ". Open the store with a matching Basalt release");
      }
      int flags = b.getInt();
      if ((flags & ~(FLAG_GUARDS | FLAG_ITEM_COUNTS)) != 0
          || (version == 5 && flags != FLAG_GUARDS)
          || (version < 5 && flags != 0)) {
        throw new CorruptionException(
            file, 12, "manifest format " + version + " with flags " + flags);
      }
      long number = b.getLong();
      long created = b.getLong();
      long flushed = b.getLong();
      long nextFile = b.getLong();
      long walStart = b.getLong();
      long walHead = version >= 3 ? b.getLong() : 0;
      int nextKs = b.getInt();
      int n = b.getInt();
      List<KeyspaceMeta> ks = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int id = b.getInt();
        byte[] name = new byte[b.getInt()];
        b.get(name);
        Counters counters =
            new Counters(
                b.getLong(),
                b.getLong(),
                b.getLong(),
                b.getLong(),
                version >= 4 ? b.getLong() : 0,
                version >= 4 ? b.getLong() : 0,
                version >= 6 ? b.getLong() : 0);
        int nt = b.getInt();
        List<TableMeta> tables = new ArrayList<>();
        for (int t = 0; t < nt; t++) tables.add(new TableMeta(b.getLong(), b.getInt()));
        int ns = b.getInt();
        List<SegmentState> segs = new ArrayList<>();
        for (int s = 0; s < ns; s++) {
          int len = b.getInt();
          ByteBuffer slice = b.slice(b.position(), len).order(ByteOrder.LITTLE_ENDIAN);
          segs.add(SegmentState.decode(slice));
          b.position(b.position() + len);
        }
        List<DeleteTableMeta> deletes = new ArrayList<>();
        List<SegmentGarbage> garbage = new ArrayList<>();
        if (version >= 4) {
          int nd = b.getInt();
          for (int d = 0; d < nd; d++) {
            deletes.add(
                new DeleteTableMeta(
                    b.getLong(),
                    b.getInt(),
                    b.getLong(),
                    b.getLong(),
                    b.getLong(),
                    b.getLong(),
                    b.getLong()));
          }
          int ng = b.getInt();
          for (int g = 0; g < ng; g++)
            garbage.add(new SegmentGarbage(b.getLong(), b.getLong(), b.getLong(), b.getLong()));
        }
        // Before version 6 no purge seqno was kept, but compactions dropped tombstones all the
        // same: any
        // deletion up to the flushed seqno may be gone.
        long purgeSeqno = version >= 6 ? b.getLong() : flushed;
        if (purgeSeqno < 0)
          throw new CorruptionException(file, b.position() - 8, "purge seqno " + purgeSeqno);
        int trieChunk = version >= 7 ? b.getInt() : 0;
        if (!KeyspaceLayout.valid(trieChunk, version))
          throw new CorruptionException(
              file, b.position() - 4, "keyspace key index layout " + trieChunk);
        Guards guards = Guards.EMPTY;
        if ((flags & FLAG_GUARDS) != 0) guards = decodeGuards(b, file);
        ks.add(
            new KeyspaceMeta(
                id,
                new String(name, StandardCharsets.UTF_8),
                tables,
                segs,
                counters,
                deletes,
                garbage,
                guards,
                purgeSeqno,
                trieChunk));
      }
      if (b.remaining() != 4)
        throw new CorruptionException(file, b.position(), "trailing bytes in manifest");
      return new Manifest(number, created, flushed, nextFile, walStart, walHead, nextKs, ks, flags);
    } catch (RuntimeException e) {
      if (e instanceof CorruptionException) throw e;
      throw new CorruptionException(file, b.position(), "malformed manifest (" + e + ")");
    }
  }

  /**
   * One keyspace's guard keys (formats 5 and 6, with {@link #FLAG_GUARDS}): per level 1 to 6, a
   * count, then each key's length and bytes.
   */
  private static Guards decodeGuards(ByteBuffer b, String file) {
    List<List<byte[]>> levels = new ArrayList<>();
    levels.add(List.of());
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      int n = b.getInt();
      if (n < 0 || n > b.remaining() / 4)
        throw new CorruptionException(file, b.position(), "guard count " + n);
      List<byte[]> keys = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int len = b.getInt();
        if (len <= 0 || len > io.basaltdb.Options.MAX_KEY_SIZE) {
          throw new CorruptionException(file, b.position(), "guard key of " + len + " bytes");
        }
        byte[] key = new byte[len];
        b.get(key);
        keys.add(key);
      }
      levels.add(keys);
    }
    try {
      return Guards.of(levels);
    } catch (IllegalArgumentException e) {
      throw new CorruptionException(file, b.position(), "bad guard keys: " + e.getMessage());
    }
  }

  /**
   * Writes this manifest durably: temporary file (replacing a leftover one; its name needs no
   * directory sync, {@link Storage#createTemporary}), fsync, rename, directory fsync (by the
   * storage). Only {@link VersionSet} calls this. Returns the bytes written.
   */
  int write(Storage storage) {
    String name = FileNames.manifest(number);
    String tmp = FileNames.manifestTemp(number);
    byte[] data = encode();
    try (StorageFile f = storage.createTemporary(tmp)) {
      f.write(0, ByteBuffer.wrap(data));
      f.sync();
    }
    storage.rename(tmp, name);
    return data.length;
  }

  /** Reads and verifies the manifest numbered {@code number}. */
  public static Manifest read(Storage storage, long number) {
    String path = FileNames.manifest(number);
    try (StorageFile f = storage.open(path)) {
      long size = f.size();
      if (size > (1L << 30))
        throw new CorruptionException(storage.describe(path), 0, "manifest of " + size + " bytes");
      ByteBuffer buf = ByteBuffer.allocate((int) size);
      f.read(0, buf);
      return decode(buf.array(), storage.describe(path));
    }
  }

  /** File numbers of every key index table {@code m} names. */
  public static java.util.Set<Long> tableNumbers(Manifest m) {
    java.util.Set<Long> out = new java.util.HashSet<>();
    for (KeyspaceMeta k : m.keyspaces()) {
      for (TableMeta t : k.tables()) out.add(t.fileNumber());
    }
    return out;
  }

  /**
   * Names of every data file {@code m} names: key index tables, delete list tables, log segments.
   */
  static java.util.Set<String> fileNames(Manifest m) {
    java.util.Set<String> out = new java.util.HashSet<>();
    for (KeyspaceMeta k : m.keyspaces()) {
      for (TableMeta t : k.tables()) out.add(FileNames.table(k.id(), t.fileNumber()));
      for (DeleteTableMeta d : k.deletes()) out.add(FileNames.deleteTable(k.id(), d.fileNumber()));
      for (SegmentState s : k.segments()) out.add(FileNames.segment(k.id(), s.segmentId()));
    }
    return out;
  }
}
