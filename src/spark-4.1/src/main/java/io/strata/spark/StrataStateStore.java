// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;

/**
 * A task's handle on a store, the Spark 4.1 build: {@link AbstractStrataStore} with Spark 4.1's
 * {@code metrics()}.
 */
final class StrataStateStore extends AbstractStrataStore {
  StrataStateStore(AbstractStrataProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    super(provider, core, version, readOnly, requests, atStart);
  }

  /** Strata's custom metrics and Spark's snapshot-lag instance metric; see {@link SparkMetrics}. */
  @Override
  public StateStoreMetrics metrics() {
    return SparkMetrics.build(metricsBatch());
  }
}
