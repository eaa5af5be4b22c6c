package io.basaltdb.kafka;

import io.basaltdb.BasaltException;
import io.basaltdb.BulkLoad;
import io.basaltdb.ClosedException;
import io.basaltdb.Keyspace;
import io.basaltdb.WriteBatch;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.errors.ProcessorStateException;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.StateRestoreCallback;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.internals.PositionSerde;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every Basalt state store shares: the StateStore contract of Kafka Streams 4.3 (KIP-1035)
 * over a keyspace of the application instance's shared Basalt ({@link SharedBasalt}).
 *
 * <ul>
 *   <li>{@link #init}: opens (or joins) the shared Basalt, starts the store afresh if its task
 *       directory was wiped, and under exactly-once reports a store left open by an unclean
 *       shutdown as corrupted, as Kafka's RocksDB store does: Streams then wipes the task and
 *       restores it from the changelog.
 *   <li>{@link #commit}: the changelog offsets and the IQ position, one atomic write, then {@link
 *       io.basaltdb.Basalt#flushWal}: writes between commits wait in the WAL buffer ({@code
 *       basalt.walBufferBytes}) and the commit writes them out with one call. Writes are logged in
 *       order (one write-ahead log), so a state recovered after a process crash holds every write
 *       up to some point: the last commit's at least, and its offsets with them. No fsync: the
 *       changelog covers a power loss, and the exactly-once status check detects it.
 *   <li>{@link #close}: idempotent; closes the store's open iterators, marks it closed, gives the
 *       shared Basalt back.
 * </ul>
 *
 * <p>Thread-safety: as Streams uses a store: one stream thread writes; interactive queries may read
 * concurrently (Basalt's reads are thread-safe; iterators hold snapshots).
 */
public abstract class BasaltStateStore implements StateStore {
  private static final Logger log = LoggerFactory.getLogger(BasaltStateStore.class);

  /**
   * What every store logs for a range whose lower bound is above its upper one, word for word as
   * Kafka's RocksDB stores (Kafka's store tests check the text).
   */
  static final String INVALID_RANGE =
      "Returning empty iterator for fetch with invalid key range: from > to. "
          + "This may be due to range arguments set in the wrong order, "
          + "or serdes that don't preserve ordering when lexicographically comparing the"
          + " serialized bytes. "
          + "Note that the built-in numerical serdes do not follow this for negative numbers";

  /** The name Streams gives a task's directory. */
  private static final Pattern TASK_DIR = Pattern.compile("\\d+_\\d+");

  private final String name;
  private final String kind;

  /** Set by init, cleared by close. */
  volatile SharedBasalt shared;

  String owner;
  StateStoreContext context;
  Position position = Position.emptyPosition();
  boolean consistencyEnabled;

  /** The store's gauges in Streams' metrics; null if the context has none of Streams'. */
  private StoreMetrics metrics;

  /** Open iterators, closed with the store. */
  final Set<AutoCloseable> iterators = ConcurrentHashMap.newKeySet();

  /**
   * The bulk load a restore writes through ({@link #restoreLoad}), or null; set and cleared under
   * {@code position}'s lock.
   */
  private volatile BulkLoad restoring;

  /**
   * A restore's bulk load failed: some records of batches already taken are not in the store. Every
   * later restore batch and commit throws it (so no commit records offsets past the loss), until
   * the store is closed and Streams restores it again.
   */
  private volatile RuntimeException restoreFailure;

  /**
   * The chunk size {@link #restoring} reserved, and of which shared Basalt; under the same lock.
   */
  private long restoringChunk;

  private SharedBasalt restoringIn;

  BasaltStateStore(String name, String kind) {
    this.name = Objects.requireNonNull(name, "name cannot be null");
    this.kind = kind;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public boolean persistent() {
    return true;
  }

  @Override
  public boolean isOpen() {
    return shared != null;
  }

  /** The directory of the Basalt this store's context shares (docs/kafka-streams.md). */
  static Path instanceDir(StateStoreContext context, BasaltConfig config, String storeName) {
    if (config.dir() != null) return config.dir();
    File stateDir = context.stateDir();
    String dirName = stateDir.getName();
    if (TASK_DIR.matcher(dirName).matches() || dirName.equals("global")) {
      // <state.dir>/<application.id>/<task>: one Basalt beside the task directories.
      return stateDir.toPath().toAbsolutePath().getParent().resolve("basalt");
    }
    // Not a Streams task directory (a test's mock context): a Basalt of the store's own.
    return stateDir.toPath().resolve(storeName).resolve("basalt");
  }

  @Override
  public void init(StateStoreContext context, StateStore root) {
    if (isOpen()) throw new IllegalStateException("store " + name + " is already open");
    BasaltConfig config = BasaltConfig.from(context.appConfigs());
    boolean eos =
        StreamsConfig.EXACTLY_ONCE_V2.equals(
            context.appConfigs().get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG));
    SharedBasalt s = SharedBasalt.acquire(instanceDir(context, config, name), config);
    String o = StoreState.owner(kind, context.taskId(), name);
    boolean claimed = false;
    try {
      Path marker = context.stateDir().toPath().resolve(name).resolve(StoreState.MARKER);
      Keyspace meta = s.meta();
      synchronized (s) { // no sweep between the marker's check (or new incarnation) and the claim
        s.claim(o);
        claimed = true;
        if (!StoreState.markerValid(meta, o)) {
          // A new store, or its task directory was deleted since: whatever the keyspaces hold is
          // from before, and Streams restores the store from its changelog.
          s.dropAll(o);
          StoreState.clear(s.db(), meta, o);
          StoreState.newIncarnation(meta, o, marker);
        } else if (eos && StoreState.leftOpen(meta, o)) {
          String message =
              "State store "
                  + name
                  + " was not closed cleanly (Basalt found it open), so under exactly-once it may"
                  + " hold uncommitted writes";
          throw new TaskCorruptedException(
              Set.of(context.taskId()), new ProcessorStateException(message));
        }
      }
      open(s, o);
      StoreState.markOpen(meta, o, true);
      s.db().flushWal(); // the open status survives a crash before the first commit
      byte[] p = StoreState.position(meta, o);
      position =
          p == null ? Position.emptyPosition() : PositionSerde.deserialize(ByteBuffer.wrap(p));
      this.owner = o;
      this.context = context;
      this.consistencyEnabled =
          StreamsConfig.InternalConfig.getBoolean(
              context.appConfigs(),
              StreamsConfig.InternalConfig.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED,
              false);
    } catch (RuntimeException | Error e) {
      if (claimed) s.unclaim(o);
      s.release();
      throw e;
    }
    this.shared = s;
    try {
      metrics = StoreMetrics.register(context, metricsScope(), name, s, this::keyCount);
      context.register(root, restoreCallback());
    } catch (RuntimeException | Error e) {
      close(); // gives the shared Basalt back
      throw e;
    }
  }

  /** The scope of the store's metrics: {@code <scope>-state-id} tags them. */
  abstract String metricsScope();

  /** The number of keys the store holds (its metric {@code estimate-num-keys}). */
  abstract long keyCount();

  /** Opens the store's keyspaces in {@code shared} for owner {@code owner}. */
  abstract void open(SharedBasalt shared, String owner);

  /** The callback Streams restores the store through. */
  abstract StateRestoreCallback restoreCallback();

  /** The shared Basalt, or {@link InvalidStateStoreException} if the store is not open. */
  SharedBasalt checkOpen() {
    SharedBasalt s = shared;
    if (s == null) throw new InvalidStateStoreException("Store " + name + " is currently closed");
    return s;
  }

  /** Turns an engine failure into the exception Streams expects of a store. */
  ProcessorStateException failed(String what, BasaltException e) {
    return new ProcessorStateException("Error while " + what + " store " + name, e);
  }

  /**
   * The bulk load restore batches go through, started by the first batch of a restore, or null if
   * restores write through the log ({@code basalt.restoreBufferBytes} or {@code
   * basalt.walSkipBytes} 0): its chunks ({@link SharedBasalt#reserveRestoreChunk}) are sorted and
   * written straight to segments and a level-0 table on the load's thread while the next batches
   * fill the next chunk ({@link BulkLoad}). The caller holds {@code position}'s lock. Whatever it
   * holds is applied by {@link #finishRestore}, which every other use of the store calls first:
   * Streams tells a store nothing when a restore ends.
   */
  BulkLoad restoreLoad(SharedBasalt s) {
    if (restoreFailure != null) throw restoreFailure;
    BulkLoad load = restoring;
    if (load == null) {
      long walSkip = s.db().options().walSkipBytes();
      if (walSkip <= 0) return null;
      long chunk = s.reserveRestoreChunk();
      if (chunk < walSkip) {
        // Little of the buffer left (other stores are restoring): chunks this small would each
        // cost a flush and a level-0 table, more than writing the batches through the log.
        if (chunk > 0) s.releaseRestoreChunk(chunk);
        return null;
      }
      try {
        load = s.db().bulkLoad(chunk);
      } catch (RuntimeException | Error e) {
        s.releaseRestoreChunk(chunk);
        throw e;
      }
      restoringChunk = chunk;
      restoringIn = s;
      restoring = load;
    }
    return load;
  }

  /**
   * Records {@code e}, a failure of the restore's bulk load met by a restore batch, as the
   * restore's ({@link #restoreFailure}), and returns it to be thrown. The load is done: it is ended
   * and its buffer given back. The caller holds {@code position}'s lock.
   */
  RuntimeException restoreFailed(RuntimeException e) {
    restoreFailure = e;
    BulkLoad load = restoring;
    if (load != null) {
      restoring = null;
      try {
        load.close();
      } catch (RuntimeException again) {
        // the load's failure, thrown again: e reports it
      } finally {
        restoringIn.releaseRestoreChunk(restoringChunk);
        restoringIn = null;
      }
    }
    return e;
  }

  /**
   * Applies what a restore gathered and ends its bulk load, if one is under way: every use of the
   * store but a restore batch calls it first, so what is read, written and committed follows every
   * restored record. A failure is thrown as the restore's.
   */
  void finishRestore() {
    if (restoring == null) return;
    synchronized (position) {
      BulkLoad load = restoring;
      if (load == null) return;
      restoring = null;
      try {
        load.close();
      } catch (ClosedException e) {
        restoreFailure =
            new InvalidStateStoreException("Store " + name + " is currently closed", e);
        throw restoreFailure;
      } catch (BasaltException e) {
        restoreFailure = failed("restoring", e);
        throw restoreFailure;
      } finally {
        restoringIn.releaseRestoreChunk(restoringChunk);
        restoringIn = null;
      }
    }
  }

  @Override
  public void commit(Map<TopicPartition, Long> changelogOffsets) {
    SharedBasalt s = shared;
    if (s == null) return;
    finishRestore(); // the offsets committed cover only what the store holds
    if (restoreFailure != null) throw restoreFailure;
    WriteBatch batch = new WriteBatch();
    byte[] p;
    synchronized (position) {
      ByteBuffer b = PositionSerde.serialize(position);
      p = new byte[b.remaining()];
      b.get(p);
    }
    try {
      StoreState.commit(batch, s.meta(), owner, changelogOffsets, p);
      s.db().write(batch);
      s.db().flushWal(); // the commit and every write before it now survive a process crash
    } catch (BasaltException e) {
      throw failed("committing", e);
    }
  }

  @Override
  public Long committedOffset(TopicPartition partition) {
    SharedBasalt s = checkOpen();
    try {
      return StoreState.offset(s.meta(), owner, partition);
    } catch (BasaltException e) {
      throw failed("reading the committed offset of", e);
    }
  }

  @Override
  @SuppressWarnings("deprecation")
  public boolean managesOffsets() {
    return true;
  }

  @Override
  public Position getPosition() {
    return position;
  }

  @Override
  public synchronized void close() {
    SharedBasalt s = shared;
    if (s == null) return;
    synchronized (position) { // no restore batch starts a load between the two
      try {
        finishRestore(); // a restore's last chunk, as a commit would (its offsets are not
        // committed)
      } catch (RuntimeException e) {
        log.warn("applying the restore under way at the close of store {} failed", name, e);
      }
      shared = null;
    }
    restoreFailure = null;
    if (!iterators.isEmpty()) {
      log.warn("Closing {} open iterators for store {}", iterators.size(), name);
      for (AutoCloseable it : Set.copyOf(iterators)) {
        try {
          it.close();
        } catch (Exception e) {
          log.warn("closing an iterator of store {} failed", name, e);
        }
      }
      iterators.clear();
    }
    try {
      if (metrics != null) metrics.remove();
      metrics = null;
      closeKeyspaces();
      StoreState.markOpen(s.meta(), owner, false);
      s.db().flushWal();
    } finally {
      s.unclaim(owner);
      s.release();
    }
  }

  /** Lets go of the store's keyspaces before the shared Basalt is given back. */
  void closeKeyspaces() {}

  /** The set open iterators register in (unmodifiable view, for tests). */
  Set<AutoCloseable> openIterators() {
    return Collections.unmodifiableSet(iterators);
  }
}
