// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.streaming.state.StateStore$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The query run id of a Spark 3.5 provider. Spark 4.x puts it in the Hadoop conf it passes to
 * {@code init} ({@code sql.streaming.runId}); Spark 3.5 only keys its loaded providers by it:
 * {@code StateStore.loadedProviders}, a map from {@code StateStoreProviderId(storeId,
 * queryRunId)} to the provider, which holds the provider before Spark calls its {@code
 * getStore} or {@code getReadStore}. Strata reads the run id from there (under the map's own
 * lock, as Spark's code does). Spark 3.5's code is frozen in its 3.5.x patches; the test suite
 * of this line checks the outcome: {@code RerunAfterRewindIT} re-runs rewound batches and
 * needs the new run to supersede the old run's versions.
 *
 * <p>If the provider is not in the map (one made outside Spark's {@code StateStore}, by a tool
 * or a test), the run is the micro-batch job group that Spark 3.5's {@code
 * StreamExecution} sets to the run id, when the task has one that is a UUID; otherwise there is
 * none, and the store commits without an epoch, as a 4.x store outside a query does.
 */
final class RunIds {
  private static final Logger LOG = LoggerFactory.getLogger(RunIds.class);
  /** {@code SparkContext.SPARK_JOB_GROUP_ID}. */
  private static final String JOB_GROUP = "spark.jobGroup.id";
  /** {@code StreamExecution.QUERY_ID_KEY}: set on the tasks of a streaming query's batches. */
  private static final String QUERY_ID = "sql.streaming.queryId";
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  private RunIds() { }

  /**
   * The run id of {@code provider}'s query run, or null if there is none (see the class
   * comment). Never throws: a lookup that fails is logged once and falls back.
   */
  static String of(StateStoreProvider provider) {
    String run = fromLoadedProviders(provider);
    if (run != null) {
      return run;
    }
    TaskContext ctx = TaskContext.get();
    if (ctx != null && ctx.getLocalProperty(QUERY_ID) != null) {
      String group = ctx.getLocalProperty(JOB_GROUP);
      if (group != null && isUuid(group)) {
        return group;
      }
    }
    return null;
  }

  private static String fromLoadedProviders(StateStoreProvider provider) {
    try {
      Object map = loadedProvidersField().get(StateStore$.MODULE$);
      synchronized (map) {
        @SuppressWarnings("unchecked")
        scala.collection.Map<StateStoreProviderId, StateStoreProvider> providers =
            (scala.collection.Map<StateStoreProviderId, StateStoreProvider>) map;
        for (Map.Entry<StateStoreProviderId, StateStoreProvider> e
            : Scala.javaMap(providers).entrySet()) {
          if (e.getValue() == provider) {
            return e.getKey().queryRunId().toString();
          }
        }
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      if (WARNED.compareAndSet(false, true)) {
        LOG.warn("Cannot read Spark's loaded state store providers to find the query run id; "
            + "falling back to the batch's job group", e);
      }
    }
    return null;
  }

  /** {@code StateStore.loadedProviders}, whatever name the Scala compiler gave the field. */
  private static Field loadedProvidersField() throws NoSuchFieldException {
    for (Field f : StateStore$.class.getDeclaredFields()) {
      if (f.getName().equals("loadedProviders") || f.getName().endsWith("$$loadedProviders")) {
        f.setAccessible(true);
        return f;
      }
    }
    throw new NoSuchFieldException("loadedProviders in " + StateStore$.class.getName());
  }

  private static boolean isUuid(String s) {
    try {
      return UUID.fromString(s).toString().equalsIgnoreCase(s);
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
