package io.strata.spark;

import io.strata.config.S3aFallbacks;
import io.strata.config.StrataConf;
import io.strata.metrics.RequestCounter;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.StateLoadException;
import io.strata.sync.StoreIdentity;
import io.strata.sync.SyncedStore;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Strata's Spark state store provider: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.strata.spark.StrataStateStoreProvider}.
 *
 * <p>Each instance serves one state store (operator, partition, store name) on one executor. It
 * keeps the state in a local RocksDB and checkpoints every commit to the store's checkpoint
 * location ({@code s3://}, {@code s3a://}, {@code file:} or a plain path) with one create-only
 * PUT; see {@link SyncedStore} and docs/format.md.
 *
 * <p>Contract points (Spark 4.1, see the state store notes): the no-argument constructor does no
 * I/O (the driver instantiates the class just to read {@link #supportedCustomMetrics()}); {@link
 * #init} validates settings but touches no storage; one task at a time holds the store (a lock
 * taken by {@code getStore}/{@code getReadStore} and given back by commit, abort or release, or
 * at task completion); {@link #upgradeReadStoreToWriteStore} turns the task's read store into its
 * write store without a second load; commits are reported to the coordinator when commit
 * validation is on; {@link #close()} waits for a running task before closing.
 */
public final class StrataStateStoreProvider implements StateStoreProvider {
  private static final Logger LOG = LoggerFactory.getLogger(StrataStateStoreProvider.class);
  private static final String DEFAULT_CF = "default";

  private StateStoreId stateStoreId;
  private StructType keySchema;
  private StructType valueSchema;
  private KeyStateEncoderSpec keySpec;
  private StateStoreConf storeConf;
  private Configuration hadoopConf;
  private boolean useColumnFamilies;
  private boolean useMultipleValuesPerKey;
  private StrataConf conf;
  private final RequestCounter requests = new RequestCounter();
  private final Semaphore taskLock = new Semaphore(1);
  private volatile StrataStateStore holder;
  private SyncedStore core;
  private volatile boolean closed;

  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  public StrataStateStoreProvider() { }

  /**
   * Initialises the provider (Spark calls this once, right after construction). Validates
   * Strata's settings and the key encoding; no storage is touched.
   *
   * @throws IllegalArgumentException naming the setting, for an invalid Strata setting or an
   *     unsupported checkpoint location scheme
   * @throws UnsupportedOperationException for a key encoding or feature not supported yet
   *     (multiple values per key)
   */
  @Override
  public void init(StateStoreId stateStoreId, StructType keySchema, StructType valueSchema,
      KeyStateEncoderSpec keyStateEncoderSpec, boolean useColumnFamilies,
      StateStoreConf storeConfs, Configuration hadoopConf, boolean useMultipleValuesPerKey,
      Option<StateSchemaProvider> stateSchemaProvider) {
    this.stateStoreId = stateStoreId;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.keySpec = keyStateEncoderSpec;
    this.storeConf = storeConfs;
    this.hadoopConf = hadoopConf;
    this.useColumnFamilies = useColumnFamilies;
    this.useMultipleValuesPerKey = useMultipleValuesPerKey;
    if (useMultipleValuesPerKey) {
      throw multipleValuesUnsupported("init");
    }
    new RowCodec(keySchema, valueSchema, keyStateEncoderSpec);
    this.conf = StrataConf.from(Scala.javaMap(storeConfs.sqlConfs()), s3aFallbacks(hadoopConf));
    // Fails now, naming the location, if its scheme is not one Strata can write to.
    ObjectStores.open(location(), conf.s3(), null).close();
  }

  @Override
  public StateStoreId stateStoreId() {
    return stateStoreId;
  }

  /**
   * A writable store holding version {@code version} (Spark's batch id; 0 is empty).
   *
   * @throws org.apache.spark.SparkException {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION}
   *     for a negative version, {@code ...CANNOT_READ_STREAMING_STATE_FILE} for a version never
   *     committed, {@code ...UNCATEGORIZED} for any other load failure (cause names the store,
   *     version and object key)
   */
  @Override
  public StateStore getStore(long version, Option<String> stateStoreCkptId) {
    return load(version, stateStoreCkptId, false);
  }

  /** A read-only store holding {@code version}; errors as {@link #getStore}. */
  @Override
  public ReadStateStore getReadStore(long version, Option<String> uniqueId) {
    return load(version, uniqueId, true);
  }

  /**
   * Turns this task's read store into its write store without reloading (same lock, same local
   * state). Falls back to {@link #getStore} if {@code readStore} is not this provider's live
   * read store at {@code version}.
   */
  @Override
  public StateStore upgradeReadStoreToWriteStore(ReadStateStore readStore, long version,
      Option<String> uniqueId) {
    if (readStore instanceof StrataStateStore s && s == holder && s.version() == version
        && s.mode() == StrataStateStore.Mode.READ_ONLY
        && (uniqueId.isEmpty() || !checkpointIdsEnabled()
            || uniqueId.get().equals(core.loadedAttempt().orElse(null)))) {
      s.upgrade();
      return s;
    }
    if (readStore instanceof StrataStateStore s) {
      s.release();
    }
    return getStore(version, uniqueId);
  }

  private StrataStateStore load(long version, Option<String> ckptId, boolean readOnly) {
    if (version < 0) {
      throw SparkErrors.unexpectedVersion(version);
    }
    if (closed) {
      throw SparkErrors.cannotLoad(new IllegalStateException(this + " is closed"));
    }
    acquireTaskLock(version);
    try {
      SyncedStore c = core();
      Optional<String> attempt = checkpointIdsEnabled() && ckptId.isDefined()
          ? Optional.of(ckptId.get()) : Optional.empty();
      RequestCounter.Counts start = requests.snapshot();
      c.load(version, attempt);
      StrataStateStore store = new StrataStateStore(this, c,
          new RowCodec(keySchema, valueSchema, keySpec), version, readOnly, requests, start);
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
  synchronized void releaseTaskLock(StrataStateStore store) {
    if (holder == store) {
      holder = null;
      taskLock.release();
    }
  }

  /** After a successful commit: report to the coordinator (Spark 4.1), then unlock. */
  void afterCommit(StrataStateStore store, long newVersion) {
    try {
      if (storeConf.commitValidationEnabled()) {
        StateStore.reportCommitToCoordinator(newVersion, stateStoreId, hadoopConf);
      }
    } finally {
      releaseTaskLock(store);
    }
  }

  /**
   * Background maintenance (Spark's maintenance thread): uploads a base snapshot when due.
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
    return StrataStateStore.customMetrics();
  }

  /**
   * Spark's snapshot-lag instance metric ({@code SnapshotLastUploaded}): each store reports the
   * version of the base snapshot its newest manifest names, and query progress lists the stores
   * whose base is oldest.
   */
  @Override
  public scala.collection.immutable.Seq<StateStoreInstanceMetric> supportedInstanceMetrics() {
    return Scala.seq(StrataMetrics.INSTANCE);
  }

  @Override
  public String toString() {
    if (stateStoreId == null) {
      return "StrataStateStoreProvider[uninitialised]";
    }
    return "StrataStateStoreProvider[id = (op=" + stateStoreId.operatorId() + ",part="
        + stateStoreId.partitionId() + ",name=" + stateStoreId.storeName() + "),dir = "
        + location() + "]";
  }

  // ------------------------------------------------------------------ helpers for the store

  short familyId(String name) {
    if (name == null || name.equals(DEFAULT_CF)) {
      return 0;
    }
    throw columnFamiliesUnsupported("column family '" + name + "'");
  }

  UnsupportedOperationException multipleValuesUnsupported(String op) {
    return new UnsupportedOperationException(op + ": multiple values per key "
        + "(transformWithState ListState) is not supported by Strata yet (" + this + ")");
  }

  UnsupportedOperationException columnFamiliesUnsupported(String op) {
    return new UnsupportedOperationException(op + ": column families (transformWithState) are "
        + "not supported by Strata yet (" + this + ")");
  }

  private boolean checkpointIdsEnabled() {
    return storeConf.enableStateStoreCheckpointIds();
  }

  private String location() {
    return stateStoreId.storeCheckpointLocation().toString();
  }

  private synchronized SyncedStore core() {
    if (core == null) {
      StoreIdentity identity = new StoreIdentity(stateStoreId.operatorId(),
          stateStoreId.partitionId(), stateStoreId.storeName(), location());
      ObjectStore objects = ObjectStores.open(location(), conf.s3(), requests);
      core = new SyncedStore(identity, objects, localDir(),
          new SyncedStore.Settings(conf.snapshotInterval(), conf.transferThreads(),
              conf.spillThresholdBytes(), checkpointIdsEnabled()),
          keySchema.json(), valueSchema.json());
    }
    return core;
  }

  private Path localDir() {
    Path base;
    if (conf.localDir().isPresent()) {
      base = conf.localDir().get();
    } else if (SparkEnv.get() != null) {
      base = Paths.get(Utils.getLocalDir(SparkEnv.get().conf()));
    } else {
      base = Paths.get(System.getProperty("java.io.tmpdir"));
    }
    return base.resolve("strata").resolve(stateStoreId.operatorId() + "-"
        + stateStoreId.partitionId() + "-" + stateStoreId.storeName() + "-" + UUID.randomUUID());
  }

  /** Hadoop S3A settings Strata falls back to, with the endpoint given a scheme. */
  static Map<String, String> s3aFallbacks(Configuration hadoop) {
    return S3aFallbacks.from(hadoop == null ? null : hadoop::get);
  }
}
