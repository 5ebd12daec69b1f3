// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;

/**
 * A task's handle on a store, the Spark 4.0 build: {@link AbstractStrataStore} with Spark 4.0's
 * {@code metrics()} (no instance metrics).
 */
final class StrataStateStore extends AbstractStrataStore {
  StrataStateStore(AbstractStrataProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    super(provider, core, version, readOnly, requests, atStart);
  }

  /** Strata's custom metrics: keys, memory (bytes) and {@link StrataMetrics#ALL}. */
  @Override
  public StateStoreMetrics metrics() {
    StrataMetrics.Batch b = metricsBatch();
    return new StateStoreMetrics(b.numKeys(), b.memory().totalBytes(), StrataMetrics.custom(b));
  }
}
