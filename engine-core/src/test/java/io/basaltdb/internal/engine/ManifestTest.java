package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.CorruptionException;
import io.basaltdb.Options;
import io.basaltdb.internal.storage.MemStorage;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** The manifest's byte layout (docs/format.md, "Manifest"): what it encodes decodes back, and versions. */
class ManifestTest {
  static Manifest sample() {
    return new Manifest(7, 1234, 99, 42, 40, 41, 3, List.of(
        new Manifest.KeyspaceMeta(1, "default", List.of(new Manifest.TableMeta(30, 0), new Manifest.TableMeta(12, 2)),
            List.of(), new Manifest.Counters(500, 64_000, 380, 41_000)),
        new Manifest.KeyspaceMeta(2, "second", List.of(), List.of(), Manifest.Counters.ZERO)));
  }

  @Test
  void decode_returnsWhatEncodeWrote_countersIncluded() {
    Manifest m = sample();
    Manifest back = Manifest.decode(m.encode(), "test");
    assertEquals(m, back);
    assertEquals(new Manifest.Counters(500, 64_000, 380, 41_000), back.keyspaces().get(0).counters());
    assertEquals(64_000 - 41_000, back.keyspaces().get(0).counters().liveBytes());
  }

  @Test
  void aManifestOfAnotherFormatVersion_failsTheOpen_namingBothVersions() {
    MemStorage storage = new MemStorage(1);
    storage.mkdirs(FileNames.MANIFEST_DIR);
    byte[] data = sample().encode();
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(8, 1); // the version before the counters
    CRC32C crc = new CRC32C();
    crc.update(data, 0, data.length - 4);
    b.putInt(data.length - 4, (int) crc.getValue());
    try (var f = storage.create(FileNames.manifest(7))) {
      f.write(0, ByteBuffer.wrap(data));
    }
    CorruptionException e = assertThrows(CorruptionException.class, () -> Engine.open(storage, Options.defaults()));
    assertTrue(e.getMessage().contains("format version 1; this build reads versions "
        + Manifest.OLDEST_READABLE_VERSION + " to " + Manifest.FORMAT_VERSION), e.getMessage());
  }
}
