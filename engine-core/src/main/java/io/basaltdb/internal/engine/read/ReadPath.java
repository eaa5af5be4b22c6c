package io.basaltdb.internal.engine.read;

import io.basaltdb.BasaltException;
import io.basaltdb.StorageException;
import io.basaltdb.internal.engine.base.KeyspaceCatalog;
import io.basaltdb.internal.engine.hashed.HashedIndex;
import io.basaltdb.internal.engine.hashed.HashedIndexes;
import io.basaltdb.internal.engine.version.EngineStats;
import io.basaltdb.internal.engine.version.KeyspaceFiles;
import io.basaltdb.internal.engine.version.Version;
import io.basaltdb.internal.engine.version.Versions;
import io.basaltdb.internal.engine.writecache.Lookup;
import io.basaltdb.internal.engine.writecache.WriteCache;
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
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Magma's read path (seed 000 section 3.3): the active write cache, the immutable one, the key
 * index tables newest first (range and bloom filter before any I/O), then the log segment the
 * record's seqno names. Batched gets keep up to {@code readQueueDepth} reads in flight through the
 * read transport, each key's next read handed over as soon as its last one completes (Magma's
 * coroutines, section 6).
 *
 * <p>Thread-safety: any number of threads; readers pin a version and take no lock.
 */
public final class ReadPath {
  private final Versions versions;
  private final KeyspaceCatalog catalog;
  private final EngineStats stats;

  /** Reads the documents of batched gets; null for the in-memory store, which has no files. */
  private final ReadTransport transport;

  /** Reads a batch keeps in flight at most ({@code Options.readQueueDepth}). */
  private final int window;

  /** Judges document expiry ({@link io.basaltdb.Options#clock}). */
  private final java.util.function.LongSupplier clock;

