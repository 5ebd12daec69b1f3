// SPDX-License-Identifier: Apache-2.0
package io.strata.metrics;

/**
 * What one garbage-collection round of one state store did and cost (docs/format.md, "Retention
 * and garbage collection"). Request counts are in S3's units as the round issued them: one LIST
 * per 1000 keys listed, one DeleteObjects per 1000 keys deleted, one ranged GET per manifest
 * read; SDK retries are not counted (the store's request listener sees those). A store on a
 * local directory counts the same units.
 *
 * @param round sequence number of the round within this store instance (1 for the first); 0
 *     for {@link #NONE}
 * @param newestVersion the newest version the round saw (in the listing or known locally), -1
 *     if none
 * @param oldestRetainedVersion the oldest version kept loadable ({@code newestVersion -
 *     minVersionsToRetain}, Spark's rule)
 * @param objectsListed objects in the store's listing
 * @param objectsDeleted objects deleted
 * @param bytesDeleted bytes of the deleted objects
 * @param listRequests LIST requests (objects, plus incomplete multipart uploads when checked)
 * @param manifestReads manifests read from the object store (the rest came from the cache)
 * @param deleteRequests DeleteObjects requests, plus one AbortMultipartUpload per aborted upload
 * @param uploadsAborted incomplete multipart uploads (or stale temporary files of a local
 *     store) older than the grace period that were aborted
 * @param durationMs wall time of the round, ms
 * @param publishedSnapshotsDeleted of {@code objectsDeleted}, published snapshots no retained
 *     version could use (the files they named go in a later round)
 * @param unreadablePublishedSnapshots published snapshots ({@code b/...bsm}) in the listing that
 *     cannot be decoded (damaged, another store's, or of a newer format): no load can use them,
 *     they are deleted once older than the grace period, and while one is listed base-snapshot
 *     files wait (docs/format.md, "Retention and garbage collection"); each is also logged at
 *     WARN with its key
 */
public record GcStats(long round, long newestVersion, long oldestRetainedVersion,
    long objectsListed, long objectsDeleted, long bytesDeleted, long listRequests,
    long manifestReads, long deleteRequests, long uploadsAborted, long durationMs,
    long publishedSnapshotsDeleted, long unreadablePublishedSnapshots) {
  /** No round yet. */
  public static final GcStats NONE = new GcStats(0, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

  /** A round that found no unreadable published snapshot. */
  public GcStats(long round, long newestVersion, long oldestRetainedVersion,
      long objectsListed, long objectsDeleted, long bytesDeleted, long listRequests,
      long manifestReads, long deleteRequests, long uploadsAborted, long durationMs,
      long publishedSnapshotsDeleted) {
    this(round, newestVersion, oldestRetainedVersion, objectsListed, objectsDeleted,
        bytesDeleted, listRequests, manifestReads, deleteRequests, uploadsAborted, durationMs,
        publishedSnapshotsDeleted, 0);
  }

  /** A round that deleted no published snapshot. */
  public GcStats(long round, long newestVersion, long oldestRetainedVersion,
      long objectsListed, long objectsDeleted, long bytesDeleted, long listRequests,
      long manifestReads, long deleteRequests, long uploadsAborted, long durationMs) {
    this(round, newestVersion, oldestRetainedVersion, objectsListed, objectsDeleted,
        bytesDeleted, listRequests, manifestReads, deleteRequests, uploadsAborted, durationMs, 0,
        0);
  }
}
