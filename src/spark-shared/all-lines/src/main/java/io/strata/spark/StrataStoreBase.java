// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalStore;
import io.strata.format.ColumnFamily;
import io.strata.metrics.CommitStats;
import io.strata.metrics.GcStats;
import io.strata.metrics.RequestCounter;
import io.strata.metrics.RestoreStats;
import io.strata.sync.CommitResult;
import io.strata.sync.LocalStateReadException;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task's handle on a store at one version, read-only or updating: the part every Spark line
 * shares, Spark 3.5 included. Its life cycle is an explicit state machine:
 *
 * <pre>
 * READ_ONLY --upgrade--&gt; UPDATING --commit--&gt; COMMITTED
 *     |                      |
 *     release                abort
 *     v                      v
 *  RELEASED               ABORTED
 * </pre>
 *
 * Reads are allowed in READ_ONLY and UPDATING; writes only in UPDATING. Leaving READ_ONLY or
 * UPDATING gives the provider's task lock back. {@code abort()} after commit and repeated {@code
 * abort()}/{@code release()} are no-ops (Spark calls them from task-completion paths).
 *
 * <p>This class implements no Spark interface: the state store API's signatures differ between
 * Spark lines (column family arguments since 4.0, {@code StateStoreIterator} since 4.0). Each
 * line's {@code StrataStateStore} implements its Spark's {@code StateStore} and forwards here:
 * on 4.x through {@code AbstractStrataStore} (src/spark-shared/4.0-and-later), which adds column
 * families, multiple values per key, checkpoint ids and Spark 4.2's scans; on 3.5 directly, with
 * the {@code default} family only.
 *
 * <p>Local read errors: a read of the local database that fails (a corrupt block, a disk error;
 * {@link LocalStateReadException}) in {@code get}, any scan or a write's existence check fails
 * the task with {@link SparkErrors#cannotReadLocal}; the store marked the local database damaged,
 * so Spark's retry of the task restores the version from the object store. A scan never ends
 * early without an error.
 */
abstract class StrataStoreBase implements TaskLock.Holder {
  private static final Logger LOG = LoggerFactory.getLogger(StrataStoreBase.class);

  enum Mode { READ_ONLY, UPDATING, COMMITTED, ABORTED, RELEASED }

  private final StrataProviderBase provider;
  /** The provider's task lock, which this handle holds while open and gives back itself. */
  private final TaskLock<StrataStoreBase> lock;
  private final SyncedStore core;
  private final long version;
  private final RequestCounter requests;
  private final RequestCounter.Counts requestsAtStart;
  private final RestoreStats restore;
  /** Version of the base snapshot named by the loaded manifest, -1 if none. */
  private final long loadedBaseVersion;
  private volatile Mode mode;
  /**
   * True once the query run may write through this store: {@link SyncedStore#prepareWrite} ran
   * (it claims the run's epoch in checkpoint format 1, once per run and store). A write load does
   * not claim it; the first change does (or the commit), so a write store that only declares
   * existing column families and aborts (Spark's state data source, with a new run id per scan)
   * writes nothing into the checkpoint and does not stop the running query's garbage collection.
   */
  private boolean writePrepared;
  private CommitResult committed;
  private RequestCounter.Counts requestsAtEnd;
  /** Memory use captured at commit, before the lock is given back (metrics() comes later). */
  private LocalStore.MemoryUsage memoryAtCommit = LocalStore.MemoryUsage.NONE;
  /** The garbage-collection round finished since the store's previous commit, if any. */
  private GcStats gcAtCommit = GcStats.NONE;
  private long gcFailuresAtCommit;

  /** Who loaded this handle (see {@link TaskLock#currentOwner()}). */
  private volatile long owner;
  /** Whether commit uploaded a base snapshot because Spark asked (reported in metrics). */
  private volatile boolean forcedSnapshotUploaded;
  /** Whether commit also uploads a base snapshot of the new version (Spark 4.2). */
  private volatile boolean forceSnapshotOnCommit;
  /**
   * Whether this committed store holds the task lock again for reads after its commit ({@link
   * #readsAfterCommit()}); given back when the task ends.
   */
  private volatile boolean lockHeldPastCommit;
  /**
   * Whether this committed store gave its retaken task lock to a later load by the same task
   * ({@link #handOverLockPastCommit()}): it can no longer be read.
   */
  private volatile boolean handedOver;
  /**
   * Whether this handle serves a second computation of the state partition in the task that
   * holds the provider's store ({@link #markSide()}): it has a local database of its own.
   */
  private volatile boolean side;
  /** Whether this handle became a write store through {@link #upgrade()} (read, then write). */
  private volatile boolean upgraded;
  /** Whether the loading task registered {@link #onTaskCompletion()} (false outside tasks). */
  private volatile boolean releasedByTask;
  /** Scans opened after the commit; closed when the task ends. */
  private final java.util.List<ScanIterator> scansAfterCommit = new java.util.ArrayList<>();

  /**
   * @param provider the provider that made this handle; its {@link
   *     StrataProviderBase#taskLock() task lock} is held for this handle by the load
   * @param core the loaded store, at {@code version}
   * @param version the loaded version
   * @param readOnly READ_ONLY (a read store) or UPDATING (a write store)
   * @param requests the provider's S3 request counter
   * @param atStart its counts when the load started (metrics report the batch's requests)
   */
  StrataStoreBase(StrataProviderBase provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    this.provider = provider;
    this.lock = provider.taskLock();
    this.core = core;
    this.version = version;
    this.requests = requests;
    this.requestsAtStart = atStart;
    this.restore = core.lastRestore();
    this.loadedBaseVersion = core.loadedManifest().flatMap(m -> m.base())
        .map(b -> b.version()).orElse(-1L);
    this.mode = readOnly ? Mode.READ_ONLY : Mode.UPDATING;
  }

  Mode mode() {
    return mode;
  }

  /** The provider that made this handle. */
  StrataProviderBase provider() {
    return provider;
  }

  /** Who loaded this handle: a Spark task attempt id, or a negative thread key outside tasks. */
  @Override
  public long owner() {
    return owner;
  }

  /** Records who loaded this handle. */
  void ownedBy(long owner) {
    this.owner = owner;
  }

  /** READ_ONLY -&gt; UPDATING, keeping the task lock (Spark 4.1 read-then-write in one task). */
  void upgrade() {
    if (mode != Mode.READ_ONLY) {
      throw SparkErrors.outOfOrder("cannot upgrade a store in state " + mode + " to a write store");
    }
    mode = Mode.UPDATING;
    upgraded = true;
    writePrepared = true; // the provider ran SyncedStore#prepareWrite before upgrading
  }

  /**
   * Whether this write store may already hold, or is about to hold, uncommitted changes of a
   * computation: it changed something, or it is a read store turned write store (the shape of
   * a stateful operator's computation: read its state, then write it). A write store loaded
   * directly that changed nothing (Spark's state data source, declaring column families before
   * its read) is neither.
   */
  boolean inComputation() {
    return upgraded || writePrepared;
  }

  /**
   * Makes this handle a side store: one with a local database of its own ({@link #core()}),
   * loaded for a second computation of the state partition in the task that holds the
   * provider's store (see {@code StrataProviderBase#openHandle}). It never holds the provider's
   * task lock; its local database is closed when its task ends (at once when it ends outside
   * a task).
   */
  void markSide() {
    side = true;
  }

  /** Whether this is a side store ({@link #markSide()}). */
  boolean isSide() {
    return side;
  }

  /** A side store whose use ended outside a task closes its local database now. */
  private void endSideOutsideTask() {
    if (side && !releasedByTask) {
      provider.endSide(this);
    }
  }

  /**
   * Before the first change through this store: {@link SyncedStore#prepareWrite} (see {@link
   * #writePrepared}). Throws Spark's {@code CANNOT_LOAD_STATE_STORE} error if the run's epoch
   * cannot be claimed (another run superseded this one).
   */
  final void prepareWrite() {
    if (writePrepared) {
      return;
    }
    try {
      core.prepareWrite();
    } catch (IOException e) {
      throw SparkErrors.cannotLoad(e);
    }
    writePrepared = true;
  }

  /** The store's id (Spark's {@code StateStore.id}). */
  public StateStoreId id() {
    return provider.stateStoreId();
  }

  /** The loaded version (Spark's {@code StateStore.version}). */
  public long version() {
    return version;
  }

  /** The loaded store (for the line's column family operations). */
  final SyncedStore core() {
    return core;
  }

  /** The commit's result, or null before a commit. */
  final CommitResult committed() {
    return committed;
  }

  // ------------------------------------------------------------------ column families

  /** A family resolved for one operation: its key prefix id and its codec. */
  record Family(int id, FamilyCodec codec) { }

  /**
   * Resolves {@code name} for {@code op} with the checks (and Spark error conditions) of Spark's
   * RocksDB provider: {@code default} always exists; any other name needs column families, a
   * valid name, and a family that exists in the version being built.
   */
  Family family(String op, String name) {
    if (name == null || ColumnFamily.DEFAULT_NAME.equals(name)) {
      return new Family(ColumnFamily.DEFAULT_ID, provider.defaultCodec());
    }
    provider.checkFamilyOperation(op, name);
    Optional<ColumnFamily> cf = core.columnFamilies().byName(name);
    if (cf.isEmpty()) {
      throw SparkErrors.missingColumnFamily(op, name);
    }
    return new Family(cf.get().id(), provider.codec(name, version));
  }

  // ------------------------------------------------------------------ reads

  /**
   * The value of {@code key} in family {@code colFamilyName} (null: {@code default}), or null if
   * it has none (Spark's {@code ReadStateStore.get}).
   */
  public UnsafeRow get(UnsafeRow key, String colFamilyName) {
    checkReadable("get");
    checkKey(key);
    Family f = family("get", colFamilyName);
    return f.codec().decodeValue(read(f.codec().encodeKey(f.id(), key)));
  }


  /**
   * Pairs of the family whose keys start with {@code prefixKey}'s encoding (Spark's {@code
   * prefixScan}); the family's codec must support prefix scans.
   *
   * @throws IllegalArgumentException if it does not (Spark's message)
   */
  final ScanIterator scanPrefix(UnsafeRow prefixKey, String colFamilyName) {
    checkReadable("prefixScan");
    Family f = family("prefixScan", colFamilyName);
    if (!f.codec().supportsPrefixScan()) {
      throw new IllegalArgumentException("requirement failed: Prefix scan requires setting "
          + "prefix key! (" + provider + ", column family " + colFamilyName + ")");
    }
    return scan(f.codec(), f.codec().encodePrefix(f.id(), prefixKey));
  }

  /**
   * Every key of the family in unsigned byte order of its encoding (for a range-scan encoding,
   * ordered by the ordering columns), committed state overlaid with this version's writes as
   * they are when the iterator is created (Spark's {@code iterator}).
   */
  final ScanIterator scanAll(String colFamilyName) {
    checkReadable("iterator");
    Family f = family("iterator", colFamilyName);
    return scan(f.codec(), ColumnFamily.keyPrefix(f.id()));
  }

  final byte[] read(byte[] key) {
    try {
      return core.get(key);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private ScanIterator scan(FamilyCodec codec, byte[] prefix) {
    ScanIterator it = pairs(codec, failingAsTask(() -> core.scan(prefix)));
    if (mode == Mode.COMMITTED) {
      synchronized (scansAfterCommit) {
        scansAfterCommit.add(it);
      }
    }
    return it;
  }

  /** The task failure for a local read error; see the class comment. */
  final RuntimeException readFailed(LocalStateReadException e) {
    return SparkErrors.cannotReadLocal(provider.toString(), e);
  }

  /**
   * Opens a scan of the core store whose creation, {@code hasNext} and {@code next} fail a local
   * read error as {@link #readFailed}.
   */
  final CloseableIterator<KeyValue> failingAsTask(
      java.util.function.Supplier<CloseableIterator<KeyValue>> open) {
    CloseableIterator<KeyValue> it;
    try {
      it = open.get();
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    }
    return new CloseableIterator<>() {
      @Override
      public boolean hasNext() {
        try {
          return it.hasNext();
        } catch (LocalStateReadException e) {
          throw readFailed(e);
        }
      }

      @Override
      public KeyValue next() {
        try {
          return it.next();
        } catch (LocalStateReadException e) {
          throw readFailed(e);
        }
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }

  private static ScanIterator pairs(FamilyCodec codec, CloseableIterator<KeyValue> it) {
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    return new ScanIterator(it, kv -> pair.withRows(codec.decodeKey(kv.key()),
        codec.decodeValue(kv.value())));
  }

  // ------------------------------------------------------------------ writes

  /** Puts {@code value} for {@code key} in the family (Spark's {@code StateStore.put}). */
  public void put(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkUpdating("put");
    checkKey(key);
    if (value == null) {
      throw new IllegalArgumentException("Cannot put a null value for key " + key + " in "
          + provider);
    }
    Family f = family("put", colFamilyName);
    write(f.codec().encodeKey(f.id(), key), f.codec().encodeValue(value));
  }

  /** Removes {@code key} from the family (Spark's {@code StateStore.remove}). */
  public void remove(UnsafeRow key, String colFamilyName) {
    checkUpdating("remove");
    checkKey(key);
    Family f = family("remove", colFamilyName);
    prepareWrite();
    try {
      core.delete(f.codec().encodeKey(f.id(), key));
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  final void write(byte[] key, byte[] value) {
    prepareWrite();
    try {
      core.put(key, value);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static void checkKey(UnsafeRow key) {
    if (key == null) {
      throw new IllegalStateException("Key cannot be null");
    }
  }

  // ------------------------------------------------------------------ life cycle

  /**
   * Commits the version being built: one create-only PUT of its delta and manifest, then the
   * report to Spark's coordinator (Spark's {@code StateStore.commit}).
   *
   * @return the new version
   */
  public long commit() {
    checkUpdating("commit");
    try {
      if (!writePrepared) { // a version without changes: the run claims its epoch now
        core.prepareWrite();
        writePrepared = true;
      }
      committed = core.commit();
    } catch (IOException | RuntimeException e) {
      throw SparkErrors.cannotCommit(toString(), e);
    }
    if (forceSnapshotOnCommit) {
      snapshotAfterCommit();
    }
    requestsAtEnd = requests.snapshot();
    memoryAtCommit = core.memoryUsage();
    gcAtCommit = provider.takeUnreportedGc();
    gcFailuresAtCommit = provider.takeUnreportedGcFailures();
    mode = Mode.COMMITTED;
    try {
      try {
        provider.reportCommit(committed.manifest().version()); // Spark 4.1+ validates commits
      } finally {
        lock.release(this);
      }
    } finally {
      // Only after the report to Spark's coordinator, so that the ingestion's thread does not
      // compete with it for the cores (see SyncedStore#startLocalIngestion).
      core.startLocalIngestion();
      endSideOutsideTask();
    }
    return committed.manifest().version();
  }

  /** Gives the store back without committing (Spark's {@code abort}); see the class comment. */
  public void abort() {
    Mode m = mode;
    if (m == Mode.UPDATING) {
      core.abort();
      mode = Mode.ABORTED;
      lock.release(this);
      endSideOutsideTask();
    } else if (m == Mode.READ_ONLY) {
      mode = Mode.ABORTED;
      lock.release(this);
      endSideOutsideTask();
    }
    // COMMITTED, ABORTED, RELEASED: nothing to undo (Spark may abort after commit).
  }

  /**
   * Gives back a read store on the success path (Spark 4.1+ {@code ReadStateStore.release()});
   * on a write store that has not committed, the same as {@link #abort()}. Idempotent.
   */
  public void release() {
    Mode m = mode;
    if (m == Mode.READ_ONLY) {
      mode = Mode.RELEASED;
      lock.release(this);
      endSideOutsideTask();
    } else if (m == Mode.UPDATING) {
      abort();
    }
  }

  /** Called when the task ends: gives back what the task did not. */
  @Override
  public void onTaskCompletion() {
    if (mode == Mode.READ_ONLY) {
      release();
    } else if (mode == Mode.UPDATING) {
      abort();
    } else if (mode == Mode.COMMITTED && (lockHeldPastCommit || side)) {
      synchronized (scansAfterCommit) {
        scansAfterCommit.forEach(ScanIterator::close);
        scansAfterCommit.clear();
      }
      if (lockHeldPastCommit) {
        lockHeldPastCommit = false;
        lock.release(this);
      }
    }
    if (side) {
      provider.endSide(this);
    }
  }

  /**
   * If this store is committed and holds the task lock for reads after its commit, gives that
   * lock up to a new load of the same provider by the same task and returns true (the caller
   * then owns the permit); otherwise false. A task that computes the same state partition twice
   * (for example {@code df.union(df).coalesce(1)} over a Complete-mode batch on Spark 3.5) loads
   * it again after reading the first commit; waiting for its own lock would only time out. The
   * scans this store opened after its commit are revoked: one not read to its end fails if read
   * on (the local database is about to hold another version), and later reads of this store
   * fail with {@code STATE_STORE_OPERATION_OUT_OF_ORDER}. Called by {@link
   * TaskLock#takeOverHeldPastCommit()} under the lock's monitor, on the task's thread.
   */
  @Override
  public boolean handOverLockPastCommit() {
    if (mode != Mode.COMMITTED || !lockHeldPastCommit) {
      return false;
    }
    synchronized (scansAfterCommit) {
      String why = "the scan of " + this + " after its commit was closed: the same task loaded "
          + provider + " again";
      scansAfterCommit.forEach(it -> it.revoke(why));
      scansAfterCommit.clear();
    }
    handedOver = true;
    lockHeldPastCommit = false;
    return true;
  }

  /**
   * Whether this committed store holds the task lock for reads after its commit (Spark 3.5's
   * Complete mode) and a scan it opened after the commit is not finished: its computation may
   * still read it, so a new load by the same task must not take the lock over ({@link
   * #handOverLockPastCommit()}) but gets a side store (the same partition computed twice at
   * once, such as {@code rdd.zip} of a Complete-mode batch with itself).
   */
  boolean readingAfterCommit() {
    if (mode != Mode.COMMITTED || !lockHeldPastCommit) {
      return false;
    }
    synchronized (scansAfterCommit) {
      return scansAfterCommit.stream().anyMatch(ScanIterator::unfinished);
    }
  }

  /** Records that the loading task will call {@link #onTaskCompletion()} when it ends. */
  @Override
  public final void releasedByTask() {
    releasedByTask = true;
  }

  /**
   * Whether Spark reads this store after committing it. Spark 3.5's Complete-mode aggregation
   * ({@code StateStoreSaveExec}) commits and then iterates the store for its output, and Spark
   * 3.5's own providers allow that; 4.x reads before the commit. A store that says so stays
   * readable after its commit, inside the task that loaded it: the commit gives the task lock
   * back as usual, and the first read after it takes the lock again (until the task ends) and
   * makes the local database hold the committed version, restoring it if the commit lost a
   * race or the database was dropped meanwhile ({@link #prepareReadAfterCommit}). False unless
   * a line's store overrides it.
   */
  boolean readsAfterCommit() {
    return false;
  }

  /** Whether {@link #commit()} succeeded (Spark's {@code StateStore.hasCommitted}). */
  public boolean hasCommitted() {
    return mode == Mode.COMMITTED;
  }

  /**
   * What this store reports for its batch; each adapter's {@code metrics()} turns it into Spark's
   * {@code StateStoreMetrics}. Spark asks after commit, when the store may already serve the
   * next task or be closed: after a commit this reports what was captured at commit and never
   * touches the local database.
   */
  final StrataMetrics.Batch metricsBatch() {
    RequestCounter.Counts end = requestsAtEnd != null ? requestsAtEnd : requests.snapshot();
    if (committed != null) {
      var m = committed.manifest();
      return new StrataMetrics.Batch(m.numKeys(), memoryAtCommit,
          committed.stats(), restore, end.minus(requestsAtStart), committed.lostRace() ? 1 : 0,
          m.base().map(b -> b.version()).orElse(-1L), gcAtCommit, gcFailuresAtCommit,
          partitionId(), storeName(),
          forcedSnapshotUploaded ? 1 : 0);
    }
    return new StrataMetrics.Batch(core.numKeys(), core.memoryUsage(),
        CommitStats.NONE, restore, end.minus(requestsAtStart), 0, loadedBaseVersion,
        GcStats.NONE, 0, partitionId(), storeName(), 0);
  }

  /** Sets whether {@link #commit()} uploads a base snapshot of the new version (Spark 4.2). */
  final void forceSnapshotOnCommit(boolean force) {
    this.forceSnapshotOnCommit = force;
  }

  /**
   * The forced snapshot of Spark 4.2's {@code forceSnapshotOnCommit}, taken after the version's
   * PUT succeeded, while the task still holds the store. The commit is durable already, so a
   * failed snapshot upload is logged and left to maintenance (which retries when due), not
   * thrown: failing the batch would not make its state any safer.
   */
  private void snapshotAfterCommit() {
    try {
      if (core.snapshotNow()) {
        forcedSnapshotUploaded = true;
        provider.reportSnapshotIfNew(core.lastSnapshotVersion());
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("{}: the forced snapshot after commit failed; maintenance will retry", this, e);
    }
  }

  final void checkReadable(String op) {
    Mode m = mode;
    if (m == Mode.COMMITTED && readsAfterCommit() && releasedByTask) {
      prepareReadAfterCommit();
      return;
    }
    if (m != Mode.READ_ONLY && m != Mode.UPDATING) {
      throw SparkErrors.outOfOrder(op + " on " + provider + " version " + version
          + " after the store was " + m.name().toLowerCase(java.util.Locale.ROOT));
    }
  }

  /**
   * Before a read after the commit ({@link #readsAfterCommit()}): holds the task lock again and
   * has the local database hold the committed version (the newest generation of it, which is
   * what any later load reads: after a lost race, the winner's). Throws Spark's {@code
   * CANNOT_LOAD_STATE_STORE} if the lock or the version cannot be had.
   */
  private void prepareReadAfterCommit() {
    if (handedOver) {
      throw SparkErrors.outOfOrder("read of " + provider + " version "
          + committed.manifest().version() + " after its commit, once the same task loaded the "
          + "store again");
    }
    if (!lockHeldPastCommit && !side) { // a side store's database is its own: no lock
      lock.retake(this);
      lockHeldPastCommit = true;
    }
    long v = committed.manifest().version();
    try {
      // Settled first: a failed local ingestion drops the database, and the version is then
      // restored from the object store like any other.
      if (core.settledVersion() != v) {
        // Not read-only: this run has written the version, and a long restore here schedules
        // a base snapshot as any write load's does.
        core.load(v, Optional.empty(), false);
      }
    } catch (IOException | RuntimeException e) {
      throw SparkErrors.cannotLoad(e);
    }
  }

  final void checkUpdating(String op) {
    Mode m = mode;
    if (m != Mode.UPDATING) {
      throw SparkErrors.outOfOrder(op + " on " + provider + " version " + version
          + " in state " + m + "; updates are allowed only before commit or abort");
    }
  }

  @Override
  public String toString() {
    return "StrataStateStore[" + provider + ", version " + version + ", " + mode
        + (side ? ", side" : "") + "]";
  }

  private int partitionId() {
    return provider.stateStoreId().partitionId();
  }

  private String storeName() {
    return provider.stateStoreId().storeName();
  }

}
