// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.SupportsFineGrainedReplay;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;

/**
 * Strata's Spark state store provider, the Spark 4.0 build: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.strata.spark.StrataStateStoreProvider}.
 *
 * <p>This class is the Spark 4.0 adapter: it declares the provider methods whose signatures
 * differ between Spark minor versions and forwards them to {@link AbstractStrataProvider}, where
 * the provider's behaviour lives (see there for the contract and the errors). Spark 4.0 has no
 * read-to-write store upgrade, no instance metrics and no commit validation: a task's read store
 * and write store are two loads of the same version (the second finds it loaded, so it costs no
 * request), and the read store is aborted at task end, after the write store committed.
 */
public final class StrataStateStoreProvider extends AbstractStrataProvider
    implements SupportsFineGrainedReplay {
  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  public StrataStateStoreProvider() { }

  /**
   * A writable store holding {@code version}; see {@link AbstractStrataProvider#openStore}.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared (Spark's Scala callers expect
   * it): as {@link AbstractStrataProvider#openStore}
   */
  @Override
  public StateStore getStore(long version, Option<String> stateStoreCkptId) {
    return openStore(version, stateStoreCkptId, false);
  }

  /** Nothing: Spark 4.0 does not validate commits. */
  @Override
  protected void reportCommit(long newVersion) { }

  /** Nothing: Spark 4.0's coordinator does not track snapshot uploads. */
  @Override
  protected void reportSnapshotUploaded(long version) { }

  /**
   * Never: Spark 4.0, as 3.5, closes the providers it unloads while it holds its executor-wide
   * provider lock ({@code StateStore.unload} under {@code loadedProviders}), which every stateful
   * task's load needs; a running snapshot upload finishes or is cancelled in the background
   * instead. (Spark 4.1 closes them outside that lock.)
   */
  @Override
  protected boolean closeWaitsForUploads() {
    return false;
  }

  /**
   * The store at {@code endVersion} for the state data source's {@code snapshotStartBatchId}
   * (Spark's {@code SupportsFineGrainedReplay}); see {@link AbstractStrataProvider#replay}.
   */
  @Override
  public StateStore replayStateFromSnapshot(long snapshotVersion, long endVersion) {
    return replay(snapshotVersion, endVersion, false, Option.empty());
  }

  /**
   * The state data source's {@code readChangeFeed} rows of versions {@code startVersion} to
   * {@code endVersion}, read from the SST deltas in S3; see {@link
   * AbstractStrataProvider#changeRows} and {@link ChangeRows}.
   */
  @Override
  public NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>>
      getStateStoreChangeDataReader(long startVersion, long endVersion,
      Option<String> colFamilyNameOpt) {
    return new ChangeRowIterator(changeRows(startVersion, endVersion, colFamilyNameOpt,
        Option.empty()));
  }

  @Override
  AbstractStrataStore newStore(SyncedStore core, long version, boolean readOnly,
      RequestCounter requests, RequestCounter.Counts atStart) {
    return new StrataStateStore(this, core, version, readOnly, requests, atStart);
  }
}
