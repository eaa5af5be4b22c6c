package io.basaltdb.internal.engine;

import io.basaltdb.BasaltException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.segment.Document;
import io.basaltdb.internal.sstable.KeyRecord;
import io.basaltdb.internal.sstable.TableReader;
import io.basaltdb.spi.ReadTransport;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * Magma's read path (seed 000 section 3.3): the active write cache, the immutable one, the key index
 * tables newest first (range and bloom filter before any I/O), then the log segment the record's seqno
 * names. Batched gets resolve every key first and then read the documents together through the read
 * transport, so the reads are in flight at once.
 *
 * <p>Thread-safety: any number of threads; readers pin a version and take no lock.
 */
final class ReadPath {
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final EngineStats stats;
  /** Reads the documents of batched gets; null for the in-memory store, which has no files. */
  private final ReadTransport transport;
  /** Judges document expiry ({@link io.basaltdb.Options#clock}). */
  private final java.util.function.LongSupplier clock;

  ReadPath(Versions versions, KeyspaceCatalog catalog, EngineStats stats, ReadTransport transport,
      java.util.function.LongSupplier clock) {
    this.clock = clock;
    this.versions = versions;
    this.catalog = catalog;
    this.stats = stats;
    this.transport = transport;
  }

  /** Now, by the store's clock: the instant expiries are judged at. */
  long now() {
    return clock.getAsLong();
  }

  /** The value of a write cache entry read at {@code now}: null for a tombstone or an expired value. */
  static byte[] valueAt(byte[] entry, long now) {
    return WriteCache.isDeleted(entry, now) ? null : WriteCache.valueOf(entry);
  }

  /** The value of {@code key} in keyspace {@code ks}, or null; sees whole batches. Allocates only the value. */
  byte[] get(int ks, byte[] key) {
    stats.gets.increment();
    Lookup l = Lookup.get();
    Version v = versions.acquire();
    try {
      switch (locate(v, ks, key, l)) {
        case IN_WRITE_CACHE: {
          byte[] e = l.entry;
          return Arrays.copyOfRange(e, WriteCache.valueOffset(e), l.entryLength);
        }
        case IN_FILES: {
          KeyRecord rec = l.record;
          KeyspaceFiles files = v.files(ks);
          KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
          byte[] value = s == null ? null : s.reader().cachedValue(rec.seqno, key);
          return value != null ? value : readMissedDocument(files, ks, key, rec.seqno, rec.hint).value();
        }
        default:
          return null;
      }
    } finally {
      l.record.key = null;
      l.entry = null; // keeps no large entry reachable from the thread, even after a throw
      v.release();
    }
  }

  /**
   * As {@link #get(int, byte[])} into the caller's buffer: the value's length, or -1 if absent; the value
   * is copied to {@code out} at its position (its limit then set to the value's end) only if it fits.
   * Allocates nothing for a value served by a write cache or the block cache (see {@link Lookup}); a
   * document read from its file is read as {@link #get(int, byte[])} reads it.
   */
  int get(int ks, ByteBuffer keyBuffer, ByteBuffer out) {
    stats.gets.increment();
    Lookup l = Lookup.get();
    byte[] key = l.key(keyBuffer);
    Version v = versions.acquire();
    try {
      switch (locate(v, ks, key, l)) {
        case IN_WRITE_CACHE: {
          byte[] e = l.entry;
          int off = WriteCache.valueOffset(e);
          return Lookup.copyOut(e, off, l.entryLength - off, out);
        }
        case IN_FILES: {
          KeyRecord rec = l.record;
          KeyspaceFiles files = v.files(ks);
          KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
          int n = s == null ? -2 : s.reader().cachedValue(rec.seqno, key, out);
          if (n != -2) return n;
          byte[] value = readMissedDocument(files, ks, key, rec.seqno, rec.hint).value();
          return Lookup.copyOut(value, 0, value.length, out);
        }
        default:
          return -1;
      }
    } finally {
      l.record.key = null;
      l.entry = null; // keeps no large entry reachable from the thread, even after a throw
      v.release();
    }
  }

