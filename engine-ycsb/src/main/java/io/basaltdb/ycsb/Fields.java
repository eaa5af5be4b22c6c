package io.basaltdb.ycsb;

import io.basaltdb.CorruptionException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;

/**
 * A YCSB record's fields as one value: for each field, a 2-byte name length, the name in UTF-8, a
 * 4-byte value length and the value bytes, little-endian, back to back. Field order is kept.
 *
 * <p>Public so that a binding of another engine (engine-jmh's RocksDB one) stores records the same
 * way.
 *
 * <p>Thread-safety: stateless.
 */
public final class Fields {
  private Fields() {}

  public static byte[] encode(Map<String, byte[]> fields) {
    int size = 0;
    byte[][] names = new byte[fields.size()][];
    int i = 0;
    for (Map.Entry<String, byte[]> e : fields.entrySet()) {
      names[i] = e.getKey().getBytes(StandardCharsets.UTF_8);
      if (names[i].length > 0xFFFF)
        throw new io.basaltdb.InvalidArgumentException("field name longer than 65535 bytes");
      size += 2 + names[i].length + 4 + e.getValue().length;
      i++;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    i = 0;
    for (byte[] v : fields.values()) {
      b.putShort((short) names[i].length).put(names[i++]).putInt(v.length).put(v);
    }
    return b.array();
  }

  /** A YCSB field map as a record (insert). */
  public static byte[] encodeValues(Map<String, ByteIterator> values) {
    Map<String, byte[]> fields = new LinkedHashMap<>();
    for (Map.Entry<String, ByteIterator> e : values.entrySet())
      fields.put(e.getKey(), e.getValue().toArray());
    return encode(fields);
  }

  /** {@code record} with the fields of {@code values} added or replaced (update). */
  public static byte[] merge(byte[] record, Map<String, ByteIterator> values) {
    Map<String, byte[]> merged = decodeAll(record);
    for (Map.Entry<String, ByteIterator> e : values.entrySet())
      merged.put(e.getKey(), e.getValue().toArray());
    return encode(merged);
  }

  /** Every field of {@code record}, in order. */
  public static Map<String, byte[]> decodeAll(byte[] record) {
    Map<String, byte[]> out = new LinkedHashMap<>();
    ByteBuffer b = ByteBuffer.wrap(record).order(ByteOrder.LITTLE_ENDIAN);
    while (b.hasRemaining()) {
      String name =
          new String(
              take(b, b.remaining() >= 2 ? b.getShort() & 0xFFFF : -1), StandardCharsets.UTF_8);
      out.put(name, take(b, b.remaining() >= 4 ? b.getInt() : -1));
    }
    return out;
  }

  /** The fields of {@code record} named in {@code wanted} (all if null) into {@code out}. */
  public static void decode(byte[] record, Set<String> wanted, Map<String, ByteIterator> out) {
    for (Map.Entry<String, byte[]> e : decodeAll(record).entrySet()) {
      if (wanted == null || wanted.contains(e.getKey()))
        out.put(e.getKey(), new ByteArrayByteIterator(e.getValue()));
    }
  }

  private static byte[] take(ByteBuffer b, int n) {
    if (n < 0 || n > b.remaining()) {
      throw new CorruptionException(
          "ycsb record", b.position(), "field length " + n + " overruns the record");
    }
    byte[] out = new byte[n];
    b.get(out);
    return out;
  }
}
