package io.basaltdb.internal.engine;

import io.basaltdb.CorruptionException;
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
 * must replay, and the WAL head: the WAL file current when it was committed, which recovery checks is
 * present (a deleted WAL file fails the open instead of losing writes silently). Each commit writes a new numbered file (to a temporary name, fsynced, renamed, directory
 * fsynced), so a manifest under its final name is always complete; older ones stay for {@link
 * io.basaltdb.Options#checkpointRetentionMillis} as checkpoints. The byte layout is in docs/format.md ("Manifest").
 *
 * <p>Thread-safety: immutable value; {@link #write} is called only by {@link VersionSet}, under its lock.
 */
record Manifest(
    long number,
    long createdMillis,
    long flushedSeqno,
    long nextFileNumber,
    long walStart,
    long walHead,
    int nextKeyspaceId,
    List<KeyspaceMeta> keyspaces) {

  static final long MAGIC = 0x42534c544d414e31L; // "BSLTMAN1"
  /** 2: per-keyspace {@link Counters}. 3: {@code walHead}. Version 2 is still read (walHead 0). */
  static final int FORMAT_VERSION = 3;
  /** The oldest format this build reads. */
  static final int OLDEST_READABLE_VERSION = 2;

  /** One keyspace: tables newest first, segments by start seqno, and its counters as of these tables. */
  record KeyspaceMeta(int id, String name, List<TableMeta> tables, List<SegmentState> segments, Counters counters) {}

  /**
   * A keyspace's key index accounting since it was created, committed in the same manifest as the
   * tables it describes, so a crash can neither lose nor repeat a change: the records (and the document
   * sizes they carry) that flushes wrote into the key index, and those compactions dropped from it.
   *
   * <p>Invariants (per keyspace, in every committed manifest):
   * <ol>
   *   <li>{@code flushedVersions} = the entry counts of the manifest's tables summed + {@code
   *       discardedVersions}; the same for {@code flushedBytes}, the tables' document sizes and {@code
   *       discardedBytes}. Each discarded version is counted by exactly one committed compaction.</li>
   *   <li>{@code flushedBytes - discardedBytes} is the document bytes the tables reference.</li>
   * </ol>
   */
  record Counters(long flushedVersions, long flushedBytes, long discardedVersions, long discardedBytes) {
    static final Counters ZERO = new Counters(0, 0, 0, 0);
    static final int ENCODED_SIZE = 32;

    static Counters flushed(long versions, long bytes) {
      return new Counters(versions, bytes, 0, 0);
    }

    static Counters discarded(long versions, long bytes) {
      return new Counters(0, 0, versions, bytes);
    }

    Counters plus(Counters d) {
      return new Counters(flushedVersions + d.flushedVersions, flushedBytes + d.flushedBytes,
          discardedVersions + d.discardedVersions, discardedBytes + d.discardedBytes);
    }

    Counters minus(Counters d) {
      return new Counters(flushedVersions - d.flushedVersions, flushedBytes - d.flushedBytes,
          discardedVersions - d.discardedVersions, discardedBytes - d.discardedBytes);
    }

    /** Document bytes the keyspace's tables reference (older versions and tombstones included). */
    long liveBytes() {
      return flushedBytes - discardedBytes;
    }
  }

  /** A key index table: its file number and level (all level 0 until compaction arrives). */
  record TableMeta(long fileNumber, int level) {}

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    b = ensure(b, 72);
    b.putLong(MAGIC).putInt(FORMAT_VERSION).putInt(0);
    b.putLong(number).putLong(createdMillis).putLong(flushedSeqno).putLong(nextFileNumber).putLong(walStart);
    b.putLong(walHead);
    b.putInt(nextKeyspaceId).putInt(keyspaces.size());
    for (KeyspaceMeta k : keyspaces) {
      byte[] name = k.name.getBytes(StandardCharsets.UTF_8);
      b = ensure(b, 16 + name.length + Counters.ENCODED_SIZE + k.tables.size() * 12);
      b.putInt(k.id).putInt(name.length).put(name);
      Counters c = k.counters;
      b.putLong(c.flushedVersions).putLong(c.flushedBytes).putLong(c.discardedVersions).putLong(c.discardedBytes);
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
    ByteBuffer n = ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + more)).order(ByteOrder.LITTLE_ENDIAN);
    b.flip();
    n.put(b);
    return n;
  }

  static Manifest decode(byte[] data, String file) {
    if (data.length < 68) throw new CorruptionException(file, 0, "manifest of " + data.length + " bytes is too short");
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt(data.length - 4) != (int) crc.getValue()) {
      throw new CorruptionException(file, data.length - 4, "manifest checksum mismatch");
    }
    try {
      if (b.getLong() != MAGIC) throw new CorruptionException(file, 0, "not a Basalt manifest (bad magic)");
      int version = b.getInt();
      if (version < OLDEST_READABLE_VERSION || version > FORMAT_VERSION) {
        throw new CorruptionException("manifest " + file + " has format version " + version + "; this build reads versions "
            + OLDEST_READABLE_VERSION + " to " + FORMAT_VERSION + ". Open the store with a matching Basalt release");
      }
      b.getInt();
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
        Counters counters = new Counters(b.getLong(), b.getLong(), b.getLong(), b.getLong());
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
        ks.add(new KeyspaceMeta(id, new String(name, StandardCharsets.UTF_8), tables, segs, counters));
      }
      if (b.remaining() != 4) throw new CorruptionException(file, b.position(), "trailing bytes in manifest");
      return new Manifest(number, created, flushed, nextFile, walStart, walHead, nextKs, ks);
    } catch (RuntimeException e) {
      if (e instanceof CorruptionException) throw e;
      throw new CorruptionException(file, b.position(), "malformed manifest (" + e + ")");
    }
  }

  /**
   * Writes this manifest durably: temporary file, fsync, rename, directory fsync (by the storage).
   * Only {@link VersionSet} calls this. Returns the bytes written.
   */
  int write(Storage storage) {
    String name = FileNames.manifest(number);
    String tmp = FileNames.manifestTemp(number);
    storage.delete(tmp);
    byte[] data = encode();
    try (StorageFile f = storage.create(tmp)) {
      f.write(0, ByteBuffer.wrap(data));
      f.sync();
    }
    storage.rename(tmp, name);
    return data.length;
  }

  /** Reads and verifies the manifest numbered {@code number}. */
  static Manifest read(Storage storage, long number) {
    String path = FileNames.manifest(number);
    try (StorageFile f = storage.open(path)) {
      long size = f.size();
      if (size > (1L << 30)) throw new CorruptionException(storage.describe(path), 0, "manifest of " + size + " bytes");
      ByteBuffer buf = ByteBuffer.allocate((int) size);
      f.read(0, buf);
      return decode(buf.array(), storage.describe(path));
    }
  }

  /** File numbers of every table {@code m} names. */
  static java.util.Set<Long> tableNumbers(Manifest m) {
    java.util.Set<Long> out = new java.util.HashSet<>();
    for (KeyspaceMeta k : m.keyspaces()) {
      for (TableMeta t : k.tables()) out.add(t.fileNumber());
    }
    return out;
  }
}
