// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalStore;
import io.strata.format.BaseSnapshot;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One state store kept in a local RocksDB and checkpointed to an object store: the version life
 * cycle (load, the version being built, commit, abort, close) and the order of its steps, under
 * one {@link StoreGuard}. Each decision has one owner, called at the points of the life cycle:
 * {@link SnapshotScheduler} (when a base snapshot is taken), {@link CommitConflicts} (who wins a
 * version after a 412, with the query runs' {@link RunEpochs}), {@link DeferredIngestion} (when a
 * commit is ingested locally) and {@link GcTrigger} (when a garbage-collection round runs). The
 * package documentation names the collaborators that do the work and describes the protocol
 * (commit with one PUT, load, background work, column families). Knows nothing of Spark.
 *
 * <h2>Threading</h2>
 * One task thread at a time calls {@link #load}, the reads and writes, and {@link #commit} or
 * {@link #abort} (the caller serialises tasks). {@link #maintenance()} and {@link #close()} may
 * run on another thread; state changes are serialised by the store's {@link StoreGuard}, so
 * close and the checkpoint step of a snapshot never overlap a commit, spill or load. The upload
 * of a snapshot runs outside it; {@link #close()} lets it finish, then cancels it ({@link
 * SnapshotScheduler#stop}).
 */
public final class SyncedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SyncedStore.class);
  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final StoreSettings settings;
  private final String keySchema;
  private final String valueSchema;
  private final TransferPools pools;
  private final VersionObjectReader reader;
  private final GcTrigger gc;
  private final BaseSnapshotUploader snapshots;
  private final LocalReads reads;
  // The owners of the decisions (see the class comment).
  private final SnapshotScheduler scheduler;
  private final CommitConflicts conflicts;
  private final DeferredIngestion ingestion;
  private final VersionLoader loader;

  // The version life cycle, guarded by the guard (volatile ones are also read without it).
  private final StoreGuard guard = new StoreGuard();
  /** The live local database and the committed version it holds. */
  private final LocalDatabase db;
  private boolean closed;
  /** The version being built on the loaded one. */
  private final VersionBuilder building;
  private volatile RestoreStats lastRestore = RestoreStats.NONE;

  /**
   * Creates the store; no I/O happens until {@link #load}. Its pools are its own, stopped by
   * {@link #close()}: stores that share one cap on commit-started snapshots (and the connections
   * they take) are made with a {@link SharedPools}, as the Spark provider's are.
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
    this(identity, objects, localDir, settings, keySchema, valueSchema, null, Clock.systemUTC());
  }

  /**
   * As {@link #SyncedStore(StoreIdentity, ObjectStore, Path, StoreSettings, String, String)}
   * (which makes pools of its own), sharing the ingest and commit-snapshot threads of {@code
   * shared} with the other stores given it: a lease held from construction to {@link #close()}.
   *
   * @param shared the owner of the shared pools (not closed by this store)
   * @throws IllegalStateException if {@code shared} is closed
   */
  public SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir,
      StoreSettings settings, String keySchema, String valueSchema, SharedPools shared) {
    this(identity, objects, localDir, settings, keySchema, valueSchema,
        java.util.Objects.requireNonNull(shared, "shared"), Clock.systemUTC());
  }

  /** As the public constructor, with the wall clock of the grace period (tests move it). */
  SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir, StoreSettings settings,
      String keySchema, String valueSchema, Clock clock) {
    this(identity, objects, localDir, settings, keySchema, valueSchema, null, clock);
  }

  private SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir,
      StoreSettings settings, String keySchema, String valueSchema, SharedPools shared,
      Clock clock) {
    this.identity = identity;
    this.objects = objects;
    this.settings = settings;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.pools = new TransferPools(identity, settings.transferThreads(), shared);
    try {
      RunEpochs runEpochs = settings.epochKeys()
          ? new RunEpochs(identity, objects, settings.run().get(), clock,
              pools.transfers()) : null;
      GcSettings gcSettings = settings.gc();
      this.reader = new VersionObjectReader(identity, objects, settings.attemptKeys(),
          ManifestCache.forStore(gcSettings, settings.snapshotInterval()));
      Restorer restorer = new Restorer(identity, objects, pools.transfers(),
          pools::widenTransfers, settings.transferThreads(), settings.memory());
      PublishedSnapshots published = new PublishedSnapshots(identity, objects);
      this.gc = new GcTrigger(gcSettings, clock,
          new GarbageCollector(identity, objects, reader, pools.transfers(), gcSettings,
              () -> runEpochs == null ? -1 : runEpochs.known(), published), guard,
          pools.commitSnapshots(), this::collectIfDue);
      LocalIntegrity integrity = new LocalIntegrity(identity, localDir);
      this.snapshots = new BaseSnapshotUploader(identity, objects, pools, gc, integrity, clock,
          gcSettings.gracePeriodMillis(), published, guard);
      this.building = new VersionBuilder(identity, objects, gc);
      this.db = new LocalDatabase(identity, localDir, integrity, snapshots);
      this.reads = new LocalReads(identity, db, integrity, guard);
      this.ingestion = new DeferredIngestion(identity, objects, db, guard, pools.ingest(),
          this::invalidateLocal);
      this.conflicts = new CommitConflicts(identity, objects, reader, settings.attemptKeys(),
          runEpochs, gc, building, guard, this::invalidateLocal);
      this.scheduler = new SnapshotScheduler(identity, settings, clock, guard, db, building,
          snapshots, pools.background(), pools.commitSnapshots(), () -> !closed,
          () -> ingestion.settle());
      this.loader = new VersionLoader(identity, settings, guard, db, building, conflicts,
          reader, restorer, published, snapshots, scheduler, this::invalidateLocal,
          pools.transfers());
    } catch (RuntimeException | Error e) {
      pools.close(); // gives back the lease on the shared pools: nothing else holds it
      throw e;
    }
  }

  /**
   * Calls {@code listener} with the version of every base snapshot this instance uploads and
   * publishes, on the uploading thread, after {@link #lastSnapshotVersion()} moved to it (the
   * Spark layer reports it to Spark's coordinator). A listener that throws is logged, ignored.
   */
  public void onSnapshotUploaded(java.util.function.LongConsumer listener) {
    scheduler.onSnapshotUploaded(listener);
  }

  /** Which store this is. */
  public StoreIdentity identity() {
    return identity;
  }

  /** The version the local database holds, or -1 if none is usable. */
  public long loadedVersion() {
    return guard.locked(db::version);
  }

  /**
   * {@link #loadedVersion()} once the local ingestion of the last commit (if still running) has
   * ended: the committed version if it was ingested; -1 if it failed, which drops the local
   * database (the next {@link #load} restores the version from the object store).
   */
  public long settledVersion() {
    ingestion.awaitSettled();
    return loadedVersion();
  }

  /** The attempt id of the loaded version; empty for version 0 or nothing loaded. */
  public Optional<String> loadedAttempt() {
    return guard.locked(db::attempt);
  }

  /** The manifest of the loaded version; empty for version 0 or nothing loaded. */
  public Optional<Manifest> loadedManifest() {
    return guard.locked(() -> Optional.ofNullable(db.manifest()));
  }

  /** Cost of the last restore from the object store (zero if the last load reused local state). */
  public RestoreStats lastRestore() {
    return lastRestore;
  }

  /** The newest version a base snapshot was uploaded for by this instance, or -1. */
  public long lastSnapshotVersion() {
    return scheduler.lastSnapshotVersion();
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
  public void load(long version, Optional<String> attempt) throws IOException {
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
  public void load(long version, Optional<String> attempt, boolean readOnly)
      throws IOException {
    synchronized (guard) {
      ingestion.settle();
      ensureOpen();
      lastRestore = RestoreStats.NONE;
      lastRestore = loader.load(version, attempt, readOnly);
    }
  }

  /**
   * Makes the local database an empty state standing at {@code version}, reading nothing of the
   * store's versions (Spark 4.2's {@code loadEmpty}, a rewrite of the store such as offline
   * state repartitioning): it works on a location with no objects at all, or holding versions of
   * another layout of the state. The next {@link #commit()} writes version {@code version + 1},
   * self-contained: its manifest names no base and no delta of a version {@code <= version}
   * (parent {@code version}, no parent attempt; docs/format.md, "Opening a store empty"), in
   * one create-only PUT, durable when the commit returns; later loads of it, and versions built
   * on it, load on any instance. Pending writes and column families are dropped; families
   * created after this call are the new version's. Who wins the new version is decided as for
   * any commit: under checkpoint format 1 with a query run, this claims the run's epoch (one LIST
   * of {@code runs/} and two create-only PUTs, once per run and store; the claim's {@code
   * loadsVersion} is {@code version}, so an earlier run's collection keeps this batch's spill
   * deltas), so a re-run in a later run supersedes it and an earlier run's attempt is fenced;
   * under format 2 the commit's attempt id is new. Until that commit, a {@link #load} of {@code
   * version} restores it from the object store (the empty database is never taken for it).
   *
   * @param version the version to stand at, &gt;= 0 (Spark's batch id)
   * @throws StateLoadException reason {@code STORAGE} if the run's epoch cannot be found or
   *     claimed, {@code FENCED} if a later run superseded this one
   * @throws IOException if RocksDB fails on the local disk
   * @throws IllegalArgumentException if {@code version} is negative
   * @throws IllegalStateException if the store is closed
   */
  public void loadEmpty(long version) throws IOException {
    synchronized (guard) {
      ingestion.settle();
      ensureOpen();
      lastRestore = RestoreStats.NONE;
      loader.loadEmpty(version);
    }
  }

  /**
   * Readies a store loaded read-only for writing (Spark 4.1's read-to-write upgrade): claims the
   * query run's epoch if it has none in this store yet (checkpoint format 1, once per run and
   * store: two create-only PUTs, the second awaited by the commit, and one LIST unless the
   * read-only load listed {@code runs/} in the last seconds), and schedules the base snapshot a long read-only
   * cold load left unscheduled (in the background). No request otherwise.
   *
   * @throws StateLoadException if the epoch cannot be found or claimed, or the run is fenced
   * @throws IllegalStateException if nothing is loaded, or the store is closed
   */
  public void prepareWrite() throws IOException {
    synchronized (guard) {
      ingestion.settle();
      ensureOpen();
      db.require();
      conflicts.beforeWrite(db.version());
      scheduler.writePrepared();
    }
  }

  /** The query run's epoch this instance commits under, or -1 (no run, or format 2). */
  public long epoch() {
    return conflicts.epoch();
  }

  /**
   * The value of {@code key} in the version being built, or null.
   *
   * @throws LocalStateReadException if the local database cannot be read (it is then marked
   *     damaged: the next {@link #load} restores the version from the object store)
   * @throws IOException declared for callers; the local read fails as above
   */
  public byte[] get(byte[] key) throws IOException {
    return reads.get(ingestion.settledLive(), key);
  }

  /**
   * Records a put in the version being built; may spill the pending writes ({@link #spill()}).
   *
   * @throws LocalStateReadException as {@link #get} (the put's existence check reads)
   * @throws IOException if a spill fails
   */
  public void put(byte[] key, byte[] value) throws IOException {
    LocalStore l = ingestion.settledLive();
    reads.put(l, key, value);
    maybeSpill(l);
  }

  /**
   * Records a removal in the version being built. May spill the pending writes.
   *
   * @throws LocalStateReadException as {@link #get} (the removal's existence check reads)
   * @throws IOException if a spill fails
   */
  public void delete(byte[] key) throws IOException {
    LocalStore l = ingestion.settledLive();
    reads.delete(l, key);
    maybeSpill(l);
  }

  private void maybeSpill(LocalStore l) throws IOException {
    if (building.spillDue(l, settings.spillThresholdBytes())) {
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
  public void spill() throws IOException {
    synchronized (guard) {
      ingestion.settle();
      ensureOpen();
      LocalStore l = db.require();
      if (l.hasPendingWrites() && l.openScans() == 0) {
        building.spill(l, db.version() + 1, db.tmpDir());
      }
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
  public ColumnFamily createColumnFamily(String name, boolean internal) {
    synchronized (guard) {
      ingestion.settle();
      db.require();
      return building.createColumnFamily(name, internal, db.version() + 1);
    }
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
    LocalStore l = ingestion.settledLive();
    if (!reads.reading(l, () -> building.removeKeysOf(name, l, db.version() + 1))) {
      return false;
    }
    synchronized (guard) {
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
    return reads.scan(ingestion.settledLive(), prefix, null, null);
  }

  /**
   * Iterates keys with {@code prefix} in {@code [from, until)}, unsigned byte order; see {@link
   * LocalStore#scan(byte[], byte[], byte[])}.
   *
   * @throws LocalStateReadException as {@link #scan(byte[])}
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix, byte[] from, byte[] until) {
    return reads.scan(ingestion.settledLive(), prefix, from, until);
  }

  /** Number of keys in the version being built. */
  public long numKeys() {
    ingestion.awaitSettled(); // the ingestion moves the pending count into the committed one
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
  public void abort() {
    synchronized (guard) {
      ingestion.settle();
      building.orphanSpills();
      if (building.localDirty()) {
        invalidateLocal();
      } else if (db.live() != null) {
        db.live().discardPending();
      }
      building.reset(db.committedFamilies());
    }
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
  public CommitResult commit() throws IOException {
    synchronized (guard) {
      ensureOpen();
      ingestion.settle();
      LocalStore l = db.require();
      long newVersion = db.version() + 1;
      String attempt = building.attemptForCommit();
      long epoch = conflicts.beforeCommit(db.version(), newVersion);
      CommitDelta d = CommitDelta.build(identity, l, db, settings.stageDeltasInMemory(),
          newVersion, attempt);
      boolean ingesting = false;
      try {
        Optional<BaseSnapshot> pendingBase = snapshots.pending(db.generation(), newVersion);
        CommitConflicts.Encoder encoder = k -> {
          Manifest mk = building.manifest(db.manifest(), db.version(), attempt, pendingBase, k,
              d.delta(), keySchema, valueSchema, l.numKeys(), epoch);
          return new CommitConflicts.VersionObject(k, mk, d.body(mk));
        };
        CommitConflicts.VersionObject first =
            encoder.encode(conflicts.firstKey(newVersion, attempt, epoch));
        long t2 = System.nanoTime();
        FaultPoints.pass(FaultPoints.COMMIT_BEFORE_PUT);
        CommitConflicts.Put put = conflicts.publish(newVersion, epoch, first, encoder);
        String key = put.object().key();
        Manifest m = put.object().manifest();
        ObjectBody body = put.object().body();
        if (put.winner() != null) {
          return new CommitResult(put.winner(), key, d.stats(t2, put.endNanos(), 0, body, m),
              true);
        }
        long t3 = put.endNanos();
        FaultPoints.pass(FaultPoints.COMMIT_AFTER_PUT);
        reader.cache().put(key, body.length(), m);
        gc.committed(newVersion);
        // Committed. The local ingestion runs after this call returns; it owns the delta file.
        long previousIngestNanos = ingestion.takeLastNanos();
        ingesting = ingestion.afterPut(newVersion, key, l, d, () -> {
          building.committed(m.columnFamilies());
          m.base().ifPresent(snapshots::published);
          db.committedIngesting(m);
        });
        if (!ingesting) {
          return new CommitResult(m, key, d.stats(t2, t3, previousIngestNanos, body, m));
        }
        LOG.debug("{} committed version {} as {} ({} delta bytes, chain {})", identity, newVersion,
            key, d.size(), m.deltaChainLength());
        scheduler.committed(m);
        return new CommitResult(m, key, d.stats(t2, t3, previousIngestNanos, body, m));
      } finally {
        if (!ingesting) {
          db.deleteQuietly(d.sst());
        }
      }
    }
  }

  /**
   * Starts the last commit's local ingestion on the shared ingest threads, if it has not
   * started: {@link #commit()} only prepares it, so that its caller first finishes the commit
   * (in Spark, the report to the coordinator) without the ingestion competing for the cores.
   * Without this call, the next call that needs the local database runs it ({@link
   * DeferredIngestion}). Never throws; needs no monitor.
   */
  public void startLocalIngestion() {
    ingestion.start();
  }

  /** Waits for the last commit's local ingestion and the first GC round (tests and tools). */
  void awaitLocalIngestion() {
    ingestion.awaitSettled();
    gc.awaitFirstRound();
  }

  /**
   * Background work, never on the commit path: uploads a base snapshot if one is due ({@link
   * SnapshotScheduler#maintenance()}), then runs a garbage-collection round if one is due. A
   * snapshot failure does not prevent the round. A failed round is not thrown: it is counted
   * ({@link #gcFailedRounds()}) and warned of by {@link GcTrigger}.
   *
   * @return true if a snapshot was uploaded
   * @throws IOException if the snapshot's checkpoint or upload fails (nothing is published then;
   *     uploaded objects are unreferenced and collected by a later round)
   */
  public boolean maintenance() throws IOException {
    boolean uploaded = false;
    IOException failure = null;
    try {
      uploaded = scheduler.maintenance();
    } catch (IOException e) {
      failure = e;
    }
    collectIfDue();
    if (failure != null) {
      throw failure;
    }
    return uploaded;
  }

  /** Runs a garbage-collection round if one is due; a failure is counted, not thrown. */
  private void collectIfDue() {
    try {
      if (gcDue()) {
        collectGarbage();
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("{}: GC round failed (counted in strataGcFailedRounds)", identity, e);
    }
  }

  /**
   * True if the store is open and a garbage-collection round is due ({@link GcTrigger} decides:
   * only after this instance committed, and no request is made otherwise).
   */
  public boolean gcDue() {
    return guard.locked(() -> !closed && gc.due());
  }

  /**
   * Runs one garbage-collection round now, whether due or not ({@link GarbageCollector#collect}:
   * one LIST, a tail GET of each retained manifest not cached, batched DeleteObjects), keeping
   * what this instance's pending snapshot, in-flight spills and loaded version name.
   *
   * @return what the round did; {@link GcStats#NONE} if GC is disabled or a round is running
   * @throws IOException if listing, reading a retained manifest or deleting fails
   * @throws IllegalStateException if the store is closed
   */
  public GcStats collectGarbage() throws IOException {
    gc.awaitFirstRound(); // the one a first commit started: this round follows it
    GcTrigger.Round round;
    synchronized (guard) {
      ensureOpen();
      round = gc.start(db.version(), () -> building.addSpillKeys(db.neededKeys()));
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

  /**
   * Uploads a base snapshot of the loaded (last committed) version now, whatever the interval
   * says, and waits for it (Spark 4.2's {@code forceSnapshotOnCommit}); the next commit's
   * manifest names it as its base.
   *
   * @return true if a snapshot was uploaded; false if there is nothing to snapshot (no local
   *     state, or a base at the loaded version already) or a background snapshot is running
   * @throws IOException if the local checkpoint or an upload fails (nothing is published)
   */
  public boolean snapshotNow() throws IOException {
    return scheduler.now();
  }

  /**
   * Waits up to {@code timeoutMs} for a running snapshot upload (such as one a long cold load
   * scheduled) to finish. For tests.
   *
   * @return true if none is running any more
   */
  boolean awaitSnapshotUpload(long timeoutMs) {
    return guard.locked(() -> scheduler.awaitIdle(timeoutMs));
  }

  /** Closes the store and waits for a running snapshot upload: {@code close(true)}. */
  @Override
  public void close() {
    close(true);
  }

  /**
   * Closes the store: waits for a running commit, spill or load (the monitor); lets a running
   * snapshot upload finish, then cancels it ({@link SnapshotScheduler#stop}: up to {@value
   * SnapshotScheduler#FINISH_WAIT_MS} plus {@value SnapshotScheduler#CLOSE_WAIT_MS} ms, on a
   * thread of its own unless {@code wait}: for callers under a lock others need, Spark 3.5's
   * provider lock); then shuts its pools down, closes the local database and the object store
   * and deletes the local directory. Idempotent.
   */
  public void close(boolean wait) {
    synchronized (guard) {
      if (closed) {
        return;
      }
      ingestion.settle();
      closed = true;
      conflicts.closing();
      scheduler.stop(pools::close, wait, () -> {
        db.closeDatabase();
        objects.close();
        db.deleteDirectory();
      });
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
}
