// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

/**
 * One end-to-end benchmark run: one provider set-up, one workload, one state size, one latency
 * profile.
 *
 * @param setup {@link ProviderSetup#id()}
 * @param workload {@code agg} (a keyed count whose steady batches update existing keys) or
 *     {@code dedup} ({@code dropDuplicates} whose steady batches insert new keys)
 * @param stateKeys keys in the state after the load phase
 * @param latency {@link LatencyProfile#id()}
 * @param partitions {@code spark.sql.shuffle.partitions}: state stores per operator
 * @param batchKeys rows (keys touched) per steady batch
 * @param loadBatchKeys rows per load batch (the load phase has {@code ceil(stateKeys /
 *     loadBatchKeys)} batches)
 * @param warmupBatches steady batches run before the measured ones and not summarised
 * @param steadyBatches measured steady batches
 * @param cores Spark local-mode task slots ({@code local[cores]})
 * @param maintenanceInterval {@code spark.sql.streaming.stateStore.maintenanceInterval}, or
 *     empty for Spark's default (60 s)
 * @param plan {@code main} (commit time and restore), {@code requests} (the request-count
 *     run with many partitions) or {@code runs} (one-batch runs: restore cost against the number
 *     of runs)
 * @param runs one-batch runs after the steady batches, each a query restarted on wiped local
 *     state that processes one new steady batch (&gt;= 1; the first is the restore measurement)
 * @param strataConf Strata settings set on the Strata set-ups, by key under {@code
 *     spark.sql.streaming.stateStore.strata.} (empty: Strata's defaults; others ignore them)
 */
record RunSpec(String setup, String workload, long stateKeys, String latency, int partitions,
    long batchKeys, long loadBatchKeys, int warmupBatches, int steadyBatches, int cores,
    String maintenanceInterval, String plan, int runs,
    java.util.Map<String, String> strataConf) {

  RunSpec {
    strataConf = strataConf == null ? java.util.Map.of() : java.util.Map.copyOf(strataConf);
    ProviderSetup.of(setup);
    LatencyProfile.of(latency);
    if (!workload.equals("agg") && !workload.equals("dedup")) {
      throw new IllegalArgumentException("workload must be agg or dedup, was " + workload);
    }
    if (stateKeys < 1 || partitions < 1 || batchKeys < 1 || loadBatchKeys < 1
        || warmupBatches < 0 || steadyBatches < 1 || cores < 1 || runs < 1) {
      throw new IllegalArgumentException("bad run sizes: " + this);
    }
  }

  /** A file- and prefix-safe name, unique within one benchmark invocation. */
  String name() {
    return plan + "-" + setup + "-" + workload + "-" + stateKeys + "-" + latency + "-p"
        + partitions;
  }

  /** Batches in the load phase. */
  int loadBatches() {
    return (int) ((stateKeys + loadBatchKeys - 1) / loadBatchKeys);
  }
}
