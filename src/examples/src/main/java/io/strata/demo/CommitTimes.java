// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Per-partition state store commit times, read from each finished task's value of the stateful
 * operator's SQL metric {@value #COMMIT_METRIC} (Spark's {@code StateStoreWriter}, metric key
 * {@code commitTimeMs}: the time {@code StateStore.commit()} took in that task, in ms). Tasks are
 * tied to a streaming query and batch through the local properties Spark sets on every job of a
 * micro-batch ({@value #QUERY_ID_KEY}, {@value #BATCH_ID_KEY}).
 *
 * <p>Spark delivers these events on its shared listener queue and query progress on another, so
 * {@link #await} lets the reader wait until a batch's tasks have all been seen.
 */
final class CommitTimes extends SparkListener {
  /** Display name of {@code StateStoreWriter}'s {@code commitTimeMs} metric in Spark 4.1. */
  static final String COMMIT_METRIC = "time to commit changes";

  static final String QUERY_ID_KEY = "sql.streaming.queryId";
  static final String BATCH_ID_KEY = "streaming.sql.batchId";

  private final Map<Integer, String> stageToBatch = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  private final Map<String, List<Long>> times = new HashMap<>(); // guarded by lock

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    Properties p = event.properties();
    if (p == null) {
      return;
    }
    String query = p.getProperty(QUERY_ID_KEY);
    String batch = p.getProperty(BATCH_ID_KEY);
    if (query != null && batch != null) {
      stageToBatch.put(event.stageInfo().stageId(), key(query, Long.parseLong(batch)));
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    String key = stageToBatch.get(event.stageId());
    if (key == null || event.taskInfo() == null || !event.taskInfo().successful()) {
      return;
    }
    List<Long> found = new ArrayList<>();
    for (AccumulableInfo acc : CollectionConverters.asJava(event.taskInfo().accumulables())) {
      if (acc.name().isDefined()
          && COMMIT_METRIC.equals(acc.name().get())
          && acc.update().isDefined()
          && acc.update().get() instanceof Number n) {
        found.add(n.longValue());
      }
    }
    if (!found.isEmpty()) {
      synchronized (lock) {
        times.computeIfAbsent(key, k -> new ArrayList<>()).addAll(found);
        lock.notifyAll();
      }
    }
  }

  /**
   * Waits until at least {@code expected} commit times of a batch arrived or {@code timeoutMs}
   * passed, then returns (and forgets) what arrived.
   */
  List<Long> await(String queryId, long batchId, long expected, long timeoutMs)
      throws InterruptedException {
    String key = key(queryId, batchId);
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    synchronized (lock) {
      while (times.getOrDefault(key, List.of()).size() < expected) {
        long left = (deadline - System.nanoTime()) / 1_000_000L;
        if (left <= 0) {
          break;
        }
        lock.wait(left);
      }
      List<Long> got = times.remove(key);
      return got == null ? List.of() : got;
    }
  }

  private static String key(String queryId, long batchId) {
    return queryId + "/" + batchId;
  }
}
