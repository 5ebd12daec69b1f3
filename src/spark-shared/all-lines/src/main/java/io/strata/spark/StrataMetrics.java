// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.engine.LocalStore;
import io.strata.metrics.CommitStats;
import io.strata.metrics.GcStats;
import io.strata.metrics.RequestCounter;
import io.strata.metrics.RestoreStats;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomSizeMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomSumMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomTimingMetric;

/**
 * Strata's custom state store metrics, shown per stateful operator in query progress ({@code
 * stateOperators[].customMetrics}) summed over partitions, and per task in the Spark UI.
 * Version-neutral: each Spark version's {@code SparkMetrics} adapter turns a {@link Batch} into
 * Spark's {@code StateStoreMetrics} (whose constructor changed in 4.1) and adds Spark's instance
 * metrics where they exist (4.1+).
 */
final class StrataMetrics {
  static final StateStoreCustomTimingMetric DELTA_BUILD_MS = new StateStoreCustomTimingMetric(
      "strataDeltaBuildMs", "Strata: time to write SST deltas at commit");
  static final StateStoreCustomTimingMetric MANIFEST_MS = new StateStoreCustomTimingMetric(
      "strataManifestMs", "Strata: time to build and encode manifests at commit");
  static final StateStoreCustomTimingMetric UPLOAD_MS = new StateStoreCustomTimingMetric(
      "strataUploadMs", "Strata: time to upload version objects (one PUT per commit)");
  static final StateStoreCustomTimingMetric INGEST_MS = new StateStoreCustomTimingMetric(
      "strataIngestMs",
      "Strata: time to ingest the previous commit's SST delta into local RocksDB (after it returned)");
  static final StateStoreCustomSumMetric COMMIT_OWN_MICROS = new StateStoreCustomSumMetric(
      "strataCommitOwnMicros", "Strata: its own time at commit before the PUT (delta, manifest), "
          + "microseconds");
  static final StateStoreCustomSizeMetric COMMIT_SST_DATA_BYTES = new StateStoreCustomSizeMetric(
      "strataCommitSstDataBytes", "Strata: version objects' bytes of SST data blocks");
  static final StateStoreCustomSizeMetric COMMIT_SST_FILTER_BYTES =
      new StateStoreCustomSizeMetric("strataCommitSstFilterBytes",
          "Strata: version objects' bytes of SST Bloom filters");
  static final StateStoreCustomSizeMetric COMMIT_SST_INDEX_BYTES = new StateStoreCustomSizeMetric(
      "strataCommitSstIndexBytes", "Strata: version objects' bytes of SST indexes");
  static final StateStoreCustomSizeMetric COMMIT_SST_META_BYTES = new StateStoreCustomSizeMetric(
      "strataCommitSstMetaBytes",
      "Strata: version objects' bytes of SST properties, metaindex and footer");
  static final StateStoreCustomSizeMetric COMMIT_MANIFEST_BYTES = new StateStoreCustomSizeMetric(
      "strataCommitManifestBytes", "Strata: version objects' bytes of manifest and footer");
  static final StateStoreCustomSizeMetric BYTES_UPLOADED = new StateStoreCustomSizeMetric(
      "strataBytesUploaded", "Strata: bytes uploaded to S3 by the batch");
  static final StateStoreCustomSumMetric S3_REQUESTS = new StateStoreCustomSumMetric(
      "strataS3Requests", "Strata: S3 requests sent during the batch (all kinds, retries included)");
  static final StateStoreCustomSumMetric S3_PUTS = new StateStoreCustomSumMetric(
      "strataS3Puts", "Strata: S3 PUT requests during the batch");
  static final StateStoreCustomSumMetric S3_GETS = new StateStoreCustomSumMetric(
      "strataS3Gets", "Strata: S3 GET requests during the batch");
  static final StateStoreCustomSumMetric S3_LISTS = new StateStoreCustomSumMetric(
      "strataS3Lists", "Strata: S3 LIST requests during the batch");
  static final StateStoreCustomSumMetric S3_HEADS = new StateStoreCustomSumMetric(
      "strataS3Heads", "Strata: S3 HEAD requests during the batch");
  static final StateStoreCustomSumMetric S3_DELETES = new StateStoreCustomSumMetric(
      "strataS3Deletes", "Strata: S3 DELETE requests during the batch (garbage collection)");
  static final StateStoreCustomSumMetric S3_FAILED = new StateStoreCustomSumMetric(
      "strataS3FailedAttempts", "Strata: S3 attempts answered 5xx or not at all (retried)");
  static final StateStoreCustomSumMetric DELTA_CHAIN = new StateStoreCustomSumMetric(
      "strataDeltaChainLength", "Strata: deltas after the base snapshot (summed over stores)");
  static final StateStoreCustomSumMetric SNAPSHOT_LAG = new StateStoreCustomSumMetric(
      "strataSnapshotLagVersions",
      "Strata: versions since the base snapshot the committed manifest names (summed over stores)");
  static final StateStoreCustomSumMetric ATTEMPTS_LOST = new StateStoreCustomSumMetric(
      "strataAttemptsLost", "Strata: commits that found their version already committed by "
          + "another attempt (checkpoint format 1, first writer wins)");
  static final StateStoreCustomSumMetric GC_DELETED_OBJECTS = new StateStoreCustomSumMetric(
      "strataGcDeletedObjects", "Strata: objects deleted by garbage collection (rounds finished "
          + "since the stores' previous commits)");
  static final StateStoreCustomSizeMetric GC_DELETED_BYTES = new StateStoreCustomSizeMetric(
      "strataGcDeletedBytes", "Strata: bytes deleted by garbage collection");
  static final StateStoreCustomSumMetric GC_FAILED_ROUNDS = new StateStoreCustomSumMetric(
      "strataGcFailedRounds", "Strata: garbage-collection rounds that failed since the stores' "
          + "previous commits (after repeated failures a WARN names the cause)");
  static final StateStoreCustomSumMetric GC_UNREADABLE_PUBLISHED_SNAPSHOTS =
      new StateStoreCustomSumMetric("strataGcUnreadablePublishedSnapshots", "Strata: published "
          + "snapshots the garbage-collection rounds finished since the stores' previous commits "
          + "found unreadable (damaged; loads skip them, a WARN names each, and they are deleted "
          + "once older than the grace period)");
  static final StateStoreCustomTimingMetric RESTORE_MS = new StateStoreCustomTimingMetric(
      "strataRestoreMs", "Strata: time to restore state from S3");
  static final StateStoreCustomSizeMetric RESTORE_BYTES = new StateStoreCustomSizeMetric(
      "strataRestoreBytes", "Strata: bytes downloaded to restore state");
  static final StateStoreCustomTimingMetric RESTORE_DOWNLOAD_MS = new StateStoreCustomTimingMetric(
      "strataRestoreDownloadMs", "Strata: time downloading and verifying the files of restores "
          + "(part of strataRestoreMs)");

