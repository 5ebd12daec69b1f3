// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.format.ColumnFamily;
import io.strata.metrics.RequestCounter;
import io.strata.sync.LocalStateReadException;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.runtime.BoxedUnit;

/**
 * A store handle on Spark 4.x: {@link StrataStoreBase} (the life cycle, reads, writes and the
 * commit every line shares) plus what Spark 4 added to the state store API: column families
 * (transformWithState, stream-stream join state format 3), multiple values per key (ListState),
 * {@code StateStoreIterator} scans, the checkpoint info of checkpoint format 2, and the helpers
 * behind Spark 4.2's scans.
 *
 * <p>Each 4.x line's adapter ({@code StrataStateStore} under {@code src/spark-<minor>/}) adds
 * what its Spark declares differently: {@code metrics()} (the {@code StateStoreMetrics}
 * constructor changed in 4.1) and Spark 4.2's scans ({@code rangeScan}, {@code
 * prefixScanWithMultiValues}, {@code iteratorWithMultiValues}, {@code allColumnFamilyNames}),
 * which forward to the helpers here. {@code release()}, {@code putList} and {@code mergeList}
 * (4.1+) are plain public methods, unused on 4.0.
 */
abstract class AbstractStrataStore extends StrataStoreBase implements StateStore {
  /**
   * @param provider the provider holding the task lock for this handle
   * @param core the loaded store, at {@code version}
   * @param version the loaded version
   * @param readOnly READ_ONLY (a read store) or UPDATING (a write store)
   * @param requests the provider's S3 request counter
   * @param atStart its counts when the load started (metrics report the batch's requests)
   */
  AbstractStrataStore(AbstractStrataProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    super(provider, core, version, readOnly, requests, atStart);
  }

  @Override
  AbstractStrataProvider provider() {
    return (AbstractStrataProvider) super.provider();
  }

  // ------------------------------------------------------------------ column families

  /**
   * Creates the column family {@code colFamilyName} in the version being built unless it exists
   * (Spark's transformWithState calls this for every state variable in every batch). The
   * name-to-id mapping is committed in this version's manifest; the encoders are Spark's for
   * {@code keyStateEncoderSpec} (see {@link SparkFamilyCodec}).
   *
   * @throws org.apache.spark.SparkUnsupportedOperationException {@code
   *     STATE_STORE_UNSUPPORTED_OPERATION} without column families, {@code
   *     STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME} for an empty name, one with
   *     leading or trailing whitespace, or {@code default} unless internal, {@code
   *     STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS} for a non-internal name
   *     starting with {@code $}
   */
  @Override
  public void createColFamilyIfAbsent(String colFamilyName, StructType keySchema,
      StructType valueSchema, KeyStateEncoderSpec keyStateEncoderSpec,
      boolean useMultipleValuesPerKey, boolean isInternal) {
    checkUpdating("createColFamilyIfAbsent");
    provider().checkFamilyCreationOrRemoval("create_col_family", colFamilyName, isInternal);
    if (ColumnFamily.DEFAULT_NAME.equals(colFamilyName)) {
      return; // exists in every store, with the encoders given at init
    }
    boolean exists = core().columnFamilies().byName(colFamilyName).isPresent();
    provider().declareFamily(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec,
        useMultipleValuesPerKey, !exists);
    if (!exists) {
      prepareWrite();
    }
    core().createColumnFamily(colFamilyName, isInternal);
  }