  /** Where {@link #locate} found a key's live value. */
  private static final int ABSENT = 0;
  private static final int IN_WRITE_CACHE = 1;
  private static final int IN_FILES = 2;

  /**
   * Finds the live value of {@code key} as of now: in a write cache (its entry in {@code l.entry}), in the
   * files (its key index record in {@code l.record}), or absent (deleted, expired, or never written). The
   * get that calls it uses {@code l} from start to end and nothing it calls uses {@code l} again.
   */
  private int locate(Version v, int ks, byte[] key, Lookup l) {
    boolean found = v.active.get(ks, key, l);
    if (found && WriteCache.seqnoOf(l.entry) > versions.lastSeqno) versions.awaitPublished();
    if (!found && v.immutable != null) found = v.immutable.get(ks, key, l);
    if (found) {
      byte[] e = l.entry;
      if (WriteCache.isTombstone(e) || WriteCache.expires(e) && WriteCache.isDeleted(e, now())) {
        l.entry = null;
        return ABSENT;
      }
      return IN_WRITE_CACHE;
    }
    KeyRecord rec = l.record;
    if (!findRecord(v.files(ks), key, rec) || rec.tombstone) return ABSENT;
    if (rec.expiry != 0 && rec.expiredAt(now())) return ABSENT;
    return IN_FILES;
  }

  /** The write caches' entry for a key, waiting for its group to be published if it is not yet. */
  private byte[] cached(Version v, int ks, byte[] key) {
    byte[] e = v.active.get(ks, key);
    if (e != null && WriteCache.seqnoOf(e) > versions.lastSeqno) versions.awaitPublished();
    if (e == null && v.immutable != null) e = v.immutable.get(ks, key);
    return e;
  }

  /** Counts a get served elsewhere (a snapshot's). */
  void countGet() {
    stats.gets.increment();
  }

  /**
   * The value of {@code key} in the tables of {@code files}, or null; expiries judged at {@code now} (-1:
   * the clock, read only if the record expires).
   */
  byte[] getFromFiles(KeyspaceFiles files, int ks, byte[] key, long now) {
    KeyRecord rec = new KeyRecord();
    if (!findRecord(files, key, rec) || rec.tombstone) return null;
    if (rec.expiry != 0 && rec.expiredAt(now < 0 ? now() : now)) return null;
    return readDocument(files, ks, key, rec.seqno, rec.hint).value();
  }

