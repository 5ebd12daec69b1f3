// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.MultiValuedStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBDataEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder;
import org.apache.spark.sql.types.StructType;

/**
 * Spark 4.0 and 4.1's RocksDB state encoders, as {@link SparkFamilyCodec} builds them. Spark 4.2
 * changed both calls (the multi-valued encoder takes its delimiter size, the key encoder says
 * whether it scans in order), so 4.2 has its own {@code SparkEncoders} in src/spark-4.2.
 */
final class SparkEncoders {
  private SparkEncoders() { }

  /**
   * Spark's multi-valued value encoder.
   *
   * @param delimiterSize bytes between two values (ignored: 4.0 and 4.1 assume one byte)
   */
  static RocksDBValueStateEncoder multiValued(RocksDBDataEncoder data, StructType valueSchema,
      int delimiterSize) {
    return new MultiValuedStateEncoder(data, valueSchema);
  }

  /** True for a range-scan spec, the only order-preserving key encoding before Spark 4.2. */
  static boolean supportsRangeScan(RocksDBKeyStateEncoder keys, KeyStateEncoderSpec spec) {
    return spec instanceof RangeKeyScanStateEncoderSpec;
  }
}
