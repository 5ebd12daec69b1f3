// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.ConditionalWriteProbe;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 44: {@link StrataRepartition} changes a stopped query's number of state partitions. A
 * query with two stateful operators ({@code dropDuplicates("key", "id")} then {@code
 * groupBy("key").count()}, update mode, one file a batch) runs 3 batches with {@code from}
 * partitions on S3; the job rewrites its state into {@code to} partitions (batch 3, which reads
 * no input); the query resumes for 3 more files, and every batch's output equals Spark's HDFS
 * provider's run over the same files that never changed its partitions. The state after the
 * job equals the state before, spread over the new partitions, and the resumed query's state
 * sits in them. Spark's state data source reads through Strata's read-only {@code
 * StrataS3FileSystem} (no hadoop-aws), as docs/operations.md tells users to set it.
 * Refusals (a live query, a {@code transformWithState} operator, a global aggregation, a
 * foreign checkpoint, the same count) write nothing. Spark 4.1 runs every case; 4.0 a
 * scale-up, 4.2 a scale-down (CI time). {@code RuntimeJarIT} runs the job from the runtime jar
 * on a user's class path; {@link RescaledQueriesIT} rescales joins, {@code
 * flatMapGroupsWithState} and session windows.
 */
class RepartitionIT {
  private static final int KEYS = 24;
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType)
      .add("id", DataTypes.IntegerType);
  private static final Map<String, Map<Long, Map<String, Long>>> OUTPUT =
      new ConcurrentHashMap<>();
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

  /** Batch b: key kj with ids 0..(j + b) % 4, each twice (ids repeat across batches). */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < KEYS; k++) {
      for (int id = 0; id <= (k + b) % 4 + b % 2; id++) {
        for (int twice = 0; twice < 2; twice++) {
          sb.append("{\"key\":\"k").append(k).append("\",\"id\":").append(id + b / 2)
              .append("}\n");
        }
      }
    }
    Path f = in.resolve(String.format("part-%03d.json", b));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(f, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
  }

  private static SparkSession session(String provider, int partitions, int format) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set("spark.sql.shuffle.partitions", Integer.toString(partitions));
    s.conf().set("spark.sql.streaming.stateStore.checkpointFormatVersion", "" + format);
    return s;
  }

  /**
   * A session for the job and for Spark's state data source: Strata's read-only {@code
   * StrataS3FileSystem} as Hadoop's {@code s3a} (docs/operations.md), no hadoop-aws.
   */
  private static final String ENDPOINT = "spark.sql.streaming.stateStore.strata.s3.endpoint";

  private static SparkSession readSession(int partitions, int format) {
    SparkSession s = session(SparkS3Harness.PROVIDER, partitions, format);
    s.conf().set("fs.s3a.impl", "io.strata.checkpoint.StrataS3FileSystem");
    s.conf().set("fs.s3a.impl.disable.cache", "true");
    return s;
  }

  /** Runs the query to the end of its input (AvailableNow, one file a batch). */
  private static void run(String name, SparkSession s, Path in, String checkpoint)
      throws Exception {
    OUTPUT.putIfAbsent(name, new ConcurrentHashMap<>());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      Map<String, Long> counts = new TreeMap<>();
      for (Row r : df.collectAsList()) {
        counts.put(r.getString(0), r.getLong(1));
      }
      OUTPUT.get(name).put(batchId, counts);
    };
    StreamingQuery q = s.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString())
        .dropDuplicates("key", "id")
        .groupBy("key").count()
        .writeStream().outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .foreachBatch(sink)
        .start();
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
  }

  /** Operator {@code op}'s state of {@code batch} ("key -> value", sorted) and its partitions. */
  private static List<String> state(SparkSession s, String checkpoint, long batch, long op,
      TreeSet<Integer> partitions) {
    List<Row> rows = s.read().format("statestore").option("batchId", batch)
        .option("operatorId", op).load(checkpoint).collectAsList();
    for (Row r : rows) {
      partitions.add(r.getInt(2));
    }
    return rows.stream().map(r -> r.get(0) + " -> " + r.get(1)).sorted().toList();
  }

  private static StrataRepartition.Result repartition(SparkSession s, String checkpoint,
      String... args) {
    String[] all = new String[args.length + 1];
    all[0] = checkpoint;
    System.arraycopy(args, 0, all, 1, args.length);
    try {
      return StrataRepartition.run(s, StrataRepartition.Options.parse(all));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @ParameterizedTest(name = "{0} to {1} partitions, checkpoint format {2}")
  @CsvSource({"4, 8, 1", "8, 3, 2"})
  void theQueryResumesWithTheNewPartitionsAndEveryBatchEqualsTheReference(int from, int to,
      int format) throws Exception {
    // CI time: 4.1 runs both; 4.0 (its own log classes' package) scales up, 4.2 down.
    java.util.Optional<String> line = io.strata.testkit.SparkLineCondition.currentLine();
    org.junit.jupiter.api.Assumptions.assumeTrue(line.isEmpty() || line.get().equals("4.1")
        || line.get().equals(to > from ? "4.0" : "4.2"), "one case per line but 4.1");
    String name = "rescale-" + from + "-" + to;
    Path in = Files.createDirectories(h.work.resolve("in-" + name));
    for (int b = 0; b < 3; b++) {
      writeBatch(in, b);
    }
    String checkpoint = h.s3Checkpoint(name);
    run(name, session(SparkS3Harness.PROVIDER, from, format), in, checkpoint);
    assertEquals(3, OUTPUT.get(name).size(), "batches 0 to 2 ran");
    // The job's session says format 1 whatever the checkpoint's: the job finds it in the commit.
    SparkSession job = readSession(from, 1);
    SparkSession reader = readSession(from, format);
    StrataRepartition.Result dry = repartition(job, checkpoint, "--partitions", "" + to,
        "--force", "--dry-run");
    assertFalse(dry.written());
    Map<String, Long> ops = new TreeMap<>();
    dry.stores().forEach(st -> ops.put(st.operatorName(), st.operatorId()));
    assertEquals(List.of("dedupe", "stateStoreSave"), List.copyOf(ops.keySet()));
    long dedup = ops.get("dedupe");
    long counts = ops.get("stateStoreSave");
    TreeSet<Integer> old = new TreeSet<>();
    List<String> dedupBefore = state(reader, checkpoint, 2, dedup, old);
    List<String> countsBefore = state(reader, checkpoint, 2, counts, old);
    // The job's S3 requests, through a counting relay (docs/operations.md, "Rescaling").
    StrataRepartition.Result r;
    try (CountingProxy relay = new CountingProxy(h.s3.endpoint())) {
      job.conf().set(ENDPOINT, relay.endpoint().toString());
      try {
        r = repartition(job, checkpoint, "--partitions", "" + to, "--force");
      } finally {
        job.conf().set(ENDPOINT, h.s3.endpoint().toString());
      }
      Map<String, Map<String, Integer>> byArea = new TreeMap<>();
      for (CountingProxy.Request q : relay.requests()) {
        String area = q.key().contains(ConditionalWriteProbe.PREFIX) ? "probe"
            : CountingProxy.isStateStoreKey(q.key()) ? "state stores"
            : q.key().matches(".*/(offsets|commits)(/.*)?") ? "offsets and commits" : "other";
        byArea.computeIfAbsent(area, a -> new TreeMap<>()).merge(q.kind(), 1, Integer::sum);
      }
      System.out.println("Rescale " + from + " to " + to + " (2 operators, checkpoint format "
          + format + "), S3 requests by area and kind: " + byArea);
      // The logs: the marker's create-only PUT, the commit's, and the marker's replacement.
      assertEquals(3, byArea.getOrDefault("offsets and commits", Map.of()).getOrDefault("PUT", 0),
          byArea.toString());
    }
    assertTrue(r.written(), r.summary());
    assertEquals(2, r.readBatch());
    assertEquals(3, r.newBatch());
    assertEquals(from, r.from());
    assertEquals(dedupBefore.size() + countsBefore.size(), r.rows(), r.summary());

    // Spark 4.0's and 4.1's state data source finds a batch's partitions by listing
    // directories, so after a repartition to fewer it also reads the old ones (4.2 stops at the
    // batch's count): the state is read back after scaling up, or on 4.2.
    boolean readable = to > from || io.strata.testkit.SparkLineCondition.currentLine()
        .map("4.2"::equals).orElse(false);
    if (readable) {
      TreeSet<Integer> now = new TreeSet<>();
      assertEquals(dedupBefore, state(reader, checkpoint, 3, dedup, now),
          "dropDuplicates' state, moved");
      assertEquals(countsBefore, state(reader, checkpoint, 3, counts, now),
          "the counts' state, moved");
      assertTrue(now.last() < to && now.size() > 1 && (to < from || now.last() >= from),
          "the state sits in the new partitions: " + now);
    }

    // The query resumes for 3 more files, whatever the session's own setting says.
    for (int b = 3; b < 6; b++) {
      writeBatch(in, b);
    }
    run(name, session(SparkS3Harness.PROVIDER, from, format), in, checkpoint);
    if (readable) {
      TreeSet<Integer> after = new TreeSet<>();
      state(reader, checkpoint, 6, counts, after);
      assertTrue(after.last() < to && (to < from || after.last() >= from),
          "the resumed query kept its state in " + to + " partitions: " + after);
    }

    // The tool after the rescale (batches 0-2 at the old count, 3 the repartition, 4-6 at the
    // new): the old partitions above the new count are neither damage nor blockers.
    if (line.isEmpty() || line.get().equals("4.1")) {
      h.tool(0, "verify", checkpoint);
      h.tool(0, "gc", checkpoint, "--dry-run");
      h.tool(0, "rewind", checkpoint, "--to-batch", "6", "--force", "--dry-run");
      h.tool(0, "rewind", checkpoint, "--to-batch", "2", "--force", "--dry-run");
    }

    String reference = "reference-" + name;
    run(reference, session(SparkS3Harness.HDFS_PROVIDER, from, 1),
        in, h.fileCheckpoint(reference));
    Map<Long, Map<String, Long>> expected = OUTPUT.get(reference);
    Map<Long, Map<String, Long>> got = OUTPUT.get(name);
    assertEquals(6, expected.size());
    assertFalse(got.containsKey(3L), "the repartition batch 3 runs no query code");
    for (long b = 0; b < 6; b++) {
      assertEquals(expected.get(b), got.get(b < 3 ? b : b + 1), "batch " + (b < 3 ? b : b + 1)
          + " equals the reference's batch " + b);
    }
  }

  @io.strata.testkit.OnlyOnSparkLines(value = "4.1", reason = "the refusals are Java code of "
      + "this job, the same on every line")
  @Test
  void refusalsNameTheReasonAndWriteNothing() throws Exception {
    String name = "refusals";
    Path in = Files.createDirectories(h.work.resolve("in-" + name));
    writeBatch(in, 0);
    String checkpoint = h.s3Checkpoint(name);
    run(name, session(SparkS3Harness.PROVIDER, 4, 1), in, checkpoint);
    SparkSession job = readSession(4, 1);
    StrataRepartition.Refused alive = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, checkpoint, "--partitions", "6"));
    assertTrue(alive.getMessage().contains("looks alive"), alive.getMessage());
    StrataRepartition.Refused same = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, checkpoint, "--partitions", "4", "--force"));
    assertTrue(same.getMessage().contains("already has 4 partitions"), same.getMessage());

    String hdfs = h.fileCheckpoint("foreign");
    run("foreign", session(SparkS3Harness.HDFS_PROVIDER, 4, 1), in, hdfs);
    StrataRepartition.Refused foreign = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, hdfs, "--partitions", "6", "--force"));
    assertTrue(foreign.getMessage().contains("HDFSBackedStateStoreProvider"),
        foreign.getMessage());

    // transformWithState with its rows in Avro: not rewritten (unsaferow, the default, is).
    String tws = h.s3Checkpoint("tws");
    SparkSession s = session(SparkS3Harness.PROVIDER, 4, 1);
    s.conf().set(StoreSchemas.ENCODING_FORMAT, "avro");
    StreamingQuery q = s.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString())
        .groupByKey((MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING())
        .transformWithState(new CountProcessor(), TimeMode.None(), OutputMode.Update(),
            Encoders.STRING())
        .writeStream().outputMode("update").format("noop")
        .option("checkpointLocation", tws).trigger(Trigger.AvailableNow()).start();
    q.awaitTermination();
    StrataRepartition.Refused twsRefused = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, tws, "--partitions", "6", "--force"));
    assertTrue(twsRefused.getMessage().contains("transformWithStateExec")
        && twsRefused.getMessage().contains("Avro"), twsRefused.getMessage());
    s.conf().unset(StoreSchemas.ENCODING_FORMAT);

    IllegalArgumentException usage = assertThrows(IllegalArgumentException.class,
        () -> StrataRepartition.Options.parse(checkpoint, "--partitions", "0"));
    assertTrue(usage.getMessage().contains("--partitions 0"), usage.getMessage());
    Path dir = h.s3.dataDir().resolve(SparkS3Harness.BUCKET)
        .resolve(checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length()));
    assertTrue(Files.exists(dir.resolve("offsets").resolve("0")), dir.toString());
    assertFalse(Files.exists(dir.resolve("offsets").resolve("1")), "no offsets/1 written");
    assertFalse(Files.exists(Path.of(java.net.URI.create(hdfs)).resolve("offsets").resolve("1")),
        "no offsets/1 written in the foreign checkpoint");
  }

  /**
   * A job that died after its claim, and a query with a file sink: while {@code offsets/N+1}
   * is the job's marker the query does not start (its error names the job and the count),
   * {@code strata describe} names the claim, the job refuses another count, a run that died
   * after its commit is finished by the next run, and run again with the count it finishes; with {@code
   * --file-sink} the sink's log gets the repartition batch, so a batch read of the output and
   * the resumed query work, and the output holds every distinct row once.
   */
  @io.strata.testkit.OnlyOnSparkLines(value = "4.1", reason = "the marker and the sink log are "
      + "Java code of this job, the same on every line")
  @Test
  void anInterruptedJobBlocksTheQueryUntilRunAgainAndAFileSinkKeepsEveryBatch()
      throws Exception {
    String name = "file-sink";
    Path in = Files.createDirectories(h.work.resolve("in-" + name));
    writeBatch(in, 0);
    writeBatch(in, 1);
    String checkpoint = h.s3Checkpoint(name);
    Path sink = h.work.resolve("sink-" + name);
    SparkSession s = session(SparkS3Harness.PROVIDER, 4, 1);
    java.util.function.Supplier<StreamingQuery> start = () -> {
      try {
        return s.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1).json(in.toString())
            .dropDuplicates("key", "id").writeStream().format("parquet")
            .option("path", sink.toString()).option("checkpointLocation", checkpoint)
            .trigger(Trigger.AvailableNow()).start();
      } catch (java.util.concurrent.TimeoutException e) {
        throw new IllegalStateException(e);
      }
    };
    StreamingQuery q = start.get();
    q.awaitTermination();
    assertFalse(q.exception().isDefined(), () -> q.exception().get().toString());

    // The job claimed offsets/2 for 6 partitions and died.
    try (CheckpointLogs logs = new CheckpointLogs(checkpoint,
        ((org.apache.spark.sql.classic.SparkSession) s).sessionState().newHadoopConf())) {
      assertTrue(logs.create("offsets", 2, StrataRepartition.PENDING + "6\n"));
    }
    StreamingQuery blocked = start.get();
    Exception refused = assertThrows(Exception.class, blocked::awaitTermination);
    assertTrue(String.valueOf(refused.getMessage()).contains("StrataRepartition-again-with---"
        + "partitions-6"), refused.toString());
    String described = h.tool(0, "describe", checkpoint);
    assertTrue(described.contains("offsets/2 is the rescale job's claim (io.strata.spark."
        + "StrataRepartition, to 6 partitions)"), described);
    SparkSession job = readSession(4, 1);
    StrataRepartition.Refused other = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, checkpoint, "--partitions", "5", "--force"));
    assertTrue(other.getMessage().contains("--partitions 6"), other.getMessage());
    // A sink whose log does not end at the checkpoint's newest batch is refused before any
    // write: here a copy of the sink's log without batch 1.
    Path otherSink = h.work.resolve("sink-other");
    Files.createDirectories(otherSink.resolve("_spark_metadata"));
    Files.copy(sink.resolve("_spark_metadata").resolve("0"),
        otherSink.resolve("_spark_metadata").resolve("0"));
    StrataRepartition.Refused wrongSink = assertThrows(StrataRepartition.Refused.class,
        () -> repartition(job, checkpoint, "--partitions", "6", "--force", "--file-sink",
            otherSink.toString()));
    assertTrue(wrongSink.getMessage().contains("its log's newest batch is 0, expected 1 or 2"),
        wrongSink.getMessage());
    StrataRepartition.Result r = repartition(job, checkpoint, "--partitions", "6", "--force",
        "--file-sink", sink.toString());
    assertTrue(r.written(), r.summary());
    assertEquals(2, r.newBatch());

    // A run that died after its commit, before its marker became the batch's offsets entry and
    // the sink's log got the batch: the query still does not start; run again, the job only
    // replaces the marker and adds the sink's entry.
    String finished;
    try (CheckpointLogs logs = new CheckpointLogs(checkpoint,
        ((org.apache.spark.sql.classic.SparkSession) s).sessionState().newHadoopConf())) {
      finished = logs.read("offsets", 2);
      logs.replace("offsets", 2, StrataRepartition.PENDING + "6\n");
    }
    Files.delete(sink.resolve("_spark_metadata").resolve("2"));
    Files.deleteIfExists(sink.resolve("_spark_metadata").resolve(".2.crc"));
    StreamingQuery blockedAfterCommit = start.get();
    Exception stillRefused = assertThrows(Exception.class, blockedAfterCommit::awaitTermination);
    assertTrue(String.valueOf(stillRefused.getMessage()).contains("StrataRepartition-again-with-"
        + "--partitions-6"), stillRefused.toString());
    String describedAfterCommit = h.tool(0, "describe", checkpoint);
    assertTrue(describedAfterCommit.contains("offsets/2 is the rescale job's claim"),
        describedAfterCommit);
    StrataRepartition.Result again = repartition(job, checkpoint, "--partitions", "6",
        "--force", "--file-sink", sink.toString());
    assertTrue(again.written() && again.rows() == 0, again.summary());
    try (CheckpointLogs logs = new CheckpointLogs(checkpoint,
        ((org.apache.spark.sql.classic.SparkSession) s).sessionState().newHadoopConf())) {
      assertEquals(finished, logs.read("offsets", 2), "the marker became the batch's entry");
    }
    assertTrue(Files.exists(sink.resolve("_spark_metadata").resolve("2")), "sink log entry");

    writeBatch(in, 2);
    StreamingQuery resumed = start.get();
    resumed.awaitTermination();
    assertFalse(resumed.exception().isDefined(), () -> resumed.exception().get().toString());
    long expected = h.spark.read().schema(SCHEMA).json(in.toString())
        .dropDuplicates("key", "id").count();
    assertEquals(expected, h.spark.read().parquet(sink.toString()).count(),
        "every distinct row once in the file sink's output");
  }

  /** Counts rows per key in a value state (a {@code transformWithState} query in Avro). */
  static final class CountProcessor extends StatefulProcessor<String, Row, String> {
    private static final long serialVersionUID = 1L;
    private transient ValueState<Long> count;

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(String key,
        scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      long n = count.exists() ? count.get() : 0;
      while (rows.hasNext()) {
        rows.next();
        n++;
      }
      count.update(n);
      return scala.jdk.javaapi.CollectionConverters.asScala(List.of(key + ":" + n).iterator());
    }
  }
}
