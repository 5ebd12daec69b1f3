// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.S3aFallbacks;
import io.strata.config.StrataConf;
import io.strata.engine.LocalDirs;
import io.strata.engine.SharedMemory;
import io.strata.metrics.GcStats;
import io.strata.metrics.RequestCounter;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
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
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
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
 * The version-neutral part of {@link StrataStateStoreProvider}: everything but the methods whose
 * signatures differ between Spark minor versions, which each version's adapter (the concrete
 * {@code StrataStateStoreProvider} compiled against that Spark, under {@code src/spark-<minor>/})
 * declares and forwards here.
 *
 * <p>Each instance serves one state store (operator, partition, store name) on one executor. It
 * keeps the state in a local RocksDB and checkpoints every commit to the store's checkpoint
 * location ({@code s3://}, {@code s3a://}, {@code file:} or a plain path) with one create-only
 * PUT; see {@link SyncedStore} and docs/format.md.
 *
 * <p>Contract points (see the state store notes): the no-argument constructor does no I/O (the
 * driver instantiates the class just to read {@link #supportedCustomMetrics()}); {@link #init}
 * validates settings but touches no storage; one task at a time holds the store (a lock taken by
 * {@code getStore}/{@code getReadStore} and given back by commit, abort or release, or at task
 * completion); {@link #upgradeStore} turns the task's read store into its write store without a
 * second load (Spark 4.1+); commits are reported to the coordinator when commit validation is
 * on (Spark 4.1+); {@link #close()} waits for a running task before closing.
 *
 * <p>Column families (transformWithState, stream-stream join state format 3) are virtual: a
 * 2-byte id prefixes every key, the name-to-id mapping of each version is in its manifest, and
 * each family's keys and values are encoded with Spark's own RocksDB state encoders, so the
 * order of range scans (timers, TTL) is exactly that of Spark's RocksDB provider. Errors for bad
 * or missing families are Spark's ({@code STATE_STORE_*} conditions, see {@link SparkErrors}).
 */
public abstract class AbstractStrataProvider implements StateStoreProvider {
  private static final Logger LOG = LoggerFactory.getLogger(AbstractStrataProvider.class);

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
  private Option<StateSchemaProvider> schemaProvider = Option.empty();
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
  private final Semaphore taskLock = new Semaphore(1);
  private volatile AbstractStrataStore holder;
  private SyncedStore core;
  /** The last garbage-collection round reported in metrics ({@link #takeUnreportedGc}). */
  private long reportedGcRound;
  private long reportedGcFailures;
  private volatile boolean closed;
  /** The newest snapshot version reported to Spark, -1 for none. Guarded by this. */
  private long reportedSnapshotVersion = -1;

  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  protected AbstractStrataProvider() { }

  /**
   * Initialises the provider (Spark calls this once, right after construction). Validates
   * Strata's settings and the key encoding; no storage is touched.
   *
   * <p>With {@code useColumnFamilies} (transformWithState, stream-stream join state format 3)
   * every family, {@code default} included, is encoded with Spark's own RocksDB state encoders
   * ({@link SparkFamilyCodec}), so key order matches Spark's RocksDB provider exactly, and
   * {@code spark.sql.streaming.stateStore.encodingFormat} ({@code unsaferow} or {@code avro})
   * applies. Without column families, {@link RowCodec}'s format is kept (range-scan encodings,
   * which it lacks, use Spark's encoders too).
   *
   * <p>A {@code file:} or plain-path location is refused on a cluster (a master other than
   * {@code local}/{@code local[...]}) unless {@code fileCheckpoint.shared} declares it shared
   * storage: see {@link LocalLocationRule}.
   *
   * @throws IllegalArgumentException naming the setting, for an invalid Strata setting or an
   *     unsupported checkpoint location scheme; or if {@code useMultipleValuesPerKey} is set
   *     without {@code useColumnFamilies} (Spark's RocksDB provider requires both too)
   * @throws org.apache.spark.SparkUnsupportedOperationException ({@code
   *     STATE_STORE_UNSUPPORTED_OPERATION}) for a local location on a cluster, see {@link
   *     LocalLocationRule#check}
   * @throws org.apache.spark.SparkUnsupportedOperationException from Spark's encoders for a key
   *     encoding they reject (a variable-size range-scan ordering column)
   */
  @Override
  public void init(StateStoreId stateStoreId, StructType keySchema, StructType valueSchema,
      KeyStateEncoderSpec keyStateEncoderSpec, boolean useColumnFamilies,
      StateStoreConf storeConfs, Configuration hadoopConf, boolean useMultipleValuesPerKey,
      Option<StateSchemaProvider> stateSchemaProvider) {
    this.stateStoreId = stateStoreId;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.storeConf = storeConfs;
    this.hadoopConf = hadoopConf;
    this.useColumnFamilies = useColumnFamilies;
    this.schemaProvider = stateSchemaProvider == null ? Option.empty() : stateSchemaProvider;
    if (useMultipleValuesPerKey && !useColumnFamilies) {
      throw new IllegalArgumentException("requirement failed: Multiple values per key support "
          + "requires column families to be enabled in StrataStateStoreProvider (" + this + ")");
    }
    this.defaultCodec = newCodec(DEFAULT_CF, keySchema, valueSchema, keyStateEncoderSpec,
        useMultipleValuesPerKey);
    this.conf = StrataConf.from(Scala.javaMap(storeConfs.sqlConfs()),
        s3aFallbacks(hadoopConf, ObjectStores.bucketOf(location())));
    this.memoryLimits = memoryLimits(conf, SparkEnv.get());
    // Fails now, naming the location, if its scheme is not one Strata can write to.
    ObjectStores.open(location(), conf.s3(), null).close();
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
   * version's {@code getStore} forwards here.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared (Spark's Scala callers expect
   * it): {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a negative version, {@code
   * ...CANNOT_READ_STREAMING_STATE_FILE} for a version never committed, {@code ...UNCATEGORIZED}
   * for any other load failure (cause names the store, version and object key)
   *
   * @param stateStoreCkptId the checkpoint id of {@code version} (checkpoint format 2), or none
   * @param forceSnapshotOnCommit upload a base snapshot of the new version at its commit (Spark
   *     4.2: the coordinator found this store's snapshots lagging); false before 4.2
   */
  protected final StateStore openStore(long version, Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit) {
    AbstractStrataStore held = heldByCaller(version);
    if (held != null && held.mode() == AbstractStrataStore.Mode.READ_ONLY) {
      // This task's read store of the same version (Spark 4.0 loads a task's write store with a
      // second getStore while its read store is still open, and aborts the read store only at
      // task end, after the commit): the read store becomes the write store, as an upgrade.
      return upgradeStore(held, version, stateStoreCkptId, forceSnapshotOnCommit);
    }
    if (held != null) {
      held.forceSnapshotOnCommit(forceSnapshotOnCommit);
      return held; // already this caller's write store of that version
    }
    AbstractStrataStore store = load(version, stateStoreCkptId, false);
    store.forceSnapshotOnCommit(forceSnapshotOnCommit);
    return store;
  }

  /**
   * The store at {@code endVersion}, for Spark's {@code SupportsFineGrainedReplay
   * .replayStateFromSnapshot} (the state data source's {@code snapshotStartBatchId}). Spark's
   * providers rebuild it from the snapshot file of {@code snapshotVersion} plus the changes after
   * it; Strata restores {@code endVersion} from the base its lineage names, every file verified by
   * checksum, which holds the same state, so a base at {@code snapshotVersion} is not required.
   *
   * <p>Throws as {@link #openStore}; {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} if
   * {@code snapshotVersion} is below 1 or above {@code endVersion} (as Spark's providers).
   *
   * @param readOnly a read store (its caller wraps it) instead of a write store
   */
  protected final StateStore replay(long snapshotVersion, long endVersion, boolean readOnly,
      Option<String> endCkptId) {
    if (snapshotVersion < 1) {
      throw SparkErrors.unexpectedVersion(snapshotVersion);
    }
    if (endVersion < snapshotVersion) {
      throw SparkErrors.unexpectedVersion(endVersion);
    }
    if (readOnly) {
      return (StateStore) getReadStore(endVersion, endCkptId);
    }
    return openStore(endVersion, endCkptId, false);
  }

  /**
   * The change feed of versions {@code startVersion} to {@code endVersion} for Spark's {@code
   * SupportsFineGrainedReplay.getStateStoreChangeDataReader} (the state data source's {@code
   * readChangeFeed}), read from the store's SST deltas in S3 (see {@link ChangeRows}). No local
   * database is opened.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared:
   * {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a start below 1 or an end before it,
   * {@code ...CANNOT_READ_STREAMING_STATE_FILE} if a version's manifest is missing, {@code
   * ...UNCATEGORIZED} for any other failure (cause names the store, version and object).
   *
   * @param family the column family, or none for {@code default}
   * @param endCkptId the checkpoint id of {@code endVersion} (checkpoint format 2), or none
   */
  protected final ChangeRows changeRows(long startVersion, long endVersion,
      Option<String> family, Option<String> endCkptId) {
    if (startVersion < 1) {
      throw SparkErrors.unexpectedVersion(startVersion);
    }
    if (endVersion < startVersion) {
      throw SparkErrors.unexpectedVersion(endVersion);
    }
    String name = family.isDefined() ? family.get() : DEFAULT_CF;
    FamilyCodec codec;
    try {
      codec = name.equals(DEFAULT_CF) ? defaultCodec() : codec(name, endVersion);
    } catch (IllegalStateException e) { // a family the reader did not declare
      throw SparkErrors.cannotLoad(e);
    }
    StoreIdentity identity = new StoreIdentity(stateStoreId.operatorId(),
        stateStoreId.partitionId(), stateStoreId.storeName(), location());
    ObjectStore objects = ObjectStores.open(location(), conf.s3(), requests);
    try {
      io.strata.sync.ChangeFeed feed = io.strata.sync.ChangeFeed.open(identity, objects,
          checkpointIdsEnabled(), startVersion, endVersion,
          Optional.ofNullable(endCkptId.isDefined() ? endCkptId.get() : null));
      return new ChangeRows(feed, objects, codec, name, identity.toString());
    } catch (StateLoadException e) {
      objects.close();
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw SparkErrors.versionNotFound(e.getMessage(), e);
      }
      throw SparkErrors.cannotLoad(e);
    } catch (IOException | RuntimeException e) {
      objects.close();
      throw SparkErrors.cannotLoad(e);
    }
  }

  /**
   * A read-only store holding {@code version}; errors as {@link #openStore}. If the caller (the
   * same task, or outside tasks the same thread) already holds a store of that version, that
   * store: Spark 4.0's state data source opens a write store to declare a column family and then
   * a read store of the same provider, and aborts only the read store.
   */
  @Override
  public ReadStateStore getReadStore(long version, Option<String> uniqueId) {
    AbstractStrataStore held = heldByCaller(version);
    return held != null ? held : load(version, uniqueId, true);
  }

  /**
   * The store this provider's caller (same task attempt, or outside tasks the same thread)
   * holds at {@code version}, open for reads; null if none. Spark's RocksDB provider is
   * re-entrant for its lock holder the same way.
   */
  private AbstractStrataStore heldByCaller(long version) {
    AbstractStrataStore held = holder;
    if (held == null || held.owner() != currentOwner() || held.version() != version) {
      return null;
    }
    AbstractStrataStore.Mode m = held.mode();
    return m == AbstractStrataStore.Mode.READ_ONLY || m == AbstractStrataStore.Mode.UPDATING
        ? held : null;
  }

  /**
   * Turns this task's read store into its write store without reloading (same lock, same local
   * state; Spark 4.1+ calls {@code upgradeReadStoreToWriteStore}, which forwards here). Falls
   * back to {@link #openStore} if {@code readStore} is not this provider's live read store at
   * {@code version}.
   *
   * @param forceSnapshotOnCommit as for {@link #openStore}
   */
  protected final StateStore upgradeStore(ReadStateStore readStore, long version,
      Option<String> uniqueId, boolean forceSnapshotOnCommit) {
    // Only this provider's own handles are touched: Spark may pass the read store of another
    // operator in the same task (its thread-local lives until the task ends), or one this
    // operator's previous provider instance made; those belong to their providers.
    if (readStore instanceof AbstractStrataStore s && s.provider() == this) {
      if (s == holder && s.version() == version
          && (uniqueId.isEmpty() || !checkpointIdsEnabled()
              || uniqueId.get().equals(core.loadedAttempt().orElse(null)))) {
        if (s.mode() == AbstractStrataStore.Mode.READ_ONLY) {
          try {
            core.prepareWrite(); // a run that only read so far claims its epoch now
          } catch (IOException e) {
            throw SparkErrors.cannotLoad(e);
          }
          s.upgrade();
        }
        if (s.mode() == AbstractStrataStore.Mode.UPDATING) {
          s.forceSnapshotOnCommit(forceSnapshotOnCommit);
          return s;
        }
      }
      if (s.mode() == AbstractStrataStore.Mode.READ_ONLY) {
        s.release(); // a read store of another version: give its lock back; never abort a writer
      }
    }
    return openStore(version, uniqueId, forceSnapshotOnCommit);
  }

  /**
   * Creates this Spark version's store handle (the concrete {@code StrataStateStore} of the
   * adapter); see {@link AbstractStrataStore}'s constructor for the arguments.
   */
  abstract AbstractStrataStore newStore(SyncedStore core, long version, boolean readOnly,
      RequestCounter requests, RequestCounter.Counts atStart);

  private AbstractStrataStore load(long version, Option<String> ckptId, boolean readOnly) {
    if (version < 0) {
      throw SparkErrors.unexpectedVersion(version);
    }
    if (closed) {
      throw SparkErrors.cannotLoad(new IllegalStateException(this + " is closed"));
    }
    acquireTaskLock(version);
    try {
      if (closed) {
        // close() gave up waiting for the previous holder and closed the store meanwhile.
        throw new IllegalStateException(this + " is closed");
      }
      SyncedStore c = core();
      Optional<String> attempt = checkpointIdsEnabled() && ckptId.isDefined()
          ? Optional.of(ckptId.get()) : Optional.empty();
      RequestCounter.Counts start = requests.snapshot();
      // Every load finds the run's epoch without claiming it; a write store claims it at its
      // first change or commit (AbstractStrataStore#prepareWrite, SyncedStore#commit).
      c.load(version, attempt, true);
      AbstractStrataStore store = newStore(c, version, readOnly, requests, start);
      store.ownedBy(currentOwner()); // before it is published as the holder
      synchronized (this) {
        holder = store;
      }
      TaskContext ctx = TaskContext.get();
      if (ctx != null) {
        ctx.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) t -> store.onTaskCompletion());
      }
      return store;
    } catch (StateLoadException e) {
      taskLock.release();
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw SparkErrors.versionNotFound(e.getMessage(), e);
      }
      throw SparkErrors.cannotLoad(e);
    } catch (Exception | Error e) {
      taskLock.release();
      throw SparkErrors.cannotLoad(e);
    }
  }

  /**
   * Who is loading: the Spark task attempt id (at least 0) inside a task, else minus one minus
   * the thread's id (a caller outside Spark's tasks, such as a test or a tool).
   */
  private static long currentOwner() {
    TaskContext ctx = TaskContext.get();
    return ctx != null ? ctx.taskAttemptId() : -1 - Thread.currentThread().getId();
  }

  private void acquireTaskLock(long version) {
    long timeoutMs = conf.lockAcquireTimeout().toMillis();
    try {
      if (!taskLock.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)) {
        throw SparkErrors.cannotLoad(new IllegalStateException("Cannot load " + this
            + " version " + version + ": another task holds it (" + holder + ") after waiting "
            + timeoutMs + " ms (" + StrataConf.LOCK_TIMEOUT.fullKey() + ")"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw SparkErrors.cannotLoad(e);
    }
  }

  /** Gives the task lock back; called once by the handle when it leaves READ_ONLY/UPDATING. */
  synchronized void releaseTaskLock(AbstractStrataStore store) {
    if (holder == store) {
      holder = null;
      taskLock.release();
    }
  }

  /**
   * The garbage-collection round maintenance finished since the last call, once: its stats are
   * reported in the metrics of the next commit. {@link GcStats#NONE} if none.
   */
  synchronized GcStats takeUnreportedGc() {
    SyncedStore c = core;
    if (c == null) {
      return GcStats.NONE;
    }
    GcStats last = c.lastGc();
    if (last.round() == reportedGcRound) {
      return GcStats.NONE;
    }
    reportedGcRound = last.round();
    return last;
  }

  /**
   * Garbage-collection rounds of this provider's store that failed since the last call, once:
   * reported in the metrics of the next commit (Strata also WARNs after repeated failures).
   */
  synchronized long takeUnreportedGcFailures() {
    SyncedStore c = core;
    if (c == null) {
      return 0;
    }
    long failed = c.gcFailedRounds();
    long unreported = Math.max(0, failed - reportedGcFailures);
    reportedGcFailures = failed;
    return unreported;
  }

  /** After a successful commit: report it to the coordinator (Spark 4.1+), then unlock. */
  void afterCommit(AbstractStrataStore store, long newVersion) {
    try {
      reportCommit(newVersion);
    } finally {
      releaseTaskLock(store);
    }
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
    if (c == null || closed) {
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
   * last snapshot version reported; -1 (none yet) is never reported.
   */
  final void reportSnapshotIfNew(long version) {
    synchronized (this) {
      if (version <= reportedSnapshotVersion) {
        return;
      }
      reportedSnapshotVersion = version;
    }
    try {
      reportSnapshotUploaded(version);
    } catch (RuntimeException e) {
      LOG.warn("{}: reporting the snapshot of version {} to Spark failed", this, version, e);
    }
  }

  /**
   * Closes the local database and the store's S3 client lease and deletes local files. Waits up
   * to the lock timeout for a task that still holds the store. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean locked = false;
    try {
      long timeout = conf == null ? 0 : conf.lockAcquireTimeout().toMillis();
      locked = taskLock.tryAcquire(timeout, TimeUnit.MILLISECONDS);
      if (!locked) {
        LOG.warn("{}: closing while a task still holds it ({})", this, holder);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      if (core != null) {
        core.close();
        core = null;
      }
    }
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

  private FamilyCodec newCodec(String family, StructType key, StructType value,
      KeyStateEncoderSpec spec, boolean multipleValues) {
    if (!useColumnFamilies && (spec instanceof NoPrefixKeyStateEncoderSpec
        || spec instanceof PrefixKeyScanStateEncoderSpec)) {
      return new RowCodec(key, value, spec);
    }
    return new SparkFamilyCodec(family, key, value, spec, multipleValues,
        storeConf.stateStoreEncodingFormat(), schemaProvider);
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
   * Registers the codec of family {@code name}: for a family being created ({@code replace}),
   * always; for one that exists, unless one is registered already (Spark's provider keeps the
   * first declaration of an existing family too).
   */
  void declareFamily(String name, StructType key, StructType value, KeyStateEncoderSpec spec,
      boolean multipleValues, boolean replace) {
    if (replace) {
      familyCodecs.put(name, newCodec(name, key, value, spec, multipleValues));
    } else {
      familyCodecs.computeIfAbsent(name, n -> newCodec(n, key, value, spec, multipleValues));
    }
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
   * sets it from {@code StateStoreProviderId.queryRunId} in the Hadoop conf handed to {@link
   * #init}, and a new run always gets a new provider instance. Null outside a query (a tool or a
   * test without it): the store then commits checkpoint format 1 without an epoch.
   */
  private String queryRunId() {
    String run = hadoopConf == null ? null : hadoopConf.get(RUN_ID_KEY);
    return run == null || run.isBlank() ? null : run;
  }

  private boolean checkpointIdsEnabled() {
    return storeConf.enableStateStoreCheckpointIds();
  }

  private String location() {
    return stateStoreId.storeCheckpointLocation().toString();
  }

  private synchronized SyncedStore core() throws IOException {
    if (closed) {
      throw new IllegalStateException(this + " is closed");
    }
    if (core == null) {
      StoreIdentity identity = new StoreIdentity(stateStoreId.operatorId(),
          stateStoreId.partitionId(), stateStoreId.storeName(), location());
      ObjectStore objects = ObjectStores.open(location(), conf.s3(), requests);
      StoreSettings settings = new StoreSettings(conf.snapshotInterval(),
          conf.transferThreads(), conf.spillThresholdBytes(), checkpointIdsEnabled(),
          memoryLimits, gcSettings()).withSnapshotOnCommit(conf.snapshotOnCommit())
          .withDeltasStagedInMemory(conf.stageDeltasInMemory());
      String run = queryRunId();
      core = new SyncedStore(identity, objects, localDir(),
          run == null ? settings : settings.withRun(run), keySchema.json(), valueSchema.json());
      // Spark's coordinator counts a store that never reports as lagging (Spark 4.2 then forces
      // snapshots inside commits): report each snapshot when it is up, whoever started it.
      core.onSnapshotUploaded(this::reportSnapshotIfNew);
    }
    return core;
  }

  /**
   * Retention from Spark ({@code minBatchesToRetain}; a round after {@code minVersionsToDelete}
   * = {@code ratioExtraSpaceAllowedInCheckpoint * minBatchesToRetain} commits, at least 1, as
   * Spark's RocksDB provider batches its deletions) and Strata's {@code gc.*} settings.
   */
  private GcSettings gcSettings() {
    long interval = Math.max(1, Math.min(Integer.MAX_VALUE, storeConf.minVersionsToDelete()));
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

  /** Cap used for {@code memory.max=auto} outside Spark (no SparkEnv), bytes. */
  static final long MEMORY_MAX_WITHOUT_SPARK = 512L << 20;
  /** Lower bound of the {@code auto} cap, bytes ({@link StrataConf#MEMORY_AUTO_MIN_BYTES}). */
  static final long MEMORY_AUTO_MIN = StrataConf.MEMORY_AUTO_MIN_BYTES;

  /**
   * The native memory limits of this JVM's local stores: {@code memory.max} when set, else
   * ({@code auto}) half of the memory overhead Spark budgets for this JVM outside the heap, which
   * is where RocksDB's native memory lives in a YARN or Kubernetes container.
   *
   * @param env the executor's SparkEnv, or null outside Spark ({@value #MEMORY_MAX_WITHOUT_SPARK}
   *     bytes then)
   */
  static SharedMemory.Limits memoryLimits(StrataConf conf, SparkEnv env) {
    long cap;
    if (conf.memoryMaxBytes().isPresent()) {
      cap = conf.memoryMaxBytes().get();
    } else if (env == null) {
      cap = MEMORY_MAX_WITHOUT_SPARK;
    } else {
      // "driver" is SparkContext.DRIVER_IDENTIFIER: local mode, tasks run in the driver JVM.
      cap = autoMemoryBytes(env.conf(), "driver".equals(env.executorId()));
    }
    return new SharedMemory.Limits(conf.memoryBounded(), cap);
  }

  /**
   * Half of the JVM's memory overhead, at least {@value #MEMORY_AUTO_MIN} bytes. The overhead is
   * Spark's: {@code spark.<role>.memoryOverhead} if set, else {@code
   * max(spark.<role>.minMemoryOverhead (384m), spark.<role>.memoryOverheadFactor (0.10) *
   * spark.<role>.memory (1g))}, with role {@code driver} in local mode (tasks run in the driver)
   * and {@code executor} otherwise. The other half stays for the JVM's own native memory.
   *
   * @return the cap, bytes
   */
  static long autoMemoryBytes(SparkConf sc, boolean driver) {
    String role = driver ? "spark.driver." : "spark.executor.";
    long overheadMiB;
    if (sc.contains(role + "memoryOverhead")) {
      overheadMiB = sc.getSizeAsMb(role + "memoryOverhead");
    } else {
      long heapMiB = sc.getSizeAsMb(role + "memory", "1g");
      double factor = sc.getDouble(role + "memoryOverheadFactor", 0.10);
      long minMiB = sc.getSizeAsMb(role + "minMemoryOverhead", "384m");
      overheadMiB = Math.max(minMiB, (long) (factor * heapMiB));
    }
    return Math.max(MEMORY_AUTO_MIN, (overheadMiB << 20) / 2);
  }

  /**
   * Hadoop S3A settings Strata falls back to for {@code bucket} (its {@code
   * fs.s3a.bucket.<bucket>.*} keys first), with the endpoint given a scheme.
   *
   * @param bucket the checkpoint location's bucket; null for a location that is not in S3
   */
  static Map<String, String> s3aFallbacks(Configuration hadoop, String bucket) {
    return S3aFallbacks.from(hadoop == null ? null : hadoop::get, bucket);
  }
}
