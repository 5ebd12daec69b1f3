package io.strata.metrics;

/**
 * What one restore from the object store cost.
 *
 * @param restoreMs wall time from reading the manifest to an open local database, ms
 * @param bytesDownloaded bytes downloaded (base files and deltas)
 * @param filesDownloaded number of files downloaded
 */
public record RestoreStats(long restoreMs, long bytesDownloaded, long filesDownloaded) {
  /** No restore. */
  public static final RestoreStats NONE = new RestoreStats(0, 0, 0);
}