  public ReadPath(
      Versions versions,
      KeyspaceCatalog catalog,
      EngineStats stats,
      ReadTransport transport,
      int window,
      java.util.function.LongSupplier clock) {
    if (window < 1)
      throw new IllegalArgumentException("readQueueDepth must be at least 1: " + window);
    this.window = window;
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

  /**
   * The value of a write cache entry read at {@code now}: null for a tombstone or an expired value.
   */
  static byte[] valueAt(byte[] entry, long now) {
    return WriteCache.isDeleted(entry, now) ? null : WriteCache.valueOf(entry);
  }

  /**
   * The value of {@code key} in keyspace {@code ks}, or null; sees whole batches. Allocates only
   * the value.
   */
  public byte[] get(int ks, byte[] key) {
    stats.gets.increment();
    Lookup l = Lookup.get();
    for (int retries = 0; ; ) {
      Version v = versions.acquire();
      try {
        switch (locate(v, ks, key, l)) {
          case IN_WRITE_CACHE:
            {
              byte[] e = l.entry;
              return Arrays.copyOfRange(e, WriteCache.valueOffset(e), l.entryLength);
            }
          case IN_FILES:
            {
              KeyRecord rec = l.record;
              KeyspaceFiles files = v.files(ks);
              KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
              if (newerThan(ks, s, rec.seqno, retries++)) continue; // see newerThan
              if (s != null && rec.hint >>> 32 != s.state().segmentId()) staleHint(ks, key, rec);
              byte[] value = s == null ? null : s.reader().cachedValue(rec.seqno, key);
              return value != null
                  ? value
                  : readMissedDocument(files, ks, key, rec.seqno, rec.hint).value();
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
  }

  /**
   * As {@link #get(int, byte[])} into the caller's buffer: the value's length, or -1 if absent; the
   * value is copied to {@code out} at its position (its limit then set to the value's end) only if
   * it fits. Allocates nothing for a value served by a write cache or the block cache (see {@link
   * Lookup}); a document read from its file is read as {@link #get(int, byte[])} reads it.
   */
  public int get(int ks, ByteBuffer keyBuffer, ByteBuffer out) {
    stats.gets.increment();
    Lookup l = Lookup.get();
    byte[] key = l.key(keyBuffer);
    for (int retries = 0; ; ) {
      Version v = versions.acquire();
      try {
        switch (locate(v, ks, key, l)) {
          case IN_WRITE_CACHE:
            {
              byte[] e = l.entry;
              int off = WriteCache.valueOffset(e);
              return Lookup.copyOut(e, off, l.entryLength - off, out);
            }
          case IN_FILES:
            {
              KeyRecord rec = l.record;
              KeyspaceFiles files = v.files(ks);
              KeyspaceFiles.Segment s = files.segmentFor(rec.seqno);
              if (newerThan(ks, s, rec.seqno, retries++)) continue; // see newerThan
              if (s != null && rec.hint >>> 32 != s.state().segmentId()) staleHint(ks, key, rec);
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
  }

  /**
   * Whether a get must start again: its version's segment {@code s} (null: none) does not hold
   * {@code seqno}, which a hashed keyspace's trie named. Never so for an ordered keyspace, whose
   * key index belongs to the version. A hashed keyspace's trie is shared by every version: a get
   * that missed the write caches of its version, then found in the trie a record a later flush
   * applied, starts again on a newer version, whose caches or files have it (waiting a little from
   * the second try on, as the flush installs its version). After {@link #MAX_RETRIES} the get goes
   * on and the missing document is reported as the corruption it then is.
   */
  private boolean newerThan(int ks, KeyspaceFiles.Segment s, long seqno, int retries) {
    if (s != null && s.state().lastSeqno() >= seqno) return false;
    if (hashedIndex(ks) == null || retries >= MAX_RETRIES) return false;
    if (retries > 0) java.util.concurrent.locks.LockSupport.parkNanos(100_000);
    return true;
  }

  private static final int MAX_RETRIES = 100_000;

  /**
   * A get found a record whose location hint names another segment than the one holding its seqno
   * (garbage collection moved the document): a hashed keyspace's trie is told, and its next flush
   * refreshes the hint (Magma's GC never looks at the key index; an ordered keyspace's compaction
   * refreshes hints as it rewrites records).
   */
  private void staleHint(int ks, byte[] key, KeyRecord rec) {
    HashedIndex index = hashedIndex(ks);
    if (index != null) index.hintMissed(key, rec.seqno);
  }

  /** Where {@link #locate} found a key's live value. */
  private static final int ABSENT = 0;

  private static final int IN_WRITE_CACHE = 1;
  private static final int IN_FILES = 2;

  /**
   * Finds the live value of {@code key} as of now: in a write cache (its entry in {@code l.entry}),
   * in the files (its key index record in {@code l.record}), or absent (deleted, expired, or never
   * written). The get that calls it uses {@code l} from start to end and nothing it calls uses
   * {@code l} again.
   */
  private int locate(Version v, int ks, byte[] key, Lookup l) {
    boolean found = v.active.get(ks, key, l);
    if (found && WriteCache.seqnoOf(l.entry) > versions.lastSeqno()) versions.awaitPublished();
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
    if (!findRecord(ks, v.files(ks), key, rec) || rec.tombstone) return ABSENT;
    if (rec.expiry != 0 && rec.expiredAt(now())) return ABSENT;
    return IN_FILES;
  }

  /** The write caches' entry for a key, waiting for its group to be published if it is not yet. */
  private byte[] cached(Version v, int ks, byte[] key) {
    byte[] e = v.active.get(ks, key);
    if (e != null && WriteCache.seqnoOf(e) > versions.lastSeqno()) versions.awaitPublished();
    if (e == null && v.immutable != null) e = v.immutable.get(ks, key);
    return e;
  }

  /** Counts a get served elsewhere (a snapshot's). */
  void countGet() {
    stats.gets.increment();
  }

  /**
   * The value of {@code key} in the tables of {@code files}, or null; expiries judged at {@code
   * now} (-1: the clock, read only if the record expires).
   */
  byte[] getFromFiles(KeyspaceFiles files, int ks, byte[] key, long now, long seqno) {
    KeyRecord rec = new KeyRecord();
    if (!findRecord(ks, files, key, rec, seqno) || rec.tombstone) return null;
    if (rec.expiry != 0 && rec.expiredAt(now < 0 ? now() : now)) return null;
    return readDocument(files, ks, key, rec.seqno, rec.hint).value();
  }

  /** Gives the reads the hashed keyspaces' indexes; once, at open, before any read. */
  public void useHashed(HashedIndexes indexes) {
    this.hashed = indexes;
  }

  /** The hashed keyspaces' indexes (null: none); set once at open. */
  private HashedIndexes hashed;

  /** The index of keyspace {@code ks} if it is hashed, else null. */
  public HashedIndex hashedIndex(int ks) {
    HashedIndexes h = hashed;
    return h == null ? null : h.of(ks);
  }

  /**
   * Registers a snapshot at {@code seqno} with every hashed keyspace, so their flushes keep the
   * versions it sees; false (and nothing registered) if one of them no longer can.
   */
  public boolean registerSnapshot(long seqno) {
    HashedIndexes h = hashed;
    return h == null || h.register(seqno);
  }

  public void unregisterSnapshot(long seqno) {
    HashedIndexes h = hashed;
    if (h != null) h.unregister(seqno);
  }

  /**
   * The record of {@code key} a snapshot at {@code seqno} sees in keyspace {@code ks}'s key index
   * ({@code files} are the snapshot's version's); false if it has none.
   */
  public boolean findRecord(int ks, KeyspaceFiles files, byte[] key, KeyRecord rec, long seqno) {
    HashedIndex index = hashedIndex(ks);
    if (index != null) return index.get(key, rec, seqno);
    return findRecord(ks, files, key, rec);
  }

  /**
   * The newest key index record of {@code key} in keyspace {@code ks} into {@code rec}: from its
   * lazy-trie if it is hashed, else from the tables of {@code files}; false if none holds it.
   */
  public boolean findRecord(int ks, KeyspaceFiles files, byte[] key, KeyRecord rec) {
    HashedIndex index = hashedIndex(ks);
    if (index != null) {
      stats.tableLookups.increment();
      // at the published seqno: a WAL-skip batch being committed changed the trie already
      return index.get(key, rec, versions.lastSeqno());
    }
    if (files.tables.isEmpty()) return false;
    long hash = TableReader.keyHash(key); // once for every table probed
    // Indexed loops, not iterators over sublists: a get into a caller's buffer allocates nothing.
    for (int i = 0, n = files.levelCount(0); i < n; i++) {
      if (lookup(files.table(0, i), key, hash, rec)) return true;
    }
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      if (files
          .guarded()) { // the key's guard: its tables newest first (an empty guard costs nothing)
        int g = files.guardOf(l, key);
        for (int i = 0, n = files.guardTableCount(l, g); i < n; i++) {
          KeyspaceFiles.Table t = files.guardTable(l, g, i);
          if (t.holdsInRange(key) && lookup(t, key, hash, rec))
            return true; // counted, as leveled, in range only
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
    if (!t.reader().mayContainIfFilterCached(key, hash))
      return false; // key range and a cached bloom filter: no I/O
    return t.reader()
        .getChecked(key, rec); // a data block from the cache, or read (a TABLE_DATA miss)
  }

  /** The document a key index record names: from the block cache, or read (counted) and cached. */
  Document readDocument(KeyspaceFiles files, int ks, byte[] key, long seqno, long hint) {
    return files.document(
        key, seqno, hint, () -> catalog.describe(ks), stats.documentReads, stats.hintMisses);
  }

  /**
   * As {@link #readDocument} for a get that has just missed the block cache for it: read, counted,
   * cached.
   */
  private Document readMissedDocument(
      KeyspaceFiles files, int ks, byte[] key, long seqno, long hint) {
    return files.document(
        key, seqno, hint, () -> catalog.describe(ks), stats.documentReads, stats.hintMisses, false);
  }

  /**
   * The values of {@code keys} (null where absent), in order (Magma's batched reads, seed 000
   * section 6), key {@code i} in keyspace {@code ks[i]}. Every key is first looked up in the write
   * caches; the rest go through the key index and then to their documents as Magma's coroutines do:
   * each key's next read (a key index data block the block cache misses, then its document's block
   * from the record's location hint, then, for a document bigger than a block, the rest of its
   * block) goes to the read transport as soon as its last one completes, and the batch keeps up to
   * {@code readQueueDepth} reads in flight, one per distinct block (a block a key needs while
   * another key's read of it is in flight is not read again). A key whose hint is missing or names
   * a segment collection replaced has its block found in the seqno index (index pages through the
   * block cache) and read as a hinted one; a key whose block turns out not to hold it is read as a
   * point read does (which checks and reports damage). Sees whole batches as {@link #get} does; a
   * consistent view across the keys needs a snapshot.
   */
  public List<byte[]> getAll(int[] ks, List<byte[]> keys) {
    int n = keys.size();
    byte[][] out = new byte[n][];
    stats.gets.add(n);
    stats.batchedGets.increment();
    Version v = versions.acquire();
    try {
      long now = now();
      List<BatchedGet> waiting = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        byte[] key = keys.get(i);
        byte[] e = cached(v, ks[i], key);
        if (e != null) out[i] = valueAt(e, now);
        else waiting.add(new BatchedGet(i, ks[i], key, v.files(ks[i])));
      }
      run(waiting, now, out);
      return Arrays.asList(out);
    } finally {
      v.release();
    }
  }

  /**
   * The values of documents a scan has found in the key index of {@code files}: {@code keys[i]} at
   * {@code seqnos[i]}, with location hint {@code hints[i]}, read together as {@link #getAll} reads
   * documents. The caller pins the version that {@code files} belongs to.
   */
  byte[][] readDocuments(
      KeyspaceFiles files, int ks, byte[][] keys, long[] seqnos, long[] hints, int n) {
    byte[][] out = new byte[n][];
    int from = 0;
    if (transport != null) {
      InPlace blocks = new InPlace(Math.min(n, InPlace.MAX_SLOTS));
      for (int got = READ; from < n && got == READ; ) {
        got = readInPlace(files, ks, keys[from], seqnos[from], hints[from], blocks, out, from);
        if (got != NOT_READ) from++;
      }
    }
    if (from == n) return out;
    List<BatchedGet> waiting = new ArrayList<>(n - from);
    for (int i = from; i < n; i++) {
      BatchedGet g = new BatchedGet(i, ks, keys[i], files);
      g.record.seqno = seqnos[i];
      g.record.hint = hints[i];
      g.found = true; // live records: the scan's merge has hidden tombstones and expired ones
      waiting.add(g);
    }
    run(waiting, Long.MIN_VALUE, out);
    return out;
  }

  /**
   * The blocks a scan's {@link #readInPlace} decoded in one call, by (segment reader, block
   * offset), so neighbouring keys of a key-ordered run, which share blocks, decode each block once
   * while the scan moves between runs: one slot per document of the call (a scan's read-ahead is at
   * most {@link EngineCursor#MAX_READ_AHEAD}), up to {@link #MAX_SLOTS}, then the oldest goes.
   */
  private static final class InPlace {
    static final int MAX_SLOTS = 128;
    final Object[] readers;
    final long[] offsets;
    final Object[] blocks;
    int next;
    int used;

    InPlace(int slots) {
      readers = new Object[Math.max(1, slots)];
      offsets = new long[readers.length];
      blocks = new Object[readers.length];
    }

    /** The decoded block (null: not a valid block), or {@link #NOT_DECODED} if not held. */
    Object get(Object reader, long offset) {
      for (int i = 0; i < used; i++) {
        if (readers[i] == reader && offsets[i] == offset) return blocks[i];
      }
      return NOT_DECODED;
    }

    void put(Object reader, long offset, Object block) {
      readers[next] = reader;
      offsets[next] = offset;
      blocks[next] = block;
      next = (next + 1) % readers.length;
      used = Math.max(used, next == 0 ? readers.length : next);
    }
  }

  /**
   * Reads the document of a scan's live record as {@link #advance} and {@link #take} would, but
   * with its block copied from the file's mapping on this thread ({@link
   * io.basaltdb.spi.ReadTarget#readInPlace}) instead of going through a batch's reads and their
   * hand-offs: a scan over data the page cache holds pays for its copies and decoding, not for
   * queues, futures and maps, nor for the document cache (neither looked up nor filled). Puts the
   * value in {@code out[i]} and returns {@link #READ}; {@link #READ_SLOWLY} after a copy slow
   * enough to have waited for the device; {@link #NOT_READ}, having read nothing, if the block
   * cannot be read in place (no mapping, or a cold file). After either of the last two, the rest of
   * the scan goes to the batch, whose reads run in parallel.
   */
  private int readInPlace(
      KeyspaceFiles files,
      int ks,
      byte[] key,
      long seqno,
      long hint,
      InPlace blocks,
      byte[][] out,
      int i) {
    KeyspaceFiles.Segment s = files.segmentFor(seqno);
    if (s == null) return NOT_READ; // the batch reports it
    if (newerThan(ks, s, seqno, 0)) {
      out[i] = get(ks, key); // as advance()
      return READ;
    }
    var reader = s.reader();
    if (!reader.file().readsInPlace()) return NOT_READ; // before any lookup the batch would repeat
    // No document cache here, looked up or filled: the page cache holds the mapping's blocks, and a
    // copy from it costs less than the cache's lookup, admission and off-heap copy did (E on the
    // quick store: 7.6% of all CPU, 17% more scans without them, docs/benchmarks.md).
    long off = reader.hintedBlock(seqno, hint);
    boolean stale = false;
    if (off < 0) { // no hint, or a stale one: the seqno index names the block
      long found = reader.hintFor(seqno);
      if (found >= 0) {
        stale = true;
        hint = found;
        off = reader.hintedBlock(seqno, found);
      }
    }
    if (off < 0) {
      out[i] = readDocument(files, ks, key, seqno, hint).value();
      return READ;
    }
    Object block = blocks.get(reader, off);
    boolean slow = false;
    if (block == NOT_DECODED) {
      byte[] b = new byte[reader.blockReadSize(off)];
      long start = System.nanoTime();
      int got = copyInPlace(reader, off, ByteBuffer.wrap(b));
      if (got < 0) return NOT_READ;
      slow = System.nanoTime() - start >= SLOW_IN_PLACE_NANOS;
      stats.documentReads.increment();
      stats.batchedReads.increment();
      stats.batchedReadsInPlace.increment();
      if (stale) stats.hintMisses.increment();
      int whole = reader.longerBlockLength(off, b, got);
      if (whole > 0) { // a document bigger than a block: the rest of its block, as take() reads it
        b = Arrays.copyOf(b, whole);
        got += readRest(reader, off + got, b, got);
      }
      block = reader.decodeRead(off, b, got);
      blocks.put(reader, off, block);
    }
    Document d = block == null ? null : reader.findInDecoded(block, seqno);
    out[i] =
        d != null && Arrays.equals(d.key(), key)
            ? d.value()
            : readDocument(files, ks, key, seqno, hint).value(); // a stale hint, or damage
    return slow ? READ_SLOWLY : READ;
  }

  /**
   * Reads {@code b[from..]} from {@code off} of {@code reader}'s file, counted as a document read:
   * in place, else with a plain read (a block that continues past the mapping's end). Returns the
   * bytes read; a short read leaves the block incomplete, and the point read after it reports that.
   */
  private int readRest(
      io.basaltdb.internal.segment.SegmentReader reader, long off, byte[] b, int from) {
    ByteBuffer rest = ByteBuffer.wrap(b, from, b.length - from);
    stats.documentReads.increment();
    stats.batchedReads.increment();
    int n = copyInPlace(reader, off, rest);
    if (n >= 0) {
      stats.batchedReadsInPlace.increment();
      return n;
    }
    return Math.max(0, reader.file().read(off, rest));
  }

  /**
   * {@link io.basaltdb.spi.ReadTarget#readInPlace} of {@code reader}'s file, its failures reported
   * as a batch's read reports them ({@link #awaitRead}).
   */
  private static int copyInPlace(
      io.basaltdb.internal.segment.SegmentReader reader, long off, ByteBuffer dst) {
    try {
      return reader.file().readInPlace(off, dst);
    } catch (BasaltException e) {
      throw e;
    } catch (RuntimeException | Error e) {
      throw new StorageException("a read of " + reader.file() + " failed: " + e, e);
    }
  }

  /**
   * {@code d}, found in a block read for {@code key} at {@code seqno}, admitted to the cache; or,
   * if the block did not hold it (null, or another key's: a stale hint or damage), the point read's
   * document, which checks and reports as a get does.
   */
  private Document confirmed(
      io.basaltdb.internal.segment.SegmentReader reader,
      Document d,
      KeyspaceFiles files,
      int ks,
      byte[] key,
      long seqno,
      long hint) {
    if (d == null || !Arrays.equals(d.key(), key)) return readDocument(files, ks, key, seqno, hint);
    reader.remember(d);
    return d;
  }

  /** What {@link #readInPlace} did. */
  private static final int NOT_READ = 0, READ = 1, READ_SLOWLY = 2;

  /**
   * Runs batched lookups to their ends: each key goes as far as it can without I/O, then waits for
   * its read; as reads complete, the keys that waited for them go on, and the reads they need next
   * go out with the next hand-over, while the rest stay in flight.
   */
  private void run(List<BatchedGet> keys, long now, byte[][] out) {
    if (keys.isEmpty()) return;
    Reads r = new Reads();
    for (BatchedGet g : keys) advance(g, r, now, out);
    while (true) {
      for (BatchedGet g;
          (g = r.ready.poll()) != null; ) { // keys whose block a completed read of the batch holds
        take(g, g.fetch, r, out);
        if (!g.done && g.fetch == null) advance(g, r, now, out);
      }
      r.submit();
      if (r.inFlight.isEmpty())
        return; // nothing waits (submit sends on whatever waited while room was)
      for (Fetch f = r.next(); f != null; f = r.completed.poll()) {
        r.inFlight.remove(f.id);
        r.recent.put(f.id, f);
        for (BatchedGet g : f.waiters) {
          take(g, f, r, out);
          if (!g.done && g.fetch == null) advance(g, r, now, out);
        }
      }
    }
  }

  /** One key of a batched get and where its lookup stands. */
  private static final class BatchedGet {
    final int index;
    final int ks;
    final byte[] key;
    final KeyspaceFiles files;
    final KeyRecord record = new KeyRecord();

    /**
     * The key index tables that may hold the key, in {@link #findRecord}'s order; made on first
     * use.
     */
    List<KeyspaceFiles.Table> tables;

    long hash;

    /** The next table to probe in {@code tables}. */
    int probe;

    /** The key's record is in {@code record}; its document is next. */
    boolean found;

    /** Its document's block is being read. */
    boolean inDocument;

    boolean done;

    /**
     * The read this key waits for, and what it reads: a key index data block or a document block.
     */
    Fetch fetch;

    KeyspaceFiles.Table table;
    TableReader.BlockSpan span;
    KeyspaceFiles.Segment segment;
    long blockOffset;

    /**
     * A document block longer than its first read: all of it, and how much of it the first read
     * brought.
     */
    byte[] longBlock;

    int longHave;

    BatchedGet(int index, int ks, byte[] key, KeyspaceFiles files) {
      this.index = index;
      this.ks = ks;
      this.key = key;
      this.files = files;
    }
  }

  /**
   * One read of a batch, shared by the keys that need the same block while it is waiting or in
   * flight, and what was made of it. Its buffer is allocated when it is handed over, so a big batch
   * holds buffers for the reads in flight only.
   */
  private static final class Fetch {
    /**
     * Identifies the block: a {@link FetchKey}, or the key itself for the rest of its long block.
     */
    final Object id;

    final io.basaltdb.spi.ReadTarget target;
    final long offset;
    final int size;

    /** The destination, if the key that needs the read brings its own. */
    final ByteBuffer dst;

    /** The read, once handed over. */
    ReadTransport.Read read;

    /** The key index block, checked and parsed once for all the keys that wait for it. */
    TableReader.FetchedBlock table;

    /**
     * The document block, checked and decoded once for all the keys that wait for it (a scan's
     * neighbouring keys share blocks of a key-ordered run); {@link #NOT_DECODED} until the first
     * key takes it, null if it is not a valid block.
     */
    Object doc = NOT_DECODED;

    final List<BatchedGet> waiters = new ArrayList<>(1);

    Fetch(Object id, io.basaltdb.spi.ReadTarget target, long offset, int size, ByteBuffer dst) {
      this.id = id;
      this.target = target;
      this.offset = offset;
      this.size = size;
      this.dst = dst;
    }
  }

  /**
   * An in-place read slower than this waited for the device: the rest of its round goes to the
   * transport.
   */
  private static final long SLOW_IN_PLACE_NANOS = 50_000;

  private static final Object NOT_DECODED = new Object();

  /** Identifies a read within a batch: the same block asked for by several keys is read once. */
  private record FetchKey(Object reader, long offset) {}

  /**
   * The reads of one batch: those waiting to be handed over (in the order keys asked for them),
   * those in flight (at most {@code readQueueDepth}), and those completed that the batch has not
   * taken yet. Owned by the batch's thread, but for {@code completed}, which the transport's
   * threads add to.
   */
  private final class Reads {
    final LinkedHashMap<Object, Fetch> waiting = new LinkedHashMap<>();
    final Map<Object, Fetch> inFlight = new java.util.HashMap<>();
    final LinkedBlockingQueue<Fetch> completed = new LinkedBlockingQueue<>();

    /**
     * The batch's last completed reads, eight times its window, by block: a key that needs one of
     * those blocks after its read has been taken is given it, not read again (rounds read a block
     * once for the keys that reached it together; keys of a pipelined batch reach it at their own
     * pace).
     */
    final Map<Object, Fetch> recent =
        new LinkedHashMap<>(16, 0.75f, false) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<Object, Fetch> eldest) {
            return size() > 8 * window;
          }
        };

    /** Keys given a completed read of {@code recent}, to take next. */
    final java.util.ArrayDeque<BatchedGet> ready = new java.util.ArrayDeque<>();

    /**
     * Makes {@code g} wait for the read {@code id} names: one completed lately (then {@code g} is
     * ready), the one waiting or in flight, else a new one; returns whether it made a new one.
     */
    boolean await(
        BatchedGet g,
        Object id,
        io.basaltdb.spi.ReadTarget target,
        long offset,
        int size,
        ByteBuffer dst) {
      Fetch done = recent.get(id);
      if (done != null) {
        g.fetch = done;
        ready.add(g);
        return false;
      }
      boolean made = false;
      Fetch f = inFlight.get(id);
      if (f == null) {
        f = waiting.get(id);
        if (f == null) {
          f = new Fetch(id, target, offset, size, dst);
          waiting.put(id, f);
          made = true;
        }
      }
      f.waiters.add(g);
      g.fetch = f;
      return made;
    }

    /**
     * Hands over the waiting reads there is room for: each batch keeps up to {@code window} in
     * flight. A read whose bytes the page cache holds is made here, on the batch's thread, from the
     * file's mapping ({@link io.basaltdb.spi.ReadTarget#readInPlace}): a copy, with no hand-off to
     * the transport and back. It completes at once, and counts against the window until the batch
     * takes it, so a batch holds buffers for {@code window} reads at most. A copy that took long
     * enough to have waited for the device (a page fault read its page) sends the rest of the round
     * to the transport, so a batch over data the page cache does not hold waits for one fault per
     * round, not one per read.
     */
    void submit() {
      int room = window - inFlight.size();
      if (room <= 0 || waiting.isEmpty()) return;
      List<ReadTransport.Read> reads = new ArrayList<>(Math.min(room, waiting.size()));
      int inPlace = 0;
      boolean tryInPlace = true;
      for (var it = waiting.values().iterator(); it.hasNext() && reads.size() + inPlace < room; ) {
        Fetch f = it.next();
        it.remove();
        f.read =
            new ReadTransport.Read(
                f.target, f.offset, f.dst != null ? f.dst : ByteBuffer.allocate(f.size));
        inFlight.put(f.id, f);
        f.read.result().whenComplete((n, t) -> completed.add(f));
        if (tryInPlace) {
          long start = System.nanoTime();
          int got;
          try {
            got = f.target.readInPlace(f.offset, f.read.dst().duplicate());
          } catch (RuntimeException
              | Error e) { // reported by the key that waits for it, as a transport's failure is
            f.read.result().completeExceptionally(e);
            inPlace++;
            continue;
          }
          if (got >= 0) {
            inPlace++;
            f.read.result().complete(got);
            tryInPlace = System.nanoTime() - start < SLOW_IN_PLACE_NANOS;
            continue;
          }
        }
        reads.add(f.read);
      }
      stats.batchedReads.add(reads.size() + inPlace);
      stats.batchedReadsInPlace.add(inPlace);
      if (reads.isEmpty()) return;
      stats.batchedReadRounds.increment();
      transport.submit(reads);
    }

    /**
     * The next completed read, waiting for one (not interruptibly, as a point read's I/O is not).
     */
    Fetch next() {
      boolean interrupted = false;
      try {
        while (true) {
          try {
            return completed.take();
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
      } finally {
        if (interrupted) Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Takes {@code g} as far as it goes without a read: through the key index tables (bloom filters
   * and cached blocks) to its record, and to its document if the cache holds it. Returns true when
   * the key is done (its value in {@code out}); false when it waits for a read ({@link
   * Reads#await}).
   */
  private boolean advance(BatchedGet g, Reads r, long now, byte[][] out) {
    if (!g.found && g.tables == null) {
      HashedIndex index = hashedIndex(g.ks);
      if (index != null) { // a hashed keyspace: its record from the trie, in memory
        stats.tableLookups.increment();
        if (!index.get(g.key, g.record, versions.lastSeqno())) return finish(g, null, out);
        g.found = true;
        KeyspaceFiles.Segment s = g.files.segmentFor(g.record.seqno);
        if (s != null && g.record.hint >>> 32 != s.state().segmentId()) {
          index.hintMissed(g.key, g.record.seqno);
        }
      }
    }
    if (!g.found) {
      if (g.tables == null) {
        g.tables = candidateTables(g.files, g.key);
        g.hash = TableReader.keyHash(g.key);
      }
      for (; !g.found; g.probe++) {
        if (g.probe == g.tables.size()) return finish(g, null, out);
        KeyspaceFiles.Table t = g.tables.get(g.probe);
        stats.tableLookups.increment();
        if (!t.reader().mayContainIfFilterCached(g.key, g.hash))
          continue; // key range, a cached filter: no I/O
        TableReader.BlockSpan span = t.reader().dataBlockFor(g.key);
        int found = span == null ? 0 : t.reader().getCached(g.key, g.record, span);
        if (found == TableReader.NOT_CACHED) {
          g.table = t;
          g.span = span;
          r.await(
              g,
              new FetchKey(t.reader(), span.offset()),
              t.reader().file(),
              span.offset(),
              span.readSize(),
              null);
          return false;
        }
        g.found = found == 1;
        if (g.found) break;
      }
    }
    KeyRecord rec = g.record;
    if (rec.tombstone || rec.expiredAt(now)) return finish(g, null, out);
    KeyspaceFiles.Segment s = g.files.segmentFor(rec.seqno);
    if (newerThan(g.ks, s, rec.seqno, 0)) return finish(g, get(g.ks, g.key), out); // as get()
    byte[] hit = s == null ? null : s.reader().cachedValue(rec.seqno, g.key);
    if (hit != null) return finish(g, hit, out);
    long off = s == null ? -1 : s.reader().hintedBlock(rec.seqno, rec.hint);
    boolean stale = false;
    if (off < 0
        && s != null) { // no hint, or one naming a segment collection replaced: the seqno index
      // names the block
      long found = s.reader().hintFor(rec.seqno); // index pages, through the block cache
      if (found >= 0) {
        stale = true;
        rec.hint =
            found; // this key's own copy of its record: a fallback read (take) starts from the
        // block found
        off = s.reader().hintedBlock(rec.seqno, found);
      }
    }
    if (off < 0)
      return finish(g, readDocument(g.files, g.ks, g.key, rec.seqno, rec.hint).value(), out);
    g.inDocument = true;
    g.segment = s;
    g.blockOffset = off;
    if (r.await(
        g,
        new FetchKey(s.reader(), off),
        s.reader().file(),
        off,
        s.reader().blockReadSize(off),
        null)) {
      stats.documentReads.increment();
      if (stale)
        stats.hintMisses
            .increment(); // as a point read counts it: a document read the index had to place
    }
    return false;
  }

  /**
   * Takes the read {@code f} that {@code g} waited for: a key index block (searched for the key:
   * its record, or on to the next table) or a document block (the value; or, for a block longer
   * than the read, a read of the rest; or a point read if the block does not hold the document).
   */
  private void take(BatchedGet g, Fetch f, Reads r, byte[][] out) {
    g.fetch = null;
    int got = awaitRead(f.read);
    if (!g.inDocument) {
      if (f.table == null) f.table = g.table.reader().fetched(g.span, f.read.dst().array(), got);
      g.found = g.table.reader().search(f.table, g.span, g.key, g.record);
      if (!g.found) g.probe++;
      return;
    }
    var reader = g.segment.reader();
    byte[] b = g.longBlock != null ? g.longBlock : f.read.dst().array();
    int have = g.longBlock != null ? g.longHave + got : got;
    int whole = g.longBlock != null ? -1 : reader.longerBlockLength(g.blockOffset, b, have);
    if (whole > 0) { // a document bigger than a block: read the rest of its block
      g.longBlock = Arrays.copyOf(b, whole);
      g.longHave = have;
      if (r.await(
          g,
          g,
          reader.file(),
          g.blockOffset + have,
          whole - have,
          ByteBuffer.wrap(g.longBlock, have, whole - have))) {
        stats.documentReads.increment(); // always: the key is the rest read's own id
      }
      return;
    }
    KeyRecord rec = g.record;
    Document d;
    if (g.longBlock != null) {
      d = reader.findInRead(g.blockOffset, b, have, rec.seqno);
    } else {
      if (f.doc == NOT_DECODED) f.doc = reader.decodeRead(g.blockOffset, b, have);
      d = f.doc == null ? null : reader.findInDecoded(f.doc, rec.seqno);
    }
    finish(g, confirmed(reader, d, g.files, g.ks, g.key, rec.seqno, rec.hint).value(), out);
  }

  private static boolean finish(BatchedGet g, byte[] value, byte[][] out) {
    out[g.index] = value;
    g.done = true;
    return true;
  }

  /**
   * The tables of {@code files} that may hold {@code key}, in the order {@link #findRecord} probes
   * them (level 0 newest first, then per level the one candidate, or under guards the key's guard's
   * tables whose range holds it): the first to hold the key holds its newest record.
   */
  private static List<KeyspaceFiles.Table> candidateTables(KeyspaceFiles files, byte[] key) {
    List<KeyspaceFiles.Table> out = new ArrayList<>();
    if (files.tables.isEmpty()) return out;
    for (int i = 0, n = files.levelCount(0); i < n; i++) out.add(files.table(0, i));
    for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
      if (files.guarded()) {
        int g = files.guardOf(l, key);
        for (int i = 0, n = files.guardTableCount(l, g); i < n; i++) {
          KeyspaceFiles.Table t = files.guardTable(l, g, i);
          if (t.holdsInRange(key)) out.add(t);
        }
        continue;
      }
      KeyspaceFiles.Table t = files.candidate(l, key);
      if (t != null) out.add(t);
    }
    return out;
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
