// SPDX-License-Identifier: Apache-2.0
package io.strata.metrics;

/**
 * What one restore from the object store cost.
 *
 * @param restoreMs wall time from reading the manifest to an open local database, ms
 * @param bytesDownloaded bytes downloaded (base files and deltas)
 * @param filesDownloaded number of files downloaded
 * @param deltasReplayed deltas ingested after the base (the chain the restore replayed)
 * @param baseVersion the version of the base snapshot restored, 0 for none
 * @param fromPublishedSnapshot true if that base was a published snapshot found by listing
 *     (docs/format.md, "Published snapshots"), not the manifest's own base
 * @param downloadMs wall time of the downloads and their checksum verification, ms (part of
 *     {@code restoreMs}; the rest is reading the manifest, finding the published snapshot,
 *     opening the database and ingesting the deltas)
 */
public record RestoreStats(long restoreMs, long bytesDownloaded, long filesDownloaded,
    long deltasReplayed, long baseVersion, boolean fromPublishedSnapshot, long downloadMs) {
  /** No restore. */
  public static final RestoreStats NONE = new RestoreStats(0, 0, 0);

  /** A restore of {@code filesDownloaded} files, without chain details. */
  public RestoreStats(long restoreMs, long bytesDownloaded, long filesDownloaded) {
    this(restoreMs, bytesDownloaded, filesDownloaded, 0, 0, false, 0);
  }

  /** The same restore, marked as restored from a published snapshot. */
  public RestoreStats fromPublished() {
    return new RestoreStats(restoreMs, bytesDownloaded, filesDownloaded, deltasReplayed,
        baseVersion, true, downloadMs);
  }
}
