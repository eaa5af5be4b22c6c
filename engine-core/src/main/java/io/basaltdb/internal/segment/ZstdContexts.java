package io.basaltdb.internal.segment;

import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Pools of zstd contexts for cold segments' blocks: a context is native memory (about 100 KiB to
 * decompress, more to compress), and making one per 4 KiB block cost more than decoding it (reads
 * of cold data ran at about half the speed of LZ4 ones). A caller takes a context, uses it alone,
 * and gives it back; at most {@link #KEPT} of each kind are kept, so the native memory they hold
 * stays bounded (a few MiB at most, outside the memory quota; docs/architecture.md says so).
 *
 * <p>Thread-safety: any thread; a context is used by one thread between take and give.
 */
final class ZstdContexts {
  private ZstdContexts() {}

  /** Contexts kept of each kind: enough for every thread of a busy two-core store. */
  static final int KEPT = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());

  /** One kind's pool: at most {@link #KEPT} idle contexts; one given back beyond that is closed. */
  private static final class Pool<T> {
    private final ConcurrentLinkedQueue<T> idle = new ConcurrentLinkedQueue<>();
    private final AtomicInteger kept = new AtomicInteger();
    private final Supplier<T> make;
    private final Consumer<T> close;

    Pool(Supplier<T> make, Consumer<T> close) {
      this.make = make;
      this.close = close;
    }

    T take() {
      T c = idle.poll();
      if (c == null) return make.get();
      kept.decrementAndGet();
      return c;
    }

    void give(T c) {
      if (kept.incrementAndGet() <= KEPT) {
        idle.offer(c);
      } else {
        kept.decrementAndGet();
        close.accept(c);
      }
    }
  }

  private static final Pool<ZstdDecompressCtx> DECOMPRESS =
      new Pool<>(ZstdDecompressCtx::new, ZstdDecompressCtx::close);
  private static final Pool<ZstdCompressCtx> COMPRESS =
      new Pool<>(ZstdCompressCtx::new, ZstdCompressCtx::close);

  static ZstdDecompressCtx takeDecompress() {
    return DECOMPRESS.take();
  }

  static void give(ZstdDecompressCtx c) {
    DECOMPRESS.give(c);
  }

  static ZstdCompressCtx takeCompress(int level) {
    return COMPRESS.take().setLevel(level);
  }

  static void give(ZstdCompressCtx c) {
    COMPRESS.give(c);
  }
}
