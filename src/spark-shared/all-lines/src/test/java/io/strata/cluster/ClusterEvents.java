// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.storage.RDDInfo;
import scala.collection.JavaConverters;

/**
 * What the driver's scheduler saw, for the cluster test's assertions: executors added and removed,
 * and the tasks of stateful stages (a stage whose RDDs include a {@code StateStoreRDD}, i.e. the
 * tasks that open state stores) with the executor each ran on. Times are the driver's wall clock
 * in milliseconds since the epoch, as Spark reports them. Spark delivers events asynchronously,
 * so readers poll ({@link #await}).
 */
final class ClusterEvents extends SparkListener {
  /**
   * A task of a stateful stage started on {@code executorId} at {@code launchTime}, for the
   * stage's partition {@code partition} (so for the state stores of that partition).
   */
  record StatefulTask(long launchTime, String executorId, int stageId, int partition) { }

  /** A task of a stateful stage that did not succeed, with Spark's reason. */
  record FailedTask(String executorId, String reason) { }

  /** An executor was added (or removed, {@code added == false}) at {@code time}. */
  record ExecutorChange(long time, String executorId, boolean added, String reason) { }

  private final Map<Integer, Boolean> statefulStages = new ConcurrentHashMap<>();
  private final List<StatefulTask> statefulTasks = new CopyOnWriteArrayList<>();
  private final List<FailedTask> failedTasks = new CopyOnWriteArrayList<>();
  private final List<ExecutorChange> executorChanges = new CopyOnWriteArrayList<>();

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    boolean stateful = false;
    for (RDDInfo rdd : JavaConverters.seqAsJavaList(event.stageInfo().rddInfos())) {
      stateful |= rdd.name().contains("StateStoreRDD");
    }
    statefulStages.put(event.stageInfo().stageId(), stateful);
  }

  @Override
  public void onTaskStart(SparkListenerTaskStart event) {
    if (statefulStages.getOrDefault(event.stageId(), false)) {
      statefulTasks.add(new StatefulTask(event.taskInfo().launchTime(),
          event.taskInfo().executorId(), event.stageId(), event.taskInfo().partitionId()));
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    if (statefulStages.getOrDefault(event.stageId(), false) && !event.taskInfo().successful()) {
      failedTasks.add(new FailedTask(event.taskInfo().executorId(), event.reason().toString()));
    }
  }

  @Override
  public void onExecutorAdded(SparkListenerExecutorAdded event) {
    executorChanges.add(new ExecutorChange(event.time(), event.executorId(), true, "added"));
  }

  @Override
  public void onExecutorRemoved(SparkListenerExecutorRemoved event) {
    executorChanges.add(
        new ExecutorChange(event.time(), event.executorId(), false, event.reason()));
  }

  /** The executors that started stateful tasks in {@code [fromMs, toMs)}, sorted. */
  Set<String> statefulExecutors(long fromMs, long toMs) {
    Set<String> ids = new TreeSet<>();
    for (StatefulTask t : statefulTasks) {
      if (t.launchTime() >= fromMs && t.launchTime() < toMs) {
        ids.add(t.executorId());
      }
    }
    return ids;
  }

  /** The stateful tasks (every attempt) started in {@code [fromMs, toMs)}, in start order. */
  List<StatefulTask> statefulTasks(long fromMs, long toMs) {
    return statefulTasks.stream().filter(t -> t.launchTime() >= fromMs && t.launchTime() < toMs)
        .toList();
  }

  /** The first stateful task started at or after {@code fromMs}, if any yet. */
  Optional<StatefulTask> firstStatefulTaskFrom(long fromMs) {
    return statefulTasks.stream().filter(t -> t.launchTime() >= fromMs).findFirst();
  }

  /** Stateful tasks that failed (for example with {@code ExecutorLostFailure}). */
  List<FailedTask> failedStatefulTasks() {
    return List.copyOf(failedTasks);
  }

  /** Every executor change seen so far, in arrival order. */
  List<ExecutorChange> executorChanges() {
    return List.copyOf(executorChanges);
  }

  /**
   * Polls every 20 ms until {@code condition} holds on this object, or {@code timeout} passes.
   *
   * @return whether the condition held in time
   */
  boolean await(Predicate<ClusterEvents> condition, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.test(this)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }
}
