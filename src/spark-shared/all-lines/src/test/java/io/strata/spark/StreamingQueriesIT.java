// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.session_window;
import static org.apache.spark.sql.functions.sum;

import io.strata.config.StrataConf;
import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.testkit.OncePerSparkLine;
import io.strata.testkit.OnlyOnSparkLines;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Real streaming queries in local mode with Strata's checkpoint on a real S3-compatible server.
 * Each query runs twice on the same input, in the same batches, stopping once halfway: with
 * Spark's default provider (HDFSBackedStateStoreProvider, local checkpoint), and with Strata,
 * whose every local state directory is wiped at the stop so the second half restores from S3
 * alone. The outputs must be identical, batch by batch (see {@link StreamingComparison}). More
 * operators, compared with Spark's RocksDB provider: {@link StatefulOperatorsIT}.
 */
class StreamingQueriesIT {
  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(4, StreamingComparison::recurringKeys, 6, 3);

  @Test
  void aggregationUpdateMode() throws Exception {
    check(new QueryDef("agg-update", OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"), max("ts"))));
  }

  /**
   * Checkpoint format v2: Strata returns its attempt id as the checkpoint id, Spark records it in
   * the commit log and passes it back, and the restart loads exactly that attempt. The baseline
   * is Spark's RocksDB provider (the HDFS one does not support v2).
   */
  @Test
  @OnlyOnSparkLines(value = {"4.0", "4.1", "4.2"}, reason = "Spark 3.5 has no checkpoint format 2")
  void aggregationWithCheckpointFormatV2() throws Exception {
    cmp.check(new QueryDef("agg-v2", OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")),
        SparkS3Harness.ROCKSDB_PROVIDER);
  }

  @Test
  @OncePerSparkLine(reason = TWIN)
  void aggregationCompleteMode() throws Exception {
    check(new QueryDef("agg-complete", OutputMode.Complete(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"))));
  }

  /**
   * A {@code foreachBatch} that reads its batch twice without persisting it: the second job runs
   * the stateful stage again, its commit finds the version the first job committed and loses the
   * race (the local database is dropped), and in Complete mode Spark 3.5 then iterates the store
   * after that commit: it must see the committed state (restored), as Spark's provider does.
   */
  @Test
  @OncePerSparkLine(reason = TWIN)
  void completeModeBatchReadTwice() throws Exception {
    check(new QueryDef("agg-complete-twice", OutputMode.Complete(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of(StreamingComparison.SINK_READS, "2")));
  }

  /**
   * One task computes each state partition of a Complete-mode batch twice in a row ({@code
   * df.union(df).coalesce(1)} in {@code foreachBatch}): on Spark 3.5 the first computation reads
   * its store after the commit, holding it for its task, and the second loads the same store in
   * the same task; it must get it at once (not wait for its own task's lock and fail) and give
   * the rows Spark's provider gives.
   */
  @Test
  @OncePerSparkLine(reason = TWIN)
  @io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1", "4.2"},
      reason = io.strata.testkit.OnlyOnSparkLines.SHARED_40_41)
  void completeModeBatchComputedTwiceInOneTask() throws Exception {
    check(new QueryDef("agg-complete-self-union", OutputMode.Complete(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of(StreamingComparison.SINK_SELF_UNION, "true",
            StrataConf.LOCK_TIMEOUT.fullKey(), "5s")));
  }

  /**
   * One task computes each state partition of a batch twice at once, interleaved ({@code
   * df.rdd().zip(df.rdd())} in {@code foreachBatch}): each computation reads the state, then
   * writes it (the read store upgraded). Spark's HDFS-backed provider serves each computation its
   * own copy of the version; sharing Strata's one open store would let each computation see the
   * other's uncommitted writes (a count merged twice, issue 43). The second computation gets a
   * side store with a local database of its own, and every batch equals Spark's provider's.
   */
  @Test
  @OncePerSparkLine(reason = "the side store is the same code in both Scala builds of a line")
  @io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1", "4.2"},
      reason = io.strata.testkit.OnlyOnSparkLines.SHARED_40_41)
  void aggregationComputedTwiceAtOnceInOneTask() throws Exception {
    check(new QueryDef("agg-update-zip", OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of(StreamingComparison.SINK_ZIP, "true")));
  }

  /**
   * As {@link #aggregationComputedTwiceAtOnceInOneTask()} with Strata on checkpoint format 2
   * (each computation's commit an attempt of its own; Spark records one checkpoint id), against
   * the HDFS provider on format 1: Spark's RocksDB provider, the format-2 baseline elsewhere,
   * cannot run this query (its second load in the task waits for its own lock and fails).
   */
  @Test
  @OnlyOnSparkLines(value = {"4.1"}, reason = "Spark 3.5 has no checkpoint format 2; the side "
      + "store's commit under its own attempt is strata-core's, the same on every 4.x line")
  void aggregationComputedTwiceAtOnceInOneTaskWithCheckpointFormatV2() throws Exception {
    check(new QueryDef("agg-zip-v2", OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of(StreamingComparison.STRATA_ONLY
            + "spark.sql.streaming.stateStore.checkpointFormatVersion", "2",
            StreamingComparison.SINK_ZIP, "true")));
  }

  /**
   * The zip query in Complete mode, where Spark 3.5 iterates the store after committing it: the
   * first computation has committed and still reads its store (its output not yet pulled) when
   * the second one loads the same version; the second gets a side store instead of taking the
   * first one's store over (which would end the first one's scan).
   */
  @Test
  @OnlyOnSparkLines(value = {"3.5"}, reason = "only Spark 3.5 reads a store after its commit")
  @OncePerSparkLine(reason = "the side store is the same code in both Scala builds of a line")
  void completeModeComputedTwiceAtOnceInOneTask() throws Exception {
    check(new QueryDef("agg-complete-zip", OutputMode.Complete(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of(StreamingComparison.SINK_ZIP, "true")));
  }

  @Test
  @OncePerSparkLine(reason = TWIN)
  void dropDuplicatesWithWatermark() throws Exception {
    check(new QueryDef("dedup", OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "15 seconds").dropDuplicates("key", "ts")));
  }

  @Test
  @OnlyOnSparkLines(value = {"3.5", "4.0", "4.2"}, reason = RESCALED_ON_41)
  @OncePerSparkLine(reason = TWIN)
  void streamStreamJoin() throws Exception {
    check(join("join", Map.of()));
  }

  @Test
  @OnlyOnSparkLines(value = {"3.5", "4.0", "4.2"}, reason = RESCALED_ON_41)
  @OncePerSparkLine(reason = TWIN)
  void flatMapGroupsWithStateWithEventTimeTimeouts() throws Exception {
    check(flatMapGroupsWithState("fmgws", Map.of()));
  }

  @Test
  @OnlyOnSparkLines(value = {"3.5", "4.0", "4.2"}, reason = RESCALED_ON_41)
  void sessionWindow() throws Exception {
    check(sessionWindow("session", Map.of()));
  }

  /**
   * Why most queries here run on one Scala build of a line: the second build (Spark 3.5 on
   * Scala 2.13) runs the keyed aggregation and the session window here (prefix scans) and, in
   * {@link StatefulOperatorsIT}, a global aggregation, a limit, dropDuplicatesWithinWatermark,
   * mapGroupsWithState, flatMapGroupsWithState and a full outer join: the paths that cross Scala.
   */
  static final String TWIN = "the second Scala build runs the keyed aggregation and the session "
      + "window here and the other operators in StatefulOperatorsIT";

  /** Why three queries skip Spark 4.1 here. */
  static final String RESCALED_ON_41 = "on Spark 4.1 RescaledQueriesIT runs this query with the "
      + "same restart, rescaled to a new number of partitions at it";

  /** A stream-stream inner join with a time bound, both sides watermarked. */
  static QueryDef join(String name, Map<String, String> conf) {
    return new QueryDef(name, OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "20 seconds")
            .join(r.withWatermark("rts", "20 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 15 seconds")), conf);
  }

  /** {@code flatMapGroupsWithState} counting rows per key until idle (event-time timeouts). */
  static QueryDef flatMapGroupsWithState(String name, Map<String, String> conf) {
    FlatMapGroupsWithStateFunction<String, Row, Long, String> fn = StreamingQueriesIT::countUntilIdle;
    return new QueryDef(name, OutputMode.Update(), (in, r) ->
        in.withWatermark("ts", "10 seconds")
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .flatMapGroupsWithState(fn, OutputMode.Update(), Encoders.LONG(), Encoders.STRING(),
                GroupStateTimeout.EventTimeTimeout())
            .toDF("out"), conf);
  }

  /** A session-window aggregation per key (5 s gap), append mode. */
  static QueryDef sessionWindow(String name, Map<String, String> conf) {
    return new QueryDef(name, OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "10 seconds")
            .groupBy(session_window(col("ts"), "5 seconds"), col("key"))
            .agg(count("*").as("n"), sum("value").as("total")), conf);
  }

  /** Counts rows per key; when a key is idle past its event-time timeout, emits and drops it. */
  private static Iterator<String> countUntilIdle(String key, Iterator<Row> rows,
      GroupState<Long> state) {
    List<String> out = new ArrayList<>();
    if (state.hasTimedOut()) {
      out.add(key + ":expired:" + state.get());
      state.remove();
      return out.iterator();
    }
    long n = state.exists() ? state.get() : 0;
    long maxTs = 0;
    while (rows.hasNext()) {
      Row r = rows.next();
      n++;
      maxTs = Math.max(maxTs, r.getTimestamp(0).getTime());
    }
    state.update(n);
    state.setTimeoutTimestamp(maxTs + 12_000);
    out.add(key + ":count:" + n);
    return out.iterator();
  }

  private void check(QueryDef q) throws Exception {
    cmp.check(q, SparkS3Harness.HDFS_PROVIDER);
  }
}
