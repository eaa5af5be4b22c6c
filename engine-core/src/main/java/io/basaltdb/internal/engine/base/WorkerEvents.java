package io.basaltdb.internal.engine.base;

/**
 * How the disk store's workers wake each other without holding one another: the commit leader tells
 * of a write cache switch (the flusher starts), the flusher of a flush (compaction may be due,
 * stalled writers may go on), compaction of a finished job (stalled writers), readers of a freed
 * version (tables may have become obsolete). The open routine wires it; no worker calls another
 * directly.
 *
 * <p>Thread-safety: called from any thread; implementations only signal.
 */
public interface WorkerEvents {
  void writeCacheSwitched();

  void flushed();

  void compacted();

  void versionFreed();
}
