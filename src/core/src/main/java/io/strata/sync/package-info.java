/**
 * Synchronisation between a store's local RocksDB and the object store: the commit protocol
 * (SST delta + manifest in one create-only PUT), restore (download, verify, ingest), background
 * base snapshots, retention and garbage collection ({@link io.strata.sync.GarbageCollector}) and
 * transfer thread pools. Imports nothing from Spark.
 */
package io.strata.sync;
