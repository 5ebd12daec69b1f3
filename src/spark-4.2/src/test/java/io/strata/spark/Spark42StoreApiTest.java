// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RangeKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.TestStateSchemaProvider;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What Spark 4.2 added to the provider and store API, on a {@code file:} checkpoint: {@code
 * getStore}'s {@code forceSnapshotOnCommit} and {@code loadEmpty} (offline state
 * repartitioning's writer), {@code rangeScan}, the multi-value scans and {@code
 * allColumnFamilyNames}. Where order matters, Spark 4.2's RocksDB
 * provider runs the same operations and must return the same sequence.
 */
class Spark42StoreApiTest {
  @TempDir Path tmp;

  private static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  private int localDirs;

  private StateStoreProvider init(StateStoreProvider p, String ckpt, KeyStateEncoderSpec spec,
      boolean multi) {
    return init(p, ckpt, spec, multi, 1);
  }

  /** {@code format}: spark.sql.streaming.stateStore.checkpointFormatVersion, 1 or 2. */
  private StateStoreProvider init(StateStoreProvider p, String ckpt, KeyStateEncoderSpec spec,
      boolean multi, int format) {
    SQLConf sql = new SQLConf();
    sql.setConfString("spark.sql.streaming.stateStore.strata.localDir",
        tmp.resolve("local-" + (localDirs++)).toString());
    sql.setConfString("spark.sql.streaming.stateStore.checkpointFormatVersion", "" + format);
    Configuration hadoop = new Configuration();
    hadoop.set("sql.streaming.runId", UUID.randomUUID().toString());
    p.init(new StateStoreId(tmp.resolve(ckpt).toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), spec.keySchema(), ColumnFamiliesTest.VALUE, spec,
        true, new StateStoreConf(sql, Scala.map(Map.of())), hadoop, multi,
        Option.apply(new TestStateSchemaProvider()));
    return p;
  }

  private StateStoreProvider rocksDb(String ckpt, KeyStateEncoderSpec spec, boolean multi)
      throws ReflectiveOperationException {
    return init((StateStoreProvider) Class.forName(ROCKSDB).getDeclaredConstructor()
        .newInstance(), ckpt, spec, multi);
  }

  /** Commits versions 1..3 of {@code ckpt} (rows old/0..old/2) with a provider of its own. */
  private void oldLayout(String ckpt, KeyStateEncoderSpec spec, int format) {
    StateStoreProvider old = init(new StrataStateStoreProvider(), ckpt, spec, false, format);
    Option<String> id = Option.empty();
    for (int v = 0; v < 3; v++) {
      StateStore s = old.getStore(v, id, false, false);
      s.put(ColumnFamiliesTest.key("old", v), ColumnFamiliesTest.value(v), "default");
      assertEquals(v + 1L, s.commit());
      id = s.getStateStoreCheckpointInfo().stateStoreCkptId();
    }
    old.close();
  }

  /**
   * Spark 4.2's {@code loadEmpty}, as offline state repartitioning's writer calls it ({@code
   * StatePartitionAllColumnFamiliesWriter}: a new provider, {@code getStore(v, None, false,
   * true)}, column families, puts, commit, checkpoint info, close on the same thread), over a
   * store holding versions 1..3 of another layout: the store at 3 is empty, its commit returns 4;
   * a new provider (a new query run, a fresh local directory) loads exactly the rewritten rows
   * and family at 4 and commits 5 on them, which a third loads.
   */
  @Test
  void loadEmptyRewritesAStoreThatLaterProvidersLoadAndBuildOn() {
    NoPrefixKeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(ColumnFamiliesTest.KEY);
    oldLayout("ckpt", spec, 1);
    StateStoreProvider w = init(new StrataStateStoreProvider(), "ckpt", spec, false);
    StateStore e = w.getStore(3, Option.apply("ignored under format 1"), false, true);
    assertEquals(3L, e.version());
    assertEquals(List.of(), ColumnFamiliesTest.keys(e.iterator("default"),
        ColumnFamiliesTest::kv), "nothing of versions 1..3");
    e.createColFamilyIfAbsent("$ttl", ColumnFamiliesTest.KEY, ColumnFamiliesTest.VALUE, spec,
        false, true);
    e.put(ColumnFamiliesTest.key("new", 1), ColumnFamiliesTest.value(10), "default");
    e.put(ColumnFamiliesTest.key("new", 2), ColumnFamiliesTest.value(20), "default");
    e.put(ColumnFamiliesTest.key("ttl", 1), ColumnFamiliesTest.value(30), "$ttl");
    assertEquals(4L, e.commit());
    StateStoreCheckpointInfo info = e.getStateStoreCheckpointInfo();
    assertEquals(0, info.partitionId());
    assertEquals(4L, info.batchVersion());
    assertTrue(info.baseStateStoreCkptId().isEmpty(), "no base: " + info);
    w.close(); // at once, on the committing thread, as Spark's writer does
    StateStoreProvider r = init(new StrataStateStoreProvider(), "ckpt", spec, false);
    StateStore s4 = r.getStore(4, Option.empty(), false, false);
    s4.createColFamilyIfAbsent("$ttl", ColumnFamiliesTest.KEY, ColumnFamiliesTest.VALUE, spec,
        false, true);
    assertEquals(List.of("new/1=10", "new/2=20"), ColumnFamiliesTest.keys(
        s4.iterator("default"), ColumnFamiliesTest::kv));
    assertEquals(List.of("ttl/1=30"), ColumnFamiliesTest.keys(s4.iterator("$ttl"),
        ColumnFamiliesTest::kv));
    s4.put(ColumnFamiliesTest.key("new", 3), ColumnFamiliesTest.value(40), "default");
    assertEquals(5L, s4.commit());
    r.close();
    StateStoreProvider r5 = init(new StrataStateStoreProvider(), "ckpt", spec, false);
    StateStore s5 = r5.getStore(5, Option.empty(), false, false);
    assertEquals(List.of("new/1=10", "new/2=20", "new/3=40"), ColumnFamiliesTest.keys(
        s5.iterator("default"), ColumnFamiliesTest::kv));
    s5.abort();
    r5.close();
  }

