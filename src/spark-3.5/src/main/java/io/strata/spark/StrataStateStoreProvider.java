// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * Strata's Spark state store provider, the Spark 3.5 build: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.strata.spark.StrataStateStoreProvider}.
 *
 * <p>This class is the Spark 3.5 adapter: it declares Spark 3.5's provider methods and forwards
 * them to {@link StrataProviderBase}, where the provider's behaviour lives (see there for the
 * contract and the errors). Spark 3.5 has no column families, no checkpoint ids and no commit
 * validation; a prefix scan is declared by {@code numColsPrefixKey}. The store is written in
 * exactly the format of a 4.x store without column families (docs/format.md), so the same
 * checkpoint resumes on Spark 4.x.
 *
 * <p>Spark 3.5 does not hand the provider the query's run id (4.x puts it in the Hadoop conf);
 * {@link RunIds} finds it, so a rewound query's re-run supersedes the old run's versions as it
 * does on 4.x.
 */
public final class StrataStateStoreProvider extends StrataProviderBase {
  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  public StrataStateStoreProvider() { }

  /**
   * Initialises the provider (Spark 3.5's signature); see {@link StrataProviderBase#initStore}.
   *
   * @param numColsPrefixKey how many leading key columns prefix scans match on; 0 or less for
   *     none (Spark's operators then never call {@code prefixScan})
   * @throws IllegalArgumentException for an invalid Strata setting, an unsupported checkpoint
   *     location, or a prefix of all key columns
   */
  @Override
  public void init(StateStoreId stateStoreId, StructType keySchema, StructType valueSchema,
      int numColsPrefixKey, StateStoreConf storeConfs, Configuration hadoopConf) {
    initStore(stateStoreId, keySchema, valueSchema, false, storeConfs, hadoopConf,
        () -> new RowCodec(keySchema, valueSchema, Math.max(0, numColsPrefixKey)));
  }

  /**
   * A writable store holding {@code version}; see {@link StrataProviderBase#openHandle}.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared (Spark's Scala callers expect
   * it), whose message starts with the error condition Spark 4 would use (for example {@code
   * [CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE]} for a version never committed).
   */
  @Override
  public StateStore getStore(long version) {
    return (StateStore) openHandle(version, Option.empty(), false);
  }

  /** A read-only store holding {@code version}; errors as {@link #getStore}. */
  @Override
  public ReadStateStore getReadStore(long version) {
    return (ReadStateStore) readHandle(version, Option.empty());
  }

  /** Spark 3.5 has no commit validation: nothing to report. */
  @Override
  protected void reportCommit(long newVersion) { }

  /** Spark 3.5's coordinator does not track snapshot lag: nothing to report. */
  @Override
  protected void reportSnapshotUploaded(long version) { }

  /**
   * Never: Spark 3.5 closes providers (unload, maintenance) while it holds its executor-wide
   * provider lock ({@code StateStore.loadedProviders}), which every stateful task's load needs;
   * a running snapshot upload finishes or is cancelled in the background instead.
   */
  @Override
  protected boolean closeWaitsForUploads() {
    return false;
  }

  /** Never: Spark 3.5 has no state store checkpoint ids (checkpoint format 1 only). */
  @Override
  protected boolean checkpointIdsEnabled() {
    return false;
  }

  /**
   * Spark 3.5 has no {@code minVersionsToDelete}; Strata uses what 4.x derives by default: 30 %
   * of {@code minBatchesToRetain} ({@code ratioExtraSpaceAllowedInCheckpoint} 0.3), at least 1.
   */
  @Override
  protected long minVersionsToDelete() {
    return Math.max(1, Math.round(0.3 * storeConf().minVersionsToRetain()));
  }

  /**
   * The query run that loads this provider: {@code sql.streaming.runId} in the Hadoop conf if
   * set (Spark 3.5 never sets it; a tool or a test may), else what {@link RunIds} finds.
   */
  @Override
  protected String queryRunId() {
    String run = super.queryRunId();
    return run != null ? run : RunIds.of(this);
  }

  @Override
  StrataStoreBase newStore(SyncedStore core, long version, boolean readOnly,
      RequestCounter requests, RequestCounter.Counts atStart) {
    return new StrataStateStore(this, core, version, readOnly, requests, atStart);
  }
}
