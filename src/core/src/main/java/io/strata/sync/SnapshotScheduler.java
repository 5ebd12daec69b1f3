// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.BaseSnapshot;
import io.strata.format.Manifest;
import io.strata.metrics.RestoreStats;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides when one {@link SyncedStore} takes a base snapshot, and where it runs: the one owner
 * of that decision (the store only tells it where it is in its life cycle). Three triggers:
 *
 * <ul>
 *   <li><b>maintenance</b> ({@link #maintenance()}, and {@link #now()} for Spark 4.2's {@code
 *       forceSnapshotOnCommit}): on the caller's thread, when {@code snapshotInterval} versions
 *       passed since the last base (always, for {@link #now()});
 *   <li><b>a long cold load</b> ({@link #restored}): a load that replayed at least {@code
 *       snapshotInterval} deltas takes a checkpoint at once and uploads it on the store's
 *       background thread ({@link TransferPools#background()}); a read-only load defers it to
 *       the first write ({@link #writePrepared()});
 *   <li><b>a commit</b> ({@link #committed}, with {@link StoreSettings#snapshotOnCommit()}):
 *       the commit that reaches {@code snapshotInterval} versions since its base queues a
 *       snapshot on the commit-snapshot threads shared by the stores of the JVM (see {@link
 *       #committed}).
 * </ul>
 *
 * <p>Each takes a RocksDB checkpoint of the committed version under the store's monitor (hard
 * links, so never during a commit, spill or load), then uploads and publishes it outside it
 * ({@link BaseSnapshotUploader#run}); the next commit's manifest names it as its base.
 *
 * <p>Threading: the methods that change what is scheduled assert that the caller holds the
 * store's {@link StoreGuard}; the uploads run without it. {@link #lastSnapshotVersion()} is read
 * from any thread.
 */
final class SnapshotScheduler {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotScheduler.class);
  /**
   * How long the store's close lets a running snapshot upload finish (and publish) before it
   * cancels it, ms ({@link #stop}).
   */
  static final long FINISH_WAIT_MS = 30_000;
  /** How long the store's close then waits for a cancelled snapshot upload to stop, ms. */
  static final long CLOSE_WAIT_MS = 30_000;

  private final StoreIdentity identity;
  private final StoreSettings settings;
  private final Clock clock;
  private final StoreGuard guard;
  private final LocalDatabase db;
  private final VersionBuilder building;
  private final BaseSnapshotUploader snapshots;
  private final ExecutorService background;
  private final Executor commitSnapshots;
  private final BooleanSupplier open;
  private final Runnable settleIngestion;

  /**
   * True after a read-only cold load that replayed at least snapshotInterval deltas and
   * scheduled no snapshot: {@link #writePrepared()} schedules it.
   */
  private boolean longRestoreUnsnapshotted;
  /**
   * True while a base snapshot a commit started waits on a commit-snapshot thread for its
   * checkpoint.
   */
  private boolean commitSnapshotQueued;
  /**
   * The version before which no commit starts another snapshot: the version of the last commit
   * that started one plus {@code snapshotInterval}; 0 for a new database.
   */
  private long commitSnapshotFloor;
  private volatile long lastSnapshotVersion = -1;
  private volatile LongConsumer listener = v -> { };

  /**
   * @param identity the store (in messages)
   * @param settings its snapshot interval and whether commits start snapshots
   * @param clock the wall clock of the snapshot jobs (their age against the grace period)
   * @param guard the store's monitor, which guards this object and {@code db}, {@code building}
   * @param db the store's live local database
   * @param building the version being built (no checkpoint while it dirtied the database)
   * @param snapshots the uploader the snapshots run on
   * @param background the store's one background thread (snapshots after a long cold load)
   * @param commitSnapshots the threads of snapshots that commits start, shared by the stores of
   *     the JVM (leased by the store, see {@link SharedPools})
   * @param open true while the store is open (read under the monitor)
   * @param settleIngestion settles the last commit's local ingestion (called under the monitor)
   */
  SnapshotScheduler(StoreIdentity identity, StoreSettings settings, Clock clock, StoreGuard guard,
      LocalDatabase db, VersionBuilder building, BaseSnapshotUploader snapshots,
      ExecutorService background, Executor commitSnapshots, BooleanSupplier open,
      Runnable settleIngestion) {
    this.identity = identity;
    this.settings = settings;
    this.clock = clock;
    this.guard = guard;
    this.db = db;
    this.building = building;
    this.snapshots = snapshots;
    this.background = background;
    this.commitSnapshots = commitSnapshots;
    this.open = open;
    this.settleIngestion = settleIngestion;
  }

  /** See {@link SyncedStore#onSnapshotUploaded}. */
  void onSnapshotUploaded(LongConsumer l) {
    this.listener = Objects.requireNonNull(l, "listener");
  }

  /** The newest version a base snapshot was uploaded for by this instance, or -1. Any thread. */
  long lastSnapshotVersion() {
    return lastSnapshotVersion;
  }

  // ------------------------------------------------------------- points of the life cycle

  /** A load starts: a snapshot a read-only load deferred is forgotten. */
  void loadStarted() {
    guard.assertHeld();
    longRestoreUnsnapshotted = false;
  }

  /** The live database was replaced (a load): its first due commit may start a snapshot. */
  void databaseReplaced() {
    guard.assertHeld();
    commitSnapshotFloor = 0;
  }

  /**
   * The live database was replaced by an empty one standing at {@code version} ({@link
   * SyncedStore#loadEmpty}), whose lineage starts there, as after a base snapshot of {@code
   * version}: no commit starts a snapshot before {@code snapshotInterval} versions later (the
   * first commit's one delta holds the whole state; its manifest's {@link
   * Manifest#versionsSinceBase()} counts from version 0). Call after {@link #databaseReplaced()}.
   */
  void lineageStarted(long version) {
    guard.assertHeld();
    commitSnapshotFloor = version + settings.snapshotInterval();
  }

  /**
   * A cold load restored the live database at a cost of {@code stats}: if it replayed at least
   * {@code snapshotInterval} deltas, schedules a snapshot of it in the background, or, for a
   * load the caller will not commit ({@code readOnly}: Spark's read stores and the state data
   * source write nothing into the checkpoint), defers it to {@link #writePrepared()}.
   */
  void restored(RestoreStats stats, boolean readOnly) {
    guard.assertHeld();
    longRestoreUnsnapshotted = stats.deltasReplayed() >= settings.snapshotInterval();
    if (longRestoreUnsnapshotted && !readOnly) {
      longRestoreUnsnapshotted = false;
      scheduleInBackground();
    }
  }

  /** A store loaded read-only will write: schedules the snapshot its load deferred, if any. */
  void writePrepared() {
    guard.assertHeld();
    if (longRestoreUnsnapshotted) {
      longRestoreUnsnapshotted = false;
      scheduleInBackground();
    }
  }

  /**
   * A commit published {@code m}. With {@link StoreSettings#snapshotOnCommit()}, when {@code m}
   * reaches {@code snapshotInterval} versions since its base: queues a base snapshot on the
   * commit-snapshot threads (shared by every store of the JVM: every store of a query reaches
   * the interval on the same batch, and their uploads must not take every connection the next
   * batch's commits need), unless one is queued or running, or the last snapshot a commit
   * started was taken fewer than {@code snapshotInterval} versions ago (one that failed, or was
   * published too late to be adopted, is not retried on every commit). There it takes the
   * checkpoint (under the monitor) and uploads it; the commit returns at once. The checkpoint is
   * skipped, leaving the next commit free to queue again, if the store closed, a later load
   * replaced the database, no snapshot is due any more (maintenance took one), or the next
   * batch has spilled into the database.
   */
  void committed(Manifest m) {
    guard.assertHeld();
    if (!settings.snapshotOnCommit() || m.versionsSinceBase() < settings.snapshotInterval()) {
      return;
    }
    if (commitSnapshotQueued || snapshots.running() != null
        || db.version() < commitSnapshotFloor) {
      return;
    }
    commitSnapshotQueued = true;
    int generation = db.generation();
    try {
      commitSnapshots.execute(() -> snapshotQueuedByCommit(generation));
    } catch (RuntimeException e) { // rejected
      commitSnapshotQueued = false;
    }
  }

  /** The task {@link #committed} queued for the database of {@code generation}. */
  private void snapshotQueuedByCommit(int generation) {
    BaseSnapshotUploader.Job job;
    synchronized (guard) {
      commitSnapshotQueued = false;
      settleIngestion.run();
      try {
        job = !open.getAsBoolean() || db.generation() != generation ? null : checkpointIfDue(false);
      } catch (IOException | RuntimeException e) {
        LOG.warn("{} version {}: cannot take a checkpoint for a base snapshot after "
            + "commit: {}", identity, db.version(), e.toString());
        job = null;
      } finally {
        guard.signalAll(); // awaitIdle
      }
      if (job != null) {
        commitSnapshotFloor = job.manifest().version() + settings.snapshotInterval();
      }
    }
    if (job != null) {
      try {
        run(job);
      } catch (IOException | RuntimeException e) {
        LOG.warn("{} version {}: base snapshot after commit failed (maintenance, or a "
            + "commit {} versions later, tries again): {}", identity,
            job.manifest().version(), settings.snapshotInterval(), e.toString());
      }
    }
  }

  /**
   * Maintenance: merges the live database's small bottommost files if too many piled up ({@link
   * LocalDatabase#mergeSmallFiles}, so a snapshot uploads fewer, larger files), then uploads a
   * base snapshot of the loaded version on this thread if {@code snapshotInterval} versions
   * passed since the last base. Takes the monitor for the checkpoint only.
   *
   * @return true if a snapshot was uploaded
   * @throws IOException if the checkpoint or the upload fails (nothing is published then)
   */
  boolean maintenance() throws IOException {
    db.mergeSmallFiles();
    return snapshotIfDue(false);
  }

  /**
   * Uploads a base snapshot of the loaded version on this thread whatever the interval says
   * (see {@link SyncedStore#snapshotNow()}).
   *
   * @return true if a snapshot was uploaded; false if there is nothing to snapshot or one runs
   * @throws IOException if the checkpoint or the upload fails (nothing is published then)
   */
  boolean now() throws IOException {
    return snapshotIfDue(true);
  }

  private boolean snapshotIfDue(boolean force) throws IOException {
    BaseSnapshotUploader.Job job;
    synchronized (guard) {
      settleIngestion.run();
      job = checkpointIfDue(force);
    }
    if (job == null) {
      return false;
    }
    run(job);
    return true;
  }

  /**
   * After a cold load that replayed a long chain: takes a checkpoint of the loaded version now
   * (hard links, under the monitor) and uploads and publishes it on the store's background
   * thread, never on the commit path, so the next cold load is short. The store's close lets it
   * finish. A failure is logged (the next maintenance or cold load tries again).
   */
  private void scheduleInBackground() {
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
      background.submit(() -> {
        try {
          run(job);
        } catch (IOException | RuntimeException e) {
          LOG.warn("{} version {}: base snapshot after a long restore failed: {}", identity,
              job.manifest().version(), e.toString());
        }
        return null;
      });
    } catch (RuntimeException e) { // rejected: the pools are closed
      snapshots.abandon(job);
    }
  }

  /**
   * Uploads, publishes and offers the snapshot of {@code job} (see {@link
   * BaseSnapshotUploader#run}).
   */
  private void run(BaseSnapshotUploader.Job job) throws IOException {
    long t0 = System.nanoTime();
    BaseSnapshot snapshot = snapshots.run(job,
        gen -> gen == db.generation() && open.getAsBoolean());
    lastSnapshotVersion = job.manifest().version();
    try {
      listener.accept(job.manifest().version());
    } catch (RuntimeException e) {
      LOG.warn("{}: the listener of uploaded snapshots failed", identity, e);
    }
    LOG.debug("{} uploaded base snapshot of version {} ({} files) in {} ms", identity,
        job.manifest().version(), snapshot.files().size(),
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
  }

  /**
   * Takes a RocksDB checkpoint of the loaded version if a base snapshot is due (always, when
   * {@code force}, unless the loaded version is a base already), for {@link
   * BaseSnapshotUploader#run}; null if none is due or possible now.
   */
  private BaseSnapshotUploader.Job checkpointIfDue(boolean force) throws IOException {
    guard.assertHeld();
    if (!open.getAsBoolean() || db.live() == null || db.manifest() == null
        || snapshots.running() != null || building.localDirty()) {
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
   * The store closes (it is no longer open, see the constructor): lets a running snapshot
   * upload finish and publish for up to {@value #FINISH_WAIT_MS} ms (a JVM that exits without
   * closing its stores waits for it in {@link UploadsAtExit}), then runs {@code cancel} (which
   * shuts the store's pools down, cancelling the upload's transfers) and waits up to {@value
   * #CLOSE_WAIT_MS} ms more for it to stop; then runs {@code release} (closes the database and
   * the object store, deletes the local directory). A snapshot a commit queued finds the store
   * closed and does nothing.
   *
   * <p>With {@code wait} false and an upload running, none of this happens on the caller's
   * thread: a daemon thread of this store ({@code strata-close-<store>}) does it all under the
   * monitor, so the caller returns at once. The upload's outcome is the same: it publishes only
   * once every file it names is durable, or leaves its files unnamed (orphans for garbage
   * collection, never deleted by the close); nothing is released before it stopped. The
   * caller's interrupt flag is set again if a wait on its thread was interrupted.
   *
   * @throws IllegalStateException if the caller does not hold the monitor
   */
  void stop(Runnable cancel, boolean wait, Runnable release) {
    guard.assertHeld();
    if (!wait && snapshots.running() != null) {
      Thread closer = new Thread(() -> {
        synchronized (guard) {
          snapshots.awaitFinished(FINISH_WAIT_MS);
          cancel.run();
          snapshots.awaitStopped(CLOSE_WAIT_MS);
          release.run();
        }
        LOG.debug("{}: closed after its snapshot upload stopped", identity);
      }, "strata-close-" + identity);
      closer.setDaemon(true);
      closer.start();
      return;
    }
    boolean interrupted = snapshots.awaitFinished(FINISH_WAIT_MS);
    cancel.run();
    interrupted |= snapshots.awaitStopped(CLOSE_WAIT_MS);
    try {
      release.run();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Waits up to {@code timeoutMs} until no snapshot is queued or running (one a commit queued
   * is first waited for until its checkpoint step ran). For tests. The caller holds the
   * monitor, released while waiting.
   *
   * @return true if none is queued or running any more; false on timeout or interrupt (the
   *     interrupt flag is then set again)
   */
  boolean awaitIdle(long timeoutMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    StoreGuard.Wait w = guard.awaitUntil(() -> !commitSnapshotQueued, timeoutMs);
    if (w == StoreGuard.Wait.INTERRUPTED) {
      Thread.currentThread().interrupt();
      return false;
    }
    if (w == StoreGuard.Wait.TIMED_OUT) {
      return false;
    }
    if (snapshots.awaitFinished(
        Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())))) {
      Thread.currentThread().interrupt();
    }
    return snapshots.running() == null;
  }
}
