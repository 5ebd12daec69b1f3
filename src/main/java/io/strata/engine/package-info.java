/**
 * The local engine: one RocksDB per state store on the executor's disk, the writes of the
 * version being built, SST delta writing and ingestion, local checkpoints. The only package that
 * imports RocksDB.
 */
package io.strata.engine;
