// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.objectstore.RequestListener;

/**
 * The S3 requests of every Strata state store in this JVM together (each provider also counts
 * its own, for the batch's custom metrics): the state-store half of {@link StrataMetricsSource}.
 * Counts are HTTP attempts, SDK retries included. Thread-safe; JVM-wide like {@link
 * io.strata.checkpoint.CheckpointRequests}, since Spark's metrics system has one registry per
 * JVM.
 */
public final class StoreRequests {
  private static final RequestCounter COUNTER = new RequestCounter();

  private StoreRequests() { }

  /** Request counts by kind since the JVM started; take differences between snapshots. */
  public static RequestCounter.Counts snapshot() {
    return COUNTER.snapshot();
  }

  /**
   * A listener that reports each request to {@code own} (one provider's counter) and to the
   * JVM's total.
   */
  static RequestListener alsoCounting(RequestListener own) {
    return r -> {
      own.onRequest(r);
      COUNTER.onRequest(r);
    };
  }
}
