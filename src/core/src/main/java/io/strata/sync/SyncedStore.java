package io.strata.sync;

import io.strata.engine.CloseableIterator;
import io.strata.engine.DeltaFile;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalStore;
import io.strata.engine.SharedMemory;
import io.strata.format.BaseSnapshot;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Delta;
import io.strata.format.FileRef;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 * written as one version object with one create-only PUT under a key unique to the attempt
 * ({@link StoreLayout#versionObject}); the same SST is ingested into the local database while
 * the PUT is in flight, so a commit costs about one PUT round trip. Until the PUT succeeds the
 * local database holds a version not yet committed; if the PUT fails it is discarded (the next
 * load restores from the object store). Nothing is listed, read, renamed, copied or
 * overwritten.
 *
 * <h2>Load</h2>
 * If the local database holds exactly the requested version (and attempt, when given), nothing
 * is downloaded, unless {@link LocalIntegrity} finds it damaged: then it is dropped and the
 * version restored. Otherwise the manifest is read (with the attempt id known: one GET; else one
 * LIST of the version's prefix, the newest attempt wins) and {@link Restorer} rebuilds the
 * version in a fresh directory. A version not found whose location holds another provider's
 * files fails with an error saying so.
 *
 * <h2>Snapshots</h2>
 * {@link #maintenance()} takes a RocksDB checkpoint of the committed version when {@code
 * snapshotInterval} versions passed since the last base and uploads it ({@link
 * BaseSnapshotUploader}); the next commit's manifest names it as its base.
 *
 * <h2>Column families</h2>
 * Virtual: every key starts with its family's 2-byte id ({@link ColumnFamily#keyPrefix()}).
 * The name-to-id mapping of the version being built ({@link #columnFamilies()}) is committed in
 * that version's manifest and restored with it, so ids never change across restores; removing a
 * family writes a tombstone for each of its keys into the version's delta.
 *
 * <h2>Local disk</h2>
 * Bounded by the live database plus one checkpoint: a restore drops the old database before it
 * downloads the new one, and every load and maintenance round sweeps what a failed delete left
 * behind ({@link LocalIntegrity}). A directory left by a crashed JVM is the caller's to sweep
 * (see {@code LocalDirs} in the engine).
 *
 * <h2>Retention and garbage collection</h2>
 * {@link #maintenance()} also runs a garbage-collection round when {@link GcTrigger} says one is
 * due. A round keeps every object the manifests of the retained versions name, plus this
 * instance's pending base snapshot, in-flight spills and loaded version; see {@link
 * Reachability}.
 *
 * <h2>Threading</h2>
 * One task thread at a time calls {@link #load}, the reads and writes, and {@link #commit} or
 * {@link #abort} (the caller serialises tasks). {@link #maintenance()} and {@link #close()} may
 * run on another thread; state changes are serialised by this object's monitor, so close and
 * the checkpoint step of maintenance never overlap a commit, spill or load. The upload of a
 * snapshot runs outside the monitor; {@link #close()} cancels it and waits (up to {@value
 * #CLOSE_WAIT_MS} ms) for it to stop before it closes the object store and deletes the directory.
 */
public final class SyncedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SyncedStore.class);
  /** How long {@link #close()} waits for a snapshot upload to stop, ms. */
  static final long CLOSE_WAIT_MS = 30_000;

  /**
   * Tuning of one store.
   *
   * @param snapshotInterval versions between base snapshots (&gt;= 1)
   * @param transferThreads parallel transfers for restore and snapshot upload (&gt;= 1)
   * @param spillThresholdBytes pending writes (approximate heap bytes) above which a batch
   *     spills them to a spill delta uploaded before commit; 0 disables spilling
   * @param attemptKeys true under Spark's checkpoint format 2: every attempt writes its own
   *     {@code v/<version>/<attempt>.svo} and the driver names the one to load; false under
   *     format 1: all attempts of a version race for {@code v/<version>.svo}, first writer wins
   * @param memory native memory limits of the local database (see {@link SharedMemory})
   * @param gc retention and garbage collection
   */
  public record Settings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
      boolean attemptKeys, SharedMemory.Limits memory, GcSettings gc) {
    /** @throws NullPointerException if {@code memory} or {@code gc} is null */
    public Settings {
      Objects.requireNonNull(memory, "memory");
      Objects.requireNonNull(gc, "gc");
    }
  }

  /**
   * Result of a commit.
   *
   * @param manifest the committed version's manifest
   * @param key the version object's key
   * @param stats what it cost
   * @param lostRace true if (checkpoint format 1) another attempt of the same version had already
   *     committed: the returned manifest is that attempt's, this attempt's writes were dropped
   *     and the local database holds (or will restore) the winner's state
   */
  public record Committed(Manifest manifest, String key, CommitStats stats, boolean lostRace) {
    /** A commit that won (or, under format 2, did not race). */
    public Committed(Manifest manifest, String key, CommitStats stats) {
      this(manifest, key, stats, false);
    }
  }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final Path localDir;
  private final Settings settings;
  private final String keySchema;
  private final String valueSchema;
  private final Clock clock;
  private final TransferPools pools;
  private final VersionObjectReader reader;
  private final Restorer restorer;
  private final GcTrigger gc;
  private final BaseSnapshotUploader snapshots;
  private final LocalIntegrity integrity;
  private final AtomicInteger dirCounter = new AtomicInteger();

  // The version life cycle, guarded by this (volatile ones are also read without it).
  /** Volatile: metrics read it from other threads; changed only under the monitor. */
  private volatile LocalStore local;
  private long loadedVersion = -1;
  private Manifest loaded;
  /** Counts local databases: a snapshot taken from an older one is never published. */
  private int generation;
  /** The checkpoint a snapshot upload is reading (outside the monitor), or null. */
  private Path runningCheckpoint;
  private boolean closed;
  /** Attempt id of the version being built, fixed at its first spill (else chosen at commit). */
  private String buildingAttempt;
  /** Spill deltas of the version being built, already uploaded and ingested locally. */
  private final List<Delta> spilled = new ArrayList<>();
  /** True while the local database holds spilled writes of a version not yet committed. */
  private boolean localDirty;
  /**
   * Column families of the version being built: the loaded manifest's, plus this version's
   * creations and removals (dropped by an abort or a load). Immutable value, replaced on change.
   */
  private volatile ColumnFamilies families = ColumnFamilies.NONE;
  private volatile RestoreStats lastRestore = RestoreStats.NONE;
  private volatile long lastSnapshotVersion = -1;

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
      Settings settings, String keySchema, String valueSchema) {
    this(identity, objects, localDir, settings, keySchema, valueSchema, Clock.systemUTC());
  }

  /**
   * As the public constructor, with the wall clock used for the grace period (tests move it
   * forward to age objects instead of waiting).
   */
  SyncedStore(StoreIdentity identity, ObjectStore objects, Path localDir, Settings settings,
      String keySchema, String valueSchema, Clock clock) {
    this.identity = identity;
    this.objects = objects;
    this.localDir = localDir;
    this.settings = settings;
    this.keySchema = keySchema;
    this.valueSchema = valueSchema;
    this.clock = clock;
    this.pools = new TransferPools(identity, settings.transferThreads());
    GcSettings gcSettings = settings.gc();
    ManifestCache manifests = new ManifestCache((int) Math.min(10_000L,
        gcSettings.versionsToRetain()
            + 2L * Math.max(gcSettings.roundInterval(), settings.snapshotInterval()) + 16));
    this.reader = new VersionObjectReader(identity, objects, settings.attemptKeys(), manifests);
    this.restorer = new Restorer(identity, objects, pools.transfers(), settings.memory());
    this.gc = new GcTrigger(gcSettings, clock,
        new GarbageCollector(identity, objects, reader, pools.transfers(), gcSettings), this);
    this.snapshots = new BaseSnapshotUploader(identity, objects, pools, gc, clock,
        gcSettings.gracePeriodMillis());
    this.integrity = new LocalIntegrity(identity, localDir);
  }

  /** Which store this is. */
  public StoreIdentity identity() {
    return identity;
  }

  /** The version the local database holds, or -1 if none is usable. */
  public synchronized long loadedVersion() {
    return loadedVersion;
  }

  /** The attempt id of the loaded version; empty for version 0 or nothing loaded. */
  public synchronized Optional<String> loadedAttempt() {
    return loaded == null ? Optional.empty() : Optional.of(loaded.attempt());
  }

  /** The manifest of the loaded version; empty for version 0 or nothing loaded. */
  public synchronized Optional<Manifest> loadedManifest() {
    return Optional.ofNullable(loaded);
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
   *     local database is then unchanged or invalidated, never left holding another state
   * @throws IOException if the local disk fails
   * @throws IllegalArgumentException if {@code version} is negative
   * @throws IllegalStateException if the store is closed
   */
  public synchronized void load(long version, Optional<String> attempt) throws IOException {
    ensureOpen();
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    lastRestore = RestoreStats.NONE;
    if (localDirty) {
      invalidateLocal();
    }
    spilled.clear();
    buildingAttempt = null;
    sweepLocalDir();
    if (local != null && version == loadedVersion
        && (attempt.isEmpty() || version == 0 || attempt.equals(loadedAttempt()))) {
      Optional<String> changed = integrity.changedFile(local);
      if (changed.isEmpty()) {
        local.discardPending();
        families = committedFamilies();
        return;
      }
      // RocksDB never rewrites an SST: the database is damaged. Never reuse it; the object
      // store holds the verified copy of this version.
      LOG.warn("{} version {}: local SST {} in {} changed on disk since it was written; "
          + "dropping the local database and restoring the version from the object store",
          identity, version, changed.get(), local.dir());
      invalidateLocal();
    }
    if (version == 0) {
      invalidateLocal();
      replaceLocal(LocalStore.open(newDbDir(), 0, settings.memory()), null, 0);
      return;
    }
    long start = System.nanoTime();
    Manifest m = reader.readForLoad(version, attempt);
    // The old database holds another version and is never reused for this one: drop it before
    // downloading, so the disk holds one database at a time.
    invalidateLocal();
    Restorer.Restored r = restorer.restore(m, newDbDir(), tmpDir(), start);
    replaceLocal(r.store(), m, m.version());
    lastRestore = r.stats();
  }

  /** The value of {@code key} in the version being built, or null. */
  public byte[] get(byte[] key) throws IOException {
    return requireLocal().get(key);
  }

  /**
   * Records a put in the version being built. May spill the pending writes (see {@link
   * #spill()}).
   */
  public void put(byte[] key, byte[] value) throws IOException {
    LocalStore l = requireLocal();
    l.put(key, value);
    maybeSpill(l);
  }

  /** Records a removal in the version being built. May spill the pending writes. */
  public void delete(byte[] key) throws IOException {
    LocalStore l = requireLocal();
    l.delete(key);
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
    ensureOpen();
    LocalStore l = requireLocal();
    if (!l.hasPendingWrites() || l.openScans() > 0) {
      return;
    }
    long version = loadedVersion + 1;
    if (buildingAttempt == null) {
      buildingAttempt = StoreLayout.newAttemptId();
    }
    String key = StoreLayout.spill(version, buildingAttempt, spilled.size());
    Path sst = tmpDir().resolve("spill-" + version + "-" + buildingAttempt + "-"
        + spilled.size() + ".sst");
    try {
      DeltaFile d = l.writeDelta(sst).orElseThrow();
      try {
        objects.putIfAbsent(key,
            FaultPoints.during(FaultPoints.SPILL_UPLOAD, ObjectBody.of(sst)));
      } catch (IOException | RuntimeException e) {
        gc.orphansLeft(); // a failed PUT may still have been applied
        throw e;
      }
      localDirty = true;
      l.spillPending(d);
      spilled.add(new Delta(version, buildingAttempt, new FileRef(key, 0, d.size(),
          d.checksum())));
      LOG.debug("{} version {}: spilled {} bytes of pending writes to {}", identity, version,
          d.size(), key);
    } finally {
      deleteQuietly(sst);
    }
  }

  /**
   * The column families of the version being built (the loaded version's, plus this version's
   * creations and removals).
   */
  public ColumnFamilies columnFamilies() {
    return families;
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
    requireLocal();
    Optional<ColumnFamily> existing = families.byName(name);
    if (existing.isPresent()) {
      return existing.get();
    }
    families = families.with(name, internal);
    ColumnFamily created = families.byName(name).orElseThrow();
    LOG.debug("{} version {}: created column family '{}' with id {}", identity,
        loadedVersion + 1, name, created.id());
    return created;
  }

  /**
   * Removes the column family {@code name} from the version being built: every key of it gets a
   * removal (a tombstone in this version's delta, so the removal travels the ordinary commit
   * path), and the manifest no longer lists it. Its id is never reused. An abort undoes both.
   *
   * @return false if no such family exists
   * @throws IOException if reading or spilling fails
   * @throws IllegalStateException if nothing is loaded
   */
  public boolean removeColumnFamily(String name) throws IOException {
    LocalStore l = requireLocal();
    Optional<ColumnFamily> f = families.byName(name);
    if (f.isEmpty()) {
      return false;
    }
    long removed = 0;
    try (CloseableIterator<KeyValue> it = l.scan(f.get().keyPrefix())) {
      while (it.hasNext()) {
        l.delete(it.next().key());
        removed++;
      }
    }
    synchronized (this) {
      families = families.without(name);
    }
    maybeSpill(l);
    LOG.debug("{} version {}: removed column family '{}' (id {}, {} keys)", identity,
        loadedVersion + 1, name, f.get().id(), removed);
    return true;
  }

  private ColumnFamilies committedFamilies() {
    return loaded == null ? ColumnFamilies.NONE : loaded.columnFamilies();
  }

  /** Iterates keys with {@code prefix} in unsigned byte order; see {@link LocalStore#scan}. */
  public CloseableIterator<KeyValue> scan(byte[] prefix) {
    return requireLocal().scan(prefix);
  }

  /**
   * Iterates keys with {@code prefix} in {@code [from, until)}, unsigned byte order; see {@link
   * LocalStore#scan(byte[], byte[], byte[])}.
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix, byte[] from, byte[] until) {
    return requireLocal().scan(prefix, from, until);
  }

  /** Number of keys in the version being built. */
  public long numKeys() {
    LocalStore l = local;
    return l == null ? 0 : l.numKeys();
  }

  /**
   * Memory used by the local database (native: memtables, table readers, its part of the block
   * cache) and by pending writes (heap), bytes; zeros when nothing is loaded.
   */
  public LocalStore.MemoryUsage memoryUsage() {
    LocalStore l = local;
    return l == null ? LocalStore.MemoryUsage.NONE : l.memoryUsage();
  }

  /**
   * Drops the pending writes of the version being built. If the batch had spilled, the local
   * database is dropped too (the next load restores from the object store); the spill objects
   * are left unreferenced.
   */
  public synchronized void abort() {
    if (!spilled.isEmpty()) {
      gc.orphansLeft();
    }
    if (localDirty) {
      invalidateLocal();
    } else if (local != null) {
      local.discardPending();
    }
    families = committedFamilies();
    spilled.clear();
    buildingAttempt = null;
  }

  /**
   * Commits the pending writes as version {@code loadedVersion() + 1}: one create-only PUT of the
   * version object, with the local ingestion of its delta running meanwhile.
   *
   * @return the manifest, key and cost
   * @throws IOException if the upload fails or a write collides with another writer's object
   *     (the version is then not committed; the local database, which may hold its writes, is
   *     discarded and the next {@link #load} restores the requested version from the object
   *     store)
   * @throws IllegalStateException if nothing is loaded, or the store is closed
   */
  public synchronized Committed commit() throws IOException {
    ensureOpen();
    LocalStore l = requireLocal();
    long newVersion = loadedVersion + 1;
    String attempt = buildingAttempt != null ? buildingAttempt : StoreLayout.newAttemptId();
    String key = reader.key(newVersion, attempt);
    Path tmp = tmpDir();
    Path sst = tmp.resolve("delta-" + newVersion + "-" + attempt + ".sst");
    try {
      long t0 = System.nanoTime();
      Optional<DeltaFile> delta = l.writeDelta(sst);
      long t1 = System.nanoTime();
      Manifest m = nextManifest(newVersion, attempt, key, delta, l.numKeys());
      byte[] tail = VersionObjectCodec.manifestAndFooter(ManifestCodec.encode(m),
          delta.map(DeltaFile::size).orElse(0L));
      ObjectBody body = delta.isPresent()
          ? ObjectBody.concat(ObjectBody.of(sst), ObjectBody.of(tail))
          : ObjectBody.of(tail);
      long t2 = System.nanoTime();
      FaultPoints.pass(FaultPoints.COMMIT_BEFORE_PUT);
      // The delta is ingested while its PUT is in flight: commit time is then about one PUT
      // round trip, not a round trip plus RocksDB's ingestion (its fsyncs). Until the PUT
      // succeeds the database holds writes of a version not committed (localDirty): a failed
      // or lost PUT discards the local database and the next load restores from the object
      // store.
      localDirty = true;
      Future<Long> ingest = LocalIngestion.start(pools.ingest(), l, delta, tmp);
      try {
        objects.putIfAbsent(key, FaultPoints.during(FaultPoints.COMMIT_DURING_PUT, body));
      } catch (ObjectAlreadyExistsException e) {
        awaitIngestQuietly(ingest, newVersion);
        if (settings.attemptKeys()) {
          invalidateLocal();
          throw new IOException("Cannot commit " + identity + " version " + newVersion
              + ": another writer created " + objects.describe(key)
              + ", a key unique to this attempt", e);
        }
        return adoptWinner(newVersion, key, m, stats(t0, t1, t2, System.nanoTime(), 0, delta,
            body, m));
      } catch (IOException | RuntimeException e) {
        awaitIngestQuietly(ingest, newVersion);
        invalidateLocal();
        throw e;
      }
      long t3 = System.nanoTime();
      FaultPoints.pass(FaultPoints.COMMIT_AFTER_PUT);
      reader.cache().put(key, body.length(), m);
      gc.committed(newVersion);
      long ingestNanos;
      try {
        ingestNanos = LocalIngestion.await(ingest);
      } catch (IOException | RuntimeException e) {
        // The version is durable in the object store; only the local copy is in doubt. The next
        // load rebuilds it from the object store.
        LOG.warn("{} version {}: committed to {} but local ingestion failed; the next load "
            + "restores from the object store", identity, newVersion, objects.describe(key), e);
        invalidateLocal();
        return new Committed(m, key, stats(t0, t1, t2, t3, 0, delta, body, m));
      }
      spilled.clear();
      buildingAttempt = null;
      localDirty = false;
      m.base().ifPresent(snapshots::published);
      loaded = m;
      loadedVersion = newVersion;
      integrity.recordStamps(l, newVersion);
      LOG.debug("{} committed version {} as {} ({} delta bytes, chain {})", identity, newVersion,
          key, delta.map(DeltaFile::size).orElse(0L), m.deltaChainLength());
      return new Committed(m, key, stats(t0, t1, t2, t3, ingestNanos, delta, body, m));
    } finally {
      deleteQuietly(sst);
    }
  }

  /**
   * The manifest of the version being committed: the loaded version's base (or the pending base
   * snapshot, if it is newer and of a version already committed), the deltas since that base,
   * this version's spills and its own delta (in the version object {@code key}).
   */
  private Manifest nextManifest(long newVersion, String attempt, String key,
      Optional<DeltaFile> delta, long numKeys) {
    Optional<BaseSnapshot> base = loaded == null ? Optional.empty() : loaded.base();
    List<Delta> deltas = new ArrayList<>(loaded == null ? List.of() : loaded.deltas());
    Optional<BaseSnapshot> pending = snapshots.pending(generation, newVersion);
    if (pending.isPresent()) {
      BaseSnapshot nb = pending.get();
      long currentBase = base.map(BaseSnapshot::version).orElse(0L);
      if (nb.version() > currentBase && nb.version() <= loadedVersion) {
        base = pending;
        deltas.removeIf(d -> d.version() <= nb.version());
      }
    }
    deltas.addAll(spilled);
    delta.ifPresent(d -> deltas.add(new Delta(newVersion, attempt,
        new FileRef(key, 0, d.size(), d.checksum()))));
    ColumnFamilies cfs = families;
    return new Manifest(ManifestCodec.formatVersionFor(cfs), identity.id(), newVersion, attempt,
        loadedVersion, loadedAttempt(), base, deltas, keySchema, valueSchema, numKeys,
        System.currentTimeMillis(), cfs);
  }

  /** As {@link LocalIngestion#await}, for a commit that failed anyway: a failure is logged. */
  private void awaitIngestQuietly(Future<Long> ingest, long version) {
    try {
      LocalIngestion.await(ingest);
    } catch (IOException | RuntimeException e) {
      LOG.debug("{} version {}: local ingestion of the failed commit also failed", identity,
          version, e);
    }
  }

  /**
   * Checkpoint format 1, after this attempt's create-only PUT of {@code v/<version>.svo} failed
   * because another attempt of the same version committed first (a speculative copy, a retry
   * after a task died past its PUT, or a zombie): the first writer wins. This attempt drops its
   * writes. Its local database ingested this attempt's delta while the PUT was in flight, so it
   * is discarded and the next load restores the winner from the object store.
   */
  private Committed adoptWinner(long newVersion, String key, Manifest mine, CommitStats stats)
      throws IOException {
    Manifest winner = reader.readAt(newVersion, key, null);
    LOG.warn("{} version {}: attempt {} lost the race for {} to attempt {}; this attempt's "
        + "writes are dropped (checkpoint format 1: the first attempt to commit wins); the next "
        + "load restores the winner from the object store (usual causes: a speculative or "
        + "retried task, or a batch whose plan ran twice, such as a foreachBatch DataFrame used "
        + "by two actions without persist())", identity, newVersion,
        mine.attempt(), objects.describe(key), winner.attempt());
    if (!spilled.isEmpty()) {
      gc.orphansLeft(); // this attempt's spill deltas: no manifest will ever name them
    }
    gc.committed(newVersion);
    invalidateLocal();
    return new Committed(winner, key, stats, true);
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
   *
   * @return true if a snapshot was uploaded
   * @throws IOException if the checkpoint, an upload or the round fails (nothing is published
   *     then; uploaded objects are unreferenced and collected by a later round); the first
   *     failure is thrown, a second one is attached as suppressed
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
      } catch (IOException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
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
      round = gc.start(loadedVersion, this::protectedKeys);
    }
    return round == null ? GcStats.NONE : gc.run(round);
  }

  /** What the last completed garbage-collection round did, or {@link GcStats#NONE}. */
  public GcStats lastGc() {
    return gc.last();
  }

  /** Keys this instance needs that no retained manifest may name yet. Caller holds the monitor. */
  private Set<String> protectedKeys() {
    Set<String> keys = new HashSet<>();
    snapshots.addPendingKeys(keys);
    spilled.forEach(d -> keys.add(d.file().key()));
    if (loaded != null) {
      keys.addAll(Reachability.namedKeys(loaded));
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
    Manifest m;
    int gen;
    Path cpDir;
    long startedMillis;
    long startedNanos;
    synchronized (this) {
      if (closed || local == null || loaded == null || runningCheckpoint != null || localDirty) {
        return false;
      }
      sweepLocalDir();
      long baseVersion = loaded.base().map(BaseSnapshot::version).orElse(0L);
      Optional<BaseSnapshot> pending = snapshots.pending(generation, loadedVersion);
      if (pending.isPresent()) {
        baseVersion = Math.max(baseVersion, pending.get().version());
      }
      long sinceBase = loadedVersion - baseVersion;
      if (sinceBase <= 0 || (!force && sinceBase < settings.snapshotInterval())) {
        return false;
      }
      m = loaded;
      gen = generation;
      cpDir = localDir.resolve("checkpoint-" + dirCounter.incrementAndGet());
      try {
        local.checkpoint(cpDir);
      } catch (IOException | RuntimeException e) {
        deleteQuietly(cpDir);
        throw e;
      }
      runningCheckpoint = cpDir;
      startedMillis = clock.millis();
      startedNanos = System.nanoTime();
    }
    try {
      long t0 = System.nanoTime();
      BaseSnapshot snapshot;
      try {
        snapshot = snapshots.upload(cpDir, m, gen);
      } catch (IOException | RuntimeException e) {
        synchronized (this) {
          if (e instanceof BaseSnapshotUploader.CorruptLocalSstException c && gen == generation
              && !closed) {
            integrity.markDamaged(c.reason()); // the next load restores from the object store
          }
          gc.orphansLeft(); // the files uploaded before the failure
        }
        throw e;
      }
      synchronized (this) {
        if (gen == generation && !closed) {
          snapshots.offer(snapshot, gen, startedMillis, startedNanos);
        } else {
          gc.orphansLeft();
        }
      }
      lastSnapshotVersion = m.version();
      LOG.debug("{} uploaded base snapshot of version {} ({} files) in {} ms", identity,
          m.version(), snapshot.files().size(), ms(System.nanoTime() - t0));
      return true;
    } finally {
      deleteQuietly(cpDir);
      synchronized (this) {
        runningCheckpoint = null;
        notifyAll(); // close() may wait for this
      }
    }
  }

  /**
   * Closes the store: waits for a running commit, spill or load (the monitor), cancels the
   * transfers of a snapshot upload and waits up to {@value #CLOSE_WAIT_MS} ms for it to stop,
   * then closes the local database, the object store, and deletes the local directory; the
   * store's thread pools are shut down. Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    pools.close();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
    boolean interrupted = false;
    while (runningCheckpoint != null) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        LOG.warn("{}: closing while the upload of a base snapshot still runs after {} ms",
            identity, CLOSE_WAIT_MS);
        break;
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        interrupted = true;
        break;
      }
    }
    try {
      LocalStore l = local;
      local = null;
      if (l != null) {
        l.close();
      }
      objects.close();
      try {
        io.strata.engine.LocalFiles.deleteRecursively(localDir);
      } catch (IOException e) {
        LOG.warn("{}: cannot delete local directory {}", identity, localDir, e);
      }
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

  private Path newDbDir() throws IOException {
    Files.createDirectories(localDir);
    return localDir.resolve("db-" + dirCounter.incrementAndGet());
  }

  private Path tmpDir() throws IOException {
    return Files.createDirectories(localDir.resolve("tmp"));
  }

  /** Publishes {@code fresh}, holding {@code version} ({@code m}, null for 0), as the live one. */
  private void replaceLocal(LocalStore fresh, Manifest m, long version) {
    LocalStore old = local;
    local = fresh;
    loaded = m;
    families = committedFamilies();
    loadedVersion = version;
    newGeneration();
    if (old != null) {
      old.close();
      deleteQuietly(old.dir()); // a leftover is deleted by the next sweep
    }
    integrity.recordStamps(fresh, version);
  }

  /** Drops the live database and whatever was built on it; the next load restores. */
  private void invalidateLocal() {
    spilled.clear();
    buildingAttempt = null;
    LocalStore old = local;
    local = null;
    loaded = null;
    families = ColumnFamilies.NONE;
    loadedVersion = -1;
    newGeneration();
    localDirty = false;
    if (old != null) {
      old.close();
      deleteQuietly(old.dir()); // a leftover is deleted by the next sweep
    }
  }

  /** A new local database (or none): snapshots and stamps of the old one no longer apply. */
  private void newGeneration() {
    generation++;
    snapshots.localDatabaseReplaced();
    integrity.forget();
  }

  private void sweepLocalDir() {
    LocalStore l = local;
    integrity.sweep(l == null ? null : l.dir(), runningCheckpoint, loadedVersion);
  }

  private void deleteQuietly(Path p) {
    LocalIntegrity.deleteQuietly(identity, loadedVersion, p);
  }

  private LocalStore requireLocal() {
    LocalStore l = local;
    if (l == null) {
      throw new IllegalStateException(identity + ": no version is loaded");
    }
    return l;
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
