// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import org.apache.spark.sql.execution.streaming.state.SupportsFineGrainedReplay;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;

/**
 * Strata's Spark state store provider, the Spark 4.2 build: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.strata.spark.StrataStateStoreProvider}.
 *
 * <p>This class is the Spark 4.2 adapter: it declares the provider methods whose signatures
 * differ between Spark minor versions and forwards them to {@link AbstractStrataProvider}, where
 * the provider's behaviour lives (see there for the contract and the errors).
 */
public final class StrataStateStoreProvider extends AbstractStrataProvider
    implements SupportsFineGrainedReplay {
  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  public StrataStateStoreProvider() { }

  /**
   * A writable store holding {@code version}; see {@link AbstractStrataProvider#openStore}; with
   * {@code loadEmpty}, an empty one at {@code version} that reads nothing of the store (Spark's
   * offline state repartitioning writes each new partition this way); see {@link
   * AbstractStrataProvider#openEmpty} and {@link AbstractStrataProvider#openEmptyStore(long)}.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared (Spark's Scala callers expect
   * it): as {@link AbstractStrataProvider#openStore} or {@link AbstractStrataProvider#openEmpty}
   *
   * @param forceSnapshotOnCommit the commit also uploads a base snapshot of the new version
   *     (Spark's coordinator asks when this store's snapshots lag; {@code
   *     forceSnapshotUploadOnLag})
   * @param loadEmpty an empty store at {@code version}, whose commit writes a self-contained
   *     {@code version + 1}; {@code stateStoreCkptId} must then be empty under checkpoint format
   *     2
   */
  @Override
  public StateStore getStore(long version, Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit, boolean loadEmpty) {
    if (loadEmpty) {
      return openEmpty(version, stateStoreCkptId, forceSnapshotOnCommit);
    }
    return openStore(version, stateStoreCkptId, forceSnapshotOnCommit);
  }

  /** Turns this task's read store into its write store; see {@link #upgradeStore}. */
  @Override
  public StateStore upgradeReadStoreToWriteStore(ReadStateStore readStore, long version,
      Option<String> uniqueId, boolean forceSnapshotOnCommit) {
    return upgradeStore(readStore, version, uniqueId, forceSnapshotOnCommit);
  }

  /** Spark's {@code SnapshotLastUploaded} instance metric; see {@link SparkMetrics}. */
  @Override
  public scala.collection.immutable.Seq<StateStoreInstanceMetric> supportedInstanceMetrics() {
    return Scala.seq(SparkMetrics.INSTANCE);
  }

  /**
   * Reports the commit to the coordinator when commit validation is on (Spark 4.1+, {@code
   * spark.sql.streaming.stateStore.commitValidation.enabled}), as Spark's providers do with {@code
   * StateStore.reportCommitToCoordinator}, through a cached coordinator reference (see {@link
   * CoordinatorReports}).
   */
  @Override
  protected void reportCommit(long newVersion) {
    if (storeConf().commitValidationEnabled()) {
      CoordinatorReports.committed(stateStoreId(), hadoopConf(), newVersion);
    }
  }

  /** Tells the coordinator, which tracks snapshot lag; see {@link CoordinatorReports}. */
  @Override
  protected void reportSnapshotUploaded(long version) {
    CoordinatorReports.snapshotUploaded(stateStoreId(), storeConf(), hadoopConf(), version);
  }

  /**
   * The store at {@code endVersion} for the state data source's {@code snapshotStartBatchId}
   * (Spark's {@code SupportsFineGrainedReplay}); see {@link AbstractStrataProvider#replay}.
   */
  @Override
  public StateStore replayStateFromSnapshot(long snapshotVersion, long endVersion,
      boolean readOnly, Option<String> snapshotVersionStateStoreCkptId,
      Option<String> endVersionStateStoreCkptId) {
    return replay(snapshotVersion, endVersion, readOnly, endVersionStateStoreCkptId);
  }

  /**
   * The state data source's {@code readChangeFeed} rows of versions {@code startVersion} to
   * {@code endVersion}, read from the SST deltas in S3; see {@link
   * AbstractStrataProvider#changeRows} and {@link ChangeRows}.
   */
  @Override
  public NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> getStateStoreChangeDataReader(long startVersion, long endVersion,
      Option<String> colFamilyNameOpt, Option<String> endVersionStateStoreCkptId) {
    return new ChangeRowIterator(changeRows(startVersion, endVersion, colFamilyNameOpt,
        endVersionStateStoreCkptId));
  }

  @Override
  AbstractStrataStore newStore(SyncedStore core, long version, boolean readOnly,
      RequestCounter requests, RequestCounter.Counts atStart) {
    return new StrataStateStore(this, core, version, readOnly, requests, atStart);
  }
}
