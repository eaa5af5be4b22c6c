package io.basaltdb.internal.storage;

import io.basaltdb.StorageException;
import io.basaltdb.spi.NativeFileCalls;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * The real {@link Storage}: files under a root directory, read and written through {@link
 * FileChannel}.
 *
 * <p>Durability: every metadata operation (create, rename, delete, mkdirs) fsyncs the directory
 * whose entries it changed before it returns (opening the directory read-only and calling {@code
 * force}), so a crash afterwards cannot undo it. File contents are durable after {@link
 * StorageFile#sync()}.
 *
 * <p>{@link #list} returns regular files only; subdirectories have fixed names the engine knows.
 *
 * <p>Thread-safety: safe for concurrent use; the object holds only its immutable root and native
 * calls, and the process-wide set of held locks is a concurrent set.
 */
public final class FileStorage implements Storage {
  /**
   * The first {@link NativeFileCalls} provider on the class path, looked up at its first call:
   * binding engine-io's (jnr-ffi generates its classes) took 150 ms of a store's 550 ms open, and
   * its only call, {@code fallocate}, comes with the first log segment, on the flusher's thread. A
   * store opened by a YCSB phase, whose run time counts its open, no longer waits for it.
   */
  private static final NativeFileCalls NATIVE_CALLS = new LazyNativeCalls();

  /**
   * Looks the provider up once, at the first call; none: {@code allocate} answers false (the
   * fallback).
   */
  private static final class LazyNativeCalls implements NativeFileCalls {
    /**
     * Initialised on first use (class holder idiom: the JVM runs the lookup once, thread-safely).
     */
    private static final class Found {
      static final NativeFileCalls CALLS = findNativeCalls();
    }

    @Override
    public String name() {
      return Found.CALLS == null ? "none" : Found.CALLS.name();
    }

    @Override
    public boolean allocate(Path file, long length) throws IOException {
      return Found.CALLS != null && Found.CALLS.allocate(file, length);
    }
  }

  /**
   * Lock files this process holds (real paths), shared by every FileStorage: a concurrent set,
   * added to before a lock file is opened and removed from after its channel is closed.
   */
  private static final Set<Path> HELD_LOCKS = ConcurrentHashMap.newKeySet();

  /**
   * Directory fsyncs done by this process, for tests that check metadata durability; a LongAdder.
   */
  static final LongAdder DIRECTORY_SYNCS = new LongAdder();

  private final Path root;

  /** The file system holding root, for {@link #usableSpace}; null if it could not be found. */
  private final java.nio.file.FileStore fileStore;

  private final NativeFileCalls nativeCalls;

  /** Whether files are read around the page cache (O_DIRECT). */
  private final boolean directReads;

  /**
   * Whether buffered reads copy from a memory mapping of the file where they can ({@link
   * FileStorageFile}).
   */
  private final boolean mappedReads;

  /**
   * Where direct reads take their aligned buffers: the store's pool once it opens ({@link
   * #useReadBuffers}).
   */
  private final DirectReads.Buffers buffers = new DirectReads.Buffers();

  /**
   * The whole blocks a write must cover to go around the page cache under {@code directWrites}: a
   * smaller one (a WAL group's, a segment checkpoint's last few blocks) goes through the page cache
   * whole. A direct write makes its writer wait for the device, which pays for itself only over
   * many blocks: with every write staged, the update race ran at 0.6x (docs/benchmarks.md, "Direct
   * writes"). Tests of small stores lower it, so their small writes go direct too.
   */
  public static volatile int minDirectWriteBytes = 64 << 10;

  /** Whether files created or opened for writing write whole blocks around the page cache. */
  private final boolean directWrites;

  /**
   * Where those writes stage: the store's pool once it opens ({@link #useWriteBuffers}), and the
   * bytes written each way.
   */
  private final DirectWriteFile.Staging staging = new DirectWriteFile.Staging();

  /** Directories {@link #mkdirs} has made durable through this object: a concurrent set. */
  private final Set<Path> durableDirectories = ConcurrentHashMap.newKeySet();

  /**
   * Opens (creating it and its parents if missing, durably) the directory {@code root}, with the
   * native file calls found on the class path, if any.
   */
  public FileStorage(Path root) {
    this(root, NATIVE_CALLS);
  }

  /** As {@link #FileStorage(Path)}, with the given native file calls (null for none). */
  public FileStorage(Path root, NativeFileCalls nativeCalls) {
    this(root, nativeCalls, false, true);
  }

  /**
   * As {@link #FileStorage(Path)}; with {@code directReads}, every file's reads bypass the page
   * cache (O_DIRECT, see {@link DirectReads}) and writes stay buffered.
   *
   * @throws io.basaltdb.InvalidArgumentException if direct reads are asked for and the file system
   *     of {@code root} does not take them (tmpfs, for one)
   */
  public FileStorage(Path root, boolean directReads) {
    this(root, NATIVE_CALLS, directReads, true);
  }

  /**
   * As {@link #FileStorage(Path, boolean)}; with {@code mappedReads} false, buffered reads never go
   * through a memory mapping of the file ({@code Options.mappedReads}).
   */
  public FileStorage(Path root, boolean directReads, boolean mappedReads) {
    this(root, NATIVE_CALLS, directReads, mappedReads, false);
  }

  /**
   * As {@link #FileStorage(Path, boolean, boolean)}; with {@code directWrites}, the files it
   * creates or opens for writing send the whole blocks of each write around the page cache
   * (O_DIRECT; {@link DirectWriteFile}, {@code Options.directWrites}).
   *
   * @throws io.basaltdb.InvalidArgumentException if direct reads or writes are asked for and the
   *     file system of {@code root} does not take them (tmpfs, for one)
   */
  public FileStorage(Path root, boolean directReads, boolean mappedReads, boolean directWrites) {
    this(root, NATIVE_CALLS, directReads, mappedReads, directWrites);
  }

  private FileStorage(
      Path root, NativeFileCalls nativeCalls, boolean directReads, boolean mappedReads) {
    this(root, nativeCalls, directReads, mappedReads, false);
  }

  private FileStorage(
      Path root,
      NativeFileCalls nativeCalls,
      boolean directReads,
      boolean mappedReads,
      boolean directWrites) {
    this.root = root.toAbsolutePath().normalize();
    this.nativeCalls = nativeCalls;
    this.directReads = directReads;
    this.mappedReads = mappedReads && !directReads;
    this.directWrites = directWrites;
    makeDirectories(this.root);
    if (directWrites) {
      String why = DirectWriteFile.refusal(this.root);
      if (why != null) {
        throw new io.basaltdb.InvalidArgumentException(
            "directWrites: the file system of "
                + this.root
                + " does not take direct (O_DIRECT) writes ("
                + why
                + "); turn directWrites off for it");
      }
    }
    if (directReads) {
      String why = DirectReads.refusal(this.root);
      if (why != null) {
        throw new io.basaltdb.InvalidArgumentException(
            "directReads: the file system of "
                + this.root
                + " does not take direct (O_DIRECT) reads ("
                + why
                + "); turn directReads off for it");
      }
    }
    java.nio.file.FileStore fs;
    try {
      fs = Files.getFileStore(this.root); // once: finding it reads the mount table
    } catch (IOException | RuntimeException e) {
      fs = null; // usableSpace cannot tell then
    }
    this.fileStore = fs;
  }

  @Override
  public long usableSpace() {
    if (fileStore == null) return Long.MAX_VALUE;
    try {
      return fileStore.getUsableSpace();
    } catch (IOException | RuntimeException e) {
      return Long.MAX_VALUE;
    }
  }

  /**
   * A provider that cannot load (a missing native library, say) is skipped: the JDK's calls still
   * work.
   */
  private static NativeFileCalls findNativeCalls() {
    try {
      return ServiceLoader.load(NativeFileCalls.class, FileStorage.class.getClassLoader())
          .findFirst()
          .orElse(null);
    } catch (java.util.ServiceConfigurationError | LinkageError e) {
      return null;
    }
  }

  /** The native file calls in use ({@code fallocate} for preallocation), or null. */
  public NativeFileCalls nativeCalls() {
    return nativeCalls == NATIVE_CALLS ? LazyNativeCalls.Found.CALLS : nativeCalls;
  }

  /** The absolute root directory. */
  public Path root() {
    return root;
  }

  @Override
  public void useReadBuffers(io.basaltdb.spi.ReadBuffers pool) {
    buffers.pool = pool;
  }

  @Override
  public void useWriteBuffers(io.basaltdb.spi.ReadBuffers pool) {
    staging.pool = pool;
  }

  /**
   * Bytes written around the page cache under {@code directWrites}, and bytes those files' writes
   * sent through it (partial last blocks, writes of no whole block, writes that found no buffer).
   */
  @Override
  public long[] directWriteBytes() {
    return new long[] {staging.directBytes.sum(), staging.bufferedBytes.sum()};
  }

  /** Whether this storage reads its files around the page cache. */
  public boolean directReads() {
    return directReads;
  }

  /**
   * A file over {@code channel}, with direct reads if this storage has them (closing the channel if
   * they fail to open).
   */
  private FileStorageFile file(String name, Path path, FileChannel channel) throws IOException {
    if (!directReads)
      return new FileStorageFile(name, path, channel, nativeCalls, null, mappedReads);
    try {
      return new FileStorageFile(name, path, channel, nativeCalls, DirectReads.open(path, buffers));
    } catch (IOException | RuntimeException e) {
      channel.close();
      throw e;
    }
  }

  @Override
  public StorageFile createTemporary(String name) {
    Path path = resolve(name, false);
    try {
      FileChannel channel =
          FileChannel.open(
              path,
              StandardOpenOption.CREATE,
              StandardOpenOption.TRUNCATE_EXISTING,
              StandardOpenOption.READ,
              StandardOpenOption.WRITE);
      return file(name, path, channel);
    } catch (NoSuchFileException e) {
      throw new StorageException(
          "create of " + path + " failed: directory " + path.getParent() + " does not exist", e);
    } catch (IOException e) {
      throw StorageErrors.failure("create of " + path, e);
    }
  }

  @Override
  public StorageFile create(String name) {
    StorageFile file = createUnsynced(name);
    try {
      syncDirectory(resolve(name, false).getParent());
    } catch (StorageException e) {
      try {
        file.close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    return file;
  }

  @Override
  public StorageFile createUnsynced(String name) {
    return withDirectWrites(createPlain(name));
  }

  /**
   * {@code file} written through {@link DirectWriteFile} under {@code directWrites}; else itself.
   */
  private StorageFile withDirectWrites(StorageFile file) {
    if (!directWrites || !(file instanceof FileStorageFile plain)) return file;
    try {
      FileChannel direct =
          FileChannel.open(
              plain.path(), StandardOpenOption.WRITE, com.sun.nio.file.ExtendedOpenOption.DIRECT);
      return new DirectWriteFile(plain, direct, DIRECT_ALIGNMENT, staging);
    } catch (IOException | UnsupportedOperationException e) {
      // the constructor's probe found O_DIRECT writable: a failure here is this file's, not the
      // file system's
      try {
        file.close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e instanceof IOException io
          ? StorageErrors.failure("open for direct writes of " + plain.path(), io)
          : new StorageException("open for direct writes of " + plain.path() + " failed", e);
    }
  }

  private StorageFile createPlain(String name) {
    Path path = resolve(name, false);
    try {
      return file(
          name,
          path,
          FileChannel.open(
              path,
              StandardOpenOption.CREATE_NEW,
              StandardOpenOption.READ,
              StandardOpenOption.WRITE));
    } catch (FileAlreadyExistsException e) {
      throw new StorageException("create of " + path + " failed: the file already exists", e);
    } catch (NoSuchFileException e) {
      throw new StorageException(
          "create of " + path + " failed: directory " + path.getParent() + " does not exist", e);
    } catch (IOException e) {
      throw StorageErrors.failure("create of " + path, e);
    }
  }

  /**
   * {@inheritDoc} Falls back to a plain file where the file system refuses O_DIRECT (tmpfs) or its
   * block size is not a divisor of {@link Storage#DIRECT_ALIGNMENT}.
   */
  @Override
  public StorageFile createUnsyncedDirect(String name) {
    StorageFile file = createPlain(name);
    Path path = resolve(name, false);
    FileChannel direct;
    try {
      long block =
          fileStore == null ? 0 : fileStore.getBlockSize(); // the root's file store, found once
      if (block <= 0 || DIRECT_ALIGNMENT % block != 0) return file;
      direct =
          FileChannel.open(
              path, StandardOpenOption.WRITE, com.sun.nio.file.ExtendedOpenOption.DIRECT);
    } catch (IOException | UnsupportedOperationException noDirectIo) {
      return file; // the file system takes no direct I/O: written through the page cache
    }
    if (!(file instanceof FileStorageFile plain)) { // a subclass's own files
      try {
        direct.close();
      } catch (IOException ignored) {
        // nothing was written through it
      }
      return file;
    }
    return new DirectWriteFile(plain, direct, DIRECT_ALIGNMENT, null);
  }

  @Override
  public void syncDirectory(String dir) {
    syncDirectory(resolve(dir, true));
  }

  @Override
  public StorageFile openForReading(String name) {
    Path path = resolve(name, false);
    try {
      return file(name, path, FileChannel.open(path, StandardOpenOption.READ));
    } catch (NoSuchFileException e) {
      throw new StorageException("open of " + path + " failed: the file does not exist", e);
    } catch (IOException e) {
      throw StorageErrors.failure("open of " + path, e);
    }
  }

  @Override
  public StorageFile open(String name) {
    Path path = resolve(name, false);
    try {
      return withDirectWrites(
          file(
              name,
              path,
              FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)));
    } catch (NoSuchFileException e) {
      throw new StorageException("open of " + path + " failed: the file does not exist", e);
    } catch (IOException e) {
      throw StorageErrors.failure("open of " + path, e);
    }
  }

  @Override
  public StorageFile openLog(String name, boolean synchronous) {
    Path path = resolve(name, false);
    try {
      FileStorageFile f =
          file(
              name,
              path,
              synchronous
                  ? FileChannel.open(
                      path,
                      StandardOpenOption.READ,
                      StandardOpenOption.WRITE,
                      StandardOpenOption.DSYNC)
                  : FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE));
      if (synchronous) f.synchronous();
      return f;
    } catch (NoSuchFileException e) {
      throw new StorageException("open of " + path + " failed: the file does not exist", e);
    } catch (IOException e) {
      throw StorageErrors.failure("open of " + path, e);
    }
  }

  @Override
  public boolean exists(String name) {
    Path path = resolve(name, false);
    try {
      Files.readAttributes(
          path, java.nio.file.attribute.BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
      return true;
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) { // unreadable is not missing: recovery would call the file lost
      throw StorageErrors.failure("check of " + path, e);
    }
  }

  @Override
  public long size(String name) {
    Path path = resolve(name, false);
    try {
      return Files.size(path);
    } catch (IOException e) {
      throw StorageErrors.failure("size of " + path, e);
    }
  }

  @Override
  public List<String> list(String dir) {
    Path path = resolve(dir, true);
    List<String> names = new ArrayList<>();
    if (!Files.isDirectory(path)) {
      return names;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(path, Files::isRegularFile)) {
      for (Path entry : entries) {
        names.add(entry.getFileName().toString());
      }
    } catch (IOException e) {
      throw StorageErrors.failure("list of " + path, e);
    } catch (
        DirectoryIteratorException
            e) { // an I/O error while iterating, wrapped unchecked by the JDK
      throw StorageErrors.failure("list of " + path, e.getCause());
    }
    names.sort(null);
    return names;
  }

  @Override
  public void delete(String name) {
    deleteGarbage(name);
    Path path = resolve(name, false);
    // Also when the file was already gone: a retry after a delete whose directory sync failed must
    // still make that delete durable. (No directory, nothing to make durable.)
    if (Files.isDirectory(path.getParent())) {
      syncDirectory(path.getParent());
    }
  }

  @Override
  public void deleteGarbage(String name) {
    Path path = resolve(name, false);
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      throw StorageErrors.failure("delete of " + path, e);
    }
  }

  @Override
  public void rename(String from, String to) {
    Path source = resolve(from, false);
    Path target = resolve(to, false);
    try {
      Files.move(
          source, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (NoSuchFileException e) {
      throw new StorageException(
          "rename of " + source + " to " + target + " failed: " + e.getFile() + " does not exist",
          e);
    } catch (IOException e) {
      throw StorageErrors.failure("rename of " + source + " to " + target, e);
    }
    syncDirectory(target.getParent());
    if (!source.getParent().equals(target.getParent())) {
      syncDirectory(source.getParent());
    }
  }

  @Override
  public boolean link(Storage source, String sourceName, String name) {
    if (!(source instanceof FileStorage from)) return false;
    Path existing = from.resolve(sourceName, false);
    Path link = resolve(name, false);
    try {
      Files.createLink(link, existing);
    } catch (UnsupportedOperationException | java.nio.file.FileSystemException e) {
      // another file system (EXDEV), no links there, or a name taken: the caller copies (and
      // reports a
      // name taken when it creates the copy)
      return false;
    } catch (IOException e) {
      throw StorageErrors.failure("link of " + link + " to " + existing, e);
    }
    syncDirectory(link.getParent());
    return true;
  }

  @Override
  public void mkdirs(String dir) {
    Path path = resolve(dir, true);
    if (durableDirectories.contains(path))
      return; // flushes and compactions ask for theirs every time
    makeDirectories(path);
    // A directory already there may be one whose creation crashed before its parent's fsync, and
    // files
    // synced inside it would vanish with it at a power loss: sync the parent of every level below
    // the
    // root again, so that what mkdirs returns is durable whoever created it: once per directory and
    // FileStorage (a few syncs at open, and at a keyspace's first flush).
    for (Path d = path; !d.equals(root); d = d.getParent()) {
      syncDirectory(d.getParent());
    }
    durableDirectories.add(path);
  }

  @Override
  public String describe(String name) {
    return root.resolve(name).toString();
  }

  private Path resolve(String name, boolean allowRoot) {
    return StorageErrors.checkName(name, allowRoot).isEmpty() ? root : root.resolve(name);
  }

  /** Creates each missing directory from the top down, fsyncing its parent after each. */
  private static void makeDirectories(Path dir) {
    if (Files.isDirectory(dir)) {
      return;
    }
    Path parent = dir.getParent();
    if (parent != null) {
      makeDirectories(parent);
    }
    try {
      Files.createDirectory(dir);
    } catch (FileAlreadyExistsException e) {
      if (Files.isDirectory(dir)) {
        return; // created concurrently
      }
      throw new StorageException("mkdirs of " + dir + " failed: a file of that name exists", e);
    } catch (IOException e) {
      throw StorageErrors.failure("mkdirs of " + dir, e);
    }
    if (parent != null) {
      syncDirectory(parent);
    }
  }

  /** Makes the entries of {@code dir} durable (fsync of the directory). */
  /** Makes the entry of {@code path} in its parent directory durable (after a rename into it). */
  public static void syncDirectoryOf(Path path) {
    syncDirectory(path.toAbsolutePath().getParent());
  }

  static void syncDirectory(Path dir) {
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
      DIRECTORY_SYNCS.increment();
    } catch (IOException e) {
      throw StorageErrors.failure("sync of directory " + dir, e);
    }
  }

  private static void closeQuietly(FileChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // already failing; the first error is the one to report
    }
  }

  @Override
  public AutoCloseable lock(String name) {
    Path path = resolve(name, false);
    Path key;
    try { // one key per file, whatever symbolic links led to it
      key = path.getParent().toRealPath().resolve(path.getFileName());
    } catch (IOException e) {
      throw StorageErrors.failure("lock of " + path, e);
    }
    // Refuse a holder in this process before opening the file: the kernel's lock belongs to the
    // process, and closing any descriptor of the file (a refused second channel's) would drop it.
    if (!HELD_LOCKS.add(key)) {
      throw alreadyOpen(path);
    }
    boolean locked = false;
    try {
      FileChannel channel;
      try {
        channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      } catch (IOException e) {
        throw StorageErrors.failure("lock of " + path, e);
      }
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException e) {
        lock = null; // held by this process through a path HELD_LOCKS does not know (a hard link)
      } catch (
          IOException e) { // not "held elsewhere" (tryLock returns null for that): a real failure
        closeQuietly(channel);
        throw StorageErrors.failure("lock of " + path, e);
      }
      if (lock == null) {
        closeQuietly(channel);
        throw alreadyOpen(path);
      }
      FileLock held = lock;
      AtomicBoolean released = new AtomicBoolean();
      locked = true;
      return () -> {
        if (!released.compareAndSet(false, true)) {
          return; // a second close must not release a later holder's entry
        }
        try {
          held.release();
        } finally {
          try {
            channel.close();
          } finally {
            HELD_LOCKS.remove(key);
          }
        }
      };
    } finally {
      if (!locked) {
        HELD_LOCKS.remove(key);
      }
    }
  }

  private StorageException alreadyOpen(Path path) {
    return new StorageException(
        "the store in "
            + root
            + " is already open (lock "
            + path
            + " is held by this or another process); close the other store first");
  }
}
