// SPDX-License-Identifier: Apache-2.0
/**
 * The local engine: one RocksDB per state store on the executor's disk, the writes of the
 * version being built, SST delta writing and ingestion, local checkpoints, the block cache and
 * write-buffer manager shared by all stores of the JVM ({@link io.strata.engine.SharedMemory}),
 * and which JVM owns which local directory ({@link io.strata.engine.LocalDirs}). The only
 * package that imports RocksDB. A read RocksDB fails (a corrupt block, a disk error) throws
 * {@link io.strata.engine.LocalReadException}; a scan never ends early without one. The local
 * databases write the table format every supported Spark line's RocksDB reads ({@link
 * io.strata.engine.TableFormat}); a file in a format this JVM's RocksDB does not read fails to
 * open or ingest with {@link io.strata.engine.UnreadableTableFormatException}.
 */
package io.strata.engine;