  /**
   * Checkpoint format 2: a checkpoint id with {@code loadEmpty} is refused before anything loads
   * (as Spark's RocksDB provider requires none); without one the commit issues a new id, the
   * checkpoint info is {@code (0, 4, Some(id), None)}, and that id loads the version.
   */
  @Test
  void loadEmptyUnderCheckpointFormat2IssuesANewIdWithoutBase() {
    NoPrefixKeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(ColumnFamiliesTest.KEY);
    oldLayout("ckpt2", spec, 2);
    StateStoreProvider w = init(new StrataStateStoreProvider(), "ckpt2", spec, false, 2);
    org.apache.spark.SparkException refused = assertThrows(org.apache.spark.SparkException.class,
        () -> w.getStore(3, Option.apply("018c0a1b2e00-fedcba9876543210"), false, true));
    assertEquals("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", refused.getCondition());
    assertTrue(refused.getCause().getMessage().contains("loadEmpty"),
        refused.getCause().getMessage());
    StateStore e = w.getStore(3, Option.empty(), false, true); // not locked by the refusal
    e.put(ColumnFamiliesTest.key("new", 1), ColumnFamiliesTest.value(10), "default");
    assertEquals(4L, e.commit());
    StateStoreCheckpointInfo info = e.getStateStoreCheckpointInfo();
    assertEquals(0, info.partitionId());
    assertEquals(4L, info.batchVersion());
    assertTrue(info.stateStoreCkptId().isDefined(), "a new checkpoint id: " + info);
    assertTrue(info.baseStateStoreCkptId().isEmpty(), "no base: " + info);
    w.close();
    StateStoreProvider r = init(new StrataStateStoreProvider(), "ckpt2", spec, false, 2);
    StateStore s4 = r.getStore(4, info.stateStoreCkptId(), false, false);
    assertEquals(List.of("new/1=10"), ColumnFamiliesTest.keys(s4.iterator("default"),
        ColumnFamiliesTest::kv));
    s4.abort();
    r.close();
  }

  @Test
  void forceSnapshotOnCommitUploadsABaseSnapshotThatTheNextManifestNames() throws Exception {
    StateStoreProvider p = init(new StrataStateStoreProvider(), "ckpt",
        new NoPrefixKeyStateEncoderSpec(ColumnFamiliesTest.KEY), false);
    StateStore s = p.getStore(0, Option.empty(), true, false);
    s.put(ColumnFamiliesTest.key("a", 1), ColumnFamiliesTest.value(1), "default");
    assertEquals(1L, s.commit());
    Map<String, Object> custom = new java.util.HashMap<>();
    Scala.javaMap(s.metrics().customMetrics()).forEach((m, v) -> custom.put(m.name(), v));
    assertEquals(1L, custom.get("strataForcedSnapshots"), custom.toString());
    StateStore s2 = p.getStore(1, Option.empty(), false, false);
    s2.put(ColumnFamiliesTest.key("b", 1), ColumnFamiliesTest.value(2), "default");
    assertEquals(2L, s2.commit());
    p.close();
    // The default snapshot interval is far above 2 versions: only the forced snapshot explains
    // a base in version 2's manifest.
    Path store = tmp.resolve("ckpt");
    try (Stream<Path> files = Files.walk(store)) {
      List<Path> all = files.filter(Files::isRegularFile).toList();
      assertTrue(all.stream().anyMatch(f -> f.toString().contains("/b/")
          && f.toString().endsWith(".bsm")),
          "a base snapshot object (b/....bsm) under " + store + ": " + all);
    }
    StateStoreProvider fresh = init(new StrataStateStoreProvider(), "ckpt",
        new NoPrefixKeyStateEncoderSpec(ColumnFamiliesTest.KEY), false);
    StateStore r = fresh.getStore(2, Option.empty(), false, false);
    assertEquals(2L, r.metrics().numKeys());
    r.put(ColumnFamiliesTest.key("c", 1), ColumnFamiliesTest.value(3), "default");
    assertEquals(3L, r.commit());
    Map<String, Object> after = new java.util.HashMap<>();
    Scala.javaMap(r.metrics().customMetrics()).forEach((m, v) -> after.put(m.name(), v));
    assertEquals(2L, after.get("strataDeltaChainLength"),
        "version 3 is the forced base (version 1) and two deltas, not three: " + after);
    fresh.close();
  }

