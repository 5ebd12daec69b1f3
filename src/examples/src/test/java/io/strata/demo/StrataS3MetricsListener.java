// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;

/**
 * Sums Strata's S3 custom metrics over every batch of every streaming query of the JVM, for
 * tests that run the demo, which creates its own SparkSessions. Registered through Spark's
 * static setting {@code spark.sql.streaming.streamingQueryListeners} (hence the public no-arg
 * constructor); the totals are static and reset with {@link #reset()}.
 */
public final class StrataS3MetricsListener extends StreamingQueryListener {
  /** Strata's metric: S3 attempts answered 5xx or not at all (retried by the SDK). */
  static final String FAILED_ATTEMPTS = "strataS3FailedAttempts";

  private static final AtomicLong FAILED = new AtomicLong();
  private static final AtomicLong REQUESTS = new AtomicLong();
  private static final AtomicLong BATCHES = new AtomicLong();

  /** Spark instantiates this by name. */
  public StrataS3MetricsListener() { }

  /** Sets every total to 0. */
  static void reset() {
    FAILED.set(0);
    REQUESTS.set(0);
    BATCHES.set(0);
  }

  /** {@value #FAILED_ATTEMPTS} summed over all batches since {@link #reset()}. */
  static long failedAttempts() {
    return FAILED.get();
  }

  /** {@value BatchReporter#REQUESTS_METRIC} summed over all batches since {@link #reset()}. */
  static long requests() {
    return REQUESTS.get();
  }

  /** Progress events (batches of all queries) since {@link #reset()}. */
  static long batches() {
    return BATCHES.get();
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) { }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    BATCHES.incrementAndGet();
    for (StateOperatorProgress op : event.progress().stateOperators()) {
      Map<String, Long> m = op.customMetrics();
      if (m != null) {
        FAILED.addAndGet(m.getOrDefault(FAILED_ATTEMPTS, 0L));
        REQUESTS.addAndGet(m.getOrDefault(BatchReporter.REQUESTS_METRIC, 0L));
      }
    }
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) { }
}