  /** The newest key index record of {@code key} into {@code rec}; false if no table holds it. */
  boolean findRecord(KeyspaceFiles files, byte[] key, KeyRecord rec) {
    if (files.tables.isEmpty()) return false;
    long hash = TableReader.keyHash(key); // once for every table probed
    // Indexed loops, not iterators over sublists: a get into a caller's buffer allocates nothing.
    for (int i = 0, n = files.levelCount(0); i < n; i++) {
      if (lookup(files.table(0, i), key, hash, rec)) return true;
    }
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      if (files.guarded()) { // the key's guard: its tables newest first (an empty guard costs nothing)
        int g = files.guardOf(l, key);
        for (int i = 0, n = files.guardTableCount(l, g); i < n; i++) {
          KeyspaceFiles.Table t = files.guardTable(l, g, i);
          if (t.holdsInRange(key) && lookup(t, key, hash, rec)) return true; // counted, as leveled, in range only
        }
        continue;
      }
      KeyspaceFiles.Table t = files.candidate(l, key);
      if (t != null && lookup(t, key, hash, rec)) return true;
    }
    return false;
  }

  private boolean lookup(KeyspaceFiles.Table t, byte[] key, long hash, KeyRecord rec) {
    stats.tableLookups.increment();
    if (!t.reader().mayContain(key, hash)) return false; // key range and bloom filter: no I/O
    return t.reader().getChecked(key, rec); // a data block from the cache, or read (a TABLE_DATA miss)
  }

  /** The document a key index record names: from the block cache, or read (counted) and cached. */
  Document readDocument(KeyspaceFiles files, int ks, byte[] key, long seqno, long hint) {
    return files.document(key, seqno, hint, () -> catalog.describe(ks), stats.documentReads, stats.hintMisses);
  }

  /** As {@link #readDocument} for a get that has just missed the block cache for it: read, counted, cached. */
  private Document readMissedDocument(KeyspaceFiles files, int ks, byte[] key, long seqno, long hint) {
    return files.document(key, seqno, hint, () -> catalog.describe(ks), stats.documentReads, stats.hintMisses, false);
  }

  /** A document a batched get still has to read: the key's position in the batch and its record. */
  private record PendingRead(int index, byte[] key, long seqno, long hint, KeyspaceFiles.Segment segment,
      long blockOffset) {
    long blockId() {
      return segment.state().segmentId() << 32 | blockOffset;
    }
  }

  /**
   * The values of {@code keys} (null where absent), in order (Magma's batched reads): every key is
   * resolved through the write caches and the key index first, then the document reads all go to the
   * read transport together, one per distinct block. A read whose block does not hold the document
   * whole (a stale hint, a document bigger than a block) falls back to a point read. Sees whole batches
   * as {@link #get} does; a consistent view across the keys needs a snapshot.
   */
  List<byte[]> getAll(int ks, List<byte[]> keys) {
    int n = keys.size();
    byte[][] out = new byte[n][];
    stats.gets.add(n);
    stats.batchedGets.increment();
    Version v = versions.acquire();
    try {
      KeyspaceFiles files = v.files(ks);
      List<PendingRead> pending = new ArrayList<>();
      KeyRecord rec = new KeyRecord();
      long now = now();
      for (int i = 0; i < n; i++) {
        byte[] key = keys.get(i);
        byte[] e = cached(v, ks, key);
        if (e != null) {
          out[i] = valueAt(e, now);
        } else if (findRecord(files, key, rec) && !rec.tombstone && !rec.expiredAt(now)) {
          KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
          Document hit = s == null ? null : s.reader().cached(rec.seqno);
          if (hit != null && Arrays.equals(hit.key(), key)) {
            out[i] = hit.value();
            continue;
          }
          long off = s == null ? -1 : s.reader().hintedBlock(rec.seqno, rec.hint);
          pending.add(new PendingRead(i, key, rec.seqno, rec.hint, s, off));
        }
      }
      Map<Long, ReadTransport.Read> blocks = new LinkedHashMap<>();
      for (PendingRead p : pending) {
        if (p.blockOffset < 0) continue;
        blocks.computeIfAbsent(p.blockId(), x -> new ReadTransport.Read(p.segment.reader().file(), p.blockOffset,
            ByteBuffer.allocate(p.segment.reader().blockReadSize(p.blockOffset))));
      }
      if (!blocks.isEmpty()) {
        transport.submit(new ArrayList<>(blocks.values()));
        stats.documentReads.add(blocks.size());
      }
      for (PendingRead p : pending) {
        Document d = null;
        if (p.blockOffset >= 0) {
          ReadTransport.Read r = blocks.get(p.blockId());
          d = p.segment.reader().findInRead(p.blockOffset, r.dst().array(), awaitRead(r), p.seqno);
        }
        if (d == null || !Arrays.equals(d.key(), p.key)) {
          d = readDocument(files, ks, p.key, p.seqno, p.hint); // checks and reports as a point read does
        } else {
          p.segment.reader().remember(d);
        }
        out[p.index] = d.value();
      }
      return Arrays.asList(out);
    } finally {
      v.release();
    }
  }

  private static int awaitRead(ReadTransport.Read r) {
    try {
      return r.result().join();
    } catch (CompletionException e) {
      Throwable c = e.getCause();
      if (c instanceof BasaltException b) throw b;
      throw new StorageException("a batched read of " + r.target() + " failed: " + c, c);
    }
  }
}
