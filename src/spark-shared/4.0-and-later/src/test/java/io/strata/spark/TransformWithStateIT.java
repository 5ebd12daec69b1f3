// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.expr;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.ColumnFamily;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.testkit.OnlyOnSparkLines;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Queries whose state lives in virtual column families, end to end: {@code transformWithState}
 * (ValueState, ListState, MapState, event-time and processing-time timers, TTL, deleting a state
 * variable) and the stream-stream join's state format 3. Each runs with Spark's RocksDB provider
 * (the only built-in provider with column families) and with Strata on a real S3-compatible
 * server, restarting halfway on wiped local directories; the outputs must be identical, batch by
 * batch ({@link StreamingComparison}).
 *
 * <p>Processing time makes a run depend on the clock, so the processing-time query only uses
 * durations that are decided by batch boundaries: a TTL of 1 ms (a value has always expired by
 * the next batch) or of an hour (never expires in the test), and timers 1 ms after the current
 * batch's time (they fire in the next batch).
 */
@OnlyOnSparkLines(value = {"4.0", "4.1"},
    reason = "Spark 4.2 allows transformWithState only with its own RocksDB provider, by class "
        + "name (UNSUPPORTED_FEATURE.STORE_BACKEND_NOT_SUPPORTED_FOR_TWS)")
class TransformWithStateIT {
  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(4, StreamingComparison::recurringKeys, 6, 3);

  /**
   * Event time: per key a count (ValueState), the last three values (ListState: appendValue,
   * put to trim, get), value buckets (MapState), and an event-time timer 12 s after the key's
   * newest row, moved on every new row (listTimers, deleteTimer, registerTimer); when it fires
   * the key emits a summary and clears its state.
   */
  @Test
  void eventTimeValueListMapStateAndTimers() throws Exception {
    StreamingComparison.Result res = cmp.check(eventTime("tws-event"),
        SparkS3Harness.ROCKSDB_PROVIDER);
    assertTrue(res.output().values().stream().flatMap(List::stream)
        .anyMatch(s -> s.contains(":fired:")), "some event-time timers fired");
    for (Manifest m : newestManifests(res.checkpoint()).values()) {
      // column families (format 2), committed under a query run's epoch (format 3)
      assertEquals(ManifestCodec.EPOCH_FORMAT_VERSION, m.formatVersion());
      assertTrue(m.epoch() > 0, "committed under the query run's epoch");
      Map<String, Boolean> internal = new TreeMap<>();
      m.columnFamilies().families().forEach(f -> internal.put(f.name(), f.internal()));
      Map<String, Boolean> expected = Map.of("count", false, "recent", false, "buckets", false,
          "$eventTimers_keyToTimestamp", true, "$eventTimers_timestampToKey", true);
      expected.forEach((name, isInternal) -> assertEquals(isInternal, internal.get(name),
          "the manifest of " + m.storeId() + " maps " + name + ": " + internal));
      internal.forEach((name, isInternal) -> assertEquals(name.startsWith("$"), isInternal,
          "internal flag of " + name));
    }
    // Spark's state data source reads Strata's checkpoint as it reads its own.
    for (Map<String, String> options : List.of(Map.of("stateVarName", "count"),
        Map.of("stateVarName", "recent"), Map.of("stateVarName", "buckets"),
        Map.of("readRegisteredTimers", "true"))) {
      assertEquals(readState(res.baselineCheckpoint(), options),
          readState(res.checkpoint(), options), "state data source with " + options);
    }
    // ... and its change feed of a ValueState and a MapState variable, as far as the two can
    // agree: Spark's lists every write, Strata's each key's last write per batch (a map entry
    // updated twice in a batch; docs/operations.md, "Reading state and changes").
    for (String variable : List.of("count", "buckets")) {
      Map<String, String> options = Map.of("stateVarName", variable, "changeStartBatchId", "0");
      List<String> strata = ChangeFeeds.read(cmp.harness(), res.checkpoint(), options, false);
      assertEquals(ChangeFeeds.read(cmp.harness(), res.baselineCheckpoint(), options, true),
          strata, "change feed of " + variable);
      assertEquals(ChangeFeeds.read(cmp.harness(), res.checkpoint(), options, true), strata,
          "Strata's feed has one row per key and batch");
    }
    // ListState: Spark's feed has a merge row per appended value, Strata's one row per key and
    // batch (its delta holds the merged list); the keys changed in each batch are the same.
    Map<String, String> list = Map.of("stateVarName", "recent", "changeStartBatchId", "0");
    List<String> strataList = ChangeFeeds.read(cmp.harness(), res.checkpoint(), list, false);
    assertEquals(ChangeFeeds.read(cmp.harness(), res.checkpoint(), list, true), strataList,
        "one row per key and batch in Strata's list-state feed");
    assertEquals(batchAndKey(ChangeFeeds.read(cmp.harness(), res.baselineCheckpoint(), list,
        true)), batchAndKey(strataList), "the same keys change in the same batches");
    // A snapshot-start read of a state variable equals the plain read of that batch.
    for (int p = 0; p < 4; p++) {
      String part = String.valueOf(p);
      List<String> expected = new ArrayList<>();
      for (String row : readState(res.baselineCheckpoint(), Map.of("stateVarName", "count",
          "batchId", "4"))) {
        if (row.endsWith("," + part + "]")) {
          expected.add(row);
        }
      }
      assertEquals(expected, readStateMaybeEmpty(res.checkpoint(), Map.of("stateVarName",
          "count", "batchId", "4", "snapshotStartBatchId", "1", "snapshotPartitionId", part)),
          "count in batch 4, partition " + p + ", read from snapshot batch 1");
    }
  }

