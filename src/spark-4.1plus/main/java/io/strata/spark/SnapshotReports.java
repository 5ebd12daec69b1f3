// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Tells Spark 4.1+'s state store coordinator that a store uploaded a base snapshot, as Spark's
 * RocksDB provider does after each snapshot upload. The coordinator's snapshot-lag report, and on
 * 4.2 its {@code forceSnapshotUploadOnLag} (which makes the next {@code getStore} ask for a
 * snapshot at commit), count a store that never reported as lagging since version 0: without
 * these reports every store would be asked for a snapshot at every commit after about 50
 * batches.
 */
final class SnapshotReports {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotReports.class);
  /** Spark's Hadoop conf key of the query run id ({@code StreamExecution.RUN_ID_KEY}). */
  private static final String RUN_ID_KEY = "sql.streaming.runId";

  private SnapshotReports() { }

  /**
   * Reports that {@code storeId} uploaded the base snapshot of {@code version}, when the
   * coordinator wants reports ({@code spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag},
   * on by default) and a query run id is known. Never throws: a lost report only makes the
   * coordinator think the store lags.
   */
  static void snapshotUploaded(StateStoreId storeId, StateStoreConf conf, Configuration hadoop,
      long version) {
    try {
      String runId = hadoop == null ? null : hadoop.get(RUN_ID_KEY);
      if (!conf.reportSnapshotUploadLag() || runId == null) {
        return;
      }
      // coordinatorRef is private[state] in Scala, public in bytecode (see the state store notes).
      Option<StateStoreCoordinatorRef> ref = StateStoreProvider$.MODULE$.coordinatorRef();
      if (ref.isDefined()) {
        ref.get().snapshotUploaded(new StateStoreProviderId(storeId, UUID.fromString(runId)),
            version, System.currentTimeMillis());
      }
    } catch (RuntimeException e) {
      LOG.debug("Cannot report the snapshot of version {} of {} to the coordinator: {}", version,
          storeId, e.toString());
    }
  }
}