  static final StateStoreCustomSumMetric FORCED_SNAPSHOTS = new StateStoreCustomSumMetric(
      "strataForcedSnapshots", "Strata: base snapshots uploaded at commit because Spark asked "
          + "(Spark 4.2 forceSnapshotOnCommit, when the coordinator finds snapshots lagging)");

  static final StateStoreCustomSizeMetric BLOCK_CACHE_BYTES = new StateStoreCustomSizeMetric(
      "strataBlockCacheBytes", "Strata: RocksDB block cache usage (each store's share of the "
          + "executor's shared cache, so the sum is the total)");

  static final List<StateStoreCustomMetric> ALL = List.of(DELTA_BUILD_MS, MANIFEST_MS, UPLOAD_MS,
      INGEST_MS, BYTES_UPLOADED, S3_REQUESTS, S3_PUTS, S3_GETS, S3_LISTS, S3_HEADS, S3_DELETES,
      S3_FAILED, DELTA_CHAIN, SNAPSHOT_LAG, ATTEMPTS_LOST, GC_DELETED_OBJECTS, GC_DELETED_BYTES,
      GC_FAILED_ROUNDS, GC_UNREADABLE_PUBLISHED_SNAPSHOTS, RESTORE_MS, RESTORE_BYTES,
      RESTORE_DOWNLOAD_MS, BLOCK_CACHE_BYTES, FORCED_SNAPSHOTS, COMMIT_OWN_MICROS,
      COMMIT_SST_DATA_BYTES, COMMIT_SST_FILTER_BYTES, COMMIT_SST_INDEX_BYTES,
      COMMIT_SST_META_BYTES, COMMIT_MANIFEST_BYTES);

