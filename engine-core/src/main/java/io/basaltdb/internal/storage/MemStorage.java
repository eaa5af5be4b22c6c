package io.basaltdb.internal.storage;

import io.basaltdb.InvalidArgumentException;
import io.basaltdb.StorageException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * An in-memory {@link Storage} for tests that loses unsynced data at a simulated power loss and
 * fails chosen operations, after LevelDB's fault-injection env and Pebble's crashable MemFS
 * (STYLE.md 11).
 *
 * <p>Crash model: each file keeps its durable image (as of its last sync) and the writes and
 * truncates since. Metadata operations (create, rename, delete, mkdirs) are durable at once, as
 * FileStorage's directory fsyncs make them. {@link #crash(CrashMode)} replaces every file by its
 * durable image plus what of its unsynced operations reached the device ({@link MemFile}: in order
 * up to a point, or any subset with writes torn into sectors), kills every handle opened before,
 * and leaves the storage usable for recovery. Randomness comes only from the seed (mixed first, so
 * that neighbouring seeds crash differently), and files are visited in name order, so a seed
 * reproduces a crash exactly.
 *
 * <p>Faults: a {@link FaultInjector} sees every operation before it changes anything and may fail
 * it with an I/O error or "no space left on device". A failed SYNC behaves as on Linux: a random
 * part of the file's unsynced data reached the device, the rest never will (reads still see it),
 * and every later sync of that handle fails. {@link #crashAfterMutations} halts the storage after a
 * given number of mutating operations, so a test can crash at each of thousands of points cheaply.
 *
 * <p>Concurrency: every method of the storage and of its files holds this object's monitor, so
 * reads may run alongside writes from other threads (serialized, never torn). The fault injector is
 * called with the monitor held and must not call back into the storage.
 *
 * <p>Invariants:
 *
 * <ol>
 *   <li>A handle works only while it is not closed and its epoch equals {@code epoch}.
 *   <li>Every file's and directory's parent directory is in {@code dirs} ("" always is).
 *   <li>While {@code halted}, every operation throws and nothing changes, until {@link #crash}.
 *   <li>{@code mutations} counts only mutating operations that completed.
 * </ol>
 */
public final class MemStorage implements Storage {
  /** The operations a {@link FaultInjector} sees. */
  public enum Op {
    CREATE,
    OPEN,
    READ,
    WRITE,
    TRUNCATE,
    PREALLOCATE,
    SYNC,
    RENAME,
    DELETE,
    MKDIRS,
    LIST;

    /** True for the operations that change state and count toward {@link #crashAfterMutations}. */
    public boolean mutating() {
      return this != OPEN && this != READ && this != LIST;
    }
  }

  /** What an injected fault does to an operation. */
  public enum Fault {
    NONE,
    IO_ERROR,
    NO_SPACE
  }

  /**
   * Decides, before an operation changes anything, whether it fails. {@code name} is the file or
   * directory operated on (for RENAME, the target).
   */
  @FunctionalInterface
  public interface FaultInjector {
    Fault check(Op op, String name);
  }

  /** Which unsynced operations survive a {@link #crash(CrashMode)}. */
  public enum CrashMode {
    /** Every file goes back to its last synced image. */
    KEEP_NONE,
    /** Every unsynced operation reached the device. */
    KEEP_ALL,
    /**
     * What a real device may hold, drawn for each file: half of the time a prefix of its unsynced
     * operations (write-back in order), the last one kept, if a write, cut short at a random byte
     * half of the time; otherwise any subset of them (reordered write-back), each kept write torn
     * half of the time into a random subset of its 512-byte sectors, the file's size sometimes
     * covering the lost sectors (they read as their old bytes, or zeros past the old end).
     */
    RANDOM
  }

  private final long seed;

  // Guarded by this.
  /** Draws every random choice of crashes and failed syncs. */
  private final Random random;

  private final TreeMap<String, MemFile> files = new TreeMap<>();

  /** The files' total size limit ({@link #setCapacity}); guarded by this. */
  private long capacity = Long.MAX_VALUE;

  private final TreeSet<String> dirs = new TreeSet<>(List.of(""));

  /** Incremented by every crash; a handle from an older epoch is dead. */
  private long epoch;

  private FaultInjector injector;

  /** Locks held (process locks die with the process, so a crash releases them). */
  private final Set<String> locks = new HashSet<>();

  private long mutations;

  /** Mutating operations still allowed before the halt; negative when disarmed. */
  private long crashBudget = -1;

  private boolean halted;

  /**
   * An empty storage whose crashes draw from {@code seed}. The seed is mixed before it seeds a
   * {@link Random}: the first values of {@code new Random(s)} for neighbouring {@code s} are nearly
   * equal (its first nextBoolean() is the same for every s from 1 to 60), so tests that use seed +
   * n for crash point n would all crash the same way.
   */
  public MemStorage(long seed) {
    this.seed = seed;
    this.random = new Random(new SplittableRandom(seed).nextLong());
  }

  public long seed() {
    return seed;
  }

  @Override
  public synchronized StorageFile create(String name) {
    StorageErrors.checkName(name, false);
    enter(Op.CREATE, name);
    if (files.containsKey(name) || dirs.contains(name)) {
      throw new StorageException(
          "create of " + describe(name) + " failed: the file already exists");
    }
    requireDirectory("create", name, StorageErrors.parent(name));
    MemFile file = new MemFile();
    files.put(name, file);
    mutated();
    return new MemStorageFile(this, name, file, epoch);
  }

  @Override
  public synchronized StorageFile open(String name) {
    StorageErrors.checkName(name, false);
    enter(Op.OPEN, name);
    return new MemStorageFile(this, name, existing("open", name), epoch);
  }

  @Override
  public synchronized boolean exists(String name) {
    StorageErrors.checkName(name, false);
    enter(null, name);
    return files.containsKey(name) || dirs.contains(name);
  }

  @Override
  public synchronized List<String> list(String dir) {
    StorageErrors.checkName(dir, true);
    enter(Op.LIST, dir);
    List<String> names = new ArrayList<>();
    String prefix = dir.isEmpty() ? "" : dir + "/";
    for (String name : files.tailMap(prefix, true).keySet()) {
      if (!name.startsWith(prefix)) {
        break;
      }
      if (name.indexOf('/', prefix.length()) < 0) {
        names.add(name.substring(prefix.length()));
      }
    }
    return names;
  }

  @Override
  public synchronized void delete(String name) {
    StorageErrors.checkName(name, false);
    enter(Op.DELETE, name);
    if (dirs.contains(name)) {
      String prefix = name + "/";
      String next = files.ceilingKey(prefix);
      String nextDir = dirs.ceiling(prefix);
      if ((next != null && next.startsWith(prefix))
          || (nextDir != null && nextDir.startsWith(prefix))) {
        throw new StorageException(
            "delete of " + describe(name) + " failed: the directory is not empty");
      }
      dirs.remove(name);
    }
    files.remove(name);
    mutated();
  }

  @Override
  public synchronized void rename(String from, String to) {
    StorageErrors.checkName(from, false);
    StorageErrors.checkName(to, false);
    enter(Op.RENAME, to);
    String what = "rename of " + describe(from) + " to " + describe(to);
    MemFile file = files.get(from);
    if (file == null) {
      throw new StorageException(what + " failed: " + describe(from) + " does not exist");
    }
    if (dirs.contains(to)) {
      throw new StorageException(what + " failed: the target is a directory");
    }
    requireDirectory("rename", to, StorageErrors.parent(to));
    files.remove(from);
    files.put(to, file);
    mutated();
  }

  @Override
  public synchronized void mkdirs(String dir) {
    StorageErrors.checkName(dir, true);
    enter(Op.MKDIRS, dir);
    for (String d = dir; !d.isEmpty(); d = StorageErrors.parent(d)) {
      if (files.containsKey(d)) {
        throw new StorageException(
            "mkdirs of " + describe(dir) + " failed: " + describe(d) + " is a file");
      }
    }
    for (String d = dir; !d.isEmpty(); d = StorageErrors.parent(d)) {
      dirs.add(d);
    }
    mutated();
  }

  @Override
  public String describe(String name) {
    return "memory:" + name;
  }

  /**
   * Simulates a power loss that keeps a random subset of the unsynced operations ({@link
   * CrashMode#RANDOM}).
   */
  public void crash() {
    crash(CrashMode.RANDOM);
  }

  /**
   * Simulates a power loss and the restart after it: every file becomes what {@code mode} says
   * reached the device, every handle opened before fails with "closed by a simulated crash", a halt
   * from {@link #crashAfterMutations} is lifted (and disarmed). The fault injector stays installed.
   */
  public synchronized void crash(CrashMode mode) {
    epoch++;
    locks.clear();
    halted = false;
    crashBudget = -1;
    for (MemFile file : files.values()) { // name order, so a seed reproduces the crash
      file.crash(mode, random);
    }
  }

  /**
   * Limits the files' total size (their sizes summed, preallocation included) to {@code bytes}: a
   * write or preallocation that would pass it fails as a full disk does, and {@link #usableSpace}
   * reports what is left. {@link Long#MAX_VALUE} (the default): no limit.
   */
  public synchronized void setCapacity(long bytes) {
    capacity = bytes;
  }

  @Override
  public synchronized long usableSpace() {
    return capacity == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, capacity - used());
  }

  /** The files' sizes summed, preallocation included. */
  public synchronized long usedBytes() {
    return used();
  }

  private long used() {
    long n = 0;
    for (MemFile f : files.values()) n += f.size();
    return n;
  }

  /**
   * Throws a full disk's exception if growing a file by {@code growth} bytes would pass the
   * capacity.
   */
  void checkGrowth(Op op, String name, long growth) {
    if (growth > 0 && capacity != Long.MAX_VALUE && used() + growth > capacity) {
      throw failure(op, name, Fault.NO_SPACE);
    }
  }

  /** Installs (or, with null, removes) the fault injector. */
  public synchronized void setFaultInjector(FaultInjector injector) {
    this.injector = injector;
  }

  /**
   * After {@code n} more successful mutating operations ({@link Op#mutating()}), halts: that
   * operation and every later one throws StorageException("simulated crash ...") until {@link
   * #crash} is called.
   */
  public synchronized void crashAfterMutations(long n) {
    if (n < 0) {
      throw new InvalidArgumentException("crashAfterMutations needs n >= 0, got " + n);
    }
    crashBudget = n;
  }

  /** Successful mutating operations since this storage was made. */
  public synchronized long mutationCount() {
    return mutations;
  }

  /** A copy of the current contents of a file (what a read would see). */
  public synchronized byte[] contents(String name) {
    return existing("contents", name).contents();
  }

  /** The size of a file as of its last sync (what KEEP_NONE would leave). */
  public synchronized long durableSize(String name) {
    return existing("durableSize", name).durableSize();
  }

  /**
   * Inverts the byte at {@code offset} of a file in its durable image and in its current view (a
   * bit rot that survives crashes).
   */
  public synchronized void flipByte(String name, long offset) {
    if (offset < 0 || !existing("flipByte", name).flipByte(offset)) {
      throw new InvalidArgumentException("offset " + offset + " is outside " + describe(name));
    }
  }

  /** The name and current contents of every file, for tests that check nothing changed. */
  public synchronized java.util.SortedMap<String, byte[]> snapshot() {
    java.util.TreeMap<String, byte[]> out = new java.util.TreeMap<>();
    for (String name : files.keySet()) out.put(name, contents(name));
    return out;
  }

  @Override
  public synchronized String toString() {
    return "MemStorage(seed=" + seed + ", files=" + files.keySet() + ")";
  }

  // ---- for MemStorageFile; the caller holds the monitor ----

  /**
   * Lets an operation proceed or throws: the storage is halted, the crash budget is spent, or the
   * injector fails it. {@code op} is null for operations no injector sees (exists, size).
   */
  void enter(Op op, String name) {
    Fault fault = admit(op, name);
    if (fault != Fault.NONE) {
      throw failure(op, name, fault);
    }
  }

  /**
   * Throws if the storage is halted or the crash budget is spent, else returns what the injector
   * says about the operation (NONE for a null {@code op}).
   */
  Fault admit(Op op, String name) {
    if (halted) {
      throw new StorageException(
          "simulated crash: the storage halted after crashAfterMutations; "
              + (op == null ? "access to " : op.name().toLowerCase() + " of ")
              + describe(name)
              + " refused");
    }
    if (op == null) {
      return Fault.NONE;
    }
    if (op.mutating() && crashBudget == 0) {
      halted = true;
      throw new StorageException(
          "simulated crash: the storage halted before "
              + op.name().toLowerCase()
              + " of "
              + describe(name)
              + " after "
              + mutations
              + " mutations");
    }
    return injector == null ? Fault.NONE : injector.check(op, name);
  }

  /** The exception for an injected fault. */
  StorageException failure(Op op, String name, Fault fault) {
    String what = op.name().toLowerCase() + " of " + describe(name);
    return fault == Fault.NO_SPACE
        ? StorageErrors.noSpace(what, null)
        : new StorageException(what + " failed: injected I/O error");
  }

  /** Counts a successful mutating operation. */
  void mutated() {
    mutations++;
    if (crashBudget > 0) {
      crashBudget--;
    }
  }

  long epoch() {
    return epoch;
  }

  Random random() {
    return random;
  }

  private MemFile existing(String what, String name) {
    MemFile file = files.get(StorageErrors.checkName(name, false));
    if (file == null) {
      throw new StorageException(
          what + " of " + describe(name) + " failed: the file does not exist");
    }
    return file;
  }

  private void requireDirectory(String what, String name, String dir) {
    if (!dirs.contains(dir)) {
      throw new StorageException(
          what
              + " of "
              + describe(name)
              + " failed: directory "
              + describe(dir)
              + " does not exist");
    }
  }

  @Override
  public synchronized AutoCloseable lock(String name) {
    if (!locks.add(name)) {
      throw new StorageException(
          "the store in "
              + describe("")
              + " is already open (lock "
              + name
              + " is held); close the other store first");
    }
    long at = epoch;
    return () -> {
      synchronized (MemStorage.this) {
        if (epoch == at) { // a crash released every lock; a newer holder may have this one now
          locks.remove(name);
        }
      }
    };
  }
}
