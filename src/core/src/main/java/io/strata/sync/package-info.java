/**
 * Synchronisation between a store's local RocksDB and the object store. {@link
 * io.strata.sync.SyncedStore} keeps the version life cycle (load, the version being built,
 * commit with its delta upload and manifest publish, abort, close) and the monitor; its
 * collaborators do the work: {@code VersionObjectReader} (the one reader of manifests), {@code
 * Restorer} (download, verify, ingest), {@code BaseSnapshotUploader} (background base
 * snapshots), {@code GcTrigger} and {@code GarbageCollector} (retention and garbage
 * collection), {@code LocalIntegrity} (local disk) and {@code TransferPools} (the store's
 * thread pools, shut down when it closes). Imports nothing from Spark.
 */
package io.strata.sync;
