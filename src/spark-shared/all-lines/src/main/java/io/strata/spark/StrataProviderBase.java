// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.StrataConf;
import io.strata.engine.LocalDirs;
import io.strata.engine.SharedMemory;
import io.strata.hadoop.HadoopLookup;
import io.strata.metrics.GcStats;
import io.strata.metrics.JvmRequests;
import io.strata.metrics.RequestCounter;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.reporting.SettingErrors;
import io.strata.reporting.StrataMetricsSource;
import io.strata.sync.GcSettings;
import io.strata.sync.StateLoadException;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * The part of {@link StrataStateStoreProvider} every Spark line shares, Spark 3.5 included:
 * everything but the methods whose signatures differ between Spark lines ({@code init}, {@code
 * getStore}, {@code getReadStore}, the replay and change feed of 4.x), which each line's adapter
 * (the concrete {@code StrataStateStoreProvider} compiled against that Spark, under {@code
 * src/spark-<minor>/}; on 4.x through {@code AbstractStrataProvider} in
 * src/spark-shared/4.0-and-later) declares and forwards here.
 *
 * <p>Each instance serves one state store (operator, partition, store name) on one executor. It
 * keeps the state in a local RocksDB and checkpoints every commit to the store's checkpoint
 * location ({@code s3://}, {@code s3a://}, {@code file:} or a plain path) with one create-only
 * PUT; see {@link SyncedStore} and docs/format.md.
 *
 * <p>Contract points (see the state store notes): the no-argument constructor does no I/O (the
 * driver instantiates the class just to read {@link #supportedCustomMetrics()}); {@code init}
 * validates settings but touches no storage; one task at a time holds the store (the {@link
 * TaskLock} this provider owns: taken by {@code getStore}/{@code getReadStore}, handed to the
 * store handle, which gives it back at commit, abort or release, or at task completion); {@link
 * #upgradeHandle} turns the task's read store into its write store without a
 * second load (Spark 4.1+); commits are reported to the coordinator when commit validation is
 * on (Spark 4.1+); {@link #close()} waits for a running task before closing. A second
 * computation of the partition by the task that holds the store open in a computation (Spark's
 * {@code rdd.zip} of a batch with itself) gets a side store with a local database of its own
 * ({@link #sideHandle}), never the first computation's uncommitted writes.
 *
 * <p>What it delegates: the task lock to {@link TaskLock}, what was reported already (GC in
 * commit metrics, snapshots to Spark's coordinator) to {@link StoreReports}, the native memory
 * budget to {@link MemoryBudget}; the store's commit protocol is {@link SyncedStore}'s.
 *
 * <p>Column families (Spark 4.x: transformWithState, stream-stream join state format 3) are
 * virtual: a 2-byte id prefixes every key, the name-to-id mapping of each version is in its
 * manifest. Errors for bad or missing families are Spark's ({@code STATE_STORE_*} conditions, see
 * {@link SparkErrors}).
 */
public abstract class StrataProviderBase implements StateStoreProvider {
  private static final Logger LOG = LoggerFactory.getLogger(StrataProviderBase.class);

  static {
    // Before any store uploads: a JVM exit then lets running snapshot uploads finish ahead of
    // the deletion of Spark's local directories.
    SparkShutdownHooks.install();
  }
  private static final String DEFAULT_CF = "default";
  private static final String COLUMN_FAMILIES_DISABLED =
      "multiple column families is disabled in StrataStateStoreProvider";

  private StateStoreId stateStoreId;
  private StructType keySchema;
  private StructType valueSchema;
  private StateStoreConf storeConf;
  private Configuration hadoopConf;
  private boolean useColumnFamilies;
  /** Codec of the {@code default} family (id 0), fixed at init. */
  private FamilyCodec defaultCodec;
  /**
   * Codecs of the other column families, by name, as declared by createColFamilyIfAbsent (the
   * first declaration wins, as in Spark's provider). The ids live in the loaded version's
   * column family mapping ({@link SyncedStore#columnFamilies()}), not here.
   */
  private final Map<String, FamilyCodec> familyCodecs = new ConcurrentHashMap<>();
  private StrataConf conf;
  private SharedMemory.Limits memoryLimits;
  private final RequestCounter requests = new RequestCounter();
  /** One task at a time holds the store; handed to every handle this provider makes. */
  private final TaskLock<StrataStoreBase> taskLock =
      new TaskLock<>(this, () -> conf == null ? 0 : conf.lockAcquireTimeout().toMillis());
  private SyncedStore core;
  /** The query run id {@link #core} was made with (side stores use it too), or null. */
  private volatile String coreRun;
  /** Side stores in use ({@link #sideHandle}), oldest first, and their local databases. */
  private final Map<StrataStoreBase, SyncedStore> sideStores = new java.util.LinkedHashMap<>();
  /** What this provider reported about its store (GC in commit metrics, snapshots to Spark). */
  private final StoreReports reports = new StoreReports(this, this::reportSnapshotUploaded);

  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  protected StrataProviderBase() { }

  /**
   * Initialises the provider; each line's {@code init} forwards here (Spark calls it once, right
   * after construction). Validates Strata's settings; no storage is touched.
   *
   * <p>A {@code file:} or plain-path location is refused on a cluster (a master other than
   * {@code local}/{@code local[...]}) unless {@code fileCheckpoint.shared} declares it shared
   * storage: see {@link LocalLocationRule}.
   *
   * @param defaultCodec makes the codec of the {@code default} family; called after the other
   *     arguments are set (it may read {@link #storeConf()}), before the settings are read
   * @throws IllegalArgumentException naming the setting, for an invalid Strata setting (Spark's
   *     {@code INVALID_CONF_VALUE.REQUIREMENT}, SQLSTATE 22022, see {@link SettingErrors}) or an
   *     unsupported checkpoint location scheme; or what {@code defaultCodec} throws
   * @throws UnsupportedOperationException ({@code STATE_STORE_UNSUPPORTED_OPERATION}) for a
   *     local location on a cluster, see {@link LocalLocationRule#check}
   */
  final void initStore(StateStoreId stateStoreId, StructType keySchema,
      StructType valueSchema, boolean useColumnFamilies, StateStoreConf storeConfs,
      Configuration hadoopConf, Supplier<FamilyCodec> defaultCodec) {
    this.stateStoreId = stateStoreId;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.storeConf = storeConfs;
    this.hadoopConf = hadoopConf;
    this.useColumnFamilies = useColumnFamilies;
    this.defaultCodec = defaultCodec.get();
    // S3A's settings (and any credential store they name) are read only when the S3 settings
    // are first resolved, for a location on S3: a cluster's S3A settings for other jobs never
    // stop a query whose checkpoint is elsewhere.
    try {
      this.conf = HadoopLookup.strataConf(Scala.javaMap(storeConfs.sqlConfs()), hadoopConf,
          ObjectStores.bucketOf(location()));
      this.memoryLimits = MemoryBudget.limits(conf, SparkEnv.get());
      // Fails now, naming the location, if its scheme is not one Strata can write to.
      ObjectStores.open(location(), conf::s3, null).close();
    } catch (io.strata.config.InvalidSettingException e) {
      throw SparkErrors.invalidSetting(e);
    }
    StrataMetricsSource.registerOnce();
    // Fails now if the location is on this executor's own disk while partitions can move.
    LocalLocationRule.check(location(), LocalLocationRule.master(SparkEnv.get()),
        conf.fileCheckpointShared(), stateStoreId);
  }

  @Override
  public StateStoreId stateStoreId() {
    return stateStoreId;
  }

  /**
   * A writable store holding version {@code version} (Spark's batch id; 0 is empty); each
   * line's {@code getStore} forwards here.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared (Spark's Scala callers expect
   * it): {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a negative version, {@code
   * ...CANNOT_READ_STREAMING_STATE_FILE} for a version never committed, {@code ...UNCATEGORIZED}
   * for any other load failure (cause names the store, version and object key)
   *
   * @param stateStoreCkptId the checkpoint id of {@code version} (checkpoint format 2), or none
   *     (always before 4.0)
   * @param forceSnapshotOnCommit upload a base snapshot of the new version at its commit (Spark
   *     4.2: the coordinator found this store's snapshots lagging); false before 4.2
   */
  final StrataStoreBase openHandle(long version, Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit) {
    StrataStoreBase held = heldByCaller(version);
    if (held != null && held.mode() == StrataStoreBase.Mode.READ_ONLY) {
      // This task's read store of the same version (Spark 4.0 loads a task's write store with a
      // second getStore while its read store is still open, and aborts the read store only at
      // task end, after the commit): the read store becomes the write store, as an upgrade.
      return upgradeHandle(held, version, stateStoreCkptId, forceSnapshotOnCommit);
    }
    if (held != null) {
      // The same task asks again for the write store it has open: the same state partition
      // computed a second time while the first computation is unfinished (rdd.zip of a batch
      // with itself; no Spark operator asks twice). Sharing the store would let each
      // computation see the other's uncommitted writes (a count merged twice); like Spark's
      // HDFS provider, which gives every getStore its own copy of the version, the second one
      // gets a store of its own: the side read store its computation opened, or a new one.
      StrataStoreBase side = sideReadStoreOfCaller(version);
      if (side != null) {
        return upgradeHandle(side, version, stateStoreCkptId, forceSnapshotOnCommit);
      }
      StrataStoreBase s = sideHandle(version, stateStoreCkptId, false);
      s.forceSnapshotOnCommit(forceSnapshotOnCommit);
      return s;
    }
    StrataStoreBase side = sideReadStoreOfCaller(version);
    if (side != null) { // a second computation that began with a side read store
      return upgradeHandle(side, version, stateStoreCkptId, forceSnapshotOnCommit);
    }
    StrataStoreBase store = load(version, stateStoreCkptId, false);
    store.forceSnapshotOnCommit(forceSnapshotOnCommit);
    return store;
  }
  /**
   * A read-only store holding {@code version}; errors as {@link #openHandle}. If the caller (the
   * same task, or outside tasks the same thread) already holds a store of that version, that
   * store (Spark 4.0's state data source opens a write store to declare a column family and then
   * a read store of the same provider, and aborts only the read store), unless the store it
   * holds is a write store in a computation ({@link StrataStoreBase#inComputation()}): then this
   * read starts a second computation of the partition in the same task, which gets a side store
   * of its own ({@link #sideHandle}).
   */
  final StrataStoreBase readHandle(long version, Option<String> uniqueId) {
    StrataStoreBase held = heldByCaller(version);
    if (held != null && held.mode() == StrataStoreBase.Mode.UPDATING && held.inComputation()) {
      return sideHandle(version, uniqueId, true);
    }
    return held != null ? held : load(version, uniqueId, true);
  }

  /**
   * A side store holding {@code version}: a store with a local database of its own, loaded from
   * the object store, for a second computation of the state partition by the task that holds
   * this provider's store open (see {@link #openHandle}). It does not take the task lock; it
   * commits like any write store (the version's first commit in the query run wins, the other
   * adopts it, as two attempts of one task would: both computed it from the same version and
   * input); its local database is closed when its task ends.
   *
   * @throws RuntimeException Spark's load errors, as {@link #openHandle}
   */
  private StrataStoreBase sideHandle(long version, Option<String> ckptId, boolean readOnly) {
    if (taskLock.closed()) {
      throw SparkErrors.cannotLoad(new IllegalStateException(this + " is closed"));
    }
    SyncedStore side = null;
    try {
      side = newCore(coreRun);
      Optional<String> attempt = checkpointIdsEnabled() && ckptId.isDefined()
          ? Optional.of(ckptId.get()) : Optional.empty();
      RequestCounter.Counts start = requests.snapshot();
      side.load(version, attempt, readOnly);
      StrataStoreBase store = newStore(side, version, readOnly, requests, start);
      store.ownedBy(TaskLock.currentOwner());
      store.markSide();
      synchronized (sideStores) {
        sideStores.put(store, side);
      }
      side = null; // the store's now: closed by endSide
      LOG.info("{}: version {} loaded again by the task that holds it open ({}): the second "
          + "computation of the partition gets a local database of its own", this, version,
          TaskLock.currentOwner());
      org.apache.spark.TaskContext ctx = org.apache.spark.TaskContext.get();
      if (ctx != null) {
        ctx.addTaskCompletionListener(
            (org.apache.spark.util.TaskCompletionListener) t -> store.onTaskCompletion());
        store.releasedByTask();
      }
      return store;
    } catch (StateLoadException e) {
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw SparkErrors.versionNotFound(e.getMessage(), e);
      }
      throw SparkErrors.cannotLoad(e);
    } catch (Exception | Error e) {
      throw SparkErrors.cannotLoad(e);
    } finally {
      if (side != null) {
        side.close(false);
      }
    }
  }

  /** This caller's newest side store of {@code version} still open read-only, or null. */
  private StrataStoreBase sideReadStoreOfCaller(long version) {
    long me = TaskLock.currentOwner();
    StrataStoreBase found = null;
    synchronized (sideStores) {
      for (StrataStoreBase s : sideStores.keySet()) {
        if (s.owner() == me && s.version() == version
            && s.mode() == StrataStoreBase.Mode.READ_ONLY) {
          found = s;
        }
      }
    }
    return found;
  }

  /**
   * The use of side store {@code s} ended (its task ended, or outside tasks its commit, abort or
   * release): closes its local database, without waiting for a snapshot upload it started.
   */
  final void endSide(StrataStoreBase s) {
    SyncedStore side;
    synchronized (sideStores) {
      side = sideStores.remove(s);
    }
    if (side != null) {
      side.close(false);
    }
  }

  /**
   * The store this provider's caller (same task attempt, or outside tasks the same thread)
   * holds at {@code version}, open for reads; null if none. Spark's RocksDB provider is
   * re-entrant for its lock holder the same way.
   */
  private StrataStoreBase heldByCaller(long version) {
    StrataStoreBase held = taskLock.holder();
    if (held == null || held.owner() != TaskLock.currentOwner() || held.version() != version) {
      return null;
    }
    StrataStoreBase.Mode m = held.mode();
    return m == StrataStoreBase.Mode.READ_ONLY || m == StrataStoreBase.Mode.UPDATING
        ? held : null;
  }

  /**
   * Turns this task's read store into its write store without reloading (same lock, same local
   * state; Spark 4.1+ calls {@code upgradeReadStoreToWriteStore}, which forwards here). Falls
   * back to {@link #openHandle} if {@code readStore} is not this provider's live read store at
   * {@code version}.
   *
   * @param forceSnapshotOnCommit as for {@link #openHandle}
   */
  final StrataStoreBase upgradeHandle(Object readStore, long version,
      Option<String> uniqueId, boolean forceSnapshotOnCommit) {
    // Only this provider's own handles are touched: Spark may pass the read store of another
    // operator in the same task (its thread-local lives until the task ends), or one this
    // operator's previous provider instance made; those belong to their providers.
    if (readStore instanceof StrataStoreBase s && s.provider() == this && s.isSide()
        && s.owner() == TaskLock.currentOwner() && s.version() == version
        && (s.mode() == StrataStoreBase.Mode.READ_ONLY
            || s.mode() == StrataStoreBase.Mode.UPDATING)) {
      // The side read store of a second computation in this task becomes its write store.
      if (s.mode() == StrataStoreBase.Mode.READ_ONLY) {
        try {
          s.core().prepareWrite();
        } catch (IOException e) {
          throw SparkErrors.cannotLoad(e);
        }
        s.upgrade();
      }
      s.forceSnapshotOnCommit(forceSnapshotOnCommit);
      return s;
    }
    if (readStore instanceof StrataStoreBase s && s.provider() == this) {
      if (s == taskLock.holder() && s.version() == version
          && (uniqueId.isEmpty() || !checkpointIdsEnabled()
              || uniqueId.get().equals(core.loadedAttempt().orElse(null)))) {
        if (s.mode() == StrataStoreBase.Mode.READ_ONLY) {
          try {
            core.prepareWrite(); // a run that only read so far claims its epoch now
          } catch (IOException e) {
            throw SparkErrors.cannotLoad(e);
          }
          s.upgrade();
        }
        if (s.mode() == StrataStoreBase.Mode.UPDATING) {
          s.forceSnapshotOnCommit(forceSnapshotOnCommit);
          return s;
        }
      }
      if (s.mode() == StrataStoreBase.Mode.READ_ONLY) {
        s.release(); // a read store of another version: give its lock back; never abort a writer
      }
    }
    return openHandle(version, uniqueId, forceSnapshotOnCommit);
  }

  /**
   * Creates this Spark version's store handle (the concrete {@code StrataStateStore} of the
   * adapter); see {@link StrataStoreBase}'s constructor for the arguments.
   */
  abstract StrataStoreBase newStore(SyncedStore core, long version, boolean readOnly,
      RequestCounter requests, RequestCounter.Counts atStart);

  /**
   * A writable store holding an empty state at {@code version}, loaded from nothing ({@link
   * SyncedStore#loadEmpty}): its commit writes version {@code version + 1}, self-contained.
   * Takes the task lock as {@link #openHandle} does (a provider that the caller already holds
   * open waits for itself up to the lock timeout: open it on a provider of its own, as Spark
   * 4.2's state rewriter does).
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared: {@code
   * CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a negative version, {@code ...UNCATEGORIZED}
   * if the query run's epoch cannot be found or claimed (checkpoint format 1), the run is
   * fenced, or the local database cannot be opened
   */
  final StrataStoreBase emptyHandle(long version) {
    return load(version, Option.empty(), false, true);
  }

  private StrataStoreBase load(long version, Option<String> ckptId, boolean readOnly) {
    return load(version, ckptId, readOnly, false);
  }

  /** A load; {@code empty}: of nothing, at {@code version} ({@link #emptyHandle}). */
  private StrataStoreBase load(long version, Option<String> ckptId, boolean readOnly,
      boolean empty) {
    if (version < 0) {
      throw SparkErrors.unexpectedVersion(version);
    }
    if (taskLock.closed()) {
      throw SparkErrors.cannotLoad(new IllegalStateException(this + " is closed"));
    }
    // The run id before any lock of ours: on Spark 3.5 finding it takes Spark's own lock, which
    // Spark holds while it closes providers (and close() waits for our locks).
    String run = coreMissing() ? queryRunId() : null;
    StrataStoreBase past = taskLock.holder();
    if (!empty && past != null && past.owner() == TaskLock.currentOwner()
        && past.readingAfterCommit()) {
      // This task still reads its committed store (Spark 3.5's Complete mode): a second
      // computation of the partition at once, which gets a store of its own.
      return sideHandle(version, ckptId, readOnly);
    }
    if (!taskLock.takeOverHeldPastCommit()) {
      taskLock.acquire(version);
    }
    StrataStoreBase published = null;
    try {
      if (taskLock.closed()) {
        // close() gave up waiting for the previous holder and closed the store meanwhile.
        throw new IllegalStateException(this + " is closed");
      }
      SyncedStore c = core(run);
      Optional<String> attempt = checkpointIdsEnabled() && ckptId.isDefined()
          ? Optional.of(ckptId.get()) : Optional.empty();
      RequestCounter.Counts start = requests.snapshot();
      if (empty) {
        c.loadEmpty(version); // claims the run's epoch: a load of nothing is only for writing
      } else {
        // Every load finds the run's epoch without claiming it; a write store claims it at its
        // first change or commit (StrataStoreBase#prepareWrite, SyncedStore#commit).
        c.load(version, attempt, true);
      }
      StrataStoreBase store = newStore(c, version, readOnly, requests, start);
      store.ownedBy(TaskLock.currentOwner()); // before it is published as the holder
      published = store;
      taskLock.publish(store);
      return store;
    } catch (StateLoadException e) {
      taskLock.releaseAfterFailedLoad(published);
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw SparkErrors.versionNotFound(e.getMessage(), e);
      }
      throw SparkErrors.cannotLoad(e);
    } catch (Exception | Error e) {
      taskLock.releaseAfterFailedLoad(published);
      throw SparkErrors.cannotLoad(e);
    }
  }

  /** The task lock, which this provider hands to each store handle it makes. */
  final TaskLock<StrataStoreBase> taskLock() {
    return taskLock;
  }

  /**
   * The garbage-collection round maintenance finished since the last call, once: its stats are
   * reported in the metrics of the next commit ({@link StoreReports#takeUnreportedGc}).
   */
  synchronized GcStats takeUnreportedGc() {
    return reports.takeUnreportedGc(core);
  }

  /**
   * Garbage-collection rounds of this provider's store that failed since the last call, once:
   * reported in the metrics of the next commit ({@link StoreReports#takeUnreportedGcFailures}).
   */
  synchronized long takeUnreportedGcFailures() {
    return reports.takeUnreportedGcFailures(core);
  }

  /**
   * Reports a commit to the state store coordinator when the Spark version validates commits
   * (4.1+: {@code spark.sql.streaming.stateStore.commitValidation.enabled}, on by default, fails
   * {@code foreachBatch} batches whose stores did not report); nothing on 4.0.
   *
   * @param newVersion the version just committed
   */
  protected abstract void reportCommit(long newVersion);

  /**
   * Tells the state store coordinator that this store uploaded the base snapshot of {@code
   * version} (Spark 4.1+, whose snapshot-lag detection needs it; nothing on 4.0). Never throws.
   */
  protected abstract void reportSnapshotUploaded(long version);

  /** The store's Spark conf, as passed to {@link #init}. */
  protected final StateStoreConf storeConf() {
    return storeConf;
  }

  /** The Hadoop configuration passed to {@link #init}. */
  protected final Configuration hadoopConf() {
    return hadoopConf;
  }


  /**
   * Background maintenance (Spark's maintenance thread): uploads a base snapshot when due, then
   * runs a garbage-collection round when due (see {@link SyncedStore#maintenance()}).
   * Failures are logged and swallowed, as Spark's own providers do, so they never fail a query;
   * the next round retries.
   */
  @Override
  public void doMaintenance() {
    SyncedStore c;
    synchronized (this) {
      c = core;
    }
    if (c == null || taskLock.closed()) {
      return;
    }
    try {
      c.maintenance();
    } catch (Exception e) {
      LOG.warn("{}: maintenance failed; it will be retried", this, e);
    }
    reportSnapshotIfNew(c.lastSnapshotVersion()); // reported on upload already; a no-op then
  }

  /**
   * Reports {@code version} to Spark ({@link #reportSnapshotUploaded}) if it is newer than the
   * last snapshot version reported; -1 (none yet) is never reported. Never throws.
   */
  final void reportSnapshotIfNew(long version) {
    reports.snapshotIfNew(version);
  }

  /**
   * Closes the local database and the store's S3 client lease and deletes local files. Waits up
   * to the lock timeout for a task that still holds the store. A running base-snapshot upload is
   * waited for only if {@link #closeWaitsForUploads()}; otherwise it finishes (or is cancelled)
   * in the background and the rest of the close follows it there ({@link SyncedStore#close(
   * boolean)}). Idempotent.
   */
  @Override
  public void close() {
    if (!taskLock.close()) {
      return;
    }
    java.util.List<StrataStoreBase> sides;
    synchronized (sideStores) {
      sides = new java.util.ArrayList<>(sideStores.keySet());
    }
    sides.forEach(this::endSide);
    synchronized (this) {
      if (core != null) {
        core.close(closeWaitsForUploads());
        core = null;
      }
    }
  }

  /**
   * Whether {@link #close()} waits for a running base-snapshot upload (up to 30 + 30 s). True,
   * but on Spark 3.5 and 4.0, which close providers under their executor-wide provider lock
   * ({@code StateStore.loadedProviders}), so that a wait there would stall every stateful task
   * of the executor.
   */
  protected boolean closeWaitsForUploads() {
    return true;
  }

  /** Strata's custom metrics (the driver reads them from an uninitialised instance). */
  @Override
  public scala.collection.immutable.Seq<StateStoreCustomMetric> supportedCustomMetrics() {
    return Scala.seq(StrataMetrics.ALL);
  }

  @Override
  public String toString() {
    if (stateStoreId == null) {
      return "StrataStateStoreProvider[uninitialised]";
    }
    // Spark's StateStoreId text ("operatorId=.., partitionId=.., storeName=.."), as Spark's
    // providers name stores in logs and errors.
    return "StrataStateStoreProvider[" + stateStoreId + ", dir = " + location() + "]";
  }

  // ------------------------------------------------------------------ helpers for the store

  /** Whether the store has column families (Spark 4.x's {@code useColumnFamilies}). */
  final boolean useColumnFamilies() {
    return useColumnFamilies;
  }

  /** The codec of the {@code default} family. */
  FamilyCodec defaultCodec() {
    return defaultCodec;
  }

  /**
   * The codec of family {@code name}, which exists at {@code version}.
   *
   * @throws IllegalStateException if this provider instance never saw it declared (a family of
   *     a restored version that the operator did not declare again with createColFamilyIfAbsent;
   *     Spark's provider cannot use such a family either)
   */
  FamilyCodec codec(String name, long version) {
    FamilyCodec c = familyCodecs.get(name);
    if (c == null) {
      throw new IllegalStateException("Cannot use column family '" + name + "' of " + this
          + " version " + version + ": it exists in the state but was not declared with "
          + "createColFamilyIfAbsent since the provider was loaded");
    }
    return c;
  }


  /**
   * The codecs of the families other than {@code default} declared since this instance was
   * loaded, by name (the 4.x layer registers them as the operator declares its families).
   */
  final Map<String, FamilyCodec> familyCodecs() {
    return familyCodecs;
  }

  /**
   * Spark's checks before an operation on a family other than {@code default}: column families
   * enabled, and a name that is not empty and has no leading or trailing whitespace.
   */
  void checkFamilyOperation(String op, String name) {
    if (!useColumnFamilies) {
      throw SparkErrors.unsupportedOperation(op, COLUMN_FAMILIES_DISABLED);
    }
    if (name.isEmpty() || !name.trim().equals(name)) {
      throw SparkErrors.invalidColumnFamilyName(op, name);
    }
  }

  /**
   * Spark's checks before creating or removing a family: column families enabled; a name that
   * is not empty, has no leading or trailing whitespace, and is not {@code default} unless
   * internal; a non-internal name must not start with {@code $}.
   */
  void checkFamilyCreationOrRemoval(String op, String name, boolean internal) {
    if (!useColumnFamilies) {
      throw SparkErrors.unsupportedOperation(op, COLUMN_FAMILIES_DISABLED);
    }
    if (name == null || name.isEmpty() || !name.trim().equals(name)
        || (name.equals(DEFAULT_CF) && !internal)) {
      throw SparkErrors.invalidColumnFamilyName(op, String.valueOf(name));
    }
    if (!internal && name.charAt(0) == '$') {
      throw SparkErrors.reservedColumnFamilyName(name);
    }
  }

  /** Spark's Hadoop conf key of the query run id ({@code StreamExecution.RUN_ID_KEY}). */
  static final String RUN_ID_KEY = "sql.streaming.runId";

  /**
   * This instance's query run id: every Spark 4.x line's {@code StateStoreProvider.createAndInit}
   * sets it from {@code StateStoreProviderId.queryRunId} in the Hadoop conf handed to {@code
   * init}, and a new run always gets a new provider instance. Null outside a query (a tool or a
   * test without it): the store then commits checkpoint format 1 without an epoch. Called on
   * the first load, in the loading task; a line whose Spark passes the run id another way
   * overrides it (Spark 3.5).
   */
  protected String queryRunId() {
    String run = hadoopConf == null ? null : hadoopConf.get(RUN_ID_KEY);
    return run == null || run.isBlank() ? null : run;
  }

  /**
   * Whether Spark's checkpoint format 2 (state store checkpoint ids) is on for this store: on
   * 4.x {@code spark.sql.streaming.stateStore.checkpointFormatVersion} 2; never on 3.5.
   */
  protected abstract boolean checkpointIdsEnabled();

  /**
   * How many commits apart garbage-collection rounds run, at least 1 (on 4.x Spark's {@code
   * minVersionsToDelete}; see {@link #gcSettings()}).
   */
  protected abstract long minVersionsToDelete();

  /** Strata's settings, as read at {@code init}. */
  final StrataConf conf() {
    return conf;
  }

  /** The provider's S3 request counter. */
  final RequestCounter requests() {
    return requests;
  }

  final String location() {
    return stateStoreId.storeCheckpointLocation().toString();
  }

  private synchronized boolean coreMissing() {
    return core == null;
  }

  /**
   * The store, made on the first load.
   *
   * @param run the query run id ({@link #queryRunId()}, found before the first load took any
   *     lock), or null for none
   */
  private synchronized SyncedStore core(String run) throws IOException {
    if (taskLock.closed()) {
      throw new IllegalStateException(this + " is closed");
    }
    if (core == null) {
      core = newCore(run);
      coreRun = run;
      // Spark's coordinator counts a store that never reports as lagging (Spark 4.2 then forces
      // snapshots inside commits): report each snapshot when it is up, whoever started it.
      core.onSnapshotUploaded(this::reportSnapshotIfNew);
    }
    return core;
  }

  /**
   * A new store instance (not loaded) in a local directory of its own.
   *
   * @param run the query run id, or null for none
   */
  private SyncedStore newCore(String run) throws IOException {
    StoreIdentity identity = new StoreIdentity(stateStoreId.operatorId(),
        stateStoreId.partitionId(), stateStoreId.storeName(), location());
    ObjectStore objects = ObjectStores.open(location(), conf::s3,
        JvmRequests.alsoStateStores(requests));
    StoreSettings settings = new StoreSettings(conf.snapshotInterval(),
        conf.transferThreads(), conf.spillThresholdBytes(), checkpointIdsEnabled(),
        memoryLimits, gcSettings()).withSnapshotOnCommit(conf.snapshotOnCommit())
        .withDeltasStagedInMemory(conf.stageDeltasInMemory());
    return new SyncedStore(identity, objects, localDir(),
        run == null ? settings : settings.withRun(run), keySchema.json(), valueSchema.json(),
        JvmPools.SHARED);
  }

  /**
   * Retention from Spark ({@code minBatchesToRetain}; a round after {@code minVersionsToDelete}
   * = {@code ratioExtraSpaceAllowedInCheckpoint * minBatchesToRetain} commits, at least 1, as
   * Spark's RocksDB provider batches its deletions) and Strata's {@code gc.*} settings.
   */
  private GcSettings gcSettings() {
    long interval = Math.max(1, Math.min(Integer.MAX_VALUE, minVersionsToDelete()));
    return new GcSettings(conf.gcEnabled(), Math.max(1, storeConf.minVersionsToRetain()),
        (int) interval, conf.gcGracePeriod().toMillis());
  }

  /**
   * The store's local directory: {@code <base>/strata/jvm-<uuid>/<op>-<part>-<name>-<uuid>},
   * inside this JVM's claimed directory ({@link LocalDirs}; claiming it first deletes what JVMs
   * that exited or crashed left under {@code <base>/strata}).
   */
  private Path localDir() throws IOException {
    Path base;
    if (conf.localDir().isPresent()) {
      base = conf.localDir().get();
    } else if (SparkEnv.get() != null) {
      base = Paths.get(Utils.getLocalDir(SparkEnv.get().conf()));
    } else {
      base = Paths.get(System.getProperty("java.io.tmpdir"));
    }
    return LocalDirs.claim(base.resolve("strata")).resolve(stateStoreId.operatorId() + "-"
        + stateStoreId.partitionId() + "-" + stateStoreId.storeName() + "-" + UUID.randomUUID());
  }
}
