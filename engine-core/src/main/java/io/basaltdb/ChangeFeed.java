package io.basaltdb;

import io.basaltdb.internal.engine.read.EngineFeed;

/**
 * A keyspace's changes in seqno order (Magma's changelog, seed 000 section 3.4.3): each a key, the
 * seqno of its write, and its value or a deletion. Taken with {@link Keyspace#changes} (a snapshot
 * of its own, released on close) or {@link Snapshot#changes}.
 *
 * <pre>{@code
 * long next = loadResumePoint();                    // 0 the first time
 * try (ChangeFeed feed = keyspace.changes(next, ChangeFeed.NOW)) {
 *   while (feed.next()) apply(feed.seqno(), feed.key(), feed.value());   // value null: deleted
 *   saveResumePoint(feed.endSeqno() + 1);
 * }
 * }</pre>
 *
 * <p><b>Guarantees.</b>
 *
 * <ul>
 *   <li>Order: seqnos strictly ascending. Seqnos are store-wide, so a keyspace's have gaps.
 *   <li>Completeness: every key whose newest version as of the feed's snapshot has a seqno in the
 *       range appears with that version; a deleted key appears as a deletion ({@link #value()}
 *       null), unless the feed starts at 0 or 1 and the deletion is at or below {@link
 *       #purgeSeqno()}.
 *   <li>Stability: the feed reads a snapshot, so writes, flushes, key index compaction and garbage
 *       collection running beside it change nothing it returns.
 *   <li>Resuming: a consumer that records the last seqno it has applied (or {@link #endSeqno()}
 *       once a feed is exhausted) and opens the next feed from the one after it misses nothing,
 *       across a crash or reopen too, with two exceptions it is told of: deletions the store has
 *       purged ({@link ChangesPurgedException}, start again from 0), and seqnos past the store's
 *       last write ({@link InvalidArgumentException}: under {@link SyncMode#PERIODIC} or {@link
 *       SyncMode#NONE} a power failure can lose writes a feed already returned; a rollback undoes
 *       writes too, and then hands their seqnos out again, so a consumer must start over after
 *       one).
 * </ul>
 *
 * <p><b>Stale versions ({@link Mode#FAST}, the default).</b> A version its key's later writes
 * superseded may also appear, before the newer one: the feed skips what the delete list names, and
 * the delete list learns of a superseded version only once key index compaction drops it (or sooner
 * with {@link Options#flushLookups}). Applying the changes in order still ends at the right state.
 * {@link Mode#EXACT} returns only versions that are their key's newest in the snapshot, at the cost
 * of a key index lookup per document read from the log (bloom filters first; one data block,
 * usually cached).
 *
 * <p><b>Expiry.</b> A put whose expiry ({@link Keyspace#put(byte[], byte[], long)}) has passed at
 * the feed's snapshot appears as a deletion at the put's own seqno: nobody wrote the expiry, so it
 * has no seqno of its own. A consumer that has already read past that seqno does not see it again;
 * to learn of expiries too, it applies the expiry times the puts carried (or re-reads from an
 * earlier seqno).
 *
 * <p>A feed from 0 (or 1) replays the keyspace's whole history the store still holds: each live key
 * at least once, plus deletions whose tombstones are still in the key index.
 *
 * <p><b>In-memory stores</b> give the same guarantees. The skiplist holds each key's newest
 * version, so a feed returns only newest versions (FAST is EXACT there), and a deletion is
 * remembered for {@link Options#deletionRetentionMillis} (or until the store runs short of memory),
 * then forgotten with the purge seqno raised past it. A feed walks the keyspace's entries once per
 * window of up to a million changes (the keys of one window are held on the heap), so a feed from a
 * recent seqno costs one walk, and a feed from 0 of n keys about n / 2^20 + 1. A rollback of a live
 * in-memory store ({@link Basalt#rollback(long)}) raises every purge seqno past the writes it
 * undid.
 *
 * <p>Thread-safety: one thread at a time. Use after close, or after the snapshot or store closed,
 * throws {@link ClosedException}. A feed pins its snapshot's files and write caches until closed.
 */
public final class ChangeFeed implements AutoCloseable {
  /** An end seqno meaning "up to the feed's snapshot". */
  public static final long NOW = Long.MAX_VALUE;

  /** Which versions of the log a feed returns. */
  public enum Mode {
    /**
     * Every key's newest version, and possibly superseded versions the delete list does not name
     * yet.
     */
    FAST,
    /**
     * Only versions that are their key's newest in the feed's snapshot (a key index lookup per
     * document).
     */
    EXACT
  }

  private final EngineFeed feed;

  ChangeFeed(EngineFeed feed) {
    this.feed = feed;
  }

  /** Moves to the next change; false at the end. The first call moves to the first change. */
  public boolean next() {
    return feed.next();
  }

  /** The current change's seqno. */
  public long seqno() {
    return feed.seqno();
  }

  /** The current change's key (a fresh copy). */
  public byte[] key() {
    return feed.key().clone();
  }

  /** The current change's value (a fresh copy), or null if the change is a deletion. */
  public byte[] value() {
    byte[] v = feed.value();
    return v == null ? null : v.clone();
  }

  public boolean isDeletion() {
    return feed.isDeletion();
  }

  /** The current change as a record of its own. */
  public Change change() {
    return new Change(seqno(), key(), value(), isDeletion());
  }

  /**
   * The keyspace's purge seqno when the feed was opened: the highest seqno of a deletion whose
   * tombstone the key index has dropped. A feed starts above it, or at 0 or 1, where deletions at
   * or below it do not appear (their keys are simply absent, as in the keyspace itself).
   */
  public long purgeSeqno() {
    return feed.purgeSeqno();
  }

  /**
   * The last seqno this feed covers: the {@code to} it was asked for, or its snapshot's seqno if
   * that is lower. Once {@link #next()} has returned false, the next feed starts at this plus one.
   */
  public long endSeqno() {
    return feed.endSeqno();
  }

  @Override
  public void close() {
    feed.close();
  }
}
