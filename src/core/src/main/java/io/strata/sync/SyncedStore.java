package io.strata.sync;

import io.strata.config.StrataConf;
import io.strata.engine.CloseableIterator;
import io.strata.engine.DeltaFile;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalFiles;
import io.strata.engine.LocalStore;
import io.strata.engine.SharedMemory;
import io.strata.format.BaseSnapshot;
import io.strata.format.Checksums;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.ManifestFormatException;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.metrics.CommitStats;
import io.strata.metrics.GcStats;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import net.jpountz.xxhash.StreamingXXHash64;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One state store kept in a local RocksDB and checkpointed to an object store: the commit
 * protocol, restore, and background base snapshots. Knows nothing of Spark.
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
 * is downloaded, unless one of its SST files changed on disk since it was last known good (size,
 * modification time or inode differ; RocksDB never rewrites an SST) or a snapshot upload found
 * one corrupt: then the database is dropped and the version restored as below. Otherwise the
 * manifest is read (with the attempt id known: one GET; else one LIST of the version's prefix to
 * find its attempts, the newest of which wins) and the version is rebuilt in a fresh directory:
 * base files and deltas downloaded in parallel, each verified against the manifest's size and
 * XXHash64, then the deltas ingested in order, in one ingestion. A version that is not found
 * but whose location holds the same version in the layout of one of Spark's own providers
 * fails with an error saying the checkpoint was written by another provider.
 *
 * <h2>Snapshots</h2>
 * {@link #maintenance()} takes a RocksDB checkpoint of the committed version when {@code
 * snapshotInterval} versions passed since the last base, uploads only the SSTs the object store
 * lacks (an ingested delta is already there, byte for byte) plus one pack of the small RocksDB
 * metadata files, and hands the result to the next commit, whose manifest then names it as its
 * base.
 *
 * <h2>Column families</h2>
 * Virtual: every key starts with its family's 2-byte id ({@link ColumnFamily#keyPrefix()}).
 * The name-to-id mapping of the version being built ({@link #columnFamilies()}) is committed in
 * that version's manifest and restored with it, so ids never change across restores; removing a
 * family writes a tombstone for each of its keys into the version's delta.
 *
 * <h2>Local disk</h2>
 * The store's directory holds the live database ({@code db-N}), at most one local checkpoint
 * ({@code checkpoint-N}, hard links made by maintenance, deleted when its upload ends) and
 * {@code tmp/} (the SST of the commit or spill in progress, the deltas of a restore). So it is
 * bounded by the live database plus one checkpoint: a restore drops the old database before it
 * downloads the new one, and every load and maintenance round deletes whatever a failed delete
 * left behind (older {@code db-*}, idle {@code checkpoint-*}, files in {@code tmp/}). A
 * directory left by a crashed JVM is the caller's to sweep (see {@code LocalDirs} in the
 * engine).
 *
 * <h2>Retention and garbage collection</h2>
 * {@link #maintenance()} also runs a garbage-collection round ({@link GarbageCollector}) when
 * one is due: after this instance committed {@link GcSettings#roundInterval()} versions since the
 * last round (the first round follows its first commit), or once an object this instance left
 * unreferenced (an aborted batch's spills, a dropped base snapshot, a lost race) is older than
 * the grace period. Only instances that commit collect. A round keeps every object the manifests
 * of the retained versions name, plus this instance's pending base snapshot, in-flight spills
 * and loaded version; see {@link Reachability}. A base snapshot not published within half the
 * grace period is dropped rather than published, since its fresh files may be collected.
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
  /**
   * Runs the local ingestion of each commit while its PUT is in flight (one short task per
   * commit; daemon threads, created on demand, gone after a minute idle). Separate from the
   * stores' transfer pools so that a commit never queues behind a snapshot upload.
   */
  private static final ExecutorService INGEST = java.util.concurrent.Executors.newCachedThreadPool(
      r -> {
        Thread t = new Thread(r, "strata-commit-ingest");
        t.setDaemon(true);
        return t;
      });
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
    public Settings {
      java.util.Objects.requireNonNull(memory, "memory");
      java.util.Objects.requireNonNull(gc, "gc");
    }

    /** Format-1 settings with default memory limits and {@link GcSettings#DEFAULT}. */
    public Settings(int snapshotInterval, int transferThreads, long spillThresholdBytes) {
      this(snapshotInterval, transferThreads, spillThresholdBytes, false);
    }

    /** Settings with default memory limits and {@link GcSettings#DEFAULT}. */
    public Settings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
        boolean attemptKeys) {
      this(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys,
          SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT);
    }

    /** Settings with default memory limits. */
    public Settings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
        boolean attemptKeys, GcSettings gc) {
      this(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys,
          SharedMemory.Limits.DEFAULT, gc);
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
  private final ExecutorService transfers;
  private final Clock clock;
  private final ManifestCache manifests;
  private final GarbageCollector collector;
  /**
   * (length, checksum) of local SST files already hashed, keyed by {@code <generation>/<file
   * name>}: RocksDB reuses file names across databases, so a name is only an identity within one
   * local database (one generation).
   */
  private final Map<String, FileRef.ContentId> localFileIds = new ConcurrentHashMap<>();
  private final AtomicInteger dirCounter = new AtomicInteger();

  /** Volatile: metrics read it from other threads; changed only under the monitor. */
  private volatile LocalStore local;
  private long loadedVersion = -1;
  private Manifest loaded;
  private int generation;
  private PendingBase pendingBase;
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
   * Stamps of the live database's SST files when it was last known good (after a restore or
   * commit, or at a load that reused it): a reused database whose SST changed since is dropped.
   */
  private Map<String, LocalFiles.Stamp> localStamps = Map.of();
  /** Why the live database must not be reused (a failed SST verification), or null. */
  private String localDamaged;
  /**
   * Column families of the version being built: the loaded manifest's, plus this version's
   * creations and removals (dropped by an abort or a load). Immutable value, replaced on change.
   */
  private volatile ColumnFamilies families = ColumnFamilies.NONE;
  private volatile RestoreStats lastRestore = RestoreStats.NONE;
  private volatile long lastSnapshotVersion = -1;

  // Garbage-collection trigger state, guarded by this.
  /** Newest version this instance committed (or adopted), -1 if none: only committers collect. */
  private long committedVersion = -1;
  /** {@link #committedVersion} when the last round started, -1 before the first round. */
  private long lastRoundVersion = -1;
  /** Wall time of the oldest (and newest) orphan this instance left that no round covered yet. */
  private long orphansSinceMillis = -1;
  private long orphansUntilMillis = -1;
  /** Wall time the last failed round started, or -1. */
  private long lastFailedRoundMillis = -1;
  /** Wall time incomplete uploads were last checked, or -1. */
  private long lastUploadsCheckMillis = -1;
  private long gcRounds;
  private boolean gcRunning;
  private volatile GcStats lastGc = GcStats.NONE;

  /**
   * A base snapshot uploaded for the next commit to publish.
   *
   * @param startedMillis wall time (the store's clock) before its first upload started
   * @param startedNanos {@link System#nanoTime()} at the same moment
   */
  private record PendingBase(BaseSnapshot snapshot, int generation, long startedMillis,
      long startedNanos) { }

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
    AtomicInteger threadNo = new AtomicInteger();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(settings.transferThreads(),
        settings.transferThreads(), 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "strata-transfer-" + identity.id() + "-"
              + threadNo.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    pool.allowCoreThreadTimeOut(true);
    this.transfers = pool;
    this.clock = clock;
    GcSettings gc = settings.gc();
    this.manifests = new ManifestCache((int) Math.min(10_000L,
        gc.versionsToRetain() + 2L * Math.max(gc.roundInterval(), settings.snapshotInterval())
            + 16));
    this.collector = new GarbageCollector(identity, objects, this::readManifestAt, manifests,
        transfers, gc);
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
      Optional<String> changed = changedLocalFile();
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
    Manifest m;
    try {
      m = readManifest(version, attempt);
    } catch (StateLoadException e) {
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw foreignCheckpoint(version, e).orElse(e);
      }
      throw e;
    }
    // The old database holds another version and is never reused for this one: drop it before
    // downloading, so the disk holds one database at a time.
    invalidateLocal();
    restore(m, start);
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
    Path tmp = Files.createDirectories(localDir.resolve("tmp"));
    Path sst = tmp.resolve("spill-" + version + "-" + buildingAttempt + "-" + spilled.size()
        + ".sst");
    try {
      DeltaFile d = l.writeDelta(sst).orElseThrow();
      try {
        objects.putIfAbsent(key,
            FaultPoints.during(FaultPoints.SPILL_UPLOAD, ObjectBody.of(sst)));
      } catch (IOException | RuntimeException e) {
        markOrphans(); // a failed PUT may still have been applied
        throw e;
      }
      localDirty = true;
      l.spillPending(d);
      FileRef ref = new FileRef(key, 0, d.size(), d.checksum());
      spilled.add(new Delta(version, buildingAttempt, ref));
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
    ColumnFamilies current = families;
    Optional<ColumnFamily> existing = current.byName(name);
    if (existing.isPresent()) {
      return existing.get();
    }
    ColumnFamilies next = current.with(name, internal);
    families = next;
    ColumnFamily created = next.byName(name).orElseThrow();
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
      markOrphans();
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
   * @throws IllegalStateException if nothing is loaded
   */
  public synchronized Committed commit() throws IOException {
    ensureOpen();
    LocalStore l = requireLocal();
    long newVersion = loadedVersion + 1;
    String attempt = buildingAttempt != null ? buildingAttempt : StoreLayout.newAttemptId();
    String key = settings.attemptKeys() ? StoreLayout.versionObject(newVersion, attempt)
        : StoreLayout.versionObject(newVersion);
    Path tmp = Files.createDirectories(localDir.resolve("tmp"));
    Path sst = tmp.resolve("delta-" + newVersion + "-" + attempt + ".sst");
    try {
      long t0 = System.nanoTime();
      Optional<DeltaFile> delta = l.writeDelta(sst);
      long t1 = System.nanoTime();

      Optional<BaseSnapshot> base = loaded == null ? Optional.empty() : loaded.base();
      List<Delta> deltas = new ArrayList<>(loaded == null ? List.of() : loaded.deltas());
      if (pendingBase != null && pendingBase.generation() == generation
          && pendingBaseExpired(pendingBase)) {
        dropExpiredPendingBase(newVersion);
      }
      if (pendingBase != null && pendingBase.generation() == generation) {
        BaseSnapshot nb = pendingBase.snapshot();
        long currentBase = base.map(BaseSnapshot::version).orElse(0L);
        if (nb.version() > currentBase && nb.version() <= loadedVersion) {
          base = Optional.of(nb);
          deltas.removeIf(d -> d.version() <= nb.version());
        }
      }
      deltas.addAll(spilled);
      if (delta.isPresent()) {
        DeltaFile d = delta.get();
        deltas.add(new Delta(newVersion, attempt, new FileRef(key, 0, d.size(), d.checksum())));
      }
      ColumnFamilies cfs = families;
      Manifest m = new Manifest(ManifestCodec.formatVersionFor(cfs), identity.id(), newVersion,
          attempt, loadedVersion, loadedAttempt(), base, deltas, keySchema, valueSchema,
          l.numKeys(), System.currentTimeMillis(), cfs);
      byte[] tail = VersionObjectCodec.manifestAndFooter(ManifestCodec.encode(m),
          delta.map(DeltaFile::size).orElse(0L));
      ObjectBody body = delta.isPresent()
          ? ObjectBody.concat(ObjectBody.of(sst), ObjectBody.of(tail))
          : ObjectBody.of(tail);
      long t2 = System.nanoTime();
      FaultPoints.pass(FaultPoints.COMMIT_BEFORE_PUT);
      // The delta is ingested while its PUT is in flight: commit time is then about one PUT
      // round trip, not a round trip plus RocksDB's ingestion (its fsyncs). Ingestion moves
      // the file it is given into the database, so it gets a hard link of the delta and the
      // PUT (whose SDK retries re-open the body) keeps reading the original. Until the PUT
      // succeeds the database holds writes of a version not committed (localDirty): a failed
      // or lost PUT discards the local database and the next load restores from the object
      // store.
      localDirty = true;
      Future<Long> ingest = INGEST.submit(ingestTask(l, delta, tmp));
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
      long ingestNanos;
      try {
        ingestNanos = awaitIngest(ingest);
      } catch (IOException | RuntimeException e) {
        // The version is durable in the object store; only the local copy is in doubt. The next
        // load rebuilds it from the object store.
        LOG.warn("{} version {}: committed to {} but local ingestion failed; the next load "
            + "restores from the object store", identity, newVersion, objects.describe(key), e);
        manifests.put(key, body.length(), m);
        committedVersion = Math.max(committedVersion, newVersion);
        invalidateLocal();
        spilled.clear();
        buildingAttempt = null;
        return new Committed(m, key, stats(t0, t1, t2, t3, 0, delta, body, m));
      }
      spilled.clear();
      buildingAttempt = null;
      localDirty = false;
      if (base.isPresent() && pendingBase != null
          && base.get().equals(pendingBase.snapshot())) {
        pendingBase = null;
      }
      loaded = m;
      loadedVersion = newVersion;
      manifests.put(key, body.length(), m);
      committedVersion = Math.max(committedVersion, newVersion);
      recordLocalStamps();
      LOG.debug("{} committed version {} as {} ({} delta bytes, chain {})", identity, newVersion,
          key, delta.map(DeltaFile::size).orElse(0L), m.deltaChainLength());
      return new Committed(m, key, stats(t0, t1, t2, t3, ingestNanos, delta, body, m));
    } finally {
      deleteQuietly(sst);
    }
  }

  /**
   * The local half of a commit, run on {@link #INGEST} while the version object's PUT is in
   * flight: ingests a hard link of {@code delta} (a copy where the file system has no hard
   * links) and clears the pending writes. Returns the time it took, ns.
   */
  private static Callable<Long> ingestTask(LocalStore l, Optional<DeltaFile> version,
      Path tmp) {
    return () -> {
      long start = System.nanoTime();
      if (version.isEmpty()) {
        l.commitPending(Optional.empty());
        return System.nanoTime() - start;
      }
      DeltaFile delta = version.get();
      Path link = tmp.resolve(delta.path().getFileName() + ".ingest");
      try {
        try {
          Files.createLink(link, delta.path());
        } catch (UnsupportedOperationException | IOException e) {
          Files.copy(delta.path(), link, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        l.commitPending(Optional.of(new DeltaFile(link, delta.size(), delta.checksum(),
            delta.entries())));
      } finally {
        Files.deleteIfExists(link); // gone already if ingestion moved it
      }
      return System.nanoTime() - start;
    };
  }

  /** Waits for a commit's local ingestion; returns its time, ns; rethrows its failure. */
  private static long awaitIngest(Future<Long> ingest) throws IOException {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return ingest.get();
        } catch (InterruptedException e) {
          interrupted = true; // the database must not be closed under a running ingestion
        } catch (ExecutionException e) {
          Throwable c = e.getCause();
          if (c instanceof IOException io) {
            throw io;
          }
          if (c instanceof RuntimeException re) {
            throw re;
          }
          throw new IOException("Local ingestion failed: " + c, c);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** As {@link #awaitIngest}, for a commit that failed anyway: a failure is only logged. */
  private void awaitIngestQuietly(Future<Long> ingest, long version) {
    try {
      awaitIngest(ingest);
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
    Manifest winner = readManifestAt(newVersion, key, null);
    LOG.warn("{} version {}: attempt {} lost the race for {} to attempt {}; this attempt's "
        + "writes are dropped (checkpoint format 1: the first attempt to commit wins); the next "
        + "load restores the winner from the object store (usual causes: a speculative or "
        + "retried task, or a batch whose plan ran twice, such as a foreachBatch DataFrame used "
        + "by two actions without persist())", identity, newVersion,
        mine.attempt(), objects.describe(key), winner.attempt());
    if (!spilled.isEmpty()) {
      markOrphans(); // this attempt's spill deltas: no manifest will ever name them
    }
    committedVersion = Math.max(committedVersion, newVersion);
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
   * True if a garbage-collection round is due: GC is enabled, this instance committed at least
   * one version, no round is running, and either no round ran yet, or this instance committed
   * {@link GcSettings#roundInterval()} versions since the last round started, or an orphan it
   * left is now older than the grace period (then at most one failed try per grace period).
   * Nothing new can have become garbage otherwise, so no request is made.
   */
  public synchronized boolean gcDue() {
    GcSettings gc = settings.gc();
    if (!gc.enabled() || closed || gcRunning || committedVersion < 1) {
      return false;
    }
    if (lastRoundVersion < 0 || committedVersion - lastRoundVersion >= gc.roundInterval()) {
      return true;
    }
    long now = clock.millis();
    return orphansSinceMillis >= 0 && now - orphansSinceMillis >= gc.gracePeriodMillis()
        && (lastFailedRoundMillis < 0 || now - lastFailedRoundMillis >= gc.gracePeriodMillis());
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
    long round;
    long knownNewest;
    Set<String> protectedKeys;
    long now;
    boolean checkUploads;
    synchronized (this) {
      ensureOpen();
      if (!settings.gc().enabled() || gcRunning) {
        return GcStats.NONE;
      }
      gcRunning = true;
      round = ++gcRounds;
      knownNewest = Math.max(loadedVersion, committedVersion);
      protectedKeys = protectedKeys();
      now = clock.millis();
      checkUploads = lastUploadsCheckMillis < 0
          || now - lastUploadsCheckMillis >= settings.gc().gracePeriodMillis();
      lastRoundVersion = committedVersion;
    }
    boolean ok = false;
    try {
      GcStats stats = collector.collect(round, knownNewest, protectedKeys, now, checkUploads);
      lastGc = stats;
      ok = true;
      return stats;
    } finally {
      synchronized (this) {
        gcRunning = false;
        long grace = settings.gc().gracePeriodMillis();
        if (ok) {
          lastFailedRoundMillis = -1;
          if (checkUploads) {
            lastUploadsCheckMillis = now;
          }
          if (orphansUntilMillis >= 0 && orphansUntilMillis <= now - grace) {
            orphansSinceMillis = -1; // every orphan recorded so far was old enough for this round
            orphansUntilMillis = -1;
          } else if (orphansSinceMillis >= 0 && orphansSinceMillis <= now - grace) {
            orphansSinceMillis = orphansUntilMillis; // the older ones were collected
          }
        } else {
          lastFailedRoundMillis = now;
        }
      }
    }
  }

  /** What the last completed garbage-collection round did, or {@link GcStats#NONE}. */
  public GcStats lastGc() {
    return lastGc;
  }

  /** Keys this instance needs that no retained manifest may name yet. Caller holds the monitor. */
  private Set<String> protectedKeys() {
    Set<String> keys = new HashSet<>();
    if (pendingBase != null) {
      pendingBase.snapshot().files().forEach(f -> keys.add(f.file().key()));
    }
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
      if (pendingBase != null && pendingBase.generation() == generation
          && pendingBaseExpired(pendingBase)) {
        dropExpiredPendingBase(loadedVersion);
      }
      long baseVersion = loaded.base().map(BaseSnapshot::version).orElse(0L);
      if (pendingBase != null && pendingBase.generation() == generation) {
        baseVersion = Math.max(baseVersion, pendingBase.snapshot().version());
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
        snapshot = uploadSnapshot(cpDir, m, gen);
      } catch (IOException | RuntimeException e) {
        synchronized (this) {
          markOrphans(); // the files uploaded before the failure
        }
        throw e;
      }
      synchronized (this) {
        if (gen == generation && !closed) {
          pendingBase = new PendingBase(snapshot, gen, startedMillis, startedNanos);
        } else {
          markOrphans();
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
   * Uploads the checkpoint in {@code cpDir} of the version {@code m} describes. An SST whose
   * content (length, XXHash64) a file {@code m} names already holds is not uploaded again; only
   * files {@code m} names are reused, never older ones: a retained manifest names them, so no
   * garbage-collection round can delete them while this snapshot waits to be published.
   */
  private BaseSnapshot uploadSnapshot(Path cpDir, Manifest m, int gen) throws IOException {
    long version = m.version();
    String attempt = m.attempt();
    Map<FileRef.ContentId, FileRef> reusable = new HashMap<>();
    for (Delta d : m.deltas()) {
      reusable.putIfAbsent(d.file().contentId(), d.file());
    }
    m.base().ifPresent(b -> b.files().forEach(
        f -> reusable.putIfAbsent(f.file().contentId(), f.file())));
    List<Path> files;
    try (Stream<Path> s = Files.list(cpDir)) {
      files = s.filter(Files::isRegularFile)
          .filter(p -> !p.getFileName().toString().equals("LOCK"))
          .filter(p -> !p.getFileName().toString().startsWith("LOG"))
          .sorted(Comparator.comparing(p -> p.getFileName().toString()))
          .toList();
    }
    List<BaseSnapshot.BaseFile> result = new ArrayList<>();
    List<Future<BaseSnapshot.BaseFile>> uploads = new ArrayList<>();
    ByteArrayOutputStream pack = new ByteArrayOutputStream();
    List<String> packNames = new ArrayList<>();
    List<long[]> packRanges = new ArrayList<>();
    // A unique suffix: another instance may snapshot the same (version, attempt) again.
    String packKey = StoreLayout.snapshotPack(version, attempt, StoreLayout.newUniqueName());
    for (Path f : files) {
      String name = f.getFileName().toString();
      if (name.endsWith(".sst")) {
        String cacheKey = gen + "/" + name;
        long size = Files.size(f);
        FileRef.ContentId id = localFileIds.get(cacheKey);
        if (id == null || id.length() != size) {
          id = new FileRef.ContentId(size, Checksums.xxhash64(f));
          localFileIds.put(cacheKey, id);
        }
        FileRef known = reusable.get(id);
        if (known != null) {
          result.add(new BaseSnapshot.BaseFile(name, known));
        } else {
          // New bytes (compaction output): never upload a damaged file with a checksum that
          // vouches for it. RocksDB's block checksums say whether the local copy is intact.
          try {
            LocalFiles.verifySst(f);
          } catch (IOException e) {
            synchronized (this) {
              if (gen == generation && !closed) {
                localDamaged = e.getMessage(); // the next load restores from the object store
              }
            }
            throw new IOException("Cannot upload base snapshot of " + identity + " version "
                + version + ": " + e.getMessage() + "; the local database is dropped at the "
                + "next load and restored from the object store", e);
          }
          FileRef.ContentId cid = id;
          uploads.add(transfers.submit(() -> {
            String key = StoreLayout.snapshotSst(StoreLayout.newUniqueName());
            objects.putIfAbsent(key,
                FaultPoints.during(FaultPoints.SNAPSHOT_UPLOAD, ObjectBody.of(f)));
            return new BaseSnapshot.BaseFile(name,
                new FileRef(key, 0, cid.length(), cid.checksum()));
          }));
        }
      } else {
        byte[] bytes = Files.readAllBytes(f);
        packRanges.add(new long[] {pack.size(), bytes.length, Checksums.xxhash64(bytes)});
        packNames.add(name);
        pack.write(bytes);
      }
    }
    result.addAll(awaitAll(uploads, "upload base snapshot of version " + version));
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException(identity + " closed during the upload of the base "
            + "snapshot of version " + version);
      }
    }
    // On the transfer pool too, so that close() can interrupt it.
    byte[] packBytes = pack.toByteArray();
    awaitAll(List.of(transfers.submit(() -> {
      objects.putIfAbsent(packKey,
          FaultPoints.during(FaultPoints.SNAPSHOT_UPLOAD, ObjectBody.of(packBytes)));
      return packKey;
    })), "upload base snapshot of version " + version);
    for (int i = 0; i < packNames.size(); i++) {
      long[] r = packRanges.get(i);
      result.add(new BaseSnapshot.BaseFile(packNames.get(i), new FileRef(packKey, r[0], r[1], r[2])));
    }
    result.sort(Comparator.comparing(BaseSnapshot.BaseFile::name));
    return new BaseSnapshot(version, attempt, result);
  }

  /**
   * Closes the store: waits for a running commit, spill or load (the monitor), cancels the
   * transfers of a snapshot upload and waits up to {@value #CLOSE_WAIT_MS} ms for it to stop,
   * then closes the local database, the object store, and deletes the local directory.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (Runnable queued : transfers.shutdownNow()) {
      if (queued instanceof Future<?> f) {
        f.cancel(true); // so a maintenance thread waiting on it wakes up instead of hanging
      }
    }
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
        deleteRecursively(localDir);
      } catch (IOException e) {
        LOG.warn("{}: cannot delete local directory {}", identity, localDir, e);
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  // ---------------------------------------------------------------- manifest and restore

  /**
   * Reads and verifies the manifest of {@code version}.
   *
   * @throws StateLoadException if there is none, or it is corrupt
   */
  public Manifest readManifest(long version, Optional<String> attempt) throws IOException {
    if (attempt.isPresent()) {
      if (!StoreLayout.isAttemptId(attempt.get())) {
        throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
            "Cannot load " + identity + " version " + version + ": checkpoint id '"
                + attempt.get() + "' was not written by Strata", null);
      }
      String key = settings.attemptKeys() ? StoreLayout.versionObject(version, attempt.get())
          : StoreLayout.versionObject(version);
      return readManifestAt(version, key, attempt.get());
    }
    if (!settings.attemptKeys()) {
      // Format 1: the one version object, one GET; format-2 objects only as a fallback.
      try {
        return readManifestAt(version, StoreLayout.versionObject(version), null);
      } catch (StateLoadException e) {
        if (e.reason() != StateLoadException.Reason.VERSION_NOT_FOUND) {
          throw e;
        }
      }
    }
    String key = newestAttempt(version);
    return readManifestAt(version, key, StoreLayout.attemptOf(key));
  }

  /**
   * Reads and verifies the manifest in the version object {@code key}.
   *
   * @param expectedAttempt the attempt the manifest must name, or null for any (format-1 key)
   * @throws StateLoadException if the object does not exist, is corrupt or describes another
   *     store, version or attempt
   */
  private Manifest readManifestAt(long version, String key, String expectedAttempt)
      throws IOException {
    byte[] tail;
    try {
      tail = objects.getTail(key, VersionObjectCodec.TAIL_READ_BYTES);
    } catch (ObjectNotFoundException e) {
      throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
          "Cannot load " + identity + " version " + version + ": " + objects.describe(key)
              + " does not exist", e);
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + version + ": reading " + objects.describe(key) + " failed: "
          + e.getMessage(), e);
    }
    try {
      long size = tail.length < VersionObjectCodec.TAIL_READ_BYTES ? tail.length : -1;
      VersionObjectCodec.Footer footer = VersionObjectCodec.footer(tail, size);
      byte[] mbytes = VersionObjectCodec.manifestFromTail(tail, footer);
      if (mbytes == null) {
        try (InputStream in = objects.getRange(key, footer.manifestOffset(),
            footer.manifestLength())) {
          mbytes = in.readAllBytes();
        }
        VersionObjectCodec.verifyManifest(mbytes, footer);
      }
      Manifest m = ManifestCodec.decode(mbytes);
      if (m.version() != version
          || (expectedAttempt != null && !m.attempt().equals(expectedAttempt))
          || !m.storeId().equals(identity.id())) {
        throw new ManifestFormatException("manifest describes store " + m.storeId()
            + " version " + m.version() + " attempt " + m.attempt() + ", expected "
            + identity.id() + " version " + version
            + (expectedAttempt == null ? "" : " attempt " + expectedAttempt), null);
      }
      manifests.put(key, footer.manifestOffset() + footer.manifestLength()
          + VersionObjectCodec.FOOTER_BYTES, m);
      return m;
    } catch (ManifestFormatException e) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + version + ": version object " + objects.describe(key)
          + " is invalid: " + e.getMessage(), e);
    }
  }

  /**
   * After {@code version} was not found: if the store's location holds that version in the
   * layout of one of Spark's own providers ({@code <version>.delta} / {@code .snapshot} of the
   * HDFS-backed provider, {@code <version>.changelog} / {@code .zip} or {@code
   * <version>_<id>.*} of the RocksDB provider), an error saying the checkpoint was written by
   * another provider. Two LISTs, on this failure path only; nothing is written.
   */
  private Optional<StateLoadException> foreignCheckpoint(long version, StateLoadException cause) {
    List<ObjectInfo> found = new ArrayList<>();
    try {
      found.addAll(objects.list(version + "."));
      found.addAll(objects.list(version + "_"));
    } catch (IOException | RuntimeException e) {
      LOG.debug("{} version {}: cannot list for another provider's files", identity, version, e);
      return Optional.empty();
    }
    for (ObjectInfo o : found) {
      String k = o.key();
      String provider = k.endsWith(".delta") || k.endsWith(".snapshot")
          ? "Spark's HDFS-backed state store provider (HDFSBackedStateStoreProvider)"
          : k.endsWith(".changelog") || k.endsWith(".zip")
              ? "Spark's RocksDB state store provider (RocksDBStateStoreProvider)" : null;
      if (provider != null) {
        return Optional.of(new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
            "Cannot load " + identity + " version " + version + ": the checkpoint was written by "
                + "another state store provider: " + objects.describe(k) + " is a file of "
                + provider + ", and there is no Strata version object "
                + objects.describe(StoreLayout.versionObject(version)) + ". Strata reads only "
                + "its own format and changed nothing; run the query with the provider that "
                + "wrote the checkpoint, or start from a new checkpoint location", cause));
      }
    }
    return Optional.empty();
  }

  /**
   * Finds the version object of the newest attempt of {@code version} with one LIST: the
   * latest server-side last-modified time wins, ties broken by the attempt id (creation time,
   * then random bits). Only cold loads without a checkpoint id call this.
   */
  private String newestAttempt(long version) throws IOException {
    List<ObjectInfo> found;
    try {
      found = objects.list(StoreLayout.versionPrefix(version));
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + version + ": listing "
          + objects.describe(StoreLayout.versionPrefix(version)) + " failed: "
          + e.getMessage(), e);
    }
    ObjectInfo best = null;
    for (ObjectInfo o : found) {
      String a = StoreLayout.attemptOf(o.key());
      if (a == null) {
        continue;
      }
      if (best == null || o.lastModifiedMillis() > best.lastModifiedMillis()
          || (o.lastModifiedMillis() == best.lastModifiedMillis()
              && a.compareTo(StoreLayout.attemptOf(best.key())) > 0)) {
        best = o;
      }
    }
    if (best == null) {
      throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
          "Cannot load " + identity + " version " + version + ": no version object under "
              + objects.describe(StoreLayout.versionPrefix(version))
              + " (the version was never committed, or its version object was deleted)", null);
    }
    return best.key();
  }

  private void restore(Manifest m, long startNanos) throws IOException {
    Path dbDir = Files.createDirectories(newDbDir());
    Path tmp = Files.createDirectories(localDir.resolve("tmp"));
    List<Future<Long>> downloads = new ArrayList<>();
    List<Path> deltaFiles = new ArrayList<>();
    long files = 0;
    if (m.base().isPresent()) {
      for (BaseSnapshot.BaseFile f : m.base().get().files()) {
        Path target = dbDir.resolve(f.name());
        downloads.add(transfers.submit(() -> download(m, f.file(), target)));
        files++;
      }
    }
    for (Delta d : m.deltas()) {
      Path target = tmp.resolve("restore-" + deltaFiles.size() + ".sst");
      deltaFiles.add(target);
      downloads.add(transfers.submit(() -> download(m, d.file(), target)));
      files++;
    }
    LocalStore fresh = null;
    try {
      long bytes = 0;
      for (long b : awaitAll(downloads, "restore version " + m.version())) {
        bytes += b;
      }
      if (m.base().isPresent() && m.base().get().files().stream()
          .noneMatch(f -> f.name().equals("CURRENT"))) {
        throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
            + " version " + m.version() + ": its base snapshot lists no CURRENT file", null);
      }
      fresh = LocalStore.open(dbDir, m.numKeys(), settings.memory());
      fresh.ingestAll(deltaFiles); // one ingestion for the whole chain, later deltas win
      fresh.setCommittedKeys(m.numKeys());
      replaceLocal(fresh, m, m.version());
      lastRestore = new RestoreStats(ms(System.nanoTime() - startNanos), bytes, files);
      LOG.info("{} restored version {} from the object store: {} files, {} bytes, {} ms",
          identity, m.version(), files, bytes, lastRestore.restoreMs());
    } catch (IOException | RuntimeException e) {
      for (Future<Long> f : downloads) {
        f.cancel(true);
      }
      if (fresh != null && fresh != local) {
        fresh.close();
      }
      deleteQuietly(dbDir);
      throw e;
    } finally {
      for (Path p : deltaFiles) {
        deleteQuietly(p);
      }
    }
  }

  /** Downloads one file range to {@code target}, verifying size and checksum; returns bytes. */
  private long download(Manifest m, FileRef ref, Path target) throws IOException {
    // The target's directory exists (made by restore); a download cancelled after a failed
    // restore then fails instead of re-creating a directory the restore already deleted.
    if (ref.length() == 0) {
      Files.write(target, new byte[0]);
      return 0;
    }
    long n = 0;
    long sum;
    try (InputStream in = objects.getRange(ref.key(), ref.offset(), ref.length());
        OutputStream out = Files.newOutputStream(target);
        StreamingXXHash64 h = Checksums.newStreaming()) {
      byte[] buf = new byte[1 << 16];
      int r;
      while ((r = in.read(buf)) > 0) {
        out.write(buf, 0, r);
        h.update(buf, 0, r);
        n += r;
      }
      sum = h.getValue();
    } catch (ObjectNotFoundException e) {
      throw new StateLoadException(StateLoadException.Reason.MISSING_FILE, "Cannot load "
          + identity + " version " + m.version() + ": " + objects.describe(ref.key())
          + ", named by its manifest, does not exist", e);
    } catch (StateLoadException e) {
      throw e;
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + m.version() + ": downloading " + objects.describe(ref.key())
          + " failed: " + e.getMessage(), e);
    }
    if (n != ref.length() || sum != ref.checksum()) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + m.version() + ": " + objects.describe(ref.key()) + " bytes "
          + ref.offset() + ".." + (ref.offset() + ref.length()) + " do not match the manifest "
          + "(expected " + ref.length() + " bytes with xxhash64 " + Checksums.hex(ref.checksum())
          + ", got " + n + " bytes with xxhash64 " + Checksums.hex(sum) + ")", null);
    }
    return n;
  }

  // ---------------------------------------------------------------- helpers

  private Path newDbDir() throws IOException {
    Files.createDirectories(localDir);
    return localDir.resolve("db-" + dirCounter.incrementAndGet());
  }

  private void replaceLocal(LocalStore fresh, Manifest m, long version) throws IOException {
    LocalStore old = local;
    local = fresh;
    loaded = m;
    families = committedFamilies();
    loadedVersion = version;
    generation++;
    dropPendingBase();
    localFileIds.clear();
    localDamaged = null;
    if (old != null) {
      old.close();
      deleteQuietly(old.dir()); // a leftover is deleted by the next sweep
    }
    recordLocalStamps();
  }

  /** Remembers the live database's SST stamps as known good. */
  private void recordLocalStamps() {
    try {
      localStamps = local == null ? Map.of()
          : LocalFiles.stamps(local.dir(), local.liveSstFiles());
    } catch (IOException e) {
      LOG.warn("{} version {}: cannot list local database {}; it will not be reused", identity,
          loadedVersion, local.dir(), e);
      localStamps = null;
    }
  }

  /**
   * The live database's SST that changed on disk since it was last known good, if any. Files
   * that appeared since (compaction output) are verified against their RocksDB block checksums
   * once, then become known. An unreadable directory counts as changed.
   */
  private Optional<String> changedLocalFile() {
    if (localDamaged != null) {
      return Optional.of("(" + localDamaged + ")");
    }
    if (localStamps == null) {
      return Optional.of("(the local directory could not be listed)");
    }
    Map<String, LocalFiles.Stamp> now;
    try {
      now = LocalFiles.stamps(local.dir(), local.liveSstFiles());
    } catch (IOException e) {
      return Optional.of("(the local directory cannot be listed: " + e.getMessage() + ")");
    }
    Optional<String> changed = LocalFiles.changed(localStamps, now);
    if (changed.isPresent()) {
      return changed;
    }
    // Files RocksDB wrote since (compaction output) were never known good: read them once.
    for (String name : now.keySet()) {
      if (!localStamps.containsKey(name)) {
        try {
          LocalFiles.verifySst(local.dir().resolve(name));
        } catch (java.nio.file.NoSuchFileException | java.io.FileNotFoundException gone) {
          continue; // deleted by a compaction since the listing
        } catch (IOException e) {
          if (Files.exists(local.dir().resolve(name))) {
            return Optional.of(name + " (" + e.getMessage() + ")");
          }
        }
      }
    }
    localStamps = now;
    return Optional.empty();
  }

  private void invalidateLocal() {
    spilled.clear();
    buildingAttempt = null;
    LocalStore old = local;
    local = null;
    loaded = null;
    families = ColumnFamilies.NONE;
    loadedVersion = -1;
    generation++;
    dropPendingBase();
    localDirty = false;
    localFileIds.clear();
    localStamps = Map.of();
    localDamaged = null;
    if (old != null) {
      old.close();
      deleteQuietly(old.dir()); // a leftover is deleted by the next sweep
    }
  }

  /**
   * Deletes what the store's directory holds besides the live database and the checkpoint an
   * upload is reading: older {@code db-*} and idle {@code checkpoint-*} directories and every
   * file in {@code tmp/} (only commit, spill and restore use it, all under the monitor, which
   * the caller holds). Failures are logged; the next sweep retries.
   */
  private void sweepLocalDir() {
    if (!Files.isDirectory(localDir)) {
      return;
    }
    LocalStore l = local;
    Path live = l == null ? null : l.dir();
    List<Path> entries;
    try (Stream<Path> s = Files.list(localDir)) {
      entries = s.toList();
    } catch (IOException e) {
      LOG.warn("{}: cannot list local directory {}", identity, localDir, e);
      return;
    }
    for (Path p : entries) {
      String name = p.getFileName().toString();
      if (p.equals(live) || p.equals(runningCheckpoint)) {
        continue;
      }
      if (name.equals("tmp")) {
        try (Stream<Path> s = Files.list(p)) {
          s.forEach(this::deleteQuietly);
        } catch (IOException e) {
          LOG.warn("{}: cannot list {}", identity, p, e);
        }
      } else if (name.startsWith("db-") || name.startsWith("checkpoint-")) {
        LOG.info("{}: deleting leftover local directory {}", identity, p);
        deleteQuietly(p);
      }
    }
  }

  /** Forgets the pending base snapshot; its uploaded files become orphans. */
  private void dropPendingBase() {
    if (pendingBase != null) {
      pendingBase = null;
      markOrphans();
    }
  }

  /**
   * True if {@code pb} was uploaded too long ago to be published: half the grace period has
   * passed since its upload started, by the store's wall clock or by the monotonic clock,
   * whichever says more (a wall clock set back never makes it look younger).
   */
  private boolean pendingBaseExpired(PendingBase pb) {
    long halfGrace = settings.gc().gracePeriodMillis() / 2;
    long wall = clock.millis() - pb.startedMillis();
    long mono = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pb.startedNanos());
    return Math.max(wall, mono) >= halfGrace;
  }

  private void dropExpiredPendingBase(long atVersion) {
    LOG.warn("{} version {}: the base snapshot of version {} was uploaded more than half the "
        + "garbage-collection grace period ago ({} ms) and is not published: a garbage-collection "
        + "round may already treat its files as unreferenced. Maintenance takes a new one; if "
        + "this repeats, commits come further apart than half of {}", identity, atVersion,
        pendingBase.snapshot().version(), settings.gc().gracePeriodMillis() / 2,
        StrataConf.GC_GRACE_PERIOD.fullKey());
    dropPendingBase();
  }

  /**
   * Records that this instance just left objects no manifest will name (they become garbage
   * once older than the grace period). Caller holds the monitor.
   */
  private void markOrphans() {
    long now = clock.millis();
    if (orphansSinceMillis < 0) {
      orphansSinceMillis = now;
    }
    orphansUntilMillis = Math.max(orphansUntilMillis, now);
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

  private <T> List<T> awaitAll(List<Future<T>> futures, String what) throws IOException {
    List<T> out = new ArrayList<>(futures.size());
    try {
      for (Future<T> f : futures) {
        out.add(f.get());
      }
      return out;
    } catch (InterruptedException e) {
      futures.forEach(f -> f.cancel(true));
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("Interrupted during " + what + " of " + identity);
    } catch (ExecutionException e) {
      futures.forEach(f -> f.cancel(true));
      Throwable c = e.getCause();
      if (c instanceof IOException io) {
        throw io;
      }
      if (c instanceof RuntimeException re) {
        throw re;
      }
      throw new IOException("Cannot " + what + " of " + identity + ": " + c, c);
    }
  }

  /** Deletes a file or directory tree, logging (not throwing) a failure. */
  private void deleteQuietly(Path p) {
    try {
      deleteRecursively(p);
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: cannot delete local {}; the next sweep retries: {}", identity,
          loadedVersion, p, e.toString());
    }
  }

  static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(x);
      }
    }
  }

  private static long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }
}
