package io.strata.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.session_window;
import static org.apache.spark.sql.functions.sum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Real streaming queries in local mode with Strata's checkpoint on a real S3-compatible server.
 * Each query runs twice on the same input, in the same batches, stopping once halfway: with
 * Spark's default provider (HDFSBackedStateStoreProvider, local checkpoint), and with Strata,
 * whose every local state directory is wiped at the stop so the second half restores from S3
 * alone. The outputs must be identical, batch by batch.
 */
class StreamingQueriesIT {
  private static final int BATCHES = 6;
  private static final int HALF = 3;
  private static final String SCHEMA = "ts TIMESTAMP, key STRING, value LONG";
  private static final String RIGHT_SCHEMA = "rts TIMESTAMP, rkey STRING, rvalue LONG";
  private static final Map<String, Map<Long, List<String>>> OUTPUT = new ConcurrentHashMap<>();

  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(4);
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** One stateful query under test. */
  private record QueryDef(String name, OutputMode mode,
      BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build) { }

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
  void aggregationWithCheckpointFormatV2() throws Exception {
    h.spark.conf().set("spark.sql.streaming.stateStore.checkpointFormatVersion", "2");
    try {
      check(new QueryDef("agg-v2", OutputMode.Update(), (in, r) ->
          in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"))),
          SparkS3Harness.ROCKSDB_PROVIDER);
    } finally {
      h.spark.conf().unset("spark.sql.streaming.stateStore.checkpointFormatVersion");
    }
  }

  @Test
  void aggregationCompleteMode() throws Exception {
    check(new QueryDef("agg-complete", OutputMode.Complete(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"))));
  }

  @Test
  void dropDuplicatesWithWatermark() throws Exception {
    check(new QueryDef("dedup", OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "15 seconds").dropDuplicates("key", "ts")));
  }

  @Test
  void streamStreamJoin() throws Exception {
    check(new QueryDef("join", OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "20 seconds")
            .join(r.withWatermark("rts", "20 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 15 seconds"))));
  }

  @Test
  void flatMapGroupsWithStateWithEventTimeTimeouts() throws Exception {
    FlatMapGroupsWithStateFunction<String, Row, Long, String> fn = StreamingQueriesIT::countUntilIdle;
    check(new QueryDef("fmgws", OutputMode.Update(), (in, r) ->
        in.withWatermark("ts", "10 seconds")
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .flatMapGroupsWithState(fn, OutputMode.Update(), Encoders.LONG(), Encoders.STRING(),
                GroupStateTimeout.EventTimeTimeout())
            .toDF("out")));
  }

  @Test
  void sessionWindow() throws Exception {
    check(new QueryDef("session", OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "10 seconds")
            .groupBy(session_window(col("ts"), "5 seconds"), col("key"))
            .agg(count("*").as("n"), sum("value").as("total"))));
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
    check(q, SparkS3Harness.HDFS_PROVIDER);
  }

  private void check(QueryDef q, String baselineProvider) throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-" + q.name()));
    Path right = Files.createDirectories(h.work.resolve("right-" + q.name()));
    Map<Long, List<String>> baseline = runTwice(q, baselineProvider,
        h.fileCheckpoint(q.name()), in, right, false);
    Path in2 = Files.createDirectories(h.work.resolve("in2-" + q.name()));
    Path right2 = Files.createDirectories(h.work.resolve("right2-" + q.name()));
    String ckpt = h.s3Checkpoint(q.name());
    Map<Long, List<String>> strata = runTwice(q, SparkS3Harness.PROVIDER, ckpt, in2, right2, true);
    assertFalse(baseline.values().stream().allMatch(List::isEmpty), "the query produced output");
    assertEquals(baseline, strata, q.name() + ": Strata's output differs from Spark's provider");
    assertTrue(versionObjects(ckpt) > 0, "Strata wrote version objects under " + ckpt);
  }

  private Map<Long, List<String>> runTwice(QueryDef q, String provider, String checkpoint,
      Path in, Path right, boolean wipe) throws Exception {
    String run = q.name() + "@" + provider + "@" + checkpoint;
    OUTPUT.put(run, new TreeMap<>());
    writeInput(in, right, 0, HALF);
    runOnce(q, provider, checkpoint, in, right, run);
    if (wipe) {
      h.wipeLocalState();
    }
    writeInput(in, right, HALF, BATCHES);
    List<StreamingQueryProgress> second = runOnce(q, provider, checkpoint, in, right, run);
    if (wipe) {
      long restored = second.stream().flatMap(p -> java.util.Arrays.stream(p.stateOperators()))
          .mapToLong(o -> o.customMetrics().getOrDefault("strataRestoreBytes", 0L)).sum();
      assertTrue(restored > 0, q.name() + ": the restart restored state from S3");
    }
    return OUTPUT.get(run);
  }

  private List<StreamingQueryProgress> runOnce(QueryDef q, String provider, String checkpoint,
      Path in, Path right, String run) throws Exception {
    h.spark.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    h.spark.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    Dataset<Row> left = h.spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString());
    Dataset<Row> rightDf = h.spark.readStream().schema(RIGHT_SCHEMA)
        .option("maxFilesPerTrigger", 1).json(right.toString());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> rows = new ArrayList<>();
      for (Row r : df.collectAsList()) {
        rows.add(r.toString());
      }
      rows.sort(null);
      OUTPUT.get(run).put(batchId, rows);
    };
    StreamingQuery query = q.build().apply(left, rightDf).writeStream()
        .outputMode(q.mode())
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .foreachBatch(sink)
        .start();
    query.awaitTermination();
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
    return List.of(query.recentProgress());
  }

  /** Batch files [from, to): keys recur across batches, event time advances 10 s per batch. */
  private static void writeInput(Path in, Path right, int from, int to) throws IOException {
    Instant t0 = Instant.parse("2024-01-01T00:00:00Z");
    for (int b = from; b < to; b++) {
      StringBuilder left = new StringBuilder();
      StringBuilder rs = new StringBuilder();
      for (int j = 0; j < 40; j++) {
        int k = (b * 7 + j) % 25;
        Instant ts = t0.plusSeconds(b * 10L + j % 10);
        left.append(String.format("{\"ts\":\"%s\",\"key\":\"k%02d\",\"value\":%d}%n", ts, k,
            b * 100 + j));
        if (j % 5 == 0) {
          // an exact duplicate, for dropDuplicates
          left.append(String.format("{\"ts\":\"%s\",\"key\":\"k%02d\",\"value\":%d}%n", ts, k,
              b * 100 + j));
        }
        if (j % 3 == 0) {
          rs.append(String.format("{\"rts\":\"%s\",\"rkey\":\"k%02d\",\"rvalue\":%d}%n",
              ts.plusSeconds(j % 7), k, -(b * 100 + j)));
        }
      }
      write(in.resolve(String.format("part-%03d.json", b)), left.toString(), b);
      write(right.resolve(String.format("part-%03d.json", b)), rs.toString(), b);
    }
  }

  private static void write(Path file, String text, int order) throws IOException {
    Files.writeString(file, text, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_000L + order * 1000L));
  }

  private static long versionObjects(String checkpoint) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length())
        + "/state/";
    try (S3Client s3 = h.s3.client()) {
      return s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(prefix))
          .contents().stream().filter(o -> o.key().endsWith(".svo")).count();
    }
  }
}
