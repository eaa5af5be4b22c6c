package io.basaltdb.internal.engine.backup;

import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.storage.Storage;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * An in-memory store's backup manifest, {@code memory/MANIFEST}, and its byte layout
 * (docs/format.md, "Backup directory"): the seqno, the keyspaces (with their layout codes: a hashed
 * keyspace comes back hashed; format 1 had none, and its keyspaces come back ordered), the shards
 * in key order and the delta files, with a CRC-32C. Thread-safety: immutable.
 */
public record MemoryBackupManifest(
    long seqno,
    long createdMillis,
    int nextKeyspaceId,
    boolean lz4,
    Map<Integer, String> keyspaces,
    Map<Integer, Integer> layouts,
    List<MemoryBackupManifest.FileRef> shards,
    List<MemoryBackupManifest.FileRef> deltas) {
  private static final long MAGIC = 0x42534C544D454D31L; // "BSLTMEM1"
  private static final int VERSION = 2;

  /** The format before keyspaces carried their layout codes: read, never written. */
  private static final int VERSION_WITHOUT_LAYOUTS = 1;

  /** Keyspace {@code id}'s layout code (0: ordered). */
  public int layout(int id) {
    return layouts.getOrDefault(id, 0);
  }

  /** A file of the backup, and the items it holds. */
  record FileRef(String name, long items) {}

  byte[] encode() {
    ByteBuffer b = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
    b = ensure(b, 41);
    b.putLong(MAGIC)
        .putInt(VERSION)
        .putLong(seqno)
        .putLong(createdMillis)
        .putInt(nextKeyspaceId)
        .put((byte) (lz4 ? 1 : 0))
        .putInt(keyspaces.size());
    for (Map.Entry<Integer, String> k : new java.util.TreeMap<>(keyspaces).entrySet()) {
      byte[] name = k.getValue().getBytes(StandardCharsets.UTF_8);
      b = ensure(b, 10 + name.length);
      b.putInt(k.getKey()).putInt(layout(k.getKey())).putShort((short) name.length).put(name);
    }
    for (List<FileRef> list : List.of(shards, deltas)) {
      b = ensure(b, 4);
      b.putInt(list.size());
      for (FileRef f : list) {
        byte[] name = f.name().getBytes(StandardCharsets.UTF_8);
        b = ensure(b, 10 + name.length);
        b.putShort((short) name.length).put(name).putLong(f.items());
      }
    }
    b = ensure(b, 4);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, b.position());
    b.putInt((int) crc.getValue());
    return java.util.Arrays.copyOf(b.array(), b.position());
  }

  private static ByteBuffer ensure(ByteBuffer b, int n) {
    if (b.remaining() >= n) return b;
    ByteBuffer bigger =
        ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n))
            .order(ByteOrder.LITTLE_ENDIAN);
    bigger.put(b.array(), 0, b.position());
    return bigger;
  }

  static MemoryBackupManifest decode(Storage backup, byte[] bytes) {
    String name = FileNames.MEMORY_BACKUP_MANIFEST;
    if (bytes.length < 45) throw BackupBlocks.corrupt(backup, name, "is too short");
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, bytes.length - 4);
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    if ((int) crc.getValue() != b.getInt(bytes.length - 4))
      throw BackupBlocks.corrupt(backup, name, "fails its checksum");
    b.limit(bytes.length - 4);
    try {
      if (b.getLong() != MAGIC)
        throw BackupBlocks.corrupt(backup, name, "is not an in-memory backup manifest");
      int version = b.getInt();
      if (version != VERSION && version != VERSION_WITHOUT_LAYOUTS) {
        throw BackupBlocks.corrupt(
            backup, name, "has format " + version + "; this build reads format " + VERSION);
      }
      long seqno = b.getLong(), created = b.getLong();
      int nextId = b.getInt();
      boolean lz4 = b.get() != 0;
      int n = b.getInt();
      if (n < 0 || n > b.remaining() / 6)
        throw BackupBlocks.corrupt(backup, name, "lists " + n + " keyspaces");
      Map<Integer, String> keyspaces = new HashMap<>();
      Map<Integer, Integer> layouts = new HashMap<>();
      for (int i = 0; i < n; i++) {
        int id = b.getInt();
        int layout = version == VERSION_WITHOUT_LAYOUTS ? 0 : b.getInt();
        if (layout != 0) layouts.put(id, layout);
        byte[] s = new byte[Short.toUnsignedInt(b.getShort())];
        b.get(s);
        keyspaces.put(id, new String(s, StandardCharsets.UTF_8));
      }
      List<List<FileRef>> lists = new ArrayList<>();
      for (int l = 0; l < 2; l++) {
        int count = b.getInt();
        if (count < 0 || count > b.remaining() / 10)
          throw BackupBlocks.corrupt(backup, name, "lists " + count + " files");
        List<FileRef> files = new ArrayList<>();
        for (int i = 0; i < count; i++) {
          byte[] s = new byte[Short.toUnsignedInt(b.getShort())];
          b.get(s);
          files.add(new FileRef(new String(s, StandardCharsets.UTF_8), b.getLong()));
        }
        lists.add(List.copyOf(files));
      }
      if (b.hasRemaining())
        throw BackupBlocks.corrupt(backup, name, "has " + b.remaining() + " trailing bytes");
      return new MemoryBackupManifest(
          seqno,
          created,
          nextId,
          lz4,
          Map.copyOf(keyspaces),
          Map.copyOf(layouts),
          lists.get(0),
          lists.get(1));
    } catch (java.nio.BufferUnderflowException e) {
      throw BackupBlocks.corrupt(backup, name, "ends early");
    }
  }
}
