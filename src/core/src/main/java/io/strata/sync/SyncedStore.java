// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.CloseableIterator;
import io.strata.engine.DeltaFile;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalReadException;
import io.strata.engine.LocalStore;
import io.strata.format.BaseSnapshot;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.metrics.CommitStats;
import io.strata.metrics.GcStats;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One state store kept in a local RocksDB and checkpointed to an object store: the version life
 * cycle (load, the version being built, commit, abort, close) and the monitor that serialises
 * it. The work is done by collaborators: {@link VersionObjectReader} (manifests), {@link
 * Restorer} (download, verify, ingest), {@link BaseSnapshotUploader} (background snapshots),
 * {@link GcTrigger} and {@link GarbageCollector} (retention), {@link LocalIntegrity} (local
 * disk) and {@link TransferPools} (threads). Knows nothing of Spark.
 *
 * <h2>Commit (one PUT)</h2>
 * The version's writes become one sorted SST delta; the delta and the version's manifest are
 * written as one version object with one create-only PUT ({@link StoreLayout#versionObject}
 * under checkpoint format 2; under format 1 with a query run the version's first generation
 * {@link StoreLayout#generationVersionObject}, climbing past generations of earlier runs, see
 * {@link RunEpochs}). The delta is written where it costs least ({@link DeltaStaging}: memory
 * when it can) and ingested into the local database only after the PUT succeeded, on the JVM's
 * ingest threads, once the caller of {@link #commit()} starts it ({@link #startLocalIngestion()},
 * after what it still does for the commit): a commit costs its SST build and one PUT round trip,
 * and nothing else competes with the PUT, or with the caller's work after it, for the cores.
 * Every later call that needs the local database first waits for that ingestion (running it
 * itself if it has not started, {@link #settleIngestion()}); until then
 * the database's pending writes still hold the version's writes, so reads are right either way.
 * If the ingestion fails, the version is still committed and the next load restores it from the
 * object store. If the PUT fails, the local database is discarded (the next load restores from
 * the object store). Nothing is listed, read, renamed, copied or overwritten.
 *
 * <h2>Load</h2>
 * If the local database holds exactly the requested version (and attempt, when given), nothing
 * is downloaded, unless {@link LocalIntegrity} finds it damaged: then it is dropped and the
 * version restored. Otherwise the manifest is read (with the attempt id known: one GET; else one
 * LIST of the version's prefix: the greatest generation, or the newest attempt, wins) and
 * {@link Restorer} rebuilds the version in a fresh directory: from the newest published snapshot on
 * the manifest's lineage ({@link PublishedSnapshots#find}, one LIST of {@code b/}) plus the
 * deltas after it, or, if there is none or restoring it fails, from the manifest's own base and
 * chain. A cold load that replayed at least {@code snapshotInterval} deltas schedules a snapshot
 * of the loaded version on the store's background thread. A version not found whose location
 * holds another provider's files fails with an error saying so.
 *
 * <h2>Background work</h2>
 * {@link #maintenance()} takes a RocksDB checkpoint of the committed version when {@code
 * snapshotInterval} versions passed since the last base and uploads it ({@link
 * BaseSnapshotUploader}; it is published for every later load ({@link PublishedSnapshots}) and
 * the next commit's manifest names it as its base), then runs a
 * garbage-collection round when {@link GcTrigger} says one is due (it keeps every object the
 * retained manifests name, plus this instance's pending snapshot, spills and loaded version;
 * see {@link Reachability}). With {@link StoreSettings#snapshotOnCommit()}, the commit that
 * reaches {@code snapshotInterval} versions since its base queues the same snapshot on the JVM's
 * commit-snapshot threads, so a job whose batches come faster than maintenance still has a
 * bounded chain.
 *
 * <h2>Column families and local disk</h2>
 * Column families are virtual: every key starts with its family's 2-byte id ({@link
 * ColumnFamily#keyPrefix()}); the name-to-id mapping is committed in each manifest ({@link
 * VersionBuilder}). The local disk holds the live database plus at most one checkpoint ({@link
 * LocalDatabase}, {@link LocalIntegrity}).
 *
 * <h2>Threading</h2>
 * One task thread at a time calls {@link #load}, the reads and writes, and {@link #commit} or
 * {@link #abort} (the caller serialises tasks). {@link #maintenance()} and {@link #close()} may
 * run on another thread; state changes are serialised by this object's monitor, so close and
 * the checkpoint step of maintenance never overlap a commit, spill or load. The upload of a
 * snapshot runs outside the monitor; {@link #close()} lets it finish (up to {@value
 * #FINISH_WAIT_MS} ms), then cancels it and waits (up to {@value #CLOSE_WAIT_MS} ms) for it to
 * stop before it closes the object store and deletes the directory.
 */
public final class SyncedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SyncedStore.class);
  /**
   * How long {@link #close()} lets a running snapshot upload finish (and publish) before it
   * cancels it, ms.
   */
  static final long FINISH_WAIT_MS = 30_000;
  /** How long {@link #close()} then waits for a cancelled snapshot upload to stop, ms. */
  static final long CLOSE_WAIT_MS = 30_000;
  /** Base snapshots started by commits that run at once in one JVM (all stores together). */
  static final int COMMIT_SNAPSHOTS_AT_ONCE = 4;
  /**
   * The JVM's threads for snapshots that commits start: shared by every store, so a store's own
   * background thread (the upload a long cold load scheduled) never waits behind them, and at
   * most {@value #COMMIT_SNAPSHOTS_AT_ONCE} run at once. Daemons, gone when idle.
   */
  private static final java.util.concurrent.ThreadPoolExecutor COMMIT_SNAPSHOTS;

  static {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    COMMIT_SNAPSHOTS = new java.util.concurrent.ThreadPoolExecutor(COMMIT_SNAPSHOTS_AT_ONCE,
        COMMIT_SNAPSHOTS_AT_ONCE, 30, TimeUnit.SECONDS,
        new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "strata-commit-snapshot-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    COMMIT_SNAPSHOTS.allowCoreThreadTimeOut(true);
  }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final StoreSettings settings;
  private final String keySchema;
  private final String valueSchema;
  private final Clock clock;
  private final TransferPools pools;
  private final VersionObjectReader reader;
  private final Restorer restorer;
  private final GcTrigger gc;
  private final BaseSnapshotUploader snapshots;
  private final PublishedSnapshots published;
  private final LocalIntegrity integrity;
  private final LocalReads reads;
  /**
   * True after a read-only cold load that replayed at least snapshotInterval deltas and
   * scheduled no snapshot: {@link #prepareWrite} schedules it. Guarded by this.
   */
  private boolean longRestoreUnsnapshotted;
  /**
   * True while a base snapshot a commit started ({@link StoreSettings#snapshotOnCommit()}) waits
   * on the background thread for its checkpoint. Guarded by this.
   */
  private boolean snapshotQueued;
  /**
   * The version before which no commit starts another snapshot: the version of the last commit
   * that started one plus {@code snapshotInterval}. Guarded by this.
   */
  private long commitSnapshotFloor;
  /** This instance's query run and its epoch (checkpoint format 1 with a run), else null. */
  private final RunEpochs epochs;

  // The version life cycle, guarded by this (volatile ones are also read without it).
  /** The live local database and the committed version it holds. */
  private final LocalDatabase db;
  private boolean closed;
  /** The version being built on the loaded one. */
  private final VersionBuilder building;
  private volatile RestoreStats lastRestore = RestoreStats.NONE;
  /**
   * The last commit's local ingestion while it may still run ({@link #settleIngestion()});
   * volatile so that reads and writes can test it without the monitor.
   */
  private volatile PendingIngestion ingestion;
  /** How long the last settled ingestion took, ns; reported by the next commit. */
  private long lastIngestNanos;
  private volatile long lastSnapshotVersion = -1;
  private volatile java.util.function.LongConsumer snapshotListener = v -> { };

  /**
   * Creates the store; no I/O happens until {@link #load}.
   *
   * @param identity which store (for keys in manifests and messages)
   * @param objects the object store rooted at the store's checkpoint location; closed by {@link
   *     #close()}
   * @param localDir a directory owned by this store alone (created on first load, deleted on
   *     close; anything in it that is not the live database is deleted)
   * @param settings tuning
   * @param keySchema key schema as JSON, recorded in manifests
   * @param valueSchema value schema as JSON, recorded in manifests
   */
  public SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir,
      StoreSettings settings, String keySchema, String valueSchema) {
    this(identity, objects, localDir, settings, keySchema, valueSchema, Clock.systemUTC());
  }

  /**
   * As the public constructor, with the wall clock used for the grace period (tests move it
   * forward to age objects instead of waiting).
   */
  SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir, StoreSettings settings,
      String keySchema, String valueSchema, Clock clock) {
    this.identity = identity;
    this.objects = objects;
    this.settings = settings;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.clock = clock;
    this.pools = new TransferPools(identity, settings.transferThreads());
    RunEpochs runEpochs = settings.epochKeys()
        ? new RunEpochs(identity, objects, settings.run().get(), clock) : null;
    this.epochs = runEpochs;
    GcSettings gcSettings = settings.gc();
    ManifestCache manifests = new ManifestCache((int) Math.min(10_000L,
        gcSettings.versionsToRetain()
            + 2L * Math.max(gcSettings.roundInterval(), settings.snapshotInterval()) + 16));
    this.reader = new VersionObjectReader(identity, objects, settings.attemptKeys(), manifests);
    this.restorer = new Restorer(identity, objects, pools.transfers(),
        settings.transferThreads(), settings.memory());
    this.published = new PublishedSnapshots(identity, objects);
    this.gc = new GcTrigger(gcSettings, clock,
        new GarbageCollector(identity, objects, reader, pools.transfers(), gcSettings,
            () -> runEpochs == null ? -1 : runEpochs.known(), published), this);
    this.integrity = new LocalIntegrity(identity, localDir);
    this.snapshots = new BaseSnapshotUploader(identity, objects, pools, gc, integrity, clock,
        gcSettings.gracePeriodMillis(), published);
    this.building = new VersionBuilder(identity, objects, gc);
    this.db = new LocalDatabase(identity, localDir, integrity, snapshots);
    this.reads = new LocalReads(identity, db, integrity, this);
  }

  /**
   * Calls {@code listener} with the version of every base snapshot this instance uploads and
   * publishes, on the thread that uploaded it (a maintenance call, a commit-snapshot thread, the
   * store's background thread), after {@link #lastSnapshotVersion()} moved to it. The Spark layer
   * reports it to Spark's coordinator. A listener that throws is logged and ignored.
   */
  public void onSnapshotUploaded(java.util.function.LongConsumer listener) {
    this.snapshotListener = java.util.Objects.requireNonNull(listener, "listener");
  }

  /** Which store this is. */
  public StoreIdentity identity() {
    return identity;
  }

  /** The version the local database holds, or -1 if none is usable. */
  public synchronized long loadedVersion() {
    return db.version();
  }

  /**
   * {@link #loadedVersion()} once the local ingestion of the last commit (if still running) has
   * ended: the committed version if it was ingested; -1 if it failed, which drops the local
   * database (the next {@link #load} restores the version from the object store).
   */
  public long settledVersion() {
    awaitIngestion();
    return loadedVersion();
  }

  /** The attempt id of the loaded version; empty for version 0 or nothing loaded. */
  public synchronized Optional<String> loadedAttempt() {
    return db.attempt();
  }

  /** The manifest of the loaded version; empty for version 0 or nothing loaded. */
  public synchronized Optional<Manifest> loadedManifest() {
    return Optional.ofNullable(db.manifest());
  }

  /** Cost of the last restore from the object store (zero if the last load reused local state). */
  public RestoreStats lastRestore() {
    return lastRestore;
  }

  /** The newest version a base snapshot was uploaded for by this instance, or -1. */
  public long lastSnapshotVersion() {
    return lastSnapshotVersion;
  }

  /**
   * Makes the local database hold exactly {@code version} (and {@code attempt}, when given),
   * downloading from the object store only if it does not already. Pending writes are dropped.
   *
   * @param version the committed version, &gt;= 0 (0 is the empty state)
   * @param attempt the attempt id to load (Spark checkpoint format v2), or empty for the newest
   *     attempt of the version
   * @throws StateLoadException if the version (or attempt) was never committed (or its location
   *     holds another provider's files, or a newer Strata format), a file it names is missing or
   *     corrupt, or storage fails; the message names the store, version and object key; the
   *     local database is then unchanged or invalidated, never left holding another state;
   *     reason {@code LOCAL} if writing the downloaded files to the local disk fails
   * @throws IOException if RocksDB fails on the local disk
   * @throws IllegalArgumentException if {@code version} is negative
   * @throws IllegalStateException if the store is closed
   */
  public synchronized void load(long version, Optional<String> attempt) throws IOException {
    load(version, attempt, false);
  }

  /**
   * As {@link #load(long, Optional)}; a {@code readOnly} load (Spark's read stores, the state
   * data source) of a query run that has not claimed its epoch in this store finds it without
   * claiming one (checkpoint format 1): it writes nothing, and needs no write permission. The
   * first write of such a run ({@link #prepareWrite}, or {@link #commit}) claims it.
   *
   * @param readOnly true if the caller will not commit this load (it may still {@link
   *     #prepareWrite} later)
   * @throws StateLoadException as {@link #load(long, Optional)}
   * @throws IOException as {@link #load(long, Optional)}
   */
  public synchronized void load(long version, Optional<String> attempt, boolean readOnly)
      throws IOException {
    settleIngestion();
    ensureOpen();
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    lastRestore = RestoreStats.NONE;
    longRestoreUnsnapshotted = false;
    if (building.localDirty()) {
      invalidateLocal();
    }
    if (epochs != null) {
      claimEpoch(version, readOnly);
    }
    building.reset(db.committedFamilies());
    db.sweep(snapshots.running());
    if (db.live() != null && version == db.version()
        && (attempt.isEmpty() || version == 0 || attempt.equals(loadedAttempt()))) {
      Optional<String> changed = integrity.changedFile(db.live());
      if (changed.isEmpty()) {
        db.live().discardPending();
        return;
      }
      // RocksDB never rewrites an SST: the database is damaged. Never reuse it; the object
      // store holds the verified copy of this version.
      LOG.warn("{} version {}: local SST {} in {} changed on disk since it was written; "
          + "dropping the local database and restoring the version from the object store",
          identity, version, changed.get(), db.live().dir());
      invalidateLocal();
    }
    if (version == 0) {
      invalidateLocal();
      replaceLocal(LocalStore.open(db.newDbDir(), 0, settings.memory()), null, 0);
      return;
    }
    long start = System.nanoTime();
    Manifest m = reader.readForLoad(version, attempt);
    if (epochs != null) {
      epochs.saw(m.epoch());
      if (epochs.fenced()) {
        throw fenced(version);
      }
    }
    // The old database holds another version and is never reused for this one: drop it before
    // downloading, so the disk holds one database at a time.
    invalidateLocal();
    // Nothing to replay after the manifest's base: no published snapshot can shorten it.
    Optional<PublishedSnapshots.Found> found =
        m.deltas().isEmpty() ? Optional.empty() : published.find(m);
    Restorer.Restored r = null;
    if (found.isPresent()) {
      try {
        r = restorer.restore(found.get().snapshot().rebase(m), db.newDbDir(), db.tmpDir(),
            start);
      } catch (IOException e) {
        if (Thread.currentThread().isInterrupted() || (e instanceof StateLoadException sle
            && sle.reason() == StateLoadException.Reason.LOCAL)) {
          // Interrupted, or the local disk failed: the longer chain needs that disk too.
          throw e;
        }
        // Its files are gone (a round deleted them after this LIST) or corrupt: the manifest
        // alone can still serve the load.
        LOG.warn("{} version {}: cannot restore from published snapshot {} of version {} ({}); "
            + "restoring from the manifest's own chain", identity, version,
            objects.describe(found.get().key()), found.get().snapshot().version(),
            e.getMessage());
      }
    }
    if (r != null) {
      replaceLocal(r.store(), m, m.version());
      PublishedSnapshots.Found f = found.get();
      snapshots.restoredFrom(f.snapshot().snapshot(), db.generation());
      lastRestore = r.stats().fromPublished();
    } else {
      r = restorer.restore(m, db.newDbDir(), db.tmpDir(), start);
      replaceLocal(r.store(), m, m.version());
      lastRestore = r.stats();
    }
    longRestoreUnsnapshotted = lastRestore.deltasReplayed() >= settings.snapshotInterval();
    if (longRestoreUnsnapshotted && !readOnly) {
      // A read-only load (Spark's state data source) writes nothing into the checkpoint; a
      // read store that is upgraded schedules it then (prepareWrite).
      longRestoreUnsnapshotted = false;
      scheduleSnapshot();
    }
  }

  /**
   * After a cold load that replayed a long chain: takes a checkpoint of the loaded version now
   * (hard links, under the monitor) and uploads and publishes it on the store's background
   * thread, never on the commit path, so the next cold load is short. {@link #close()} lets it
   * finish. A failure is logged (the next maintenance or cold load tries again). Monitor held.
   */
  private void scheduleSnapshot() {
    BaseSnapshotUploader.Job job;
    try {
      job = checkpointIfDue(true);
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: cannot take a checkpoint for a base snapshot after a long "
          + "restore: {}", identity, db.version(), e.toString());
      return;
    }
    if (job == null) {
      return;
    }
    try {
      pools.background().submit(() -> {
        try {
          runSnapshot(job);
        } catch (IOException | RuntimeException e) {
          LOG.warn("{} version {}: base snapshot after a long restore failed: {}", identity,
              job.manifest().version(), e.toString());
        }
        return null;
      });
    } catch (RuntimeException e) { // rejected: the pools are closed
      snapshots.abandon(job, this);
    }
  }

  /**
   * After a commit that reached {@code snapshotInterval} versions since its base ({@link
   * StoreSettings#snapshotOnCommit()}): queues a base snapshot on the JVM's commit-snapshot
   * threads ({@value #COMMIT_SNAPSHOTS_AT_ONCE}, shared by every store: every store of a query
   * reaches the interval on the same batch, and their uploads must not take every connection the
   * next batch's commits need), unless one is queued or running, or the last snapshot a commit
   * started was taken fewer than {@code snapshotInterval} versions ago (one that failed, or was
   * published too late to be adopted, is not retried on every commit). There it takes the
   * checkpoint (hard links, under the monitor, so never during a commit or load) and uploads
   * it; the commit returns at once. The checkpoint is skipped, leaving the next commit free to
   * queue again, if the store closed, a later load replaced the database, no snapshot is due any
   * more (maintenance took one), or the next batch has spilled into the database. Monitor held.
   */
  private void snapshotAfterCommit() {
    if (snapshotQueued || snapshots.running() != null || db.version() < commitSnapshotFloor) {
      return;
    }
    snapshotQueued = true;
    long generation = db.generation();
    try {
      COMMIT_SNAPSHOTS.execute(() -> {
        BaseSnapshotUploader.Job job;
        synchronized (this) {
          snapshotQueued = false;
          settleIngestion();
          try {
            job = closed || db.generation() != generation ? null : checkpointIfDue(false);
          } catch (IOException | RuntimeException e) {
            LOG.warn("{} version {}: cannot take a checkpoint for a base snapshot after "
                + "commit: {}", identity, db.version(), e.toString());
            job = null;
          } finally {
            notifyAll(); // awaitSnapshotUpload
          }
          if (job != null) {
            commitSnapshotFloor = job.manifest().version() + settings.snapshotInterval();
          }
        }
        if (job != null) {
          try {
            runSnapshot(job);
          } catch (IOException | RuntimeException e) {
            LOG.warn("{} version {}: base snapshot after commit failed (maintenance, or a "
                + "commit {} versions later, tries again): {}", identity,
                job.manifest().version(), settings.snapshotInterval(), e.toString());
          }
        }
      });
    } catch (RuntimeException e) { // rejected
      snapshotQueued = false;
    }
  }

  /**
   * Finds (first load: one LIST) or, unless {@code readOnly}, claims (plus two create-only
   * PUTs) this run's epoch, and refuses to load for a run a later run has superseded, as far as
   * this instance has seen.
   */
  private void claimEpoch(long version, boolean readOnly) throws IOException {
    if (epochs.known() < 0) {
      try {
        if (readOnly) {
          epochs.find();
        } else {
          epochs.epoch();
        }
      } catch (StateLoadException e) {
        throw e;
      } catch (IOException e) {
        throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load "
            + identity + " version " + version + ": finding the epoch of query run "
            + epochs.runId() + " failed: " + e.getMessage(), e);
      }
    }
    if (epochs.fenced()) {
      throw fenced(version);
    }
  }

  private StateLoadException fenced(long version) {
    return new StateLoadException(StateLoadException.Reason.FENCED, "Cannot load " + identity
        + " version " + version + ": query run " + epochs.runId() + " (epoch " + epochs.known()
        + ") was superseded by a later run of the query (epoch " + epochs.newestSeen() + "); "
        + "this is a task of a stopped or restarted run (a zombie), whose state must not be "
        + "used", null);
  }

  /**
   * Readies a store loaded read-only for writing (Spark 4.1's read-to-write upgrade): claims the
   * query run's epoch if it has none in this store yet (checkpoint format 1; one LIST and two
   * create-only PUTs, once per run and store), and schedules the base snapshot a long read-only
   * cold load left unscheduled (in the background). No request otherwise.
   *
   * @throws StateLoadException if the epoch cannot be found or claimed, or the run is fenced
   * @throws IllegalStateException if nothing is loaded, or the store is closed
   */
  public synchronized void prepareWrite() throws IOException {
    settleIngestion();
    ensureOpen();
    db.require();
    if (epochs != null) {
      claimEpoch(db.version(), false);
    }
    if (longRestoreUnsnapshotted) {
      longRestoreUnsnapshotted = false;
      scheduleSnapshot();
    }
  }

  /** The query run's epoch this instance commits under, or -1 (no run, or format 2). */
  public synchronized long epoch() {
    return epochs == null ? -1 : epochs.known();
  }

  /**
   * The value of {@code key} in the version being built, or null.
   *
   * @throws LocalStateReadException if the local database cannot be read (it is then marked
   *     damaged: the next {@link #load} restores the version from the object store)
   * @throws IOException declared for callers; the local read fails as above
   */
  public byte[] get(byte[] key) throws IOException {
    return reads.get(settledLive(), key);
  }

  /**
   * Records a put in the version being built. May spill the pending writes (see {@link
   * #spill()}).
   *
   * @throws LocalStateReadException as {@link #get} (the put's existence check reads)
   * @throws IOException if a spill fails
   */
  public void put(byte[] key, byte[] value) throws IOException {
    LocalStore l = settledLive();
    try {
      l.put(key, value);
    } catch (LocalReadException e) {
      throw reads.failed(l, e);
    }
    maybeSpill(l);
  }

  /**
   * Records a removal in the version being built. May spill the pending writes.
   *
   * @throws LocalStateReadException as {@link #get} (the removal's existence check reads)
   * @throws IOException if a spill fails
   */
  public void delete(byte[] key) throws IOException {
    LocalStore l = settledLive();
    try {
      l.delete(key);
    } catch (LocalReadException e) {
      throw reads.failed(l, e);
    }
    maybeSpill(l);
  }

  private void maybeSpill(LocalStore l) throws IOException {
    long threshold = settings.spillThresholdBytes();
    if (threshold > 0 && l.pendingBytes() >= threshold && l.openScans() == 0) {
      spill();
    }
  }

  /**
   * Spills the pending writes of a large batch while it still runs: writes them as one SST,
   * uploads it create-only as a spill delta ({@link StoreLayout#spill}), and ingests it locally.
   * The version object written at commit names the spill deltas before its own, so the commit
   * uploads only the tail. Until then the local database holds uncommitted writes: an abort
   * drops the local database (the next load restores from the object store), and no base
   * snapshot is taken.
   *
   * @throws IOException if writing or uploading fails (nothing was ingested then)
   */
  public synchronized void spill() throws IOException {
    settleIngestion();
    ensureOpen();
    LocalStore l = db.require();
    if (l.hasPendingWrites() && l.openScans() == 0) {
      building.spill(l, db.version() + 1, db.tmpDir());
    }
  }

  /**
   * The column families of the version being built (the loaded version's, plus this version's
   * creations and removals).
   */
  public ColumnFamilies columnFamilies() {
    return building.families();
  }

  /**
   * Creates the column family {@code name} in the version being built, unless it exists; it is
   * persisted by this version's manifest (and dropped by an abort). A new family gets the next
   * unused id; an existing one keeps its id and {@code internal} flag.
   *
   * @return the family, new or existing
   * @throws IllegalArgumentException if {@code name} is not a valid family name
   * @throws IllegalStateException if nothing is loaded, or every id was used
   */
  public synchronized ColumnFamily createColumnFamily(String name, boolean internal) {
    settleIngestion();
    db.require();
    return building.createColumnFamily(name, internal, db.version() + 1);
  }

  /**
   * Removes the column family {@code name} from the version being built: every key of it gets a
   * removal (a tombstone in this version's delta, so the removal travels the ordinary commit
   * path), and the manifest no longer lists it. Its id is never reused. An abort undoes both.
   *
   * @return false if no such family exists
   * @throws LocalStateReadException if the scan of its keys fails (as {@link #get})
   * @throws IOException if spilling fails
   * @throws IllegalStateException if nothing is loaded
   */
  public boolean removeColumnFamily(String name) throws IOException {
    LocalStore l = settledLive();
    try {
      if (!building.removeKeysOf(name, l, db.version() + 1)) {
        return false;
      }
    } catch (LocalReadException e) {
      throw reads.failed(l, e);
    }
    synchronized (this) {
      building.removeColumnFamily(name);
    }
    maybeSpill(l);
    return true;
  }

  /**
   * Iterates keys with {@code prefix} in unsigned byte order; see {@link LocalStore#scan}.
   *
   * @throws LocalStateReadException from this call, {@code hasNext} or {@code next}, if the
   *     local database cannot be read (as {@link #get}); a scan never ends early without it
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix) {
    return reads.scan(settledLive(), prefix, null, null);
  }

  /**
   * Iterates keys with {@code prefix} in {@code [from, until)}, unsigned byte order; see {@link
   * LocalStore#scan(byte[], byte[], byte[])}.
   *
   * @throws LocalStateReadException as {@link #scan(byte[])}
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix, byte[] from, byte[] until) {
    return reads.scan(settledLive(), prefix, from, until);
  }

  /** Number of keys in the version being built. */
  public long numKeys() {
    if (ingestion != null) {
      synchronized (this) {
        settleIngestion(); // the ingestion moves the pending count into the committed one
      }
    }
    LocalStore l = db.live();
    return l == null ? 0 : l.numKeys();
  }

  /**
   * Memory used by the local database (native: memtables, table readers, its part of the block
   * cache) and by pending writes (heap), bytes; zeros when nothing is loaded.
   */
  public LocalStore.MemoryUsage memoryUsage() {
    LocalStore l = db.live();
    return l == null ? LocalStore.MemoryUsage.NONE : l.memoryUsage();
  }

  /**
   * Drops the pending writes of the version being built. If the batch had spilled, the local
   * database is dropped too (the next load restores from the object store); the spill objects
   * are left unreferenced.
   */
  public synchronized void abort() {
    settleIngestion();
    if (building.hasSpills()) {
      gc.orphansLeft();
    }
    if (building.localDirty()) {
      invalidateLocal();
    } else if (db.live() != null) {
      db.live().discardPending();
    }
    building.reset(db.committedFamilies());
  }

  /**
   * Commits the pending writes as version {@code loadedVersion() + 1}: one create-only PUT of the
   * version object. The local ingestion of its delta is prepared once the PUT succeeded; it runs
   * after this call returned, once {@link #startLocalIngestion()} starts it or the store's next
   * call needs it (see the class comment).
   *
   * @return the manifest, key and cost
   * @throws IOException if the upload fails or a write collides with another writer's object
   *     (the version is then not committed; the local database is discarded and the next
   *     {@link #load} restores the requested version from the object store)
   * @throws IllegalStateException if nothing is loaded, or the store is closed
   */
  public synchronized CommitResult commit() throws IOException {
    ensureOpen();
    settleIngestion();
    LocalStore l = db.require();
    long newVersion = db.version() + 1;
    String attempt = building.attemptForCommit();
    if (epochs != null && epochs.known() < 0) {
      claimEpoch(db.version(), false); // loaded read-only, then written without prepareWrite()
    }
    if (epochs != null && epochs.fenced()) {
      // Never reached after a successful load (it checks the fence).
      throw new IOException("Cannot commit " + identity + " version " + newVersion + ": query run "
          + epochs.runId() + " (epoch " + epochs.known() + ") was superseded by epoch "
          + epochs.newestSeen());
    }
    long epoch = epochs == null ? 0 : epochs.known();
    long generation = 1;
    String key = epoch > 0 ? StoreLayout.generationVersionObject(newVersion, generation)
        : reader.key(newVersion, attempt);
    // A delta of up to LocalStore.IN_MEMORY_DELTA_BYTES is built in memory and written under
    // tmp only by its ingestion, so the commit touches no file for it; a larger one is streamed
    // to the staging directory, or to tmp (created here then).
    boolean inMemory = l.pendingBytes() <= LocalStore.IN_MEMORY_DELTA_BYTES;
    Path tmp = inMemory ? db.tmpPath() : db.tmpDir();
    Path sst = (inMemory ? tmp : DeltaStaging.dirFor(settings.stageDeltasInMemory(),
        l.pendingBytes(), tmp)).resolve(DeltaStaging.fileName(newVersion, attempt));
    boolean ingesting = false;
    try {
      long t0 = System.nanoTime();
      Optional<DeltaFile> delta;
      try {
        delta = l.buildDelta(sst);
      } catch (IOException e) {
        if (sst.startsWith(tmp)) {
          throw e;
        }
        // The memory-backed directory is full or failing: write the delta to the local disk.
        LOG.info("{} version {}: cannot write the SST delta to {} ({}); writing it to {}",
            identity, newVersion, sst.getParent(), e.getMessage(), tmp);
        db.deleteQuietly(sst);
        sst = tmp.resolve(sst.getFileName());
        delta = l.buildDelta(sst);
      }
      long t1 = System.nanoTime();
      Optional<BaseSnapshot> pendingBase = snapshots.pending(db.generation(), newVersion);
      Manifest m = building.manifest(db.manifest(), db.version(), attempt, pendingBase, key,
          delta, keySchema, valueSchema, l.numKeys(), epoch);
      ObjectBody body = body(m, delta, sst);
      long t2 = System.nanoTime();
      FaultPoints.pass(FaultPoints.COMMIT_BEFORE_PUT);
      while (true) {
        try {
          objects.putIfAbsent(key, FaultPoints.during(FaultPoints.COMMIT_DURING_PUT, body));
          break;
        } catch (ObjectAlreadyExistsException e) {
          if (settings.attemptKeys()) {
            invalidateLocal();
            throw new IOException("Cannot commit " + identity + " version " + newVersion
                + ": another writer created " + objects.describe(key)
                + ", a key unique to this attempt", e);
          }
          Manifest there = epoch > 0 ? readOccupant(newVersion, key) : null;
          if (there != null && there.epoch() < epoch) {
            // An earlier query run committed this version (Spark re-runs it after a rewind or a
            // restart): this run's commit supersedes it in the next generation.
            LOG.info("{} version {}: {} holds query run epoch {}'s commit; run {} (epoch {}) "
                + "re-commits the version as generation {}", identity, newVersion,
                objects.describe(key), there.epoch(), epochs.runId(), epoch, generation + 1);
            generation++;
            key = StoreLayout.generationVersionObject(newVersion, generation);
            m = building.manifest(db.manifest(), db.version(), attempt, pendingBase, key,
                delta, keySchema, valueSchema, l.numKeys(), epoch);
            body = body(m, delta, sst);
            continue;
          }
          if (there != null && there.epoch() > epoch) {
            throw fencedCommit(newVersion, key, there);
          }
          return adoptWinner(newVersion, key, m, there, stats(t0, t1, t2, System.nanoTime(), 0,
              delta, body, m));
        } catch (IOException | RuntimeException e) {
          invalidateLocal();
          throw e;
        }
      }
      long t3 = System.nanoTime();
      FaultPoints.pass(FaultPoints.COMMIT_AFTER_PUT);
      reader.cache().put(key, body.length(), m);
      gc.committed(newVersion);
      // Committed. The local ingestion runs after this call returns; it owns the delta file.
      // The database is labelled with the new version before the ingestion starts, so that any
      // failure from here on discards it rather than leaving the old label on the new writes.
      long previousIngestNanos = lastIngestNanos;
      lastIngestNanos = 0;
      try {
        building.committed(m.columnFamilies());
        m.base().ifPresent(snapshots::published);
        db.committedIngesting(m);
        ingestion = new PendingIngestion(newVersion, key, LocalIngestion.prepare(l, delta, tmp));
        ingesting = true;
      } catch (RuntimeException e) { // the version is committed; only the local side failed
        LOG.warn("{} version {}: committed to {} but its local ingestion could not be prepared; "
            + "the next load restores it from the object store", identity, newVersion,
            objects.describe(key), e);
        invalidateLocal();
        return new CommitResult(m, key, stats(t0, t1, t2, t3, previousIngestNanos, delta, body,
            m));
      } catch (Error e) { // never keep the new label without its ingestion
        invalidateLocal();
        throw e;
      }
      LOG.debug("{} committed version {} as {} ({} delta bytes, chain {})", identity, newVersion,
          key, delta.map(DeltaFile::size).orElse(0L), m.deltaChainLength());
      if (settings.snapshotOnCommit() && m.versionsSinceBase() >= settings.snapshotInterval()) {
        snapshotAfterCommit();
      }
      return new CommitResult(m, key, stats(t0, t1, t2, t3, previousIngestNanos, delta, body,
          m));
    } finally {
      if (!ingesting) {
        db.deleteQuietly(sst);
      }
    }
  }

  /**
   * The local ingestion of a committed version, prepared after its PUT and started by {@link
   * #startLocalIngestion()} or run by {@link #settleIngestion()} (see the class doc).
   */
  private record PendingIngestion(long version, String key, FutureTask<LocalIngestion.Done> task) {
  }

  /**
   * Starts the last commit's local ingestion on the JVM's ingest threads, if it has not started.
   * {@link #commit()} only prepares it, so that its caller can first finish what belongs to the
   * commit (in Spark, the report to the state store coordinator) without the ingestion competing
   * for the cores; it then calls this. If nobody calls it, the store's next call that needs the
   * local database runs the ingestion on its own thread ({@link #settleIngestion()}), so the
   * store is right either way. Never throws; needs no monitor.
   */
  public void startLocalIngestion() {
    PendingIngestion p = ingestion;
    if (p != null) {
      LocalIngestion.start(pools.ingest(), p.task());
    }
  }

  /**
   * Waits for the last commit's local ingestion, if one is still pending (running it on this
   * thread if it has not started), and completes the local side of that commit (the SST stamps
   * of the database that now holds it). If the ingestion failed, the version stays committed in
   * the object store and the local database is dropped: the next load restores from there.
   * Every call that uses the local database calls this first, with the monitor held; it never
   * throws.
   */
  private void settleIngestion() {
    PendingIngestion p = ingestion;
    if (p == null) {
      return;
    }
    LocalIngestion.Done done;
    try {
      done = LocalIngestion.await(p.task());
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: committed to {} but its local ingestion failed; the next load "
          + "restores it from the object store", identity, p.version(), objects.describe(p.key()),
          e);
      if (db.version() == p.version()) {
        invalidateLocal();
      }
      ingestion = null;
      return;
    }
    // Cleared only now: settledLive() skips the monitor while this is null, so it must not be
    // null while another thread still waits here.
    ingestion = null;
    lastIngestNanos = done.nanos();
    if (db.version() == p.version()) {
      db.ingested(done);
    }
  }

  /**
   * Waits until the last commit's local ingestion is done (tests and tools that look at the
   * local directory; every operation of the store already does).
   */
  synchronized void awaitLocalIngestion() {
    settleIngestion();
  }

  /** {@link #settleIngestion()} for the calls that do not hold the monitor (reads, writes). */
  private LocalStore settledLive() {
    awaitIngestion();
    return db.require();
  }

  private void awaitIngestion() {
    if (ingestion != null) {
      synchronized (this) {
        settleIngestion();
      }
    }
  }

  private static ObjectBody body(Manifest m, Optional<DeltaFile> delta, Path sst)
      throws IOException {
    byte[] tail = VersionObjectCodec.manifestAndFooter(ManifestCodec.encode(m),
        delta.map(DeltaFile::size).orElse(0L));
    if (delta.isEmpty()) {
      return ObjectBody.of(tail);
    }
    byte[] bytes = delta.get().bytes();
    return ObjectBody.concat(bytes != null ? ObjectBody.of(bytes) : ObjectBody.of(sst),
        ObjectBody.of(tail));
  }

  /**
   * The manifest of the version object {@code key} this commit's create-only PUT found in place
   * (one tail GET). If it cannot be read, the local database is discarded and the error thrown.
   */
  private Manifest readOccupant(long version, String key) throws IOException {
    try {
      return reader.readAt(version, key, null);
    } catch (IOException | RuntimeException e) {
      invalidateLocal();
      throw e;
    }
  }

  /**
   * A later query run already committed {@code version} (its manifest {@code there} names a
   * greater epoch): this attempt belongs to a superseded run (a zombie) and its commit is lost.
   * Nothing of it is visible: the object store holds none of its version objects.
   */
  private IOException fencedCommit(long version, String key, Manifest there) {
    epochs.saw(there.epoch());
    if (building.hasSpills()) {
      gc.orphansLeft();
    }
    invalidateLocal();
    LOG.warn("{} version {}: attempt of query run {} (epoch {}) is fenced: {} holds the commit "
        + "of a later run (epoch {}, attempt {}); this attempt's writes are dropped", identity,
        version, epochs.runId(), epochs.known(), objects.describe(key), there.epoch(),
        there.attempt());
    return new IOException("Cannot commit " + identity + " version " + version + ": query run "
        + epochs.runId() + " (epoch " + epochs.known() + ") was superseded by a later run of the "
        + "query (epoch " + there.epoch() + "), which committed " + objects.describe(key)
        + "; this attempt (a zombie of a stopped or restarted run) is lost");
  }

  /**
   * Checkpoint format 1, after this attempt's create-only PUT of {@code v/<version>.svo} failed
   * because another attempt of the same version committed first (a speculative copy, a retry
   * after a task died past its PUT, or a zombie): the first writer wins. This attempt drops its
   * writes. Its local database is discarded and the next load restores the winner from the
   * object store.
   */
  private CommitResult adoptWinner(long newVersion, String key, Manifest mine, Manifest read,
      CommitStats stats) throws IOException {
    Manifest winner = read != null ? read : reader.readAt(newVersion, key, null);
    LOG.warn("{} version {}: attempt {} lost the race for {} to attempt {}; this attempt's "
        + "writes are dropped (checkpoint format 1: the first attempt to commit wins); the next "
        + "load restores the winner from the object store (usual causes: a speculative or "
        + "retried task, or a batch whose plan ran twice, such as a foreachBatch DataFrame used "
        + "by two actions without persist())", identity, newVersion,
        mine.attempt(), objects.describe(key), winner.attempt());
    if (building.hasSpills()) {
      gc.orphansLeft(); // this attempt's spill deltas: no manifest will ever name them
    }
    gc.committed(newVersion);
    invalidateLocal();
    return new CommitResult(winner, key, stats, true);
  }

  private static CommitStats stats(long t0, long t1, long t2, long t3, long ingestNanos,
      Optional<DeltaFile> delta, ObjectBody body, Manifest m) {
    return new CommitStats(ms(t1 - t0), ms(t3 - t2), ms(t2 - t1), ms(ingestNanos),
        delta.map(DeltaFile::size).orElse(0L), body.length(), m.deltaChainLength(),
        m.versionsSinceBase());
  }

  /**
   * Background work, never on the commit path: uploads a base snapshot of the loaded version if
   * {@code snapshotInterval} versions passed since the last base, then runs a garbage-collection
   * round if one is due (see the class comment). A snapshot failure does not prevent the round.
   * A failed round is not thrown: it is counted ({@link #gcFailedRounds()}) and reported by a
   * throttled WARN after repeated failures ({@link GcTrigger}), so a store whose credentials may
   * not delete does not log a stack trace every batch.
   *
   * @return true if a snapshot was uploaded
   * @throws IOException if the snapshot's checkpoint or upload fails (nothing is published then;
   *     uploaded objects are unreferenced and collected by a later round)
   */
  public boolean maintenance() throws IOException {
    boolean uploaded = false;
    IOException failure = null;
    try {
      uploaded = snapshotIfDue(false);
    } catch (IOException e) {
      failure = e;
    }
    if (gcDue()) {
      try {
        collectGarbage();
      } catch (IOException | RuntimeException e) {
        LOG.debug("{}: garbage-collection round failed (counted in strataGcFailedRounds)",
            identity, e);
      }
    }
    if (failure != null) {
      throw failure;
    }
    return uploaded;
  }

  /**
   * True if a garbage-collection round is due: GC is enabled, the store is open, this instance
   * committed at least one version, no round is running, and either no round ran yet, or this
   * instance committed {@link GcSettings#roundInterval()} versions since the last round started,
   * or an orphan it left is now older than the grace period (then at most one failed try per
   * grace period). Nothing new can have become garbage otherwise, so no request is made.
   */
  public synchronized boolean gcDue() {
    return !closed && gc.due();
  }

  /**
   * Runs one garbage-collection round now, whether due or not (maintenance calls it when {@link
   * #gcDue()}): one LIST of the store's root, a tail GET of each retained manifest not cached,
   * batched DeleteObjects of the garbage, and (on the first round, then at most once per grace
   * period) aborting incomplete multipart uploads older than the grace period. Deletes nothing
   * this instance's pending base snapshot, in-flight spills or loaded version name.
   *
   * @return what the round did; {@link GcStats#NONE} if GC is disabled or a round is already
   *     running
   * @throws IOException if listing, reading a retained manifest or deleting fails (see {@link
   *     GarbageCollector#collect})
   * @throws IllegalStateException if the store is closed
   */
  public GcStats collectGarbage() throws IOException {
    GcTrigger.Round round;
    synchronized (this) {
      ensureOpen();
      round = gc.start(db.version(), this::protectedKeys);
    }
    return round == null ? GcStats.NONE : gc.run(round);
  }

  /** What the last completed garbage-collection round did, or {@link GcStats#NONE}. */
  public GcStats lastGc() {
    return gc.last();
  }

  /** Garbage-collection rounds of this instance that failed, in all (Strata's metric). */
  public long gcFailedRounds() {
    return gc.failedRounds();
  }

  /** Keys this instance needs that no retained manifest may name yet. Caller holds the monitor. */
  private Set<String> protectedKeys() {
    Set<String> keys = new HashSet<>();
    snapshots.addPendingKeys(keys);
    building.addSpillKeys(keys);
    if (db.manifest() != null) {
      keys.addAll(Reachability.namedKeys(db.manifest()));
    }
    return keys;
  }

  /**
   * Uploads a base snapshot of the loaded (last committed) version now, whatever the snapshot
   * interval says, and waits for it (Spark 4.2's {@code forceSnapshotOnCommit}: the coordinator
   * found this store's snapshots lagging). As with a background snapshot, the next commit's
   * manifest names it as its base.
   *
   * @return true if a snapshot was uploaded; false if there is nothing to snapshot (no local
   *     state, or a base at the loaded version already) or a background snapshot is running
   * @throws IOException if the local checkpoint or an upload fails (nothing is published)
   */
  public boolean snapshotNow() throws IOException {
    return snapshotIfDue(true);
  }

  private boolean snapshotIfDue(boolean force) throws IOException {
    BaseSnapshotUploader.Job job;
    synchronized (this) {
      settleIngestion();
      job = checkpointIfDue(force);
    }
    if (job == null) {
      return false;
    }
    runSnapshot(job);
    return true;
  }

  /** Uploads, publishes and offers the snapshot of {@code job} ({@link BaseSnapshotUploader#run}). */
  private void runSnapshot(BaseSnapshotUploader.Job job) throws IOException {
    long t0 = System.nanoTime();
    BaseSnapshot snapshot = snapshots.run(job, this, gen -> gen == db.generation() && !closed);
    lastSnapshotVersion = job.manifest().version();
    try {
      snapshotListener.accept(job.manifest().version());
    } catch (RuntimeException e) {
      LOG.warn("{}: the listener of uploaded snapshots failed", identity, e);
    }
    LOG.debug("{} uploaded base snapshot of version {} ({} files) in {} ms", identity,
        job.manifest().version(), snapshot.files().size(), ms(System.nanoTime() - t0));
  }

  /**
   * Takes a RocksDB checkpoint of the loaded version if a base snapshot is due (always, when
   * {@code force}, unless the loaded version is a base already), for {@link
   * BaseSnapshotUploader#run}; null if none is due or possible now. Caller holds the monitor.
   */
  private BaseSnapshotUploader.Job checkpointIfDue(boolean force) throws IOException {
    if (closed || db.live() == null || db.manifest() == null || snapshots.running() != null
        || building.localDirty()) {
      return null;
    }
    db.sweep(snapshots.running());
    long baseVersion = db.manifest().base().map(BaseSnapshot::version).orElse(0L);
    Optional<BaseSnapshot> pending = snapshots.pending(db.generation(), db.version());
    if (pending.isPresent()) {
      baseVersion = Math.max(baseVersion, pending.get().version());
    }
    long sinceBase = db.version() - baseVersion;
    if (sinceBase <= 0 || (!force && sinceBase < settings.snapshotInterval())) {
      return null;
    }
    Path cpDir = db.newCheckpointDir();
    try {
      db.live().checkpoint(cpDir);
    } catch (IOException | RuntimeException e) {
      db.deleteQuietly(cpDir);
      throw e;
    }
    // The lineage as the local database holds it: rebased on the pending snapshot (one this
    // instance restored from, or uploaded) when the next commit would name it, so its files are
    // reused rather than uploaded again.
    Manifest source = db.manifest();
    if (pending.isPresent() && pending.get().version() > source.base().map(BaseSnapshot::version)
        .orElse(0L)) {
      source = source.rebasedOn(pending.get());
    }
    BaseSnapshotUploader.Job job =
        new BaseSnapshotUploader.Job(cpDir, source, db.generation(), clock.millis(),
            System.nanoTime());
    snapshots.started(job);
    return job;
  }

  /**
   * Waits up to {@code timeoutMs} for a running snapshot upload (such as one a long cold load
   * scheduled) to finish. For tests.
   *
   * @return true if none is running any more
   */
  synchronized boolean awaitSnapshotUpload(long timeoutMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (snapshotQueued) { // one a commit queued: wait for its checkpoint first
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        return false;
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    boolean interrupted = snapshots.awaitFinished(this,
        Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return snapshots.running() == null;
  }

  /**
   * Closes the store: waits for a running commit, spill or load (the monitor); lets a running
   * snapshot upload finish and publish for up to {@value #FINISH_WAIT_MS} ms (a JVM that exits
   * without closing its stores, as Spark's do, waits for it in {@link UploadsAtExit}), then
   * cancels its transfers and
   * waits up to {@value #CLOSE_WAIT_MS} ms more for it to stop; then closes the local database,
   * the object store, and deletes the local directory; the store's thread pools are shut down.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    settleIngestion();
    closed = true;
    boolean interrupted = snapshots.awaitFinished(this, FINISH_WAIT_MS);
    pools.close();
    interrupted |= snapshots.awaitStopped(this, CLOSE_WAIT_MS);
    try {
      db.closeDatabase();
      objects.close();
      db.deleteDirectory();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Reads and verifies the manifest of {@code version}, as a load would find it.
   *
   * @param attempt the attempt id, or empty for the newest attempt
   * @throws StateLoadException if there is none, or it is corrupt
   * @throws IOException if storage fails
   */
  public Manifest readManifest(long version, Optional<String> attempt) throws IOException {
    return reader.read(version, attempt);
  }

  // ---------------------------------------------------------------- local database life cycle

  /** Publishes {@code fresh}, holding {@code version} ({@code m}, null for 0), as the live one. */
  private void replaceLocal(LocalStore fresh, Manifest m, long version) {
    db.replace(fresh, m, version);
    commitSnapshotFloor = 0; // another database: its first due commit may start a snapshot
    building.reset(db.committedFamilies());
  }

  /** Drops the live database and whatever was built on it; the next load restores. */
  private void invalidateLocal() {
    building.dropped();
    db.invalidate();
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException(identity + " is closed");
    }
  }

  private static long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }
}
