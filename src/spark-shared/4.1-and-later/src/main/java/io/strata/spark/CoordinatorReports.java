// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.lang.ref.WeakReference;
import java.util.UUID;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef$;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a store tells Spark 4.1+'s state store coordinator, as Spark's own providers do: each
 * commit ({@code StateStore.reportCommitToCoordinator}, which the coordinator's commit validation
 * needs) and each uploaded base snapshot (which its snapshot-lag tracking needs).
 *
 * <p><b>One coordinator reference per {@link SparkEnv}.</b> Spark's providers look the
 * coordinator up again for every report when they run in the driver's JVM (local mode; {@code
 * StateStoreProvider.coordinatorRef}, "the SparkContext and SparkEnv may have been restarted"):
 * a lookup RPC to the driver's endpoint verifier under a JVM-wide lock, then the report's own
 * RPC. This class keeps the reference it made together with the {@code SparkEnv} it was made
 * from and makes a new one when {@code SparkEnv.get()} is another object, which is exactly when
 * the context was restarted. The reference names the endpoint, not an instance of it, so it stays
 * good for as long as its {@code RpcEnv} runs. On executors Spark caches its reference too, so
 * there this changes nothing; in local mode a commit's report is one RPC instead of two.
 *
 * <p>Spark's {@code StateStoreProvider.coordinatorRef} also holds a JVM-wide lock for the lookup
 * and logs an INFO line for every report; neither is needed for a cached reference.
 *
 * <p>Reports never throw: a failed report is logged, as Spark's providers do, and the reference is
 * made again for the next one.
 */
final class CoordinatorReports {
  private static final Logger LOG = LoggerFactory.getLogger(CoordinatorReports.class);
  /** Spark's Hadoop conf key of the query run id ({@code StreamExecution.RUN_ID_KEY}). */
  private static final String RUN_ID_KEY = "sql.streaming.runId";

  /**
   * A coordinator reference and the {@code SparkEnv} it was made from, held weakly so that a
   * stopped context's env is not kept reachable by this cache.
   */
  private record Ref(WeakReference<SparkEnv> env, StateStoreCoordinatorRef ref) { }

  private static volatile Ref cached;

  private CoordinatorReports() { }

  /**
   * Reports that {@code storeId} committed {@code version} in the query run its Hadoop conf names,
   * as Spark's {@code StateStore.reportCommitToCoordinator} does. Blocks for one RPC to the
   * driver (at most {@code spark.rpc.askTimeout}); never throws. An interrupt while it waits
   * ends the wait and is kept on the thread (the commit itself is durable already).
   */
  static void committed(StateStoreId storeId, Configuration hadoop, long version) {
    try {
      StateStoreProviderId id = providerId(storeId, hadoop);
      call(ref -> ref.reportStateStoreCommit(id, version, storeId.storeName()));
    } catch (Exception e) { // Spark's RPC errors are checked exceptions thrown from Scala
      keepInterrupt(e);
      LOG.warn("Failed to report the commit of version {} of {} to the state store coordinator: "
          + "{}", version, storeId, e.toString());
    }
  }

  /**
   * Reports that {@code storeId} uploaded the base snapshot of {@code version}, when the
   * coordinator wants reports ({@code spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag},
   * on by default) and a query run id is known. The coordinator's snapshot-lag report, and on
   * 4.2 its {@code forceSnapshotUploadOnLag} (which makes the next {@code getStore} ask for a
   * snapshot at commit), count a store that never reported as lagging since version 0: without
   * these reports every store would be asked for a snapshot at every commit after about 50
   * batches. Never throws: a lost report only makes the coordinator think the store lags. An
   * interrupt is kept on the thread (maintenance and background threads stop by interrupt).
   */
  static void snapshotUploaded(StateStoreId storeId, StateStoreConf conf, Configuration hadoop,
      long version) {
    try {
      if (!conf.reportSnapshotUploadLag() || hadoop == null || hadoop.get(RUN_ID_KEY) == null) {
        return;
      }
      StateStoreProviderId id = providerId(storeId, hadoop);
      call(ref -> ref.snapshotUploaded(id, version, System.currentTimeMillis()));
    } catch (Exception e) {
      keepInterrupt(e);
      LOG.debug("Cannot report the snapshot of version {} of {} to the coordinator: {}", version,
          storeId, e.toString());
    }
  }

  /**
   * Sends {@code rpc} through the current reference (nothing without a {@code SparkEnv}). A
   * failed RPC drops the cached reference, so the next report looks the coordinator up again.
   */
  private static void call(Consumer<StateStoreCoordinatorRef> rpc) {
    StateStoreCoordinatorRef ref = ref();
    if (ref == null) {
      return;
    }
    boolean sent = false;
    try {
      rpc.accept(ref);
      sent = true;
    } finally {
      if (!sent) {
        cached = null;
      }
    }
  }

  private static void keepInterrupt(Exception e) {
    if (e instanceof InterruptedException) { // thrown undeclared from Scala's awaitResult
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The coordinator reference for the current {@code SparkEnv}, made on first use and again after
   * the env changed; null without a {@code SparkEnv}.
   *
   * @throws RuntimeException if the driver's endpoint cannot be looked up (Spark's RPC errors)
   */
  static StateStoreCoordinatorRef ref() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return null;
    }
    Ref r = cached;
    if (r == null || r.env().get() != env) {
      // forExecutor is package-private in Scala, public in bytecode (see the state store notes).
      r = new Ref(new WeakReference<>(env), StateStoreCoordinatorRef$.MODULE$.forExecutor(env));
      cached = r;
    }
    return r.ref();
  }

  private static StateStoreProviderId providerId(StateStoreId storeId, Configuration hadoop) {
    String runId = hadoop.get(RUN_ID_KEY);
    if (runId == null) {
      throw new IllegalStateException("no query run id (" + RUN_ID_KEY + ") in the Hadoop conf");
    }
    return new StateStoreProviderId(storeId, UUID.fromString(runId));
  }
}
