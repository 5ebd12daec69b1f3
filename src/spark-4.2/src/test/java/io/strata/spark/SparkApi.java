// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import scala.Option;

/**
 * The state store calls whose signatures differ between Spark lines, as the Spark 4.2 tests make
 * them (the same class exists for each line under {@code src/spark-<minor>/test/java}).
 */
final class SparkApi {
  /**
   * True on Spark 4.1+: {@code putList}/{@code mergeList}, {@code release()}, the read-to-write
   * upgrade and instance metrics exist.
   */
  static final boolean AT_LEAST_4_1 = true;

  private SparkApi() { }

  static StateStore getStore(StateStoreProvider p, long version) {
    return p.getStore(version, Option.empty(), false, false);
  }

  static StateStore upgrade(StateStoreProvider p, ReadStateStore r, long version) {
    return p.upgradeReadStoreToWriteStore(r, version, Option.empty(), false);
  }

  static void putList(StateStore s, UnsafeRow key, UnsafeRow[] values, String cf) {
    s.putList(key, values, cf);
  }

  static void mergeList(StateStore s, UnsafeRow key, UnsafeRow[] values, String cf) {
    s.mergeList(key, values, cf);
  }

  static void release(ReadStateStore r) {
    r.release();
  }

  /** The store's instance metrics by name. */
  static java.util.Map<String, Object> instanceMetrics(StateStore s) {
    java.util.Map<String, Object> out = new java.util.HashMap<>();
    Scala.javaMap(s.metrics().instanceMetrics()).forEach((m, v) -> out.put(m.name(), v));
    return out;
  }

  /** How many instance metrics the provider declares. */
  static int supportedInstanceMetrics(StateStoreProvider p) {
    return p.supportedInstanceMetrics().size();
  }

  /**
   * Nothing on 4.x: Spark's maintenance unloads the providers of stopped queries (in 4.1 {@code
   * StateStore.stop()} can wait 300 s on a running maintenance task; see {@code
   * SparkS3Harness.wipeLocalState}).
   */
  static void unloadStateStores() { }
}
