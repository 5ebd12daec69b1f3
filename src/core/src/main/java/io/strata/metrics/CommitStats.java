// SPDX-License-Identifier: Apache-2.0
package io.strata.metrics;

/**
 * What one commit cost, reported through Spark's state store custom metrics.
 *
 * @param deltaBuildMs time to write the SST delta from the version's writes, ms
 * @param uploadMs time of the version object's PUT (delta + manifest), ms
 * @param manifestMs time to build and encode the manifest, ms
 * @param ingestMs time the previous commit's local ingestion took (its delta into the local
 *     RocksDB; it runs after that commit returned, off the commit path), ms; 0 if none
 * @param deltaBytes size of the SST delta, bytes (0 for a version without writes)
 * @param bytesUploaded bytes uploaded by the commit (version object), bytes
 * @param deltaChainLength deltas the new manifest lists after its base
 * @param versionsSinceSnapshot versions since the manifest's base snapshot
 */
public record CommitStats(long deltaBuildMs, long uploadMs, long manifestMs, long ingestMs,
    long deltaBytes, long bytesUploaded, long deltaChainLength, long versionsSinceSnapshot) {
  /** No commit yet. */
  public static final CommitStats NONE = new CommitStats(0, 0, 0, 0, 0, 0, 0, 0);
}
