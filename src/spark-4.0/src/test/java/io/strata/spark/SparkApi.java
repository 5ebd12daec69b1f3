// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import scala.Option;

/**
 * The state store calls whose signatures differ between Spark lines, as the Spark 4.0 tests make
 * them (the same class exists for each line under {@code src/spark-<minor>/test/java}). Spark 4.0
 * has no read-to-write upgrade (a task's write store is a second {@code getStore} of the version
 * its read store holds), no {@code release()} and no {@code putList}/{@code mergeList}.
 */
final class SparkApi {
  /**
   * True on Spark 4.1+: {@code putList}/{@code mergeList}, {@code release()}, the read-to-write
   * upgrade and instance metrics exist.
   */
  static final boolean AT_LEAST_4_1 = false;

  private SparkApi() { }

  static StateStore getStore(StateStoreProvider p, long version) {
    return p.getStore(version, Option.empty());
  }

  /**
   * What Spark 4.0 does instead: a second {@code getStore} of the same version, which turns the
   * caller's read store into the write store.
   */
  static StateStore upgrade(StateStoreProvider p, ReadStateStore r, long version) {
    return p.getStore(version, Option.empty());
  }

  /** Strata's own {@code putList} (Spark 4.0 never calls it). */
  static void putList(StateStore s, UnsafeRow key, UnsafeRow[] values, String cf) {
    ((AbstractStrataStore) s).putList(key, values, cf);
  }

  /** Strata's own {@code mergeList} (Spark 4.0 never calls it). */
  static void mergeList(StateStore s, UnsafeRow key, UnsafeRow[] values, String cf) {
    ((AbstractStrataStore) s).mergeList(key, values, cf);
  }

  /** Spark 4.0 aborts a read store when it is done with it. */
  static void release(ReadStateStore r) {
    r.abort();
  }

  /** Spark 4.0 has no instance metrics: none. */
  static java.util.Map<String, Object> instanceMetrics(StateStore s) {
    return java.util.Map.of();
  }

  /** Spark 4.0 has no instance metrics: 0. */
  static int supportedInstanceMetrics(StateStoreProvider p) {
    return 0;
  }

  /**
   * Nothing on 4.x: Spark's maintenance unloads the providers of stopped queries (in 4.1 {@code
   * StateStore.stop()} can wait 300 s on a running maintenance task; see {@code
   * SparkS3Harness.wipeLocalState}).
   */
  static void unloadStateStores() { }
}
