// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;

/**
 * {@code UnsafeRow} &lt;-&gt; bytes for one column family of one store. Every encoded key starts
 * with the family's 2-byte big-endian id (io.strata.format.ColumnFamily#keyPrefix), so a family
 * is a contiguous key range and a prefix scan within a family is a byte-prefix scan.
 *
 * <p>Implementations are not thread-safe (projections and decoded rows are reused, as in Spark's
 * own encoders: a decoded row may be overwritten by the next decode of the same family); one task
 * uses a store at a time.
 */
interface FamilyCodec {
  /** The key bytes of {@code key} in family {@code familyId} (0..65535). */
  byte[] encodeKey(int familyId, UnsafeRow key);

  /**
   * The byte prefix shared by every key of family {@code familyId} whose leading columns equal
   * {@code prefix}.
   *
   * @throws UnsupportedOperationException if the family's key encoding has no prefix scan
   */
  byte[] encodePrefix(int familyId, UnsafeRow prefix);

  /** The key row of encoded key bytes (family id included). */
  UnsafeRow decodeKey(byte[] key);

  /** The value bytes of one value row. */
  byte[] encodeValue(UnsafeRow value);

  /** The (first) value row of value bytes; null for null. */
  UnsafeRow decodeValue(byte[] value);

  /** True if the key encoding supports prefix scans. */
  boolean supportsPrefixScan();

  /**
   * True if the key encoding preserves the order of the key's ordering columns in unsigned byte
   * order, so that a scan over {@code [encodeKey(start), encodeKey(end))} is a range scan.
   */
  boolean supportsRangeScan();

  /** True if the family keeps a list of values per key (merge, putList, valuesIterator). */
  boolean multipleValues();

  /**
   * Every value row of a multi-valued key's bytes; empty for null.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  scala.collection.Iterator<UnsafeRow> decodeValues(byte[] value);
}