  /**
   * Removes the column family and every key in it from the version being built (each key gets a
   * tombstone in this version's delta); its id is never reused.
   *
   * @return false if it does not exist
   * @throws org.apache.spark.SparkUnsupportedOperationException as {@link
   *     #createColFamilyIfAbsent} for a non-internal family (so {@code default} and names
   *     starting with {@code $} are refused, as Spark's RocksDB provider refuses them)
   */
  @Override
  public boolean removeColFamilyIfExists(String colFamilyName) {
    checkUpdating("removeColFamilyIfExists");
    provider().checkFamilyCreationOrRemoval("remove_col_family", colFamilyName, false);
    prepareWrite();
    try {
      // The codec stays registered: an abort brings the family back, and a re-creation
      // replaces the codec (createColFamilyIfAbsent of a family that does not exist).
      return core().removeColumnFamily(colFamilyName);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ------------------------------------------------------------------ reads

  /**
   * Every value of {@code key} in a multi-valued family (transformWithState's ListState), in
   * the order they were put or merged; empty if the key has none.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public Iterator<UnsafeRow> valuesIterator(UnsafeRow key, String colFamilyName) {
    checkReadable("valuesIterator");
    checkKey(key);
    Family f = family("valuesIterator", colFamilyName);
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("valuesIterator requires a encoder that supports multiple "
          + "values for a single key.");
    }
    return f.codec().decodeValues(read(f.codec().encodeKey(f.id(), key)));
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey, String colFamilyName) {
    return closing(scanPrefix(prefixKey, colFamilyName));
  }

  /**
   * Every key of the family in unsigned byte order of its encoding (for a range-scan encoding,
   * ordered by the ordering columns), committed state overlaid with this version's writes as
   * they are when the iterator is created.
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> iterator(String colFamilyName) {
    return closing(scanAll(colFamilyName));
  }

  /** {@code scan} as Spark 4's closeable iterator. */
  private static StateStoreIterator<UnsafeRowPair> closing(ScanIterator scan) {
    return new StateStoreIterator<>(scan, () -> {
      scan.close();
      return BoxedUnit.UNIT;
    });
  }


  // ------------------------------------------------------------------ Spark 4.2 scans

  /**
   * Pairs with keys in {@code [start, end)} in the order of the family's key encoding (Spark
   * 4.2's {@code rangeScan}, used by transformWithState timers and TTL; the encoding must be
   * order-preserving, e.g. a range-scan spec). Committed state overlaid with this version's
   * writes as they are when the iterator is created.
   *
   * @param start first key, inclusive; empty to start at the family's first key
   * @param end end key, exclusive; empty to run to the family's last key
   * @param multipleValues expand a multi-valued key into one pair per value ({@code
   *     rangeScanWithMultiValues})
   * @throws IllegalArgumentException if the family's key encoding does not support range scans
   * @throws IllegalStateException if {@code multipleValues} and the family is not multi-valued
   */
  final StateStoreIterator<UnsafeRowPair> rangeScan(Optional<UnsafeRow> start,
      Optional<UnsafeRow> end, String colFamilyName, boolean multipleValues) {
    String op = multipleValues ? "rangeScanWithMultiValues" : "rangeScan";
    checkReadable(op);
    Family f = family(op, colFamilyName);
    if (!f.codec().supportsRangeScan()) {
      throw new IllegalArgumentException("requirement failed: Range scan requires an encoder "
          + "that supports range scanning! (" + provider() + ", column family " + colFamilyName
          + ")");
    }
    byte[] prefix = ColumnFamily.keyPrefix(f.id());
    byte[] from = start.map(k -> f.codec().encodeKey(f.id(), k)).orElse(null);
    byte[] until = end.map(k -> f.codec().encodeKey(f.id(), k)).orElse(null);
    CloseableIterator<KeyValue> it = failingAsTask(() -> core().scan(prefix, from, until));
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    return multipleValues ? expanded(multiValued(f), it) : closing(new ScanIterator(it,
        kv -> pair.withRows(f.codec().decodeKey(kv.key()), f.codec().decodeValue(kv.value()))));
  }

  /**
   * Every (key, value) pair of a multi-valued family, one pair per value, keys in encoding order
   * (Spark 4.2's {@code iteratorWithMultiValues}, or its {@code prefixScanWithMultiValues} when
   * {@code prefixKey} is present).
   *
   * @throws IllegalStateException if the family is not multi-valued
   * @throws IllegalArgumentException for a prefix on a family without a prefix-scan encoding
   */
  final StateStoreIterator<UnsafeRowPair> multiValueScan(Optional<UnsafeRow> prefixKey,
      String colFamilyName) {
    String op = prefixKey.isPresent() ? "prefixScanWithMultiValues" : "iteratorWithMultiValues";
    checkReadable(op);
    Family f = family(op, colFamilyName);
    FamilyCodec codec = multiValued(f);
    byte[] prefix;
    if (prefixKey.isPresent()) {
      if (!codec.supportsPrefixScan()) {
        throw new IllegalArgumentException("requirement failed: prefixScanWithMultiValues "
            + "requires encoder supporting prefix scan! (" + provider() + ", column family "
            + colFamilyName + ")");
      }
      prefix = codec.encodePrefix(f.id(), prefixKey.get());
    } else {
      prefix = ColumnFamily.keyPrefix(f.id());
    }
    return expanded(codec, failingAsTask(() -> core().scan(prefix)));
  }

  /**
   * The names of the column families of the version being built, {@code default} included
   * (Spark 4.2's {@code allColumnFamilyNames}).
   */
  final java.util.Set<String> familyNames() {
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    names.add(ColumnFamily.DEFAULT_NAME);
    for (ColumnFamily cf : core().columnFamilies().families()) {
      names.add(cf.name());
    }
    return names;
  }

  private static FamilyCodec multiValued(Family f) {
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Multi-value iterator operation requires an encoder which "
          + "supports multiple values for a single key");
    }
    return f.codec();
  }

