// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static io.strata.spark.StreamingComparison.T0;
import static org.apache.spark.sql.functions.approx_count_distinct;
import static org.apache.spark.sql.functions.avg;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;
import static org.apache.spark.sql.functions.sum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.spark.StreamingComparison.Result;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.MapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every stateful operator {@link StreamingQueriesIT} does not cover (except transformWithState),
 * each run with Spark's RocksDB provider and with Strata on the same input and compared batch by
 * batch, with one restart halfway on wiped local directories (see {@link StreamingComparison}):
 * global aggregation (update and complete mode), streaming {@code limit}, {@code
 * dropDuplicatesWithinWatermark}, {@code mapGroupsWithState} with processing-time timeouts, {@code
 * flatMapGroupsWithState} in append mode with event-time timeouts, and a full outer
 * stream-stream join (join state format v2: four stores per partition) whose unmatched rows on
 * both sides are emitted when the watermark evicts them. Session windows (prefix scan) are in
 * {@link StreamingQueriesIT}.
 *
 * <p>The input ({@link #churningKeys}) lets keys go idle and come back, so timeouts fire, state
 * is evicted and keys reappear after eviction, partly before and partly after the restart.
 */
class StatefulOperatorsIT {
  private static final int PARTITIONS = 4;
  /** Micro-batches per run, {@link #HALF} of them before the restart. */
  private static final int BATCHES = 4;
  private static final int HALF = 2;
  /** The {@code limit} of {@link #streamingLimit()}: reached in the first batch after the restart. */
  private static final int LIMIT = 120;
  /** Left rows per batch, including the exact duplicates. */
  private static final int LEFT_ROWS_PER_BATCH = 48;

  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(PARTITIONS, StatefulOperatorsIT::churningKeys, BATCHES, HALF);

  /** Global aggregation (no grouping key: one state row with an empty key) in update mode. */
  @Test
  void globalAggregationUpdateMode() throws Exception {
    Result r = check(new QueryDef("global-agg-update", OutputMode.Update(),
        (in, right) -> globalAggregation(in)));
    assertOneRowPerBatch(r);
  }

  /** Global aggregation in complete mode. (Append mode needs a grouping key with a watermark.) */
  @Test
  void globalAggregationCompleteMode() throws Exception {
    Result r = check(new QueryDef("global-agg-complete", OutputMode.Complete(),
        (in, right) -> globalAggregation(in)));
    assertOneRowPerBatch(r);
    assertTrue(r.strata().get((long) BATCHES - 1).get(0)
        .startsWith("[" + BATCHES * LEFT_ROWS_PER_BATCH + ","),
        "the last batch counts every input row: " + r.strata());
  }

  /**
   * Streaming {@code limit} (append mode): one state row holding the number of rows emitted so
   * far. The limit is reached in batch {@link #HALF}, the first after the restart, so the
   * restored count decides how many rows that batch still emits.
   */
  @Test
  void streamingLimit() throws Exception {
    Result r = check(new QueryDef("limit", OutputMode.Append(), (in, right) -> in.limit(LIMIT)));
    assertEquals(LIMIT, r.rows().size(), "rows emitted in total");
    assertEquals(LIMIT - HALF * LEFT_ROWS_PER_BATCH, r.strata().get((long) HALF).size(),
        "rows emitted in the first batch after the restart");
  }

  /**
   * {@code dropDuplicatesWithinWatermark}: the first row of each key is kept; the key's state
   * expires with the watermark, after which a returning key is emitted again.
   */
  @Test
  void dropDuplicatesWithinWatermark() throws Exception {
    Result r = check(new QueryDef("dedup-within-watermark", OutputMode.Append(), (in, right) ->
        in.withWatermark("ts", "5 seconds").dropDuplicatesWithinWatermark("key")));
    Map<String, Long> perKey = r.rows().stream()
        .collect(Collectors.groupingBy(row -> row.split(",")[1], Collectors.counting()));
    assertTrue(perKey.values().stream().anyMatch(n -> n > 1),
        "a key that returned after its state expired was emitted again: " + perKey);
  }

  /**
   * {@code mapGroupsWithState} with processing-time timeouts of 1 ms: a key times out in the
   * first batch without rows for it (micro-batches start well over 1 ms apart), so the output
   * does not depend on the wall clock. Keys that went idle just before the restart time out
   * after it, from restored state.
   */
  @Test
  void mapGroupsWithStateWithProcessingTimeTimeouts() throws Exception {
    MapGroupsWithStateFunction<String, Row, Long, String> fn =
        StatefulOperatorsIT::countUntilProcessingTimeout;
    Result r = check(new QueryDef("mgws-processing-time", OutputMode.Update(), (in, right) ->
        byKey(in).mapGroupsWithState(fn, Encoders.LONG(), Encoders.STRING(),
            GroupStateTimeout.ProcessingTimeTimeout()).toDF("out")));
    assertTimeoutsAfterRestart(r, ":timeout:");
  }

  /**
   * {@code flatMapGroupsWithState} in append mode with event-time timeouts: a key's state times
   * out 1 s (event time) after its last row, once the watermark (5 s delay) passes that.
   */
  @Test
  void flatMapGroupsWithStateAppendWithEventTimeTimeouts() throws Exception {
    FlatMapGroupsWithStateFunction<String, Row, Long, String> fn =
        StatefulOperatorsIT::countUntilEventTimeTimeout;
    Result r = check(new QueryDef("fmgws-append-event-time", OutputMode.Append(), (in, right) ->
        byKey(in.withWatermark("ts", "5 seconds"))
            .flatMapGroupsWithState(fn, OutputMode.Append(), Encoders.LONG(), Encoders.STRING(),
                GroupStateTimeout.EventTimeTimeout())
            .toDF("out")));
    assertTimeoutsAfterRestart(r, ":expired:");
  }

  /**
   * Full outer stream-stream join with a time-range condition (state format v2: four stores per
   * partition, key-to-num-values and key-with-index-to-value on each side). Rows of either side
   * that found no match are emitted, padded with nulls, when the watermark evicts them.
   */
  @Test
  void fullOuterStreamStreamJoin() throws Exception {
    Result r = check(new QueryDef("full-outer-join", OutputMode.Append(), (in, right) ->
        in.withWatermark("ts", "10 seconds")
            .join(right.withWatermark("rts", "10 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 10 seconds"),
                "full_outer")));
    List<String> rows = r.rows();
    assertTrue(rows.stream().anyMatch(row -> row.endsWith(",null,null,null]")),
        "unmatched left rows were emitted when evicted");
    assertTrue(rows.stream().anyMatch(row -> row.startsWith("[null,null,null,")),
        "unmatched right rows were emitted when evicted");
    assertTrue(rows.stream().anyMatch(row -> !row.contains("null")), "rows were matched");
    Set<String> stores = cmp.storesWithVersions(r.strataCheckpoint());
    assertEquals(4 * PARTITIONS, stores.size(), "4 stores per partition: " + stores);
    Set<String> names = stores.stream().map(s -> s.substring(s.lastIndexOf('/') + 1))
        .collect(Collectors.toSet());
    assertEquals(Set.of("left-keyToNumValues", "left-keyWithIndexToValue",
        "right-keyToNumValues", "right-keyWithIndexToValue"), names);
  }

  // ------------------------------------------------------------------ queries and functions

  private static Result check(QueryDef q) throws Exception {
    return cmp.check(q, SparkS3Harness.ROCKSDB_PROVIDER);
  }

  private static Dataset<Row> globalAggregation(Dataset<Row> in) {
    return in.groupBy().agg(count("*").as("n"), sum("value").as("total"), min("ts"), max("ts"),
        avg("value"), approx_count_distinct("key").as("keys"));
  }

  private static KeyValueGroupedDataset<String, Row> byKey(Dataset<Row> in) {
    return in.groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING());
  }

  /** Counts a key's rows; once the key had no rows for a batch (1 ms timeout), emits and drops it. */
  private static String countUntilProcessingTimeout(String key, Iterator<Row> rows,
      GroupState<Long> state) {
    if (state.hasTimedOut()) {
      long n = state.get();
      state.remove();
      return key + ":timeout:" + n;
    }
    long n = (state.exists() ? state.get() : 0) + countRows(rows, row -> 0L);
    state.update(n);
    state.setTimeoutDuration(1);
    return key + ":count:" + n;
  }

  /** Counts a key's rows; 1 s of event time after its last row, emits the count and drops it. */
  private static Iterator<String> countUntilEventTimeTimeout(String key, Iterator<Row> rows,
      GroupState<Long> state) {
    if (state.hasTimedOut()) {
      long n = state.get();
      state.remove();
      return List.of(key + ":expired:" + n).iterator();
    }
    long[] maxTs = {0};
    long n = (state.exists() ? state.get() : 0)
        + countRows(rows, row -> maxTs[0] = Math.max(maxTs[0], row.getTimestamp(0).getTime()));
    state.update(n);
    state.setTimeoutTimestamp(maxTs[0] + 1_000);
    return List.of(key + ":count:" + n).iterator();
  }

  private static long countRows(Iterator<Row> rows, Function<Row, Long> visit) {
    long n = 0;
    while (rows.hasNext()) {
      visit.apply(rows.next());
      n++;
    }
    return n;
  }

  // ------------------------------------------------------------------ assertions

  private static void assertOneRowPerBatch(Result r) {
    r.strata().forEach((batch, rows) ->
        assertEquals(1, rows.size(), "batch " + batch + " has one aggregate row: " + rows));
    assertEquals(BATCHES, r.strata().size(), "batches run");
  }

  private static void assertTimeoutsAfterRestart(Result r, String marker) {
    List<String> afterRestart = new ArrayList<>();
    r.strata().tailMap((long) HALF).values().forEach(afterRestart::addAll);
    assertTrue(afterRestart.stream().anyMatch(row -> row.contains(marker)),
        "keys timed out after the restart, from restored state: " + r.strata());
  }

  // ------------------------------------------------------------------ input

  /**
   * 40 distinct left rows per batch {@code b} (every fifth one twice, {@link
   * #LEFT_ROWS_PER_BATCH} in all), event time {@code T0 + 10 b + (j mod 10)} s. Rows {@code j <
   * 36} use keys {@code 5b .. 5b+9}, so each key lives two batches and then goes idle (keys 0-4
   * only one); in batch 3, rows 36-39 bring back keys 0-3, idle since batch 0. The right stream
   * has a row for every third left row with the same key, {@code 3 (j mod 7)} s later (so some
   * fall outside a 10 s join window), plus one row per batch with a key the left never has.
   */
  static void churningKeys(Path in, Path right, int from, int to) throws IOException {
    for (int b = from; b < to; b++) {
      StringBuilder left = new StringBuilder();
      StringBuilder rs = new StringBuilder();
      for (int j = 0; j < 40; j++) {
        int k = j >= 36 && b >= 3 ? 5 * (b - 3) + (j - 36) : 5 * b + j % 10;
        Instant ts = T0.plusSeconds(b * 10L + j % 10);
        String row = StreamingComparison.leftRow(ts, k, b * 100 + j);
        left.append(row);
        if (j % 5 == 0) {
          left.append(row);
        }
        if (j % 3 == 0) {
          rs.append(StreamingComparison.rightRow(ts.plusSeconds(3L * (j % 7)), k, -(b * 100 + j)));
        }
      }
      rs.append(StreamingComparison.rightRow(T0.plusSeconds(b * 10L + 5), 90 + b, -1));
      StreamingComparison.writeBatch(in, right, b, left, rs);
    }
  }
}
