package io.basaltdb;

/**
 * A change feed was asked for changes from a seqno at or below the keyspace's purge seqno: key
 * index compaction has dropped the tombstones of some deletions up to it (once a deletion reaches
 * the bottom of the index there is nothing left for it to hide), so the feed could not report them.
 * A consumer that gets this has missed deletions it cannot learn of: it starts again from seqno 0,
 * the whole keyspace as it is now (Couchbase's DCP asks a client to roll back in the same case).
 * Nothing was read or changed.
 *
 * <p>Thread-safety: immutable.
 */
public class ChangesPurgedException extends BasaltException {
  private static final long serialVersionUID = 1L;
  private final long fromSeqno;
  private final long purgeSeqno;

  public ChangesPurgedException(String keyspace, long fromSeqno, long purgeSeqno) {
    super(
        "a change feed of "
            + keyspace
            + " from seqno "
            + fromSeqno
            + " could miss deletions: those up to seqno "
            + purgeSeqno
            + " have been purged from the key index; start again from seqno 0");
    this.fromSeqno = fromSeqno;
    this.purgeSeqno = purgeSeqno;
  }

  /** The start the feed was asked for. */
  public long fromSeqno() {
    return fromSeqno;
  }

  /**
   * The keyspace's purge seqno when the feed was asked for: a feed must start above it (or at 0).
   */
  public long purgeSeqno() {
    return purgeSeqno;
  }
}
