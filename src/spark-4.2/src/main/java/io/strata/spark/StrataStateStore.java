// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.RequestCounter;
import io.strata.sync.SyncedStore;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A task's handle on a store, the Spark 4.2 build: {@link AbstractStrataStore} with Spark 4.2's
 * {@code metrics()} and the scans Spark 4.2 added to {@code ReadStateStore}.
 */
final class StrataStateStore extends AbstractStrataStore {
  StrataStateStore(AbstractStrataProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    super(provider, core, version, readOnly, requests, atStart);
  }

  /** Strata's custom metrics and Spark's snapshot-lag instance metric; see {@link SparkMetrics}. */
  @Override
  public StateStoreMetrics metrics() {
    return SparkMetrics.build(metricsBatch());
  }

  /**
   * Pairs with keys in {@code [startKey, endKey)} (transformWithState timers and TTL on 4.2).
   *
   * @throws IllegalArgumentException if the family's key encoding is not order-preserving
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> rangeScan(Option<UnsafeRow> startKey,
      Option<UnsafeRow> endKey, String colFamilyName) {
    return rangeScan(optional(startKey), optional(endKey), colFamilyName, false);
  }

  /**
   * As {@link #rangeScan(Option, Option, String)}, one pair per value of a multi-valued key.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> rangeScanWithMultiValues(Option<UnsafeRow> startKey,
      Option<UnsafeRow> endKey, String colFamilyName) {
    return rangeScan(optional(startKey), optional(endKey), colFamilyName, true);
  }

  /**
   * One pair per value of every key of a multi-valued family.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> iteratorWithMultiValues(String colFamilyName) {
    return multiValueScan(Optional.empty(), colFamilyName);
  }

  /**
   * One pair per value of every key with {@code prefixKey} in a multi-valued family.
   *
   * @throws IllegalStateException if the family is not multi-valued
   * @throws IllegalArgumentException if its key encoding has no prefix
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScanWithMultiValues(UnsafeRow prefixKey,
      String colFamilyName) {
    return multiValueScan(Optional.of(prefixKey), colFamilyName);
  }

  /** The column families of the version being built, {@code default} included. */
  @Override
  public scala.collection.immutable.Set<String> allColumnFamilyNames() {
    return CollectionConverters.asScala(familyNames()).toSet();
  }

  private static <T> Optional<T> optional(Option<T> o) {
    return o.isDefined() ? Optional.of(o.get()) : Optional.empty();
  }
}