  /**
   * {@link #eventTimeValueListMapStateAndTimers}'s query (also rescaled by {@link
   * RescaledQueriesIT}).
   */
  static QueryDef eventTime(String name) {
    return new QueryDef(name, OutputMode.Update(),
        (in, r, run) -> in.withWatermark("ts", "10 seconds")
            // keys go idle one after another (batch b keeps keys k00..k(24-4b)), so their
            // timers fire
            .filter(expr("CAST(substring(key, 2) AS INT) < 25 - 4 * (value DIV 100)"))
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .transformWithState(new EventTimeProcessor(), TimeMode.EventTime(),
                OutputMode.Update(), Encoders.STRING())
            .toDF("out"), Map.of());
  }

  /**
   * {@link #processingTimeTimersTtlAndDeletedStateVariable}'s query (also rescaled by {@link
   * RescaledQueriesIT}).
   */
  static QueryDef processingTime(String name) {
    return new QueryDef(name, OutputMode.Update(),
        (in, r, run) -> in
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .transformWithState(new ProcessingTimeProcessor(run == 1), TimeMode.ProcessingTime(),
                OutputMode.Update(), Encoders.STRING())
            .toDF("out"), Map.of());
  }

  /** {@code [batch_id, change_type, key, value, partition]} rows to sorted "batch|key". */
  private static List<String> batchAndKey(List<String> rows) {
    List<String> out = new ArrayList<>();
    for (String r : rows) {
      String[] parts = r.substring(1, r.length() - 1).split(",", 4);
      out.add(parts[0] + "|" + parts[2]);
    }
    out.sort(null);
    return out;
  }

  /** As {@link #readState}, without requiring rows. */
  private static List<String> readStateMaybeEmpty(String checkpoint,
      Map<String, String> options) {
    List<String> rows = new ArrayList<>();
    for (Row r : cmp.harness().withS3A(() -> cmp.harness().spark.read().format("statestore")
        .options(options).load(checkpoint).collectAsList())) {
      rows.add(r.toString());
    }
    rows.sort(null);
    return rows;
  }

  /** The state of the last batch as Spark's state data source reads it, as sorted strings. */
  private static List<String> readState(String checkpoint, Map<String, String> options) {
    List<String> rows = new ArrayList<>();
    // The state data source qualifies the checkpoint path with a Hadoop FileSystem (S3A).
    List<Row> read = cmp.harness().withS3A(() -> cmp.harness().spark.read().format("statestore")
        .options(options).load(checkpoint).collectAsList());
    for (Row r : read) {
      rows.add(r.toString());
    }
    rows.sort(null);
    assertTrue(!rows.isEmpty(), "state rows for " + options);
    return rows;
  }