  private static StateStoreIterator<UnsafeRowPair> expanded(FamilyCodec codec,
      CloseableIterator<KeyValue> it) {
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    Iterator<UnsafeRowPair> rows = new AbstractIterator<>() {
      private UnsafeRow key;
      private Iterator<UnsafeRow> values = scala.collection.Iterator$.MODULE$.empty();

      @Override
      public boolean hasNext() {
        while (!values.hasNext() && it.hasNext()) {
          KeyValue kv = it.next();
          key = codec.decodeKey(kv.key());
          values = codec.decodeValues(kv.value());
        }
        return values.hasNext();
      }

      @Override
      public UnsafeRowPair next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return pair.withRows(key, values.next());
      }
    };
    return new StateStoreIterator<>(rows, () -> {
      it.close();
      return BoxedUnit.UNIT;
    });
  }

  // ------------------------------------------------------------------ writes

  /**
   * Replaces the values of {@code key} in a multi-valued family with {@code values} (in order).
   *
   * @throws IllegalArgumentException for a null or empty array or a null element
   * @throws IllegalStateException if the family is not multi-valued
   */
  public void putList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkUpdating("putList");
    checkKey(key);
    checkValues(values, "put");
    Family f = family("put", colFamilyName);
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Multi-value put operation requires an encoder which "
          + "supports multiple values for a single key");
    }
    write(f.codec().encodeKey(f.id(), key), SparkFamilyCodec.append(null, encode(f, values)));
  }

  /**
   * Appends {@code value} to the values of {@code key} in a multi-valued family. Read-modify-
   * write within the version being built: this version's delta carries the whole new list.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public void merge(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkUpdating("merge");
    Family f = family("merge", colFamilyName);
    checkMergeable(f);
    checkKey(key);
    if (value == null) {
      throw new IllegalArgumentException("requirement failed: Cannot merge a null value");
    }
    append(f, key, List.of(f.codec().encodeValue(value)));
  }

  /** Appends every element of {@code values}, in order; see {@link #merge}. */
  public void mergeList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkUpdating("mergeList");
    Family f = family("merge", colFamilyName);
    checkMergeable(f);
    checkKey(key);
    checkValues(values, "merge");
    append(f, key, encode(f, values));
  }

  private void append(Family f, UnsafeRow key, List<byte[]> encoded) {
    byte[] k = f.codec().encodeKey(f.id(), key);
    write(k, SparkFamilyCodec.append(read(k), encoded));
  }

  private static List<byte[]> encode(Family f, UnsafeRow[] values) {
    List<byte[]> out = new ArrayList<>(values.length);
    for (UnsafeRow v : values) {
      out.add(f.codec().encodeValue(v));
    }
    return out;
  }

  private static void checkMergeable(Family f) {
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Merge operation requires an encoder which supports "
          + "multiple values for a single key");
    }
  }

  private static void checkValues(UnsafeRow[] values, String op) {
    if (values == null) {
      throw new IllegalArgumentException("requirement failed: Cannot " + op + " a null value");
    }
    if (values.length == 0) {
      throw new IllegalArgumentException("requirement failed: Cannot " + op
          + " an empty list of values");
    }
    for (UnsafeRow v : values) {
      if (v == null) {
        throw new IllegalArgumentException("requirement failed: Cannot " + op
            + " a null value in the array");
      }
    }
  }

  // ------------------------------------------------------------------ checkpoint ids

  @Override
  public StateStoreCheckpointInfo getStateStoreCheckpointInfo() {
    int partition = provider().stateStoreId().partitionId();
    var committed = committed();
    if (committed == null) {
      Optional<String> attempt = core().loadedAttempt();
      return new StateStoreCheckpointInfo(partition, version(), Scala.some(attempt.orElse(null)),
          Scala.none());
    }
    return new StateStoreCheckpointInfo(partition, committed.manifest().version(),
        Scala.some(committed.manifest().attempt()),
        Scala.some(committed.manifest().parentAttempt().orElse(null)));
  }
}
