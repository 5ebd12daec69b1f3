// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** One-integer key and value schemas and their rows, for tests that drive a provider directly. */
final class TestRows {
  static final StructType KEY = new StructType().add("k", DataTypes.IntegerType);
  static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType);

  private TestRows() { }

  /** A one-column row of schema {@code t} holding {@code i}, copied. */
  static UnsafeRow row(StructType t, int i) {
    return UnsafeProjection.create(t).apply(new GenericInternalRow(new Object[] {i})).copy();
  }
}
