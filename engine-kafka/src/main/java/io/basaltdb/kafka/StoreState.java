package io.basaltdb.kafka;

import io.basaltdb.Basalt;
import io.basaltdb.Cursor;
import io.basaltdb.Keyspace;
import io.basaltdb.WriteBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The bookkeeping of one store partition in the shared Basalt's {@value SharedBasalt#META}
 * keyspace, under keys that start with its owner name ({@code kv/<task>/<store>}, {@code
 * w/<task>/<store>}, {@code s/<task>/<store>}) and a zero byte:
 *
 * <ul>
 *   <li>{@code i}: the incarnation: a random id, and the path of the marker file in the task
 *       directory that holds the same id. A store whose marker is gone or holds another id had its
 *       task directory deleted, and its data is dropped.
 *   <li>{@code s}: 1 while the store is open, 0 once closed cleanly (exactly-once finds an unclean
 *       shutdown by it).
 *   <li>{@code p}: the interactive-query position, as {@code PositionSerde} writes it.
 *   <li>{@code o<topic>\0<partition>}: a changelog offset, 8 bytes.
 * </ul>
 *
 * <p>Thread-safety: stateless helpers; the store calling them serializes its own calls.
 */
final class StoreState {
  private StoreState() {}

  /** The name of the marker file in a store's directory under the task directory. */
  static final String MARKER = "basalt.id";

  private static final Pattern PLAIN_NAME = Pattern.compile("[A-Za-z0-9._-]{1,150}");

  /**
   * The owner name of store {@code store} of {@code task}, of kind {@code kind} ({@code kv}, {@code
   * w}, {@code s}); store names outside {@code [A-Za-z0-9._-]{1,150}} are hashed, so that names fit
   * a keyspace's 255 characters and never hold the separators.
   */
  static String owner(String kind, TaskId task, String store) {
    String t = task == null ? "none" : task.toString();
    if (!PLAIN_NAME.matcher(t).matches()) t = hash(t);
    String s = PLAIN_NAME.matcher(store).matches() ? store : hash(store);
    return kind + "/" + t + "/" + s;
  }

  /**
   * The owner of keyspace {@code ks}: itself, or for a segment ({@code w/.../<id>}) its store's.
   */
  static String ownerOf(String ks) {
    if (ks.startsWith("kv/")) return ks;
    int slash = ks.lastIndexOf('/');
    return ks.chars().filter(c -> c == '/').count() >= 3 ? ks.substring(0, slash) : ks;
  }

