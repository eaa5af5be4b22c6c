package io.basaltdb.internal.engine.base;

import io.basaltdb.BasaltException;
import io.basaltdb.EventListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the user's {@link EventListener} and the log (SLF4J, logger {@code io.basaltdb}) of a
 * store's background work: flushes, compactions, collection runs and stalls at DEBUG (a stall that
 * lasted a second or more at INFO), the failure that stops writes at ERROR. A listener that throws
 * is logged at WARN and otherwise ignored: it must never fail the work it hears of.
 *
 * <p>Thread-safety: any thread; it keeps no state but the store's name.
 */
public final class Notifier {
  public static final Logger LOG = LoggerFactory.getLogger("io.basaltdb");
  private final EventListener listener;

  /** The store, for log lines: its directory, or "in-memory". */
  private final String store;

  public Notifier(EventListener listener, String store) {
    this.listener = listener;
    this.store = store;
  }

  public String store() {
    return store;
  }

  public void flushed(EventListener.FlushInfo i) {
    if (LOG.isDebugEnabled()) {
      LOG.debug(
          "{}: {} committed up to seqno {}: {} records of {} keyspaces, {} segment bytes, {} ms",
          store,
          i.walSkipped() ? "a batch that skipped the WAL" : "flush",
          i.flushedSeqno(),
          i.records(),
          i.keyspaces(),
          i.segmentBytes(),
          i.nanos() / 1_000_000);
    }
    call("onFlushCompleted", () -> listener.onFlushCompleted(i));
  }

  public void compacted(EventListener.CompactionInfo i) {
    if (LOG.isDebugEnabled()) {
      LOG.debug(
          "{}: compaction of keyspace '{}' level {} into {}: {} tables ({} bytes) into {} ({} bytes), {} versions"
              + " dropped, {} ms",
          store,
          i.keyspace(),
          i.level(),
          i.outputLevel(),
          i.inputTables(),
          i.bytesRead(),
          i.outputTables(),
          i.bytesWritten(),
          i.versionsDropped(),
          i.nanos() / 1_000_000);
    }
    call("onCompactionCompleted", () -> listener.onCompactionCompleted(i));
  }

  public void collected(EventListener.CollectionInfo i) {
    if (LOG.isDebugEnabled()) {
      LOG.debug(
          "{}: garbage collection of keyspace '{}': {} segments, {} stale documents dropped, {} bytes"
              + " reclaimed, {} written{}, {} ms",
          store,
          i.keyspace(),
          i.inputSegments(),
          i.documentsDropped(),
          i.bytesReclaimed(),
          i.bytesWritten(),
          i.cold() ? " (zstd, cold)" : "",
          i.nanos() / 1_000_000);
    }
    call("onCollectionCompleted", () -> listener.onCollectionCompleted(i));
  }

  public void stallBegan(EventListener.Stall cause) {
    LOG.debug("{}: writers wait ({})", store, cause);
    call("onStallBegin", () -> listener.onStallBegin(cause));
  }

  public void stallEnded(EventListener.Stall cause, long nanos) {
    if (nanos >= 1_000_000_000L) {
      LOG.info("{}: writers waited {} ms ({})", store, nanos / 1_000_000, cause);
    } else {
      LOG.debug("{}: writers waited {} ms ({})", store, nanos / 1_000_000, cause);
    }
    call("onStallEnd", () -> listener.onStallEnd(cause, nanos));
  }

  void failed(BasaltException e) {
    LOG.error(
        "{}: the store refuses writes from now on (reads still work; reopen it to recover every"
            + " acknowledged write): {}",
        store,
        e.getMessage(),
        e);
    call("onBackgroundError", () -> listener.onBackgroundError(e));
  }

  private void call(String what, Runnable r) {
    try {
      r.run();
    } catch (RuntimeException | Error e) {
      LOG.warn("{}: the event listener's {} threw; ignored", store, what, e);
    }
  }
}
