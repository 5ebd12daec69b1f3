// SPDX-License-Identifier: Apache-2.0
/**
 * Synchronisation between a store's local RocksDB and the object store. {@link
 * io.strata.sync.SyncedStore} keeps the version life cycle (load, the version being built,
 * commit with its delta upload and manifest publish, abort, close) and the monitor, configured
 * by {@link io.strata.sync.StoreSettings} and answering commits with {@link
 * io.strata.sync.CommitResult}; its collaborators do the work, each called where the store
 * needs it: {@code VersionBuilder} (the version being built: attempt, spills, column families,
 * its manifest), {@code LocalDatabase} (the live local database and the version it holds),
 * {@code VersionObjectReader} (the one reader of manifests), {@code Restorer} (download,
 * verify, ingest), {@code BaseSnapshotUploader} (background base snapshots), {@code GcTrigger}
 * and {@code GarbageCollector} (retention and garbage collection), {@code LocalIntegrity}
 * (stamps, damage and sweeping of the local disk), {@code LocalReads} (a failed local read marks
 * the database damaged and becomes a {@link io.strata.sync.LocalStateReadException}), {@code
 * LocalIngestion} (the commit's local
 * ingestion), {@code TransferPools} (the store's thread pools, shut down when it closes) and
 * {@code Futures} (awaiting them). Imports nothing from Spark.
 */
package io.strata.sync;
