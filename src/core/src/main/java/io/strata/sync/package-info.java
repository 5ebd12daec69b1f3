// SPDX-License-Identifier: Apache-2.0
/**
 * Synchronisation between a store's local RocksDB and the object store. {@link
 * io.strata.sync.SyncedStore} keeps the version life cycle (load, the version being built,
 * commit, abort, close) and the order of its steps, under its monitor ({@code StoreGuard}, the
 * lock object handed to the collaborators, which assert it), configured by {@link
 * io.strata.sync.StoreSettings} and answering commits with {@link io.strata.sync.CommitResult}.
 *
 * <p>One owner per decision, each called by the store at the points of its life cycle: {@code
 * SnapshotScheduler} (when a base snapshot is taken: maintenance, a long cold load, a commit),
 * {@code CommitConflicts} (who wins a version after a 412, beside {@code RunEpochs}, which
 * finds and claims the query run's epoch), {@code DeferredIngestion} (when a commit is ingested
 * locally after its PUT) and {@code GcTrigger} (when a garbage-collection round runs).
 *
 * <p>The work: {@code VersionBuilder} (the version being built: attempt, spills, column
 * families, its manifest), {@code CommitDelta} (the commit's SST delta and version object),
 * {@code LocalDatabase} (the live local database and the version it holds), {@code
 * VersionLoader} (how a load makes it hold a version: reused, empty, or restored), {@code
 * VersionObjectReader} (the one reader of manifests), {@code Restorer} (download, verify,
 * ingest), {@code BaseSnapshotUploader} (uploads of base snapshots), {@code GarbageCollector}
 * (a round), {@code LocalIntegrity} (stamps, damage and sweeping of the local disk), {@code
 * LocalReads} (a failed local read marks the database damaged and becomes a {@link
 * io.strata.sync.LocalStateReadException}), {@code LocalIngestion} (a commit's local
 * ingestion), {@code TransferPools} (the store's thread pools, shut down when it closes),
 * {@link io.strata.sync.SharedPools} (the pools stores share, leased from an owner that stops
 * them; strata-core holds no static pool) and {@code Futures} (awaiting them). Imports nothing
 * from Spark.
 *
 * <h2>Commit (one PUT)</h2>
 * The version's writes become one sorted SST delta ({@code CommitDelta}: in memory when it can);
 * the delta and the version's manifest are written as one version object with one create-only
 * PUT ({@link io.strata.format.StoreLayout#versionObject}; under checkpoint format 1 with a query
 * run the version's first generation {@link io.strata.format.StoreLayout#generationVersionObject},
 * climbing past generations of earlier runs, see {@code CommitConflicts}). The delta is ingested
 * into the local database only after the PUT succeeded, once the caller of {@link
 * io.strata.sync.SyncedStore#commit()} starts it ({@link
 * io.strata.sync.SyncedStore#startLocalIngestion()}) or the next call needs the database
 * ({@code DeferredIngestion}): a commit costs its SST build and one PUT round trip. If the
 * ingestion fails, the version is still committed and the next load restores it from the object
 * store. If the PUT fails, the local database is discarded (the next load restores from the
 * object store). Nothing is listed, read, renamed, copied or overwritten.
 *
 * <h2>Load</h2>
 * If the local database holds exactly the requested version (and attempt, when given), nothing
 * is downloaded, unless {@code LocalIntegrity} finds it damaged: then it is dropped and the
 * version restored. Otherwise the manifest is read (with the attempt id known: one GET; else one
 * LIST of the version's prefix: the greatest generation, or the newest attempt, wins) and
 * {@code Restorer} rebuilds the version in a fresh directory: from the newest published snapshot
 * on the manifest's lineage ({@code PublishedSnapshots}, one LIST of {@code b/}) plus the deltas
 * after it, or, if there is none or restoring it fails, from the manifest's own base and chain.
 * A cold load that replayed at least {@code snapshotInterval} deltas schedules a snapshot of the
 * loaded version on the store's background thread. A version not found whose location holds
 * another provider's files fails with an error saying so. {@link
 * io.strata.sync.SyncedStore#loadEmpty} reads no version: it opens an empty database standing
 * at the given version, and the commit on it writes a self-contained version (a manifest with
 * no base and no delta of an earlier version), so a store can be rewritten in place (Spark 4.2's
 * offline state repartitioning).
 *
 * <h2>Background work</h2>
 * {@link io.strata.sync.SyncedStore#maintenance()} takes a RocksDB checkpoint of the committed
 * version when {@code snapshotInterval} versions passed since the last base and uploads it (it
 * is published for every later load, and the next commit's manifest names it as its base), then
 * runs a garbage-collection round when {@code GcTrigger} says one is due (it keeps every object
 * the retained manifests name, plus this instance's pending snapshot, spills and loaded version;
 * see {@link io.strata.format.Reachability}). With {@link
 * io.strata.sync.StoreSettings#snapshotOnCommit()}, the commit that reaches {@code
 * snapshotInterval} versions since its base queues the same snapshot on the shared
 * commit-snapshot threads, so a job whose batches come faster than maintenance still has a
 * bounded chain.
 *
 * <h2>Column families and local disk</h2>
 * Column families are virtual: every key starts with its family's 2-byte id ({@link
 * io.strata.format.ColumnFamily#keyPrefix()}); the name-to-id mapping is committed in each
 * manifest ({@code VersionBuilder}). The local disk holds the live database plus at most one
 * checkpoint ({@code LocalDatabase}, {@code LocalIntegrity}).
 */
package io.strata.sync;