  /**
   * What one store reports for a batch.
   *
   * @param numKeys keys in the store after the batch
   * @param memory native memory of the local database plus heap of pending writes; its total is
   *     Spark's {@code memoryUsedBytes}, its block cache part {@link #BLOCK_CACHE_BYTES}
   * @param commit cost of the commit ({@link CommitStats#NONE} if none)
   * @param restore cost of the restore at load ({@link RestoreStats#NONE} if none)
   * @param requests S3 requests of the batch
   * @param attemptsLost 1 if the commit lost a format-1 race, else 0
   * @param baseVersion version of the base snapshot the newest manifest names, -1 if none
   * @param gc the garbage-collection round finished since the store's previous commit, or
   *     {@link GcStats#NONE}
   * @param gcFailedRounds garbage-collection rounds that failed since the store's previous commit
   * @param partitionId the store's partition
   * @param storeName the store's name
   * @param forcedSnapshots 1 if the commit uploaded a base snapshot because Spark asked, else 0
   */
  record Batch(long numKeys, LocalStore.MemoryUsage memory, CommitStats commit,
      RestoreStats restore, RequestCounter.Counts requests, int attemptsLost, long baseVersion,
      GcStats gc, long gcFailedRounds, int partitionId, String storeName,
      int forcedSnapshots) { }

  private StrataMetrics() { }

  /** Strata's custom metrics of a batch, as Spark's {@code StateStoreMetrics} takes them. */
  static scala.collection.immutable.Map<StateStoreCustomMetric, Object> custom(Batch b) {
    CommitStats c = b.commit();
    RequestCounter.Counts requests = b.requests();
    Map<StateStoreCustomMetric, Object> m = new LinkedHashMap<>();
    m.put(DELTA_BUILD_MS, c.deltaBuildMs());
    m.put(MANIFEST_MS, c.manifestMs());
    m.put(UPLOAD_MS, c.uploadMs());
    m.put(INGEST_MS, c.ingestMs());
    m.put(BYTES_UPLOADED, requests.bytesSent());
    m.put(S3_REQUESTS, requests.total());
    m.put(S3_PUTS, requests.puts());
    m.put(S3_GETS, requests.gets());
    m.put(S3_LISTS, requests.lists());
    m.put(S3_HEADS, requests.heads());
    m.put(S3_DELETES, requests.deletes());
    m.put(S3_FAILED, requests.failed());
    m.put(DELTA_CHAIN, c.deltaChainLength());
    m.put(SNAPSHOT_LAG, c.versionsSinceSnapshot());
    m.put(ATTEMPTS_LOST, (long) b.attemptsLost());
    m.put(GC_DELETED_OBJECTS, b.gc().objectsDeleted());
    m.put(GC_DELETED_BYTES, b.gc().bytesDeleted());
    m.put(GC_FAILED_ROUNDS, b.gcFailedRounds());
    m.put(GC_UNREADABLE_PUBLISHED_SNAPSHOTS, b.gc().unreadablePublishedSnapshots());
    m.put(RESTORE_MS, b.restore().restoreMs());
    m.put(RESTORE_BYTES, b.restore().bytesDownloaded());
    m.put(RESTORE_DOWNLOAD_MS, b.restore().downloadMs());
    m.put(BLOCK_CACHE_BYTES, b.memory().blockCacheBytes());
    m.put(FORCED_SNAPSHOTS, (long) b.forcedSnapshots());
    m.put(COMMIT_OWN_MICROS, c.ownMicros());
    m.put(COMMIT_SST_DATA_BYTES, c.parts().sstData());
    m.put(COMMIT_SST_FILTER_BYTES, c.parts().sstFilter());
    m.put(COMMIT_SST_INDEX_BYTES, c.parts().sstIndex());
    m.put(COMMIT_SST_META_BYTES, c.parts().sstTableMeta());
    m.put(COMMIT_MANIFEST_BYTES, c.parts().manifest());
    return longs(m);
  }

  /**
   * {@code m} as the Scala map of Spark's metric maps, whose {@code Long} values are erased to
   * {@code Object} (boxed longs).
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static <K> scala.collection.immutable.Map<K, Object> longs(Map<K, Object> m) {
    return (scala.collection.immutable.Map) Scala.map(m);
  }
}
