package io.basaltdb.internal.engine;

import io.basaltdb.internal.skiplist.SnapshotIterator;
import io.basaltdb.internal.sstable.TableIterator;

/**
 * The {@link MergingIterator.Source}s of the store: one keyspace of a write cache snapshot, and a key
 * index table.
 *
 * <p>Thread-safety: one thread at a time, as the iterators they wrap.
 */
final class MergeSources {
  private MergeSources() {}

  /** One keyspace of a write cache snapshot, from a key on. */
  static final class CacheSource implements MergingIterator.Source {
    private final SnapshotIterator it;
    private final int ks;
    private byte[] key;
    private byte[] entry;

    CacheSource(SnapshotIterator it, int ks, byte[] from) {
      this.it = it;
      this.ks = ks;
      it.seek(WriteCache.storeKey(ks, from));
      load();
    }

    private void load() {
      if (it.valid()) {
        byte[] sk = it.key();
        if (WriteCache.keyspaceOf(sk) == ks) {
          key = WriteCache.userKey(sk);
          entry = it.value();
          return;
        }
      }
      key = null;
      entry = null;
    }

    @Override public boolean valid() {
      return key != null;
    }

    @Override public byte[] key() {
      return key;
    }

    @Override public long seqno() {
      return WriteCache.seqnoOf(entry);
    }

    @Override public boolean tombstone() {
      return WriteCache.isTombstone(entry);
    }

    /** The current value (a copy). */
    byte[] value() {
      return WriteCache.valueOf(entry);
    }

    @Override public void next() {
      it.next();
      load();
    }

    @Override public void close() {
      it.close();
    }
  }

  /** A key index table's records, from a key on (or from its first). */
  static final class TableSource implements MergingIterator.Source {
    private final TableIterator it;
    /** The current key, copied once per position; null when exhausted. */
    private byte[] key;

    TableSource(TableIterator it, byte[] from) {
      this.it = it;
      if (from == null) it.seekFirst(); else it.seek(from);
      load();
    }

    private void load() {
      key = it.valid() ? it.key() : null;
    }

    @Override public boolean valid() {
      return key != null;
    }

    @Override public byte[] key() {
      return key;
    }

    @Override public long seqno() {
      return it.seqno();
    }

    @Override public boolean tombstone() {
      return it.tombstone();
    }

    int docSize() {
      return it.docSize();
    }

    long hint() {
      return it.hint();
    }

    boolean olderReported() {
      return it.olderReported();
    }

    @Override public void next() {
      it.next();
      load();
    }

    @Override public void close() {
      it.close();
    }
  }
}
