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
 * @param ownMicros Strata's own time before the PUT (building the delta, encoding the manifest
 *     and the version object's tail), microseconds; the PUT is {@code uploadMs}
 * @param parts the version object's bytes by part
 */
public record CommitStats(long deltaBuildMs, long uploadMs, long manifestMs, long ingestMs,
    long deltaBytes, long bytesUploaded, long deltaChainLength, long versionsSinceSnapshot,
    long ownMicros, ObjectParts parts) {
  /** No commit yet. */
  public static final CommitStats NONE =
      new CommitStats(0, 0, 0, 0, 0, 0, 0, 0, 0, ObjectParts.NONE);

  /**
   * A version object's bytes by part: the SST delta's data blocks, Bloom filter, index and table
   * metadata (properties, metaindex, footer), then the manifest with the object's footer.
   * All in bytes; a version without writes has only the manifest.
   */
  public record ObjectParts(long sstData, long sstFilter, long sstIndex, long sstTableMeta,
      long manifest) {
    /** No object. */
    public static final ObjectParts NONE = new ObjectParts(0, 0, 0, 0, 0);
  }
}
