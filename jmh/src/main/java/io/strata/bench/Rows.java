// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The benchmark's state schema, as in the provider's unit test: key {@code (key1 string, key2
 * int)}, value {@code (value int)}. Key {@code i} is {@code ("key-" + i zero-padded to 8 digits,
 * i)}: 40 bytes as an UnsafeRow, all keys the same size. A value is 16 bytes.
 */
final class Rows {
  static final StructType KEY = new StructType()
      .add("key1", DataTypes.StringType)
      .add("key2", DataTypes.IntegerType);
  static final StructType VALUE = new StructType().add("value", DataTypes.IntegerType);

  private Rows() { }

  /** Keys 0 .. n-1, built once so that a measured call does not pay for building its key. */
  static UnsafeRow[] keys(int n) {
    UnsafeProjection p = UnsafeProjection.create(KEY);
    UnsafeRow[] out = new UnsafeRow[n];
    for (int i = 0; i < n; i++) {
      out[i] = p.apply(new GenericInternalRow(new Object[] {
          UTF8String.fromString(String.format("key-%08d", i)), i})).copy();
    }
    return out;
  }

  /** Values 0 .. n-1. */
  static UnsafeRow[] values(int n) {
    UnsafeProjection p = UnsafeProjection.create(VALUE);
    UnsafeRow[] out = new UnsafeRow[n];
    for (int i = 0; i < n; i++) {
      out[i] = p.apply(new GenericInternalRow(new Object[] {i})).copy();
    }
    return out;
  }
}
