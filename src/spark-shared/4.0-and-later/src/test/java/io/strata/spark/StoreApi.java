// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The state store calls of tests shared by every Spark line, as Spark 4.x makes them (column
 * family arguments, key encoder specs); Spark 3.5 has its own copy under src/spark-3.5.
 */
final class StoreApi {
  private StoreApi() { }

  /** Initialises {@code p} for a store without column families or prefix scans. */
  static void init(StrataStateStoreProvider p, StateStoreId id, StructType key, StructType value,
      SQLConf sql, Configuration hadoop) {
    p.init(id, key, value, new NoPrefixKeyStateEncoderSpec(key), false,
        new StateStoreConf(sql, Scala.map(Map.of())), hadoop, false, Option.empty());
  }

  static void put(StateStore s, UnsafeRow key, UnsafeRow value) {
    s.put(key, value, StateStore.DEFAULT_COL_FAMILY_NAME());
  }

  static UnsafeRow get(ReadStateStore s, UnsafeRow key) {
    return s.get(key, StateStore.DEFAULT_COL_FAMILY_NAME());
  }

  static void remove(StateStore s, UnsafeRow key) {
    s.remove(key, StateStore.DEFAULT_COL_FAMILY_NAME());
  }

  static scala.collection.Iterator<UnsafeRowPair> iterator(ReadStateStore s) {
    return s.iterator(StateStore.DEFAULT_COL_FAMILY_NAME());
  }
}
