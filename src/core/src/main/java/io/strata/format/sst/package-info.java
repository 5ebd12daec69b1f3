// SPDX-License-Identifier: Apache-2.0
/**
 * RocksDB's block-based table format, read in pure Java as far as SST deltas need it ({@link
 * io.strata.format.sst.SstReader}): every entry of a delta, tombstones included, which RocksDB's
 * own readers hide. No I/O.
 */
package io.strata.format.sst;
