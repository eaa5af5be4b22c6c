package io.basaltdb.internal.segment;

import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pools of zstd contexts for cold segments' blocks: a context is native memory (about 100 KiB to
 * decompress, more to compress), and making one per 4 KiB block cost more than decoding it (reads of
 * cold data ran at about half the speed of LZ4 ones). A caller takes a context, uses it alone, and
 * gives it back; at most {@link #KEPT} of each kind are kept, so the native memory they hold stays
 * bounded (a few MiB at most, outside the memory quota; docs/architecture.md says so).
 *
 * <p>Thread-safety: any thread; a context is used by one thread between take and give.
 */
final class ZstdContexts {
  private ZstdContexts() {}

  /** Contexts kept of each kind: enough for every thread of a busy two-core store. */
  static final int KEPT = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());

  private static final ConcurrentLinkedQueue<ZstdDecompressCtx> DECOMPRESS = new ConcurrentLinkedQueue<>();
  private static final AtomicInteger decompressKept = new AtomicInteger();
  private static final ConcurrentLinkedQueue<ZstdCompressCtx> COMPRESS = new ConcurrentLinkedQueue<>();
  private static final AtomicInteger compressKept = new AtomicInteger();

  static ZstdDecompressCtx takeDecompress() {
    ZstdDecompressCtx c = DECOMPRESS.poll();
    if (c == null) return new ZstdDecompressCtx();
    decompressKept.decrementAndGet();
    return c;
  }

  static void give(ZstdDecompressCtx c) {
    if (decompressKept.incrementAndGet() <= KEPT) {
      DECOMPRESS.offer(c);
    } else {
      decompressKept.decrementAndGet();
      c.close();
    }
  }

  static ZstdCompressCtx takeCompress(int level) {
    ZstdCompressCtx c = COMPRESS.poll();
    if (c == null) c = new ZstdCompressCtx();
    else compressKept.decrementAndGet();
    return c.setLevel(level);
  }

  static void give(ZstdCompressCtx c) {
    if (compressKept.incrementAndGet() <= KEPT) {
      COMPRESS.offer(c);
    } else {
      compressKept.decrementAndGet();
      c.close();
    }
  }
}
