// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkUnsupportedOperationException;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.TestStateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * Column families, multiple values per key and range scans at the provider level, on a {@code
 * file:} checkpoint: the behaviour (and Spark error conditions) of Spark's RocksDB provider, whose
 * own tests these mirror, and restores on a fresh provider with a new local directory (as after
 * losing the executor's disk). Where order matters, Spark's RocksDB provider runs the same
 * operations and must return the same sequence.
 */
class ColumnFamiliesTest {
  @TempDir Path tmp;

  static final StructType KEY = StrataStateStoreProviderTest.KEY;
  static final StructType VALUE = StrataStateStoreProviderTest.VALUE;
  /** Key of a range-scan family: ordered by ts, then the rest (like TWS's timer index). */
  static final StructType TS_KEY = new StructType().add("ts", DataTypes.LongType, false)
      .add("name", DataTypes.StringType, false);
  static final StructType DOUBLE_KEY = new StructType().add("d", DataTypes.DoubleType, false)
      .add("i", DataTypes.IntegerType, true);
  private static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";

  private int localDirs;

  private StateStoreProvider strata(KeyStateEncoderSpec spec, boolean cf, boolean multi) {
    return init(new StrataStateStoreProvider(), "ckpt", spec, cf, multi);
  }

  private StateStoreProvider init(StateStoreProvider p, String ckpt, KeyStateEncoderSpec spec,
      boolean cf, boolean multi) {
    return init(p, ckpt, spec, cf, multi, "unsaferow");
  }

  /** {@code encoding}: spark.sql.streaming.stateStore.encodingFormat, unsaferow or avro. */
  private StateStoreProvider init(StateStoreProvider p, String ckpt, KeyStateEncoderSpec spec,
      boolean cf, boolean multi, String encoding) {
    SQLConf sql = new SQLConf();
    sql.setConfString("spark.sql.streaming.stateStore.encodingFormat", encoding);
    sql.setConfString("spark.sql.streaming.stateStore.strata.localDir",
        tmp.resolve("local-" + (localDirs++)).toString());
    Configuration hadoop = new Configuration();
    hadoop.set("sql.streaming.runId", UUID.randomUUID().toString());
    p.init(new StateStoreId(tmp.resolve(ckpt).toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), spec.keySchema(), VALUE, spec, cf,
        new StateStoreConf(sql, Scala.map(Map.of())), hadoop, multi,
        Option.apply(new TestStateSchemaProvider()));
    return p;
  }

  static UnsafeRow key(String s, int i) {
    return StrataStateStoreProviderTest.key(s, i);
  }

  static UnsafeRow value(int v) {
    return StrataStateStoreProviderTest.value(v);
  }

  static UnsafeRow tsKey(long ts, String name) {
    return UnsafeProjection.create(TS_KEY).apply(
        new GenericInternalRow(new Object[] {ts, UTF8String.fromString(name)})).copy();
  }

  static UnsafeRow doubleKey(double d, Integer i) {
    return UnsafeProjection.create(DOUBLE_KEY).apply(
        new GenericInternalRow(new Object[] {d, i})).copy();
  }

  static List<String> keys(StateStoreIterator<UnsafeRowPair> it, Function<UnsafeRow, String> f) {
    List<String> out = new ArrayList<>();
    while (it.hasNext()) {
      UnsafeRowPair p = it.next();
      out.add(f.apply(p.key()) + "=" + p.value().getInt(0));
    }
    return out;
  }

  static String kv(UnsafeRow k) {
    return k.getUTF8String(0) + "/" + k.getInt(1);
  }

  static List<Integer> values(scala.collection.Iterator<UnsafeRow> it) {
    List<Integer> out = new ArrayList<>();
    while (it.hasNext()) {
      out.add(it.next().getInt(0));
    }
    return out;
  }

  @Test
  void familyNamesAreValidatedWithSparksErrorConditions() {
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s = SparkApi.getStore(p, 0);
    for (String name : List.of("default", "", " ", "    ", " default", " default ")) {
      SparkUnsupportedOperationException e = assertThrows(SparkUnsupportedOperationException.class,
          () -> s.createColFamilyIfAbsent(name, KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY),
              false, false));
      assertEquals("STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME", e.getCondition());
      assertEquals(Map.of("operationName", "create_col_family", "colFamilyName", name),
          e.getMessageParameters());
    }
    for (String name : List.of("$internal", "$test", "$$$235")) {
      SparkUnsupportedOperationException e = assertThrows(SparkUnsupportedOperationException.class,
          () -> s.createColFamilyIfAbsent(name, KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY),
              false, false));
      assertEquals("STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS", e.getCondition());
      assertEquals(Map.of("colFamilyName", name), e.getMessageParameters());
    }
    // Internal families may use '$' and re-declare "default".
    s.createColFamilyIfAbsent("$internal", KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY),
        false, true);
    s.createColFamilyIfAbsent("default", KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), false,
        true);
    SparkUnsupportedOperationException rm = assertThrows(SparkUnsupportedOperationException.class,
        () -> s.removeColFamilyIfExists("$internal"));
    assertEquals("STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS", rm.getCondition());
    s.abort();
    p.close();
  }

  @Test
  void operationsOnAnAbsentFamilyFailWithSparksErrorConditions() {
    for (boolean cf : new boolean[] {false, true}) {
      StateStoreProvider p = strata(new PrefixKeyScanStateEncoderSpec(KEY, 1), cf, false);
      StateStore s = SparkApi.getStore(p, 0);
      Map<String, Runnable> ops = new java.util.LinkedHashMap<>();
      ops.put("put", () -> s.put(key("a", 1), value(1), "test"));
      ops.put("remove", () -> s.remove(key("a", 1), "test"));
      ops.put("get", () -> s.get(key("a", 1), "test"));
      ops.put("iterator", () -> s.iterator("test"));
      ops.put("merge", () -> s.merge(key("a", 1), value(1), "test"));
      ops.put("prefixScan", () -> s.prefixScan(StrataStateStoreProviderTest.prefix("a"), "test"));
      ops.put("valuesIterator", () -> s.valuesIterator(key("a", 1), "test"));
      for (Map.Entry<String, Runnable> op : ops.entrySet()) {
        SparkUnsupportedOperationException e = assertThrows(
            SparkUnsupportedOperationException.class, op.getValue()::run, op.getKey());
        if (cf) {
          assertEquals("STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY",
              e.getCondition());
          assertEquals(Map.of("operationType", op.getKey(), "colFamilyName", "test"),
              e.getMessageParameters());
        } else {
          assertEquals("STATE_STORE_UNSUPPORTED_OPERATION", e.getCondition());
          assertEquals(Map.of("operationType", op.getKey(), "entity",
              "multiple column families is disabled in StrataStateStoreProvider"),
              e.getMessageParameters());
        }
      }
      if (!cf) {
        SparkUnsupportedOperationException e = assertThrows(
            SparkUnsupportedOperationException.class, () -> s.createColFamilyIfAbsent("x", KEY,
                VALUE, new NoPrefixKeyStateEncoderSpec(KEY), false, false));
        assertEquals("STATE_STORE_UNSUPPORTED_OPERATION", e.getCondition());
      }
      s.abort();
      p.close();
    }
  }

  /**
   * {@link AbstractStrataProvider#openEmptyStore}, the write half of a rewrite on every Spark 4.x
   * line (4.2's {@code loadEmpty} forwards to it; 4.0 and 4.1 have no {@code loadEmpty}): over
   * a store holding versions 1 and 2 (default family and family {@code abc}), a new provider's
   * empty store at 2 holds nothing and no family, takes a family of its own and commits 3; a
   * fresh provider loads exactly that at 3.
   */
  @Test
  void openEmptyStoreRewritesAStoreThatAFreshProviderLoads() {
    NoPrefixKeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(KEY);
    StateStoreProvider old = strata(spec, true, false);
    for (int v = 0; v < 2; v++) {
      StateStore s = SparkApi.getStore(old, v);
      s.createColFamilyIfAbsent("abc", KEY, VALUE, spec, false, false);
      s.put(key("old", v), value(v), "abc");
      s.put(key("old", v), value(v), "default");
      assertEquals(v + 1, s.commit());
    }
    old.close();
    StateStoreProvider w = strata(spec, true, false);
    StateStore e = ((AbstractStrataProvider) w).openEmptyStore(2);
    assertEquals(2, e.version());
    assertEquals(List.of(), keys(e.iterator("default"), ColumnFamiliesTest::kv));
    assertThrows(SparkUnsupportedOperationException.class, () -> e.iterator("abc"),
        "no family of the old layout");
    e.createColFamilyIfAbsent("xyz", KEY, VALUE, spec, false, false);
    e.put(key("new", 1), value(10), "xyz");
    e.put(key("new", 2), value(20), "default");
    assertEquals(3, e.commit());
    w.close();
    StateStoreProvider fresh = strata(spec, true, false);
    StateStore s3 = SparkApi.getStore(fresh, 3);
    s3.createColFamilyIfAbsent("xyz", KEY, VALUE, spec, false, false);
    assertEquals(List.of("new/1=10"), keys(s3.iterator("xyz"), ColumnFamiliesTest::kv));
    assertEquals(List.of("new/2=20"), keys(s3.iterator("default"), ColumnFamiliesTest::kv));
    s3.abort();
    fresh.close();
  }

  /**
   * Spark's "get, put, iterator, commit, load with multiple column families": families are
   * independent, a reload of version 0 has none, and a fresh provider (new local directory)
   * restores version 1 with its families from the checkpoint alone.
   */
  @Test
  void familiesAreIndependentAndRestoredOnAFreshProvider() {
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s = SparkApi.getStore(p, 0);
    for (String cf : List.of("abc", "xyz")) {
      s.createColFamilyIfAbsent(cf, KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), false,
          false);
    }
    s.put(key("a", 1), value(1), "abc");
    s.put(key("a", 1), value(2), "xyz");
    s.put(key("d", 0), value(9), "default");
    assertEquals(1, s.get(key("a", 1), "abc").getInt(0));
    assertEquals(List.of("a/1=2"), keys(s.iterator("xyz"), ColumnFamiliesTest::kv));
    assertEquals(1, s.commit());

    StateStore s0 = SparkApi.getStore(p, 0);
    SparkUnsupportedOperationException e = assertThrows(SparkUnsupportedOperationException.class,
        () -> s0.get(key("a", 1), "abc"));
    assertEquals("STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY", e.getCondition());
    s0.abort();
    p.close();

    StateStoreProvider fresh = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s1 = SparkApi.getStore(fresh, 1);
    for (String cf : List.of("xyz", "abc")) { // declared in another order: ids do not change
      s1.createColFamilyIfAbsent(cf, KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), false,
          false);
    }
    assertEquals(List.of("a/1=1"), keys(s1.iterator("abc"), ColumnFamiliesTest::kv));
    assertEquals(List.of("a/1=2"), keys(s1.iterator("xyz"), ColumnFamiliesTest::kv));
    assertEquals(List.of("d/0=9"), keys(s1.iterator("default"), ColumnFamiliesTest::kv));
    s1.put(key("b", 1), value(3), "abc");
    assertEquals(List.of("a/1=1", "b/1=3"), keys(s1.iterator("abc"), ColumnFamiliesTest::kv));
    assertEquals(List.of("a/1=2"), keys(s1.iterator("xyz"), ColumnFamiliesTest::kv));
    assertEquals(2, s1.commit());
    fresh.close();
  }

  /**
   * Removing a family drops its keys (persisted by the version's delta, so a fresh provider does
   * not see them either), for every key encoding; re-creating it starts empty; an abort undoes a
   * removal. Spark's "validate rocksdb removeColFamilyIfExists correctness".
   */
  @Test
  void removingAFamilyDropsItsKeysDurably() {
    List<KeyStateEncoderSpec> specs = List.of(new NoPrefixKeyStateEncoderSpec(TS_KEY),
        new PrefixKeyScanStateEncoderSpec(TS_KEY, 1),
        new RangeKeyScanStateEncoderSpec(TS_KEY, Scala.seq(List.of(0))));
    int n = 0;
    for (KeyStateEncoderSpec spec : specs) {
      String ckpt = "ckpt-remove-" + (n++);
      StateStoreProvider p = init(new StrataStateStoreProvider(), ckpt,
          new NoPrefixKeyStateEncoderSpec(KEY), true, false);
      StateStore s = SparkApi.getStore(p, 0);
      s.createColFamilyIfAbsent("gone", TS_KEY, VALUE, spec, false, false);
      s.createColFamilyIfAbsent("kept", TS_KEY, VALUE, spec, false, false);
      for (long ts : new long[] {931, 8000, -1, 90, 1, -14569}) {
        s.put(tsKey(ts, "n" + ts), value((int) ts), "gone");
        s.put(tsKey(ts, "n" + ts), value((int) ts), "kept");
      }
      assertEquals(12, s.metrics().numKeys());
      assertEquals(1, s.commit());

      StateStore s1 = SparkApi.getStore(p, 1);
      s1.createColFamilyIfAbsent("gone", TS_KEY, VALUE, spec, false, false);
      s1.createColFamilyIfAbsent("kept", TS_KEY, VALUE, spec, false, false);
      assertFalse(s1.removeColFamilyIfExists("non-existence"));
      assertTrue(s1.removeColFamilyIfExists("gone"));
      SparkUnsupportedOperationException e = assertThrows(
          SparkUnsupportedOperationException.class, () -> s1.iterator("gone"));
      assertEquals("STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY", e.getCondition());
      s1.abort();

      StateStore s2 = SparkApi.getStore(p, 1);
      assertEquals(6, keys(s2.iterator("gone"), k -> "" + k.getLong(0)).size(),
          "abort undid the removal");
      assertTrue(s2.removeColFamilyIfExists("gone"));
      s2.createColFamilyIfAbsent("gone", TS_KEY, VALUE, spec, false, false);
      assertEquals(List.of(), keys(s2.iterator("gone"), k -> "" + k.getLong(0)));
      s2.put(tsKey(5, "new"), value(5), "gone");
      assertEquals(2, s2.commit());
      p.close();

      StateStoreProvider fresh = init(new StrataStateStoreProvider(), ckpt,
          new NoPrefixKeyStateEncoderSpec(KEY), true, false);
      StateStore s3 = SparkApi.getStore(fresh, 2);
      s3.createColFamilyIfAbsent("gone", TS_KEY, VALUE, spec, false, false);
      s3.createColFamilyIfAbsent("kept", TS_KEY, VALUE, spec, false, false);
      assertEquals(List.of("5=5"), keys(s3.iterator("gone"), k -> "" + k.getLong(0)), spec + "");
      assertEquals(6, keys(s3.iterator("kept"), k -> "" + k.getLong(0)).size());
      assertEquals(7, s3.metrics().numKeys());
      s3.abort();
      fresh.close();
    }
  }

  /** Spark's "verify that column family id is assigned correctly after removal". */
  @Test
  void familyIdsAreNotReusedAfterRemovalAndOldVersionsKeepTheirs() {
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    KeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(KEY);
    StateStore s = SparkApi.getStore(p, 0);
    s.createColFamilyIfAbsent("abc", KEY, VALUE, spec, false, false);
    s.createColFamilyIfAbsent("def", KEY, VALUE, spec, false, false);
    s.put(key("abc", 1), value(1), "abc");
    s.put(key("def", 1), value(2), "def");
    s.commit();
    s = SparkApi.getStore(p, 1);
    s.removeColFamilyIfExists("def");
    s.commit();
    s = SparkApi.getStore(p, 2);
    s.createColFamilyIfAbsent("ghi", KEY, VALUE, spec, false, false);
    s.put(key("ghi", 1), value(3), "ghi");
    s.removeColFamilyIfExists("abc");
    s.commit();
    StateStore old = SparkApi.getStore(p, 1);
    old.createColFamilyIfAbsent("abc", KEY, VALUE, spec, false, false);
    assertEquals(1, old.get(key("abc", 1), "abc").getInt(0), "version 1 keeps family abc");
    old.abort();
    p.close();

    StateStoreProvider fresh = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s3 = SparkApi.getStore(fresh, 3);
    s3.createColFamilyIfAbsent("ghi", KEY, VALUE, spec, false, false);
    s3.createColFamilyIfAbsent("def", KEY, VALUE, spec, false, false);
    assertNull(s3.get(key("def", 1), "def"), "a re-created family does not see old keys");
    assertEquals(List.of("ghi/1=3"), keys(s3.iterator("ghi"), ColumnFamiliesTest::kv));
    assertEquals(1, s3.metrics().numKeys());
    s3.abort();
    fresh.close();
  }

  /**
   * ListState's operations: put, merge, mergeList, putList, valuesIterator, remove; visible
   * before commit, dropped by an abort, restored by a fresh provider. Spark's "validate rocksdb
   * values iterator correctness" plus restore.
   */
  @Test
  void multipleValuesPerKey() {
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, true);
    StateStore s = SparkApi.getStore(p, 0);
    s.put(key("a", 0), value(1), "default");
    assertEquals(List.of(1), values(s.valuesIterator(key("a", 0), "default")));
    s.merge(key("a", 0), value(2), "default");
    s.merge(key("a", 0), value(3), "default");
    assertEquals(List.of(1, 2, 3), values(s.valuesIterator(key("a", 0), "default")));
    assertEquals(1, s.get(key("a", 0), "default").getInt(0), "get returns the first value");
    SparkApi.mergeList(s, key("b", 0), new UnsafeRow[] {value(7), value(8)}, "default");
    s.createColFamilyIfAbsent("list", KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), true,
        false);
    SparkApi.putList(s, key("c", 0), new UnsafeRow[] {value(4), value(5)}, "list");
    SparkApi.mergeList(s, key("c", 0), new UnsafeRow[] {value(6)}, "list");
    assertEquals(List.of(4, 5, 6), values(s.valuesIterator(key("c", 0), "list")));
    assertEquals(List.of(), values(s.valuesIterator(key("none", 0), "list")));
    assertEquals(3, s.metrics().numKeys(), "a list is one key");
    assertThrows(IllegalArgumentException.class,
        () -> s.merge(key("a", 0), null, "default"));
    assertThrows(IllegalArgumentException.class,
        () -> SparkApi.putList(s, key("a", 0), new UnsafeRow[] {value(1), null}, "default"));
    s.commit();

    StateStore s1 = SparkApi.getStore(p, 1);
    s1.merge(key("a", 0), value(4), "default");
    s1.abort();
    p.close();

    StateStoreProvider fresh = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, true);
    StateStore s2 = SparkApi.getStore(fresh, 1);
    s2.createColFamilyIfAbsent("list", KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY), true,
        false);
    assertEquals(List.of(1, 2, 3), values(s2.valuesIterator(key("a", 0), "default")),
        "the abort dropped the merge");
    assertEquals(List.of(7, 8), values(s2.valuesIterator(key("b", 0), "default")));
    assertEquals(List.of(4, 5, 6), values(s2.valuesIterator(key("c", 0), "list")));
    SparkApi.putList(s2, key("c", 0), new UnsafeRow[] {value(9)}, "list");
    s2.remove(key("a", 0), "default");
    assertEquals(List.of(9), values(s2.valuesIterator(key("c", 0), "list")));
    assertEquals(List.of(), values(s2.valuesIterator(key("a", 0), "default")));
    s2.commit();
    fresh.close();
  }

  @Test
  void singleValuedFamiliesRefuseListOperationsAndListsNeedColumnFamilies() {
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s = SparkApi.getStore(p, 0);
    assertThrows(IllegalStateException.class, () -> s.merge(key("a", 0), value(1), "default"));
    assertThrows(IllegalStateException.class, () -> s.valuesIterator(key("a", 0), "default"));
    assertThrows(IllegalStateException.class,
        () -> SparkApi.putList(s, key("a", 0), new UnsafeRow[] {value(1)}, "default"));
    s.abort();
    p.close();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> strata(new NoPrefixKeyStateEncoderSpec(KEY), false, true));
    assertTrue(e.getMessage().contains("requires column families"), e.getMessage());
  }

  /**
   * Range scan: iterating a family with a RangeKeyScanStateEncoderSpec returns keys ordered by
   * the ordering columns (negative numbers, doubles and nulls included), committed and pending
   * keys merged, in exactly the order Spark's RocksDB provider returns for the same operations,
   * with either state encoding (UnsafeRow, Avro). Prefix scans over a range-scan family and over
   * a prefix-scan family match Spark's too, and so does a fresh Strata provider restoring the
   * committed version from the checkpoint.
   */
  @Test
  void rangeScanOrderIsSparksOrder() {
    rangeScanOrderIsSparksOrder("unsaferow");
  }

  @Test
  void rangeScanOrderIsSparksOrderWithAvroEncoding() {
    rangeScanOrderIsSparksOrder("avro");
  }

  private void rangeScanOrderIsSparksOrder(String encoding) {
    List<List<String>> results = new ArrayList<>();
    String ckpt = "ckpt-order-" + encoding;
    for (int run = 0; run < 3; run++) {
      // 0: Strata; 1: a fresh Strata provider restoring version 1; 2: Spark's RocksDB provider
      StateStoreProvider p = run < 2
          ? init(new StrataStateStoreProvider(), ckpt, new NoPrefixKeyStateEncoderSpec(KEY), true,
              false, encoding)
          : init(StateStoreProvider.create(ROCKSDB), ckpt + "-rocksdb",
              new NoPrefixKeyStateEncoderSpec(KEY), true, false, encoding);
      if (run != 1) {
        StateStore s = SparkApi.getStore(p, 0);
        declareOrderFamilies(s);
        long[] first = {931, 8000, 452300, 4200, -1, 90, 1, 2, 8, -230, -14569, -92, -7434253,
            35, 6, 9, -323, 5, Long.MIN_VALUE, Long.MAX_VALUE, 0};
        for (long ts : first) {
          s.put(tsKey(ts, "x" + (ts % 3)), value((int) ts), "$ts");
          s.put(tsKey(ts % 4, "y" + ts), value((int) ts), "$p");
        }
        double[] ds = {1.5, -0.0, 0.0, -2.25, Double.NEGATIVE_INFINITY, Double.MAX_VALUE,
            -1e-300, 3.0, Double.NaN};
        for (int i = 0; i < ds.length; i++) {
          s.put(doubleKey(ds[i], i % 3 == 0 ? null : i), value(i), "$d");
        }
        s.commit();
      }
      StateStore s = SparkApi.getStore(p, 1);
      declareOrderFamilies(s);
      for (long ts : new long[] {3, -5, 100000, 931}) { // pending, over committed keys
        s.put(tsKey(ts, "z"), value((int) ts), "$ts");
      }
      s.remove(tsKey(8000, "x2"), "$ts");
      List<String> out = new ArrayList<>();
      out.addAll(keys(s.iterator("$ts"), k -> k.getLong(0) + "/" + k.getUTF8String(1)));
      out.add("--");
      out.addAll(keys(s.iterator("$d"), k -> k.getDouble(0) + "/"
          + (k.isNullAt(1) ? "null" : k.getInt(1))));
      out.add("--");
      out.addAll(keys(s.prefixScan(tsPrefix(931), "$ts"),
          k -> k.getLong(0) + "/" + k.getUTF8String(1)));
      out.add("--");
      out.addAll(keys(s.prefixScan(tsPrefix(2), "$p"),
          k -> k.getLong(0) + "/" + k.getUTF8String(1)));
      s.abort();
      p.close();
      results.add(out);
    }
    List<String> strata = results.get(0);
    assertEquals(results.get(1), strata, "a fresh provider restores the same state");
    assertEquals(results.get(2), strata, "Spark's RocksDB provider iterates in the same order");
    List<Long> ts = strata.subList(0, strata.indexOf("--")).stream()
        .map(x -> Long.parseLong(x.substring(0, x.indexOf('/')))).toList();
    assertEquals(ts.stream().sorted().toList(), ts, "ordered by the ordering column");
    assertEquals(Long.MIN_VALUE, ts.get(0));
  }

  private static void declareOrderFamilies(StateStore s) {
    s.createColFamilyIfAbsent("$ts", TS_KEY, VALUE,
        new RangeKeyScanStateEncoderSpec(TS_KEY, Scala.seq(List.of(0))), false, true);
    s.createColFamilyIfAbsent("$d", DOUBLE_KEY, VALUE,
        new RangeKeyScanStateEncoderSpec(DOUBLE_KEY, Scala.seq(List.of(0, 1))), false, true);
    s.createColFamilyIfAbsent("$p", TS_KEY, VALUE, new PrefixKeyScanStateEncoderSpec(TS_KEY, 1),
        false, true);
  }

  private static UnsafeRow tsPrefix(long ts) {
    return UnsafeProjection.create(new StructType().add("ts", DataTypes.LongType, false))
        .apply(new GenericInternalRow(new Object[] {ts})).copy();
  }

  /**
   * Timers are registered and deleted while the timer index is iterated; the iterator sees the
   * family as it was when it was created, as Spark's RocksDB provider's does.
   */
  @Test
  void anIteratorDoesNotSeeWritesMadeWhileIterating() {
    KeyStateEncoderSpec tsSpec = new RangeKeyScanStateEncoderSpec(TS_KEY, Scala.seq(List.of(0)));
    StateStoreProvider p = strata(new NoPrefixKeyStateEncoderSpec(KEY), true, false);
    StateStore s = SparkApi.getStore(p, 0);
    s.createColFamilyIfAbsent("$timers", TS_KEY, VALUE, tsSpec, false, true);
    s.put(tsKey(10, "a"), value(10), "$timers");
    s.put(tsKey(30, "b"), value(30), "$timers");
    List<Long> fired = new ArrayList<>();
    StateStoreIterator<UnsafeRowPair> it = s.iterator("$timers");
    while (it.hasNext()) {
      long t = it.next().key().getLong(0);
      fired.add(t);
      s.remove(tsKey(t, t == 10 ? "a" : "b"), "$timers");
      s.put(tsKey(20, "new"), value(20), "$timers"); // ahead of the iterator: not seen
      s.remove(tsKey(30, "b"), "$timers");            // ahead of the iterator: still seen
    }
    assertEquals(List.of(10L, 30L), fired);
    assertEquals(List.of("20/new=20"),
        keys(s.iterator("$timers"), k -> k.getLong(0) + "/" + k.getUTF8String(1)));
    s.commit();
    p.close();
  }
}
