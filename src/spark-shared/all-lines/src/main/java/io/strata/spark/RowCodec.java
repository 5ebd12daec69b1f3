// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * {@code UnsafeRow} &lt;-&gt; bytes for a store without column families (Strata's format since
 * 0.1; stores with column families, or with a range-scan key encoding, use {@link
 * SparkFamilyCodec}).
 *
 * <p>Every key starts with a 2-byte big-endian column family id (0 for {@code default}). Then:
 * <ul>
 *   <li>no prefix scan: the key row's bytes;
 *   <li>prefix scan over the first {@code n} columns: a 4-byte big-endian length of the prefix
 *       row, the prefix row's bytes, then the bytes of a row of the remaining columns. Equal
 *       prefixes therefore share a byte prefix, so a prefix scan is a RocksDB range scan.
 * </ul>
 * Values are the value row's bytes. Rows passed in may be reused by Spark, so bytes are copied.
 * One value per key. Not thread-safe (projections keep buffers); one task uses it at a time.
 */
final class RowCodec implements FamilyCodec {
  private final int numKeyFields;
  private final int numValueFields;
  private final int prefixCols;
  private final UnsafeProjection prefixProjection;
  private final UnsafeProjection remainderProjection;
  private final UnsafeProjection joinProjection;
  private final JoinedRow joined = new JoinedRow();

  /**
   * @param keySchema the key rows' schema
   * @param valueSchema the value rows' schema
   * @param prefixCols how many leading key columns form the prefix of prefix scans; 0 for none
   *     (Spark 3.5's {@code numColsPrefixKey}, or a 4.x {@code PrefixKeyScanStateEncoderSpec}'s)
   * @throws IllegalArgumentException if {@code prefixCols} is negative or not less than the
   *     number of key columns
   */
  RowCodec(StructType keySchema, StructType valueSchema, int prefixCols) {
    this.numKeyFields = keySchema.length();
    this.numValueFields = valueSchema.length();
    this.prefixCols = prefixCols;
    if (prefixCols > 0 && prefixCols < numKeyFields) {
      StructField[] fields = keySchema.fields();
      List<Expression> prefix = new ArrayList<>();
      List<Expression> rest = new ArrayList<>();
      for (int i = 0; i < fields.length; i++) {
        Expression ref = new BoundReference(i, fields[i].dataType(), fields[i].nullable());
        (i < prefixCols ? prefix : rest).add(ref);
      }
      this.prefixProjection = UnsafeProjection.create(Scala.seq(prefix));
      this.remainderProjection = UnsafeProjection.create(Scala.seq(rest));
      this.joinProjection = UnsafeProjection.create(keySchema);
    } else if (prefixCols == 0) {
      this.prefixProjection = null;
      this.remainderProjection = null;
      this.joinProjection = null;
    } else {
      throw new IllegalArgumentException("prefix scan over " + prefixCols + " of "
          + numKeyFields + " key columns is not supported");
    }
  }

  @Override
  public boolean supportsPrefixScan() {
    return prefixCols > 0;
  }

  /** False: this format keeps keys as UnsafeRow bytes, whose order is not the keys' order. */
  @Override
  public boolean supportsRangeScan() {
    return false;
  }

  @Override
  public boolean multipleValues() {
    return false;
  }

  @Override
  public scala.collection.Iterator<UnsafeRow> decodeValues(byte[] value) {
    throw new IllegalStateException("This encoder doesn't support multiple values!");
  }

  @Override
  public byte[] encodeKey(int cfId, UnsafeRow key) {
    if (prefixCols == 0) {
      return withFamily(cfId, key, false, null);
    }
    UnsafeRow prefix = prefixProjection.apply(key);
    UnsafeRow rest = remainderProjection.apply(key);
    return withFamily(cfId, prefix, true, rest);
  }

  /** The byte prefix shared by every key whose first columns equal {@code prefixRow}. */
  @Override
  public byte[] encodePrefix(int cfId, UnsafeRow prefixRow) {
    if (prefixCols == 0) {
      throw new UnsupportedOperationException("prefix scan needs prefix columns");
    }
    return withFamily(cfId, prefixRow, true, null);
  }

  @Override
  public UnsafeRow decodeKey(byte[] bytes) {
    if (prefixCols == 0) {
      return pointTo(bytes, 2, bytes.length - 2, numKeyFields);
    }
    int prefixLen = ByteBuffer.wrap(bytes, 2, 4).getInt();
    UnsafeRow prefix = pointTo(bytes, 6, prefixLen, prefixCols);
    UnsafeRow rest = pointTo(bytes, 6 + prefixLen, bytes.length - 6 - prefixLen,
        numKeyFields - prefixCols);
    return joinProjection.apply(joined.apply(prefix, rest)).copy();
  }

  @Override
  public byte[] encodeValue(UnsafeRow value) {
    byte[] out = new byte[value.getSizeInBytes()];
    Platform.copyMemory(value.getBaseObject(), value.getBaseOffset(), out,
        Platform.BYTE_ARRAY_OFFSET, out.length);
    return out;
  }

  @Override
  public UnsafeRow decodeValue(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    return pointTo(bytes, 0, bytes.length, numValueFields);
  }

  private static UnsafeRow pointTo(byte[] bytes, int offset, int length, int fields) {
    UnsafeRow row = new UnsafeRow(fields);
    row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + offset, length);
    return row;
  }

  /** [cf id]([length of a])[row a]([row b]). */
  private static byte[] withFamily(int cfId, UnsafeRow a, boolean lengthPrefixed, UnsafeRow b) {
    int aLen = a.getSizeInBytes();
    int header = lengthPrefixed ? 6 : 2;
    int total = header + aLen + (b == null ? 0 : b.getSizeInBytes());
    byte[] out = new byte[total];
    out[0] = (byte) (cfId >>> 8);
    out[1] = (byte) cfId;
    if (lengthPrefixed) {
      ByteBuffer.wrap(out, 2, 4).putInt(aLen);
    }
    Platform.copyMemory(a.getBaseObject(), a.getBaseOffset(), out,
        Platform.BYTE_ARRAY_OFFSET + header, aLen);
    if (b != null) {
      Platform.copyMemory(b.getBaseObject(), b.getBaseOffset(), out,
          Platform.BYTE_ARRAY_OFFSET + header + aLen, b.getSizeInBytes());
    }
    return out;
  }
}