  private static String hash(String s) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
      StringBuilder b = new StringBuilder("h-");
      for (int i = 0; i < 16; i++) b.append(String.format("%02x", d[i]));
      return b.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] key(String owner, char kind, byte[] rest) {
    byte[] o = owner.getBytes(StandardCharsets.UTF_8);
    byte[] k = new byte[o.length + 2 + rest.length];
    System.arraycopy(o, 0, k, 0, o.length);
    k[o.length] = 0;
    k[o.length + 1] = (byte) kind;
    System.arraycopy(rest, 0, k, o.length + 2, rest.length);
    return k;
  }

  private static byte[] key(String owner, char kind) {
    return key(owner, kind, new byte[0]);
  }

  private static byte[] offsetKey(String owner, TopicPartition tp) {
    byte[] topic = tp.topic().getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(topic.length + 5);
    b.put(topic).put((byte) 0).putInt(tp.partition());
    return key(owner, 'o', b.array());
  }

  /** The owners with bookkeeping in {@code meta}. */
  static List<String> ownersIn(Keyspace meta) {
    List<String> out = new ArrayList<>();
    try (Cursor c = meta.scan(null, null)) {
      while (c.next()) {
        byte[] k = c.key();
        int zero = indexOfZero(k);
        if (zero < 0) continue;
        String o = new String(k, 0, zero, StandardCharsets.UTF_8);
        if (out.isEmpty() || !out.get(out.size() - 1).equals(o)) out.add(o);
      }
    }
    return out;
  }

  private static int indexOfZero(byte[] k) {
    for (int i = 0; i < k.length; i++) if (k[i] == 0) return i;
    return -1;
  }

  // ---- incarnation and marker

  /** Whether {@code owner}'s marker file exists and holds the incarnation its bookkeeping names. */
  static boolean markerValid(Keyspace meta, String owner) {
    byte[] inc = meta.get(key(owner, 'i'));
    if (inc == null || inc.length < 16) return false;
    Path marker = Path.of(new String(inc, 16, inc.length - 16, StandardCharsets.UTF_8));
    try {
      return Files.isRegularFile(marker)
          && Arrays.equals(Files.readAllBytes(marker), Arrays.copyOf(inc, 16));
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Writes a new incarnation for {@code owner} with its marker file {@code marker}: the bookkeeping
   * first, then the file (a crash between the two leaves a mismatch, and the next open starts the
   * store afresh, which Streams restores from its changelog).
   */
  static void newIncarnation(Keyspace meta, String owner, Path marker) {
    UUID id = UUID.randomUUID();
    byte[] path = marker.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(16 + path.length);
    b.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits()).put(path);
    meta.put(key(owner, 'i'), b.array());
    try {
      Files.createDirectories(marker.getParent());
      Path tmp = marker.resolveSibling(MARKER + ".tmp");
      Files.write(tmp, Arrays.copyOf(b.array(), 16));
      Files.move(
          tmp,
          marker,
          java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the store marker " + marker, e);
    }
  }

  /** Deletes every bookkeeping record of {@code owner}. */
  static void clear(Basalt db, Keyspace meta, String owner) {
    byte[] from = key(owner, (char) 0);
    byte[] to = key(owner, (char) 0xff);
    WriteBatch batch = new WriteBatch();
    try (Cursor c = meta.scan(from, to)) {
      while (c.next()) batch.delete(meta, c.key());
    }
    if (batch.size() > 0) db.write(batch);
  }

  // ---- status

  /** Whether {@code owner} was left open: its last session ended without a clean close. */
  static boolean leftOpen(Keyspace meta, String owner) {
    byte[] s = meta.get(key(owner, 's'));
    return s != null && s.length == 1 && s[0] == 1;
  }

  static void markOpen(Keyspace meta, String owner, boolean open) {
    meta.put(key(owner, 's'), new byte[] {(byte) (open ? 1 : 0)});
  }

  // ---- position

  static byte[] position(Keyspace meta, String owner) {
    return meta.get(key(owner, 'p'));
  }

  // ---- offsets

  /** The changelog offset {@code owner} committed for {@code tp}, or null. */
  static Long offset(Keyspace meta, String owner, TopicPartition tp) {
    byte[] v = meta.get(offsetKey(owner, tp));
    return v == null ? null : ByteBuffer.wrap(v).getLong();
  }

  /** Every changelog offset {@code owner} holds. */
  static Map<TopicPartition, Long> offsets(Keyspace meta, String owner) {
    Map<TopicPartition, Long> out = new HashMap<>();
    byte[] prefix = key(owner, 'o');
    byte[] to = key(owner, (char) ('o' + 1));
    try (Cursor c = meta.scan(prefix, to)) {
      while (c.next()) {
        byte[] k = c.key();
        int zero = k.length - 5;
        String topic = new String(k, prefix.length, zero - prefix.length, StandardCharsets.UTF_8);
        int partition = ByteBuffer.wrap(k, zero + 1, 4).getInt();
        out.put(new TopicPartition(topic, partition), ByteBuffer.wrap(c.value()).getLong());
      }
    }
    return out;
  }

  /**
   * Adds to {@code batch} what {@code commit(offsets)} stores: each offset (a null value deletes
   * it; an empty map deletes them all) and the position, if not null.
   */
  static void commit(
      WriteBatch batch,
      Keyspace meta,
      String owner,
      Map<TopicPartition, Long> offsets,
      byte[] position) {
    if (offsets.isEmpty()) {
      for (TopicPartition tp : offsets(meta, owner).keySet())
        batch.delete(meta, offsetKey(owner, tp));
    }
    for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
      if (e.getValue() == null) batch.delete(meta, offsetKey(owner, e.getKey()));
      else
        batch.put(
            meta,
            offsetKey(owner, e.getKey()),
            ByteBuffer.allocate(8).putLong(e.getValue()).array());
    }
    if (position != null) batch.put(meta, key(owner, 'p'), position);
  }
}