  @Test
  void rangeScanMatchesSparksRocksDbProvider() throws Exception {
    RangeKeyScanStateEncoderSpec spec =
        new RangeKeyScanStateEncoderSpec(ColumnFamiliesTest.TS_KEY, Scala.seq(List.of(0)));
    List<List<String>> results = new java.util.ArrayList<>();
    for (StateStoreProvider p : List.of(init(new StrataStateStoreProvider(), "s", spec, false),
        rocksDb("r", spec, false))) {
      StateStore s = p.getStore(0, Option.empty(), false, false);
      long[] ts = {-5, 0, 3, 7, 7, 10, 42};
      for (int i = 0; i < ts.length; i++) {
        s.put(ColumnFamiliesTest.tsKey(ts[i], "n" + i), ColumnFamiliesTest.value(i), "default");
      }
      s.commit();
      StateStore s1 = p.getStore(1, Option.empty(), false, false);
      s1.put(ColumnFamiliesTest.tsKey(5, "pending"), ColumnFamiliesTest.value(99), "default");
      s1.remove(ColumnFamiliesTest.tsKey(3, "n2"), "default");
      List<String> r = new java.util.ArrayList<>();
      r.addAll(ColumnFamiliesTest.keys(s1.rangeScan(Option.apply(ColumnFamiliesTest.tsKey(0, "")),
          Option.apply(ColumnFamiliesTest.tsKey(10, "")), "default"), k -> k.getLong(0) + ""));
      r.add("|");
      r.addAll(ColumnFamiliesTest.keys(s1.rangeScan(Option.empty(),
          Option.apply(ColumnFamiliesTest.tsKey(3, "")), "default"), k -> k.getLong(0) + ""));
      r.add("|");
      r.addAll(ColumnFamiliesTest.keys(s1.rangeScan(Option.apply(ColumnFamiliesTest.tsKey(8,
          "")), Option.empty(), "default"), k -> k.getLong(0) + ""));
      s1.abort();
      p.close();
      results.add(r);
    }
    assertEquals(List.of("0=1", "5=99", "7=3", "7=4", "|", "-5=0", "0=1", "|", "10=5", "42=6"),
        results.get(0));
    assertEquals(results.get(1), results.get(0), "Strata (first) against Spark's RocksDB");
  }

  @Test
  void multiValueScansAndColumnFamilyNames() {
    StateStoreProvider p = init(new StrataStateStoreProvider(), "ckpt",
        new PrefixKeyScanStateEncoderSpec(ColumnFamiliesTest.KEY, 1), true);
    StateStore s = p.getStore(0, Option.empty(), false, false);
    s.putList(ColumnFamiliesTest.key("a", 1), new UnsafeRow[] {ColumnFamiliesTest.value(1),
        ColumnFamiliesTest.value(2)}, "default");
    s.put(ColumnFamiliesTest.key("a", 2), ColumnFamiliesTest.value(3), "default");
    s.put(ColumnFamiliesTest.key("b", 1), ColumnFamiliesTest.value(4), "default");
    s.createColFamilyIfAbsent("single", ColumnFamiliesTest.KEY, ColumnFamiliesTest.VALUE,
        new NoPrefixKeyStateEncoderSpec(ColumnFamiliesTest.KEY), false, false);
    assertEquals(List.of("a/1=1", "a/1=2", "a/2=3", "b/1=4"),
        ColumnFamiliesTest.keys(s.iteratorWithMultiValues("default"), ColumnFamiliesTest::kv));
    assertEquals(List.of("a/1=1", "a/1=2", "a/2=3"), ColumnFamiliesTest.keys(
        s.prefixScanWithMultiValues(prefix("a"), "default"), ColumnFamiliesTest::kv));
    assertThrows(IllegalStateException.class, () -> s.iteratorWithMultiValues("single"));
    assertEquals(Set.of("default", "single"),
        CollectionConverters.asJava(s.allColumnFamilyNames()));
    s.commit();
    p.close();
  }

  private static UnsafeRow prefix(String s) {
    return org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(
        new org.apache.spark.sql.types.StructType().add("key1",
            org.apache.spark.sql.types.DataTypes.StringType)).apply(
        new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(
            new Object[] {org.apache.spark.unsafe.types.UTF8String.fromString(s)})).copy();
  }
}
