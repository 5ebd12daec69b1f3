// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.MultiValuedStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBDataEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder;
import org.apache.spark.sql.types.StructType;

/**
 * Spark 4.2's RocksDB state encoders, as {@link SparkFamilyCodec} builds them; the 4.0 and 4.1
 * calls, which 4.2 changed, are in src/spark-shared/4.0-and-4.1.
 */
final class SparkEncoders {
  private SparkEncoders() { }

  /**
   * Spark's multi-valued value encoder.
   *
   * @param delimiterSize bytes between two values (4.2 takes it from the merge operator)
   */
  static RocksDBValueStateEncoder multiValued(RocksDBDataEncoder data, StructType valueSchema,
      int delimiterSize) {
    return new MultiValuedStateEncoder(data, valueSchema, delimiterSize);
  }

  /** What Spark 4.2's key encoder says (range-scan and timestamp specs). */
  static boolean supportsRangeScan(RocksDBKeyStateEncoder keys, KeyStateEncoderSpec spec) {
    return keys.supportsRangeScan();
  }
}
