package io.basaltdb.internal.engine.hashed;

import io.basaltdb.CorruptionException;
import io.basaltdb.internal.engine.base.Notifier;
import io.basaltdb.internal.engine.version.FileNames;
import io.basaltdb.internal.hashindex.LazyTrie;
import io.basaltdb.internal.hashindex.TrieSpace;
import io.basaltdb.internal.storage.Storage;
import io.basaltdb.internal.storage.StorageFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * A hashed keyspace's trie checkpoint (docs/format.md, "Trie checkpoints"; seed 004 sections 3.1
 * and 3.4): the lazy-trie's logical space written page by page to {@code trie/space}, updated in
 * place with only the pages a checkpoint finds dirty, which first go to {@code trie/double-write}.
 *
 * <pre>
 * slot   = data (4080 bytes) | crc32c u32 (of data, pageNo, seqno) | pageNo u32 | seqno u64
 * space  = meta slot | slot of page 0 | slot of page 1 | ...      (slot k at k * 4096)
 * double-write = header slot | slot*                              (the dirty pages, then the meta)
 * meta   = magic u64 | version u32 | keyspace u32 | layout u32 | pad u32 | top u64 | records u64
 *          | newestTombstone u64 (the newest one it made garbage, 0: none)
 * header = magic u64 | version u32 | keyspace u32 | layout u32 | count u32 | newestTombstone u64
 *          | digest u32 (crc32c of the slots' crcs)
 * </pre>
 *
 * The meta's pageNo is {@link #META}, the header's {@link #HEADER}; the seqno of every slot is the
 * checkpoint's (the manifest's flushed seqno when it was taken). Integers are little-endian.
 *
 * <h2>Writing one (under the trie's writer lock)</h2>
 *
 * <ol>
 *   <li>{@link #writeDoubleWrite}: dirty pages past the end of the checkpoint on disk (the space
 *       grew) go in place at once, synced: that checkpoint does not read them. The other dirty
 *       pages and the new meta go to the double-write file, which is synced, with its directory. A
 *       crash during this step leaves a file that fails its digest and is ignored: the space still
 *       holds the previous checkpoint, whole.
 *   <li>The caller's commit makes the tombstones flushed since the previous checkpoint garbage (the
 *       header names the newest: an open applies the double-write file only if the manifest's purge
 *       seqno reached it, so a checkpoint whose tombstones are still live is never used).
 *   <li>{@link #writeInPlace}: the same slots at their places in the space file, synced, meta last;
 *       then the double-write file is deleted and the dirty marks cleared. A crash here leaves the
 *       double-write file, which the next open applies again.
 * </ol>
 *
 * A failure after step 1 without a crash keeps the dirty marks and the double-write file (an open
 * may need it), and the next checkpoint rewrites the whole space instead. Should pages of the
 * unfinished checkpoint still reach the space without a usable double-write file, their seqno is
 * above the meta's, and the open sets the space aside.
 *
 * <p>{@link #writeWhole}, when at least half the pages are dirty: every page and the meta to a new
 * file, synced and renamed over the space before the commit; its meta names the newest tombstone it
 * covers, and an open uses it only once the purge seqno reached that.
 *
 * <p>Thread-safety: stateless; callers hold the index's writer lock, or run before any writer.
 */
public final class TrieCheckpoint {
  static final long MAGIC = 0x5443_5045_4952_5442L; // "BTRIEPCT" little-endian
  static final int VERSION = 1;
  static final int SLOT = 4096;
  static final int PAGE = TrieSpace.PAGE;
  static final int META = -1;
  static final int HEADER = -2;

  /** How a load's note begins when it applied a double-write file. */
  static final String APPLIED = "double-write file applied";

  /** Slots read or written per storage call. */
  private static final int BATCH = 256;

  private TrieCheckpoint() {}

  /** What {@link #writeDoubleWrite} wrote and {@link #writeInPlace} writes again. */
  public record Pending(int ks, long seqno, long[] pages, byte[] meta, long bytes) {}

  /**
   * Step 1: the trie's dirty pages and its meta as of {@code seqno} to the double-write file,
   * synced, with its directory.
   */
  public static Pending writeDoubleWrite(
      Storage storage, HashedIndex index, int layout, long seqno, long newestTombstone) {
    int ks = index.keyspace();
    LazyTrie trie = index.trie();
    TrieSpace space = trie.space();
    long[] dirty = space.dirtyPages();
    // Pages at or past the space's end in the checkpoint on disk are no part of it: they go in
    // place at once. The others go through the double-write file.
    long held = index.checkpointPages();
    int split = 0;
    while (split < dirty.length && dirty[split] < held) split++;
    long[] pages = java.util.Arrays.copyOf(dirty, split);
    long freshBytes =
        writeSlots(
            storage,
            ks,
            java.util.Arrays.copyOfRange(dirty, split, dirty.length),
            space,
            seqno,
            null);
    byte[] meta = meta(index, layout, seqno, newestTombstone);
    storage.mkdirs(FileNames.trieDir(ks));
    String name = FileNames.trieDoubleWrite(ks);
    StorageFile f = storage.create(name);
    CRC32C digest = new CRC32C();
    long bytes;
    try {
      byte[] buf = new byte[SLOT * BATCH];
      long at = SLOT;
      int n = 0;
      for (int i = 0; i <= pages.length; i++) {
        if (i < pages.length) {
          space.copyPage(pages[i], buf, n * SLOT);
          seal(buf, n * SLOT, (int) pages[i], seqno);
        } else {
          System.arraycopy(meta, 0, buf, n * SLOT, SLOT);
        }
        digest.update(buf, n * SLOT + PAGE, 4);
        if (++n == BATCH || i == pages.length) {
          f.write(at, ByteBuffer.wrap(buf, 0, n * SLOT));
          at += (long) n * SLOT;
          n = 0;
        }
      }
      byte[] header = new byte[SLOT];
      ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
      h.putLong(MAGIC).putInt(VERSION).putInt(ks).putInt(layout).putInt(pages.length + 1);
      h.putLong(newestTombstone).putInt((int) digest.getValue());
      seal(header, 0, HEADER, seqno);
      f.write(0, ByteBuffer.wrap(header));
      f.sync();
      bytes = at;
    } finally {
      f.close();
    }
    storage.syncDirectory(FileNames.trieDir(ks));
    return new Pending(ks, seqno, pages, meta, bytes + freshBytes);
  }

  /**
   * Step 3: the pending slots in place, synced, meta last; then the double-write file is deleted
   * and the trie's dirty marks cleared. Returns the bytes written.
   */
  public static long writeInPlace(Storage storage, HashedIndex index, Pending p) {
    TrieSpace space = index.trie().space();
    long bytes = writeSlots(storage, p.ks, p.pages, space, p.seqno, p.meta);
    storage.delete(FileNames.trieDoubleWrite(p.ks));
    space.clearDirty();
    index.checkpointPages(space.pages());
    return bytes;
  }

  /**
   * Writes {@code pages} of {@code space} at their places in the space file (runs of consecutive
   * pages in one write), synced; then {@code meta}, if not null, synced. Returns the bytes written.
   */
  private static long writeSlots(
      Storage storage, int ks, long[] pages, TrieSpace space, long seqno, byte[] meta) {
    if (pages.length == 0 && meta == null) return 0;
    storage.mkdirs(FileNames.trieDir(ks));
    String name = FileNames.trieSpace(ks);
    boolean fresh = !storage.exists(name);
    StorageFile f = fresh ? storage.create(name) : storage.open(name);
    try {
      writePages(f, pages, space, seqno);
      f.sync();
      if (meta != null) {
        f.write(0, ByteBuffer.wrap(meta));
        f.sync();
      }
    } finally {
      f.close();
    }
    if (fresh) storage.syncDirectory(FileNames.trieDir(ks));
    return (long) (pages.length + (meta == null ? 0 : 1)) * SLOT;
  }

  /** The meta slot of {@code index}'s checkpoint as of {@code seqno}. */
  private static byte[] meta(HashedIndex index, int layout, long seqno, long newestTombstone) {
    byte[] meta = new byte[SLOT];
    ByteBuffer m = ByteBuffer.wrap(meta).order(ByteOrder.LITTLE_ENDIAN);
    m.putLong(MAGIC).putInt(VERSION).putInt(index.keyspace()).putInt(layout).putInt(0);
    m.putLong(index.trie().space().top()).putLong(index.trie().size()).putLong(newestTombstone);
    seal(meta, 0, META, seqno);
    return meta;
  }

  /**
   * Whether a checkpoint now should rewrite the whole space ({@link #writeWhole}) rather than
   * double-write its dirty pages: when at least half the pages are dirty (the usual case under
   * updates, whose hashes land all over the space), one write of every page costs less than two of
   * the dirty ones; when no checkpoint is on disk; and after a checkpoint failed past its
   * double-write file.
   */
  public static boolean wholeIsCheaper(Storage storage, HashedIndex index) {
    TrieSpace space = index.trie().space();
    return index.checkpointPages() == 0
        || 2 * space.dirtyCount() >= space.pages()
        // a failed checkpoint's double-write file: kept for the open, and this one must not
        // write pages it holds in place (the whole rewrite supersedes both)
        || storage.exists(FileNames.trieDoubleWrite(index.keyspace()));
  }

  /**
   * Writes every page and the meta as of {@code seqno} to a new space file, synced, and renames it
   * over the old one (directory synced); forgets the dirty marks. Returns the bytes written. Its
   * meta names {@code newestTombstone}: until the caller's commit makes those tombstones garbage
   * (purge seqno at or above it), an open does not use it (a crash between the rename and the
   * commit costs a replay of the whole log, never a tombstone left live forever).
   */
  public static long writeWhole(
      Storage storage, HashedIndex index, int layout, long seqno, long newestTombstone) {
    int ks = index.keyspace();
    TrieSpace space = index.trie().space();
    storage.mkdirs(FileNames.trieDir(ks));
    String temp = FileNames.trieSpace(ks) + ".tmp";
    if (storage.exists(temp)) storage.delete(temp); // of a rewrite that failed
    StorageFile f = storage.create(temp);
    long pages = space.pages();
    try {
      writePages(f, java.util.stream.LongStream.range(0, pages).toArray(), space, seqno);
      f.write(0, ByteBuffer.wrap(meta(index, layout, seqno, newestTombstone)));
      f.sync();
    } catch (RuntimeException | Error e) {
      f.close();
      storage.delete(temp);
      throw e;
    }
    f.close();
    storage.rename(temp, FileNames.trieSpace(ks));
    storage.syncDirectory(FileNames.trieDir(ks));
    String dw = FileNames.trieDoubleWrite(ks);
    if (storage.exists(dw)) storage.delete(dw); // of a failed checkpoint: the new space covers it
    space.clearDirty();
    index.checkpointPages(pages);
    return (pages + 1) * SLOT;
  }

  /**
   * Writes {@code pages} (ascending) of {@code space} to their slots in {@code f}, sealed with
   * {@code seqno}: each run of consecutive pages in one write. Unsynced.
   */
  private static void writePages(StorageFile f, long[] pages, TrieSpace space, long seqno) {
    byte[] buf = new byte[SLOT * BATCH];
    for (int i = 0; i < pages.length; ) {
      int n = 0;
      do {
        space.copyPage(pages[i + n], buf, n * SLOT);
        seal(buf, n * SLOT, (int) pages[i + n], seqno);
        n++;
      } while (i + n < pages.length && n < BATCH && pages[i + n] == pages[i] + n);
      f.write((pages[i] + 1) * SLOT, ByteBuffer.wrap(buf, 0, n * SLOT));
      i += n;
    }
  }

  /** Writes the trailer of the slot at {@code at}: checksum, page number, seqno. */
  private static void seal(byte[] buf, int at, int pageNo, long seqno) {
    ByteBuffer b = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(at + PAGE + 4, pageNo);
    b.putLong(at + PAGE + 8, seqno);
    b.putInt(at + PAGE, crc(buf, at));
  }

  private static int crc(byte[] buf, int at) {
    CRC32C c = new CRC32C();
    c.update(buf, at, PAGE);
    c.update(buf, at + PAGE + 4, 12);
    return (int) c.getValue();
  }

  /** The slot's page number, or throws if its checksum fails. */
  private static int check(byte[] buf, int at, String name, long pos) {
    ByteBuffer b = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt(at + PAGE) != crc(buf, at)) throw corrupt(name, pos, "slot checksum");
    return b.getInt(at + PAGE + 4);
  }

  private static long seqnoOf(byte[] buf, int at) {
    return ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN).getLong(at + PAGE + 8);
  }

  /** What {@link #load} found: a usable checkpoint, or why there is none. */
  public record Loaded(long seqno, long records, boolean usable, String note) {}

  /**
   * Loads keyspace {@code index}'s checkpoint into its empty trie, first applying a complete,
   * committed double-write file. The checkpoint is usable only if its seqno is at or below the
   * manifest's flushed seqno (else it holds writes a rollback undid) and at or above the keyspace's
   * purge seqno (else it may miss deletions whose tombstones are garbage).
   *
   * @throws CorruptionException if the checkpoint is damaged; the trie is then partly loaded and
   *     must be replaced
   */
  static Loaded load(
      Storage storage, HashedIndex index, int layout, long flushedSeqno, long purgeSeqno) {
    int ks = index.keyspace();
    String space = FileNames.trieSpace(ks);
    String note = applyDoubleWrite(storage, ks, layout, flushedSeqno, purgeSeqno);
    deleteStrangers(storage, ks);
    if (!storage.exists(space)) return new Loaded(-1, 0, false, note + "no checkpoint");
    StorageFile f = storage.openForReading(space);
    try {
      long size = f.size();
      byte[] meta = read(f, 0, SLOT, space);
      if (check(meta, 0, space, 0) != META) throw corrupt(space, 0, "no meta slot");
      ByteBuffer m = ByteBuffer.wrap(meta).order(ByteOrder.LITTLE_ENDIAN);
      if (m.getLong(0) != MAGIC || m.getInt(8) != VERSION) throw corrupt(space, 0, "not a trie");
      if (m.getInt(12) != ks || m.getInt(16) != layout)
        throw corrupt(space, 0, "checkpoint of another keyspace or layout");
      long seqno = seqnoOf(meta, 0);
      long top = m.getLong(24), records = m.getLong(32), newestTombstone = m.getLong(40);
      if (seqno > flushedSeqno || seqno < purgeSeqno || newestTombstone > purgeSeqno) {
        discard(storage, ks); // a rollback's abandoned trie, or one too old: never to be used
        return new Loaded(
            seqno,
            0,
            false,
            note
                + "checkpoint at seqno "
                + seqno
                + " (tombstones to "
                + newestTombstone
                + ") outside [purge "
                + purgeSeqno
                + ", flushed "
                + flushedSeqno
                + "]");
      }
      if (top < 64 || top > TrieSpace.MAX_BYTES || (top & 7) != 0 || records < 0)
        throw corrupt(space, 0, "meta fields");
      long pages = (top + PAGE - 1) / PAGE;
      if ((pages + 1) * SLOT > size) throw corrupt(space, size, "space shorter than its pages");
      index.trie().beginLoad(top);
      byte[] buf = new byte[SLOT * BATCH];
      for (long p = 0; p < pages; p += BATCH) {
        int n = (int) Math.min(BATCH, pages - p);
        long pos = (p + 1) * SLOT;
        readInto(f, pos, buf, n * SLOT, space);
        for (int i = 0; i < n; i++) {
          if (check(buf, i * SLOT, space, pos + (long) i * SLOT) != p + i)
            throw corrupt(space, pos + (long) i * SLOT, "slot of another page");
          if (seqnoOf(buf, i * SLOT) > seqno)
            throw corrupt(space, pos + (long) i * SLOT, "page of an unfinished checkpoint");
          index.trie().space().loadPage(p + i, buf, i * SLOT);
        }
      }
      try {
        index.trie().finishLoad(records);
      } catch (IllegalStateException e) {
        throw corrupt(space, 0, e.getMessage());
      }
      index.checkpointPages(pages);
      return new Loaded(seqno, records, true, note);
    } finally {
      f.close();
    }
  }

  /**
   * Deletes keyspace {@code ks}'s checkpoint, unusable or damaged: the open replays the whole log
   * and the next checkpoint writes every page afresh. (Kept, a space newer than the manifest, as
   * after a rollback, would become usable once the flushed seqno passed its own.)
   */
  static void discard(Storage storage, int ks) {
    String space = FileNames.trieSpace(ks);
    if (storage.exists(space)) storage.delete(space);
  }

  /** Deletes what else the trie directory holds (full trie images of an earlier version). */
  private static void deleteStrangers(Storage storage, int ks) {
    String dir = FileNames.trieDir(ks);
    if (!storage.exists(dir)) return;
    for (String n : storage.list(dir)) {
      String name = n.contains("/") ? n : dir + "/" + n;
      if (!name.equals(FileNames.trieSpace(ks))) storage.delete(name);
    }
  }

  /**
   * Applies the double-write file in place if it is whole, of this keyspace, committed and not
   * newer than the manifest; deletes it either way. Returns a note of what it did ("" if none).
   */
  private static String applyDoubleWrite(
      Storage storage, int ks, int layout, long flushedSeqno, long purgeSeqno) {
    String dw = FileNames.trieDoubleWrite(ks);
    if (!storage.exists(dw)) return "";
    String why = null;
    long seqno = -1;
    int count = 0;
    StorageFile f = storage.openForReading(dw);
    try {
      long size = f.size();
      byte[] header = size >= SLOT ? read(f, 0, SLOT, dw) : null;
      ByteBuffer h = header == null ? null : ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
      if (header == null
          || h.getInt(PAGE) != crc(header, 0)
          || h.getInt(PAGE + 4) != HEADER
          || h.getLong(0) != MAGIC
          || h.getInt(8) != VERSION) {
        why = "incomplete";
      } else if (h.getInt(12) != ks || h.getInt(16) != layout) {
        why = "of another keyspace or layout";
      } else if (seqnoOf(header, 0) < spaceSeqno(storage, ks)) {
        why = "older than the space (a whole rewrite replaced it)";
      } else {
        count = h.getInt(20);
        long newestTombstone = h.getLong(24);
        seqno = seqnoOf(header, 0);
        if (count < 1 || ((long) count + 1) * SLOT > size) {
          why = "incomplete";
        } else if (seqno > flushedSeqno) {
          why = "newer than the manifest (seqno " + seqno + ")";
        } else if (newestTombstone > purgeSeqno) {
          why = "never committed (its tombstones are still live)";
        } else {
          CRC32C digest = new CRC32C(); // pass 1: every slot whole and of this checkpoint
          for (long i = 0; i < count && why == null; i += BATCH) {
            int n = (int) Math.min(BATCH, count - i);
            byte[] buf = read(f, (i + 1) * SLOT, n * SLOT, dw);
            ByteBuffer b = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
            for (int j = 0; j < n; j++) {
              int pageNo = b.getInt(j * SLOT + PAGE + 4);
              if (b.getInt(j * SLOT + PAGE) != crc(buf, j * SLOT)
                  || seqnoOf(buf, j * SLOT) != seqno
                  || (pageNo < 0 && pageNo != META)) {
                why = "incomplete";
                break;
              }
              digest.update(buf, j * SLOT + PAGE, 4);
            }
          }
          if (why == null && (int) digest.getValue() != h.getInt(32)) why = "incomplete";
        }
      }
      if (why == null) applySlots(storage, ks, f, count, dw); // pass 2
    } finally {
      f.close();
    }
    if (why != null)
      Notifier.LOG.info("hashed keyspace {}: double-write file set aside: {}", ks, why);
    storage.delete(dw);
    return why == null
        ? APPLIED + " (" + count + " slots); "
        : "double-write file set aside: " + why + "; ";
  }

  /** The seqno of the space file's meta, or -1 if it has none that checks. */
  private static long spaceSeqno(Storage storage, int ks) {
    String space = FileNames.trieSpace(ks);
    if (!storage.exists(space)) return -1;
    StorageFile f = storage.openForReading(space);
    try {
      if (f.size() < SLOT) return -1;
      byte[] meta = read(f, 0, SLOT, space);
      ByteBuffer m = ByteBuffer.wrap(meta).order(ByteOrder.LITTLE_ENDIAN);
      if (m.getInt(PAGE) != crc(meta, 0) || m.getInt(PAGE + 4) != META) return -1;
      return seqnoOf(meta, 0);
    } finally {
      f.close();
    }
  }

  /** Writes the double-write file's {@code count} slots at their places in the space, synced. */
  private static void applySlots(
      Storage storage, int ks, StorageFile dwFile, int count, String dw) {
    String space = FileNames.trieSpace(ks);
    boolean fresh = !storage.exists(space);
    StorageFile s = fresh ? storage.create(space) : storage.open(space);
    try {
      for (long i = 0; i < count; i += BATCH) {
        int n = (int) Math.min(BATCH, count - i);
        byte[] buf = read(dwFile, (i + 1) * SLOT, n * SLOT, dw);
        ByteBuffer b = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
        for (int j = 0; j < n; j++) {
          int pageNo = b.getInt(j * SLOT + PAGE + 4);
          long pos = pageNo == META ? 0 : ((long) pageNo + 1) * SLOT;
          s.write(pos, ByteBuffer.wrap(buf, j * SLOT, SLOT));
        }
      }
      s.sync();
    } finally {
      s.close();
    }
    if (fresh) storage.syncDirectory(FileNames.trieDir(ks));
  }

  private static byte[] read(StorageFile f, long pos, int len, String name) {
    byte[] buf = new byte[len];
    readInto(f, pos, buf, len, name);
    return buf;
  }

  private static void readInto(StorageFile f, long pos, byte[] buf, int len, String name) {
    ByteBuffer b = ByteBuffer.wrap(buf, 0, len);
    while (b.hasRemaining()) {
      int n = f.read(pos + b.position(), b);
      if (n <= 0) throw corrupt(name, pos, "ends early");
    }
  }

  private static CorruptionException corrupt(String name, long at, String what) {
    return new CorruptionException(name, at, "trie checkpoint: " + what);
  }
}