  /**
   * Processing time: ValueState with a 1 ms TTL (expired by the next batch, and removed by the
   * TTL cleanup at the end of every batch) and without TTL, ListState and MapState with a 1 h
   * TTL, processing-time timers that fire in the next batch, and after the restart a processor
   * that deletes a state variable the first run wrote (removeColFamilyIfExists).
   */
  @Test
  void processingTimeTimersTtlAndDeletedStateVariable() throws Exception {
    StreamingComparison.Result res = cmp.check(processingTime("tws-proc"),
        SparkS3Harness.ROCKSDB_PROVIDER);
    List<String> all = res.output().values().stream().flatMap(List::stream).toList();
    assertTrue(all.stream().anyMatch(s -> s.contains(":timer:")), "processing-time timers fired");
    assertTrue(all.stream().anyMatch(s -> s.contains("legacy=gone")),
        "the second run deleted the first run's state variable");
    assertTrue(all.stream().anyMatch(s -> s.contains("legacy=")
        && !s.contains("legacy=gone") && !s.contains("legacy=none")),
        "the first run wrote the state variable");
    for (Manifest m : newestManifests(res.checkpoint()).values()) {
      assertTrue(m.columnFamilies().byName("legacy").isEmpty(), "legacy removed: " + m);
      assertTrue(m.columnFamilies().byName("$ttl_shortLived").isPresent(), "TTL index: " + m);
      // ids 1..maxId were each assigned once; the removed family's id stays unused
      assertEquals(m.columnFamilies().maxId() - 1, m.columnFamilies().families().size(),
          "the removed family's id is not reused: " + m.columnFamilies());
    }
  }

  /**
   * Stream-stream join with state format 3 ({@code spark.sql.streaming.join.stateFormatVersion}):
   * one store per partition holding both sides' state in four column families.
   */
  @Test
  void streamStreamJoinStateFormatV3() throws Exception {
    Assumptions.assumeTrue(SparkApi.AT_LEAST_4_1, "join state format 3 is new in Spark 4.1");
    StreamingComparison.Result res = cmp.check(new QueryDef("join-v3", OutputMode.Append(),
        (in, r, run) -> in.withWatermark("ts", "20 seconds")
            .join(r.withWatermark("rts", "20 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 15 seconds")),
        Map.of("spark.sql.streaming.join.stateFormatVersion", "3")),
        SparkS3Harness.ROCKSDB_PROVIDER);
    Map<String, Manifest> stores = newestManifests(res.checkpoint());
    assertEquals(4, stores.size(), "one store per partition: " + stores.keySet());
    for (Manifest m : stores.values()) {
      assertEquals(List.of("left-keyToNumValues", "left-keyWithIndexToValue",
          "right-keyToNumValues", "right-keyWithIndexToValue"), m.columnFamilies().families()
          .stream().map(ColumnFamily::name).sorted().toList());
    }
  }

  /** The newest manifest of every store under Strata's checkpoint, by store directory. */
  private static Map<String, Manifest> newestManifests(String checkpoint) throws Exception {
    Map<String, String> newest = new TreeMap<>();
    for (String key : cmp.versionObjectKeys(checkpoint)) {
      newest.put(key.substring(0, key.lastIndexOf("/v/")), key); // keys sort by version
    }
    Map<String, Manifest> out = new TreeMap<>();
    for (Map.Entry<String, String> e : newest.entrySet()) {
      out.put(e.getKey(), cmp.manifest(checkpoint, e.getValue()));
    }
    return out;
  }

  /** See {@link #eventTimeValueListMapStateAndTimers()}. */
  static final class EventTimeProcessor extends StatefulProcessor<String, Row, String> {
    private transient ValueState<Long> count;
    private transient ListState<String> recent;
    private transient MapState<String, Long> buckets;

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
      recent = getHandle().getListState("recent", Encoders.STRING(), TTLConfig.NONE());
      buckets = getHandle().getMapState("buckets", Encoders.STRING(), Encoders.LONG(),
          TTLConfig.NONE());
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(String key,
        scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      long n = count.exists() ? count.get() : 0;
      long maxTs = Long.MIN_VALUE;
      while (rows.hasNext()) {
        Row r = rows.next();
        n++;
        maxTs = Math.max(maxTs, r.getTimestamp(0).getTime());
        recent.appendValue(Long.toString(r.getLong(2)));
        String bucket = "b" + (r.getLong(2) % 4);
        Long b = buckets.getValue(bucket);
        buckets.updateValue(bucket, b == null ? 1 : b + 1);
      }
      List<String> last = list(recent.get());
      if (last.size() > 3) {
        recent.put(last.subList(last.size() - 3, last.size()).toArray(new String[0]));
      }
      count.update(n);
      scala.collection.Iterator<Object> timers = getHandle().listTimers();
      while (timers.hasNext()) {
        getHandle().deleteTimer((Long) timers.next());
      }
      getHandle().registerTimer(maxTs + 12_000);
      return one(key + ":count:" + n + ":" + summary());
    }

