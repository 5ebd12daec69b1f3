// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;

/**
 * The state store calls whose signatures differ between Spark lines, as the Spark 3.5 tests make
 * them (the same class exists for each line under {@code src/spark-<minor>/test/java}). Spark 3.5
 * has no checkpoint ids, no read-to-write upgrade, no {@code release()} and no instance metrics.
 */
final class SparkApi {
  /** False: Spark 3.5 is older than 4.1. */
  static final boolean AT_LEAST_4_1 = false;

  private SparkApi() { }

  static StateStore getStore(StateStoreProvider p, long version) {
    return p.getStore(version);
  }

  /** What Spark 3.5 does instead: a second {@code getStore} of the same version. */
  static StateStore upgrade(StateStoreProvider p, ReadStateStore r, long version) {
    return p.getStore(version);
  }

  /** Spark 3.5 aborts a read store when it is done with it. */
  static void release(ReadStateStore r) {
    r.abort();
  }

  /** Spark 3.5 has no instance metrics: none. */
  static java.util.Map<String, Object> instanceMetrics(StateStore s) {
    return java.util.Map.of();
  }

  /** Spark 3.5 has no instance metrics: 0. */
  static int supportedInstanceMetrics(StateStoreProvider p) {
    return 0;
  }

  /**
   * Unloads every loaded provider and stops Spark's maintenance thread ({@code
   * StateStore.stop()}, which does not wait on 3.5). Spark 3.5 runs every provider's maintenance
   * on one thread and checks whether a provider is still active only after its maintenance, so
   * the providers a test class leaves behind (some pointing at a fault-injecting proxy that is
   * gone) would hold up the maintenance of the next test class's stores.
   */
  static void unloadStateStores() {
    org.apache.spark.sql.execution.streaming.state.StateStore$.MODULE$.stop();
  }
}
