// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.StateStoreSnapshotLastUploadInstanceMetric;

/**
 * Spark 4.1 and 4.2's {@code StateStoreMetrics} (four arguments: with instance metrics) for a
 * store's batch ({@link StrataMetrics.Batch}).
 */
final class SparkMetrics {
  /**
   * Spark's own instance metric for the last uploaded snapshot: Strata reports the version of the
   * base snapshot the store's newest manifest names (-1 if none), so Spark's snapshot-lag report
   * in query progress lists the stores whose base is oldest.
   */
  static final StateStoreSnapshotLastUploadInstanceMetric SNAPSHOT_LAST_UPLOADED =
      new StateStoreSnapshotLastUploadInstanceMetric(Scala.none(),
          StateStoreId.DEFAULT_STORE_NAME());

  /** The instance metrics the provider declares. */
  static final List<StateStoreInstanceMetric> INSTANCE = List.of(SNAPSHOT_LAST_UPLOADED);

  private SparkMetrics() { }

  /** Spark's metrics for {@code b}: keys, memory (bytes), custom and instance metrics. */
  static StateStoreMetrics build(StrataMetrics.Batch b) {
    Map<StateStoreInstanceMetric, Object> instance = new LinkedHashMap<>();
    instance.put(SNAPSHOT_LAST_UPLOADED.withNewId(b.partitionId(), b.storeName()),
        b.baseVersion());
    return new StateStoreMetrics(b.numKeys(), b.memory().totalBytes(), StrataMetrics.custom(b),
        StrataMetrics.longs(instance));
  }
}
