// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;

/**
 * The state store calls of tests shared by every Spark line, as Spark 3.5 makes them (no column
 * families; {@code numColsPrefixKey} instead of key encoder specs).
 */
final class StoreApi {
  private StoreApi() { }

  /** Initialises {@code p} for a store without prefix scans. */
  static void init(StrataStateStoreProvider p, StateStoreId id, StructType key, StructType value,
      SQLConf sql, Configuration hadoop) {
    p.init(id, key, value, 0, new StateStoreConf(sql, Scala.map(Map.of())), hadoop);
  }

  static void put(StateStore s, UnsafeRow key, UnsafeRow value) {
    s.put(key, value);
  }

  static UnsafeRow get(ReadStateStore s, UnsafeRow key) {
    return s.get(key);
  }

  static void remove(StateStore s, UnsafeRow key) {
    s.remove(key);
  }

  static scala.collection.Iterator<UnsafeRowPair> iterator(ReadStateStore s) {
    return s.iterator();
  }
}