    @Override
    public scala.collection.Iterator<String> handleExpiredTimer(String key,
        TimerValues timerValues, ExpiredTimerInfo info) {
      String s = key + ":fired:" + info.getExpiryTimeInMs() + ":" + count.get() + ":"
          + summary();
      count.clear();
      recent.clear();
      buckets.clear();
      return one(s);
    }

    private String summary() {
      Map<String, Long> b = new TreeMap<>();
      scala.collection.Iterator<Tuple2<String, Long>> it = buckets.iterator();
      while (it.hasNext()) {
        Tuple2<String, Long> t = it.next();
        b.put(t._1(), t._2());
      }
      return "recent=" + list(recent.get()) + ":buckets=" + b;
    }
  }

  /** See {@link #processingTimeTimersTtlAndDeletedStateVariable()}. */
  static final class ProcessingTimeProcessor extends StatefulProcessor<String, Row, String> {
    private final boolean secondRun;
    private transient ValueState<Long> total;
    private transient ValueState<Long> shortLived;
    private transient ListState<String> values;
    private transient MapState<String, Long> perBucket;
    private transient ValueState<String> legacy;

    ProcessingTimeProcessor(boolean secondRun) {
      this.secondRun = secondRun;
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      total = getHandle().getValueState("total", Encoders.LONG(), TTLConfig.NONE());
      shortLived = getHandle().getValueState("shortLived", Encoders.LONG(),
          new TTLConfig(Duration.ofMillis(1)));
      values = getHandle().getListState("values", Encoders.STRING(),
          new TTLConfig(Duration.ofHours(1)));
      perBucket = getHandle().getMapState("perBucket", Encoders.STRING(), Encoders.LONG(),
          new TTLConfig(Duration.ofHours(1)));
      if (secondRun) {
        getHandle().deleteIfExists("legacy");
      } else {
        legacy = getHandle().getValueState("legacy", Encoders.STRING(), TTLConfig.NONE());
      }
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(String key,
        scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      // A 1 ms TTL: whatever the previous batch stored has expired.
      String before = "short=" + (shortLived.exists() ? shortLived.get() : "expired");
      long sum = total.exists() ? total.get() : 0;
      List<String> batch = new ArrayList<>();
      while (rows.hasNext()) {
        Row r = rows.next();
        sum += r.getLong(2);
        batch.add(Long.toString(r.getLong(2)));
        String bucket = "b" + (r.getLong(2) % 3);
        Long b = perBucket.getValue(bucket);
        perBucket.updateValue(bucket, b == null ? 1 : b + 1);
      }
      total.update(sum);
      shortLived.update(sum);
      if (batch.size() > 1) {
        values.appendList(batch.toArray(new String[0]));
      } else {
        values.appendValue(batch.get(0));
      }
      String legacyState;
      if (secondRun) {
        legacyState = "gone";
      } else {
        legacyState = legacy.exists() ? legacy.get() : "none";
        legacy.update("seen" + sum);
      }
      getHandle().registerTimer(timerValues.getCurrentProcessingTimeInMs() + 1);
      return one(key + ":input:" + before + ":total=" + sum + ":values="
          + list(values.get()).size() + ":legacy=" + legacyState);
    }

    @Override
    public scala.collection.Iterator<String> handleExpiredTimer(String key,
        TimerValues timerValues, ExpiredTimerInfo info) {
      Map<String, Long> b = new TreeMap<>();
      scala.collection.Iterator<Tuple2<String, Long>> it = perBucket.iterator();
      while (it.hasNext()) {
        Tuple2<String, Long> t = it.next();
        b.put(t._1(), t._2());
      }
      return one(key + ":timer:total=" + total.get() + ":short="
          + (shortLived.exists() ? "live" : "expired") + ":buckets=" + b + ":timers="
          + list(getHandle().listTimers()).size());
    }
  }

  private static <T> List<T> list(scala.collection.Iterator<T> it) {
    List<T> out = new ArrayList<>();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  private static scala.collection.Iterator<String> one(String s) {
    return CollectionConverters.asScala(List.of(s).iterator());
  }
}
