// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * A {@code foreachBatch} sink for a complete-mode aggregation of {@code (key STRING, count
 * BIGINT)}: it collects each batch's output on the driver and keeps the newest one, which in
 * complete mode is the whole answer so far. Runs on the driver only (Spark does not serialize a
 * {@code foreachBatch} function).
 */
final class LatestAnswer implements VoidFunction2<Dataset<Row>, Long> {
  private static final long serialVersionUID = 1L;

  /** The complete output of micro-batch {@code batchId}: count per key, sorted by key. */
  record Answer(long batchId, Map<String, Long> counts) { }

  private final AtomicReference<Answer> latest = new AtomicReference<>();

  @Override
  public void call(Dataset<Row> batch, Long batchId) {
    Map<String, Long> counts = new TreeMap<>();
    for (Row r : batch.collectAsList()) {
      counts.put(r.getString(0), r.getLong(1));
    }
    latest.set(new Answer(batchId, counts));
  }

  /** The newest batch's answer; empty before the first batch. */
  Optional<Answer> latest() {
    return Optional.ofNullable(latest.get());
  }
}
