// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import scala.collection.Iterator;

/**
 * The Spark 3.5 store handle: Spark 3.5's {@code StateStore} (no column families, plain
 * iterators) over {@link StrataStoreBase}, where the behaviour lives. Every operation is on the
 * {@code default} family, so the bytes in S3 are those a 4.x store without column families
 * writes, and a checkpoint moves to 4.x unchanged.
 *
 * <p>Spark 3.5 reads a store after its commit (Complete mode): see {@link #readsAfterCommit()}.
 * Spark 3.5 never closes a scan: one that is neither drained nor closed is closed when the
 * store starts its next version or aborts (see {@code LocalStore#discardPending}).
 */
final class StrataStateStore extends StrataStoreBase implements StateStore {
  StrataStateStore(StrataStateStoreProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    super(provider, core, version, readOnly, requests, atStart);
  }

  /** The value of {@code key}, or null; see {@link StrataStoreBase#get(UnsafeRow, String)}. */
  @Override
  public UnsafeRow get(UnsafeRow key) {
    return get(key, null);
  }

  /**
   * The pairs whose first {@code numColsPrefixKey} key columns equal {@code prefixKey}'s.
   *
   * @throws IllegalArgumentException if the store was initialised without prefix columns
   */
  @Override
  public Iterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey) {
    return scanPrefix(prefixKey, null);
  }

  /** Every pair, committed state overlaid with this version's writes. */
  @Override
  public Iterator<UnsafeRowPair> iterator() {
    return scanAll(null);
  }

  /** Puts {@code value} for {@code key} in the version being built. */
  @Override
  public void put(UnsafeRow key, UnsafeRow value) {
    put(key, value, null);
  }

  /** Removes {@code key} from the version being built. */
  @Override
  public void remove(UnsafeRow key) {
    remove(key, null);
  }

  /** True: Spark 3.5's Complete-mode aggregation iterates the store after its commit. */
  @Override
  boolean readsAfterCommit() {
    return true;
  }

  @Override
  public StateStoreMetrics metrics() {
    StrataMetrics.Batch b = metricsBatch();
    return new StateStoreMetrics(b.numKeys(), b.memory().totalBytes(), StrataMetrics.custom(b));
  }
}
