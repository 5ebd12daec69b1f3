// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalStore;
import io.strata.format.Manifest;
import io.strata.metrics.RestoreStats;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.ExecutorService;

/**
 * How the local database of a {@link SyncedStore} comes to hold a version: reused as it is,
 * opened empty (version 0; or any version for a rewrite of the store, {@link #loadEmpty}), or
 * restored from the version's manifest ({@link Restorer}: the newest usable published snapshot,
 * else the manifest's own base and chain). The store calls it under its monitor, after it
 * settled the last commit's local ingestion and checked that it is open.
 *
 * <p>An empty database opened at a version {@code v > 0} has no manifest: it stands for the
 * empty state, not for version {@code v} as committed, so a later {@link #load} of {@code v}
 * never reuses it ({@link LocalDatabase#reuseFor}), and the commit built on it writes a manifest
 * with no base and no delta of a version {@code <= v} (a lineage of its own; docs/format.md,
 * "Opening a store empty").
 *
 * <p>Threading: every method runs under the store's {@link StoreGuard}, and asserts it.
 */
final class VersionLoader {
  private final StoreIdentity identity;
  private final StoreSettings settings;
  private final StoreGuard guard;
  private final LocalDatabase db;
  private final VersionBuilder building;
  private final CommitConflicts conflicts;
  private final VersionObjectReader reader;
  private final Restorer restorer;
  private final PublishedSnapshots published;
  private final BaseSnapshotUploader snapshots;
  private final SnapshotScheduler scheduler;
  private final Runnable invalidateLocal;
  private final ExecutorService transfers;

  /**
   * @param identity the store (in messages)
   * @param settings its memory limits (of a new database)
   * @param guard the store's monitor
   * @param db the live local database
   * @param building the version being built (reset by every load)
   * @param conflicts finds or claims the query run's epoch, refuses a fenced run
   * @param reader reads the manifest a load restores
   * @param restorer rebuilds a version in a fresh directory
   * @param published the store's published snapshots (a restore's shortest way)
   * @param snapshots offered the published snapshot a restore used
   * @param scheduler told of loads, replaced databases and long restores
   * @param invalidateLocal drops the live database and what was built on it
   * @param transfers the store's transfer pool (borrowed): a restore's first reads run there
   */
  VersionLoader(StoreIdentity identity, StoreSettings settings, StoreGuard guard,
      LocalDatabase db, VersionBuilder building, CommitConflicts conflicts,
      VersionObjectReader reader, Restorer restorer, PublishedSnapshots published,
      BaseSnapshotUploader snapshots, SnapshotScheduler scheduler, Runnable invalidateLocal,
      ExecutorService transfers) {
    this.identity = identity;
    this.settings = settings;
    this.guard = guard;
    this.db = db;
    this.building = building;
    this.conflicts = conflicts;
    this.reader = reader;
    this.restorer = restorer;
    this.published = published;
    this.snapshots = snapshots;
    this.scheduler = scheduler;
    this.invalidateLocal = invalidateLocal;
    this.transfers = transfers;
  }

  /**
   * Makes the local database hold exactly {@code version} (and {@code attempt}): see {@link
   * SyncedStore#load(long, Optional, boolean)}.
   *
   * @return the restore's cost; {@link RestoreStats#NONE} if nothing was downloaded
   */
  RestoreStats load(long version, Optional<String> attempt, boolean readOnly)
      throws IOException {
    begin(version);
    LocalDatabase.Reuse reuse = db.reuseFor(version, attempt);
    if (reuse == LocalDatabase.Reuse.YES || version == 0) {
      claim(version, readOnly);
      if (reuse == LocalDatabase.Reuse.YES) {
        db.live().discardPending();
        return RestoreStats.NONE;
      }
    }
    if (reuse == LocalDatabase.Reuse.DAMAGED) {
      invalidateLocal.run();
    }
    if (version == 0) {
      openEmpty(0);
      return RestoreStats.NONE;
    }
    long start = System.nanoTime();
    Manifest m;
    Optional<PublishedSnapshots.Found> found;
    // The version's LIST and likely tail, and the listing of b/, are read while this thread
    // finds or claims the run's epoch: the load waits for the longest, not their sum.
    try (RestoreReads reads = RestoreReads.start(identity, version, attempt,
        settings.epochKeys(), reader, published, transfers)) {
      claim(version, readOnly);
      m = reads.manifest();
      conflicts.loaded(version, m);
      // A manifest with no delta after its base has nothing a published snapshot could shorten.
      found = m.deltas().isEmpty() ? Optional.empty()
          : reads.publishedListing().flatMap(listed -> published.find(m, listed));
    }
    // The old database holds another version: drop it first (one database on disk at a time).
    invalidateLocal.run();
    Restorer.Shortest r = restorer.restoreShortest(m, found, db, start);
    replaceLocal(r.restored().store(), m, m.version());
    r.from().ifPresent(base -> snapshots.restoredFrom(base, db.generation()));
    scheduler.restored(r.restored().stats(), readOnly);
    return r.restored().stats();
  }

  /**
   * Makes the local database an empty one at {@code version}, reading no version of the store:
   * see {@link SyncedStore#loadEmpty}. Claims the query run's epoch (a load for writing) with
   * {@code version} as the claim's {@link io.strata.format.RunClaim#loadsVersion}: the empty
   * store reads nothing of it, but an earlier run's instance that collects past the claim keeps
   * the spill deltas of the version after it, this store's batch in flight ({@link LaterRuns}).
   */
  void loadEmpty(long version) throws IOException {
    begin(version);
    claim(version, false);
    openEmpty(version);
    // The lineage starts here, as after a base snapshot of this version: the commits right
    // after it (one delta holding the whole state) start no snapshot.
    scheduler.lineageStarted(version);
  }

  /** The steps every load takes first: checks, a clean version to build. */
  private void begin(long version) throws IOException {
    guard.assertHeld();
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
    scheduler.loadStarted();
    if (building.localDirty()) {
      invalidateLocal.run();
    }
    building.reset(db.committedFamilies());
    db.sweep(snapshots.running());
  }

  /**
   * Finds (read-only) or claims the query run's epoch before the load uses what it read, and
   * refuses a fenced run ({@link CommitConflicts}).
   */
  private void claim(long version, boolean readOnly) throws IOException {
    if (readOnly) {
      conflicts.beforeReadOnlyLoad(version);
    } else {
      conflicts.beforeWrite(version);
    }
  }

  /** Replaces the live database with a new, empty one standing at {@code version}. */
  private void openEmpty(long version) throws IOException {
    invalidateLocal.run();
    replaceLocal(LocalStore.open(db.newDbDir(), 0, settings.memory()), null, version);
  }

  /** Publishes {@code fresh}, holding {@code version} ({@code m}, null if empty), as live. */
  private void replaceLocal(LocalStore fresh, Manifest m, long version) {
    db.replace(fresh, m, version);
    scheduler.databaseReplaced();
    building.reset(db.committedFamilies());
  }
}
