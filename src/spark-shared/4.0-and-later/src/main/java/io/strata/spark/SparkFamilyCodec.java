// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.format.ColumnFamily;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.AvroStateEncoder;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBDataEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder;
import org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder;
import org.apache.spark.sql.execution.streaming.state.SingleValueStateEncoder;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.TestStateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * A column family encoded with Spark's own RocksDB state encoders (Spark's {@code
 * KeyStateEncoderSpec.toEncoder}, {@code UnsafeRowDataEncoder} or {@code AvroStateEncoder},
 * {@code SingleValueStateEncoder} or {@code MultiValuedStateEncoder}), behind the family's 2-byte
 * id. Reusing Spark's encoders makes the byte order of every key exactly what Spark's RocksDB
 * provider produces, which range scans rely on: with a {@code RangeKeyScanStateEncoderSpec} the
 * ordering columns are written big-endian with a sign/null marker, so iterating the family in
 * unsigned byte order returns keys ordered by those columns (transformWithState's timers and TTL
 * index depend on it).
 *
 * <p>Values: one value is Spark's encoding of the row; a multi-valued key holds its values as
 * Spark's {@code MultiValuedStateEncoder} lays them out ({@code [int length][row]} each,
 * separated by the byte {@code ','}), which is what RocksDB's string-append merge operator would
 * produce. Strata appends by read-modify-write within the version being built ({@link #append}),
 * so the delta carries the whole new list and no merge operator is needed.
 *
 * <p>Used for every family of a store with column families, and for a store whose key encoding
 * is a range scan. Stores without column families keep {@link RowCodec}'s format.
 */
final class SparkFamilyCodec implements FamilyCodec {
  private static final byte DELIMITER = ',';

  private final RocksDBKeyStateEncoder keys;
  private final RocksDBValueStateEncoder values;
  private final boolean rangeScan;

  /**
   * Builds the encoders Spark's RocksDB provider would build for this family.
   *
   * @param familyName the family's name (Avro looks its schemas up by it)
   * @param encodingFormat {@code unsaferow} or {@code avro}
   *     ({@code spark.sql.streaming.stateStore.encodingFormat})
   * @param schemaProvider the state schema provider Spark passed to {@code init} (Avro only)
   * @throws org.apache.spark.SparkUnsupportedOperationException from Spark's encoders for a key
   *     encoding they reject (for example a variable-size range-scan ordering column)
   */
  SparkFamilyCodec(String familyName, StructType keySchema, StructType valueSchema,
      KeyStateEncoderSpec spec, boolean multipleValues, String encodingFormat,
      Option<StateSchemaProvider> schemaProvider) {
    RocksDBDataEncoder data;
    if ("avro".equals(encodingFormat)) {
      if (schemaProvider.isDefined() && schemaProvider.get() instanceof TestStateSchemaProvider t) {
        // Spark's provider does the same for its unit-test schema provider.
        t.captureSchema(familyName, keySchema, valueSchema, (short) 0, (short) 0);
      }
      data = new AvroStateEncoder(spec, valueSchema, schemaProvider, familyName);
    } else {
      data = new UnsafeRowDataEncoder(spec, valueSchema);
    }
    this.keys = spec.toEncoder(data, true);
    this.values = multipleValues
        ? SparkEncoders.multiValued(data, valueSchema, 1) // one-byte DELIMITER
        : new SingleValueStateEncoder(data, valueSchema);
    this.rangeScan = SparkEncoders.supportsRangeScan(keys, spec);
  }

  @Override
  public byte[] encodeKey(int familyId, UnsafeRow key) {
    return withFamily(familyId, keys.encodeKey(key));
  }

  @Override
  public byte[] encodePrefix(int familyId, UnsafeRow prefix) {
    if (!keys.supportPrefixKeyScan()) {
      throw new UnsupportedOperationException("prefix scan needs a PrefixKeyScanStateEncoderSpec"
          + " or RangeKeyScanStateEncoderSpec");
    }
    return withFamily(familyId, keys.encodePrefixKey(prefix));
  }

  @Override
  public UnsafeRow decodeKey(byte[] key) {
    return keys.decodeKey(Arrays.copyOfRange(key, 2, key.length));
  }

  @Override
  public byte[] encodeValue(UnsafeRow value) {
    return values.encodeValue(value);
  }

  @Override
  public UnsafeRow decodeValue(byte[] value) {
    return value == null ? null : values.decodeValue(value);
  }

  @Override
  public boolean supportsPrefixScan() {
    return keys.supportPrefixKeyScan();
  }

  @Override
  public boolean supportsRangeScan() {
    return rangeScan;
  }

  @Override
  public boolean multipleValues() {
    return values.supportsMultipleValuesPerKey();
  }

  @Override
  public scala.collection.Iterator<UnsafeRow> decodeValues(byte[] value) {
    return values.decodeValues(value);
  }

  /**
   * The value bytes of a multi-valued key after appending {@code encoded} (each from {@link
   * #encodeValue}) to {@code existing} (null if the key has no value): the values joined by the
   * delimiter, as RocksDB's string-append merge operator joins them for Spark.
   */
  static byte[] append(byte[] existing, List<byte[]> encoded) {
    int size = existing == null ? -1 : existing.length;
    for (byte[] e : encoded) {
      size += 1 + e.length;
    }
    byte[] out = new byte[size];
    int pos = 0;
    if (existing != null) {
      System.arraycopy(existing, 0, out, 0, existing.length);
      pos = existing.length;
    }
    boolean first = existing == null;
    for (byte[] e : encoded) {
      if (!first) {
        out[pos++] = DELIMITER;
      }
      first = false;
      System.arraycopy(e, 0, out, pos, e.length);
      pos += e.length;
    }
    return out;
  }

  private static byte[] withFamily(int familyId, byte[] encoded) {
    byte[] prefix = ColumnFamily.keyPrefix(familyId);
    byte[] out = new byte[2 + encoded.length];
    out[0] = prefix[0];
    out[1] = prefix[1];
    System.arraycopy(encoded, 0, out, 2, encoded.length);
    return out;
  }
}
