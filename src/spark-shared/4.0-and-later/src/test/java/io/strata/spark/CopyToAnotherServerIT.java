// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static io.strata.spark.StreamingComparison.leftRow;
import static io.strata.spark.StreamingComparison.rightRow;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.sum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Issue 44: {@code strata copy} moves a stopped query's checkpoint to a bucket on another S3
 * server, the source is deleted, and the query resumes on the copy exactly as it would have on
 * the source. For an aggregation, a {@code dropDuplicates}, a stream-stream join and a {@code
 * transformWithState} query (value, list and map state, event-time timers; {@link
 * TransformWithStateIT.EventTimeProcessor}), each in turn:
 *
 * <ol>
 *   <li>batches 0 to 2 run on Strata, checkpoint on the harness's S3 server (Strata's own S3
 *       settings), and with Spark's own provider (the oracle: the HDFS-backed one, or for {@code
 *       transformWithState}, which needs column families, the RocksDB one) on a local checkpoint
 *       over the same input; both stop after batch 2 and agree;
 *   <li>{@code strata copy} (the tools jar in a child JVM) to a bucket on a second S3 server
 *       with credentials of its own, given only as S3A per-bucket keys ({@code
 *       spark.hadoop.fs.s3a.bucket.<bucket>.endpoint}, {@code .access.key}, {@code
 *       .secret.key}) beside global S3A keys for the first server, as docs/operations.md
 *       ("Savepoints and copies") tells; what it prints names neither secret;
 *   <li>every object under the source prefix is deleted from the first server;
 *   <li>batches 3 to 5 run on the copy, in a session whose S3 settings are those same S3A keys
 *       (Strata's own S3 keys unset, as they would win over S3A's), and with the oracle on its
 *       own checkpoint; every batch equals the oracle's, the run restored its state from the
 *       second server (nothing local) and committed there.
 * </ol>
 *
 * <p>The input makes every later batch's output depend on the state of earlier ones: each batch
 * repeats two rows of the batch before (dropped by {@code dropDuplicates} only through its
 * state), its right-side rows match left rows of the batch before (joined only through the
 * join's state), keys recur (counts and sums), and a key seen only in batch 1 has an event-time
 * timer that fires after the copy.
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "the tool is Spark-free (strata-core's format and "
    + "S3 code); one line writes the checkpoints it copies and resumes them")
class CopyToAnotherServerIT {
  private static final String HDFS = SparkS3Harness.HDFS_PROVIDER;
  private static final String ROCKSDB = SparkS3Harness.ROCKSDB_PROVIDER;
  /** The destination bucket, on the second server only. */
  private static final String DEST_BUCKET = "strata-copy-dest";
  /** The second server's credentials, not the first one's. Test-only. */
  private static final String DEST_ACCESS_KEY = "strata-copy-dest-id";
  private static final String DEST_SECRET_KEY = "strata-copy-dest-secret-5e1c";
  private static final String PREFIX = "spark.sql.streaming.stateStore.strata.";
  /** Strata's own S3 keys the harness sets: they win over S3A's, so the copy's run unsets them. */
  private static final List<String> STRATA_S3_KEYS = List.of("s3.endpoint", "s3.region",
      "s3.pathStyleAccess", "s3.accessKeyId", "s3.secretAccessKey");
  private static final Instant T0 = StreamingComparison.T0;
  private static final int BATCHES_BEFORE = 3;
  private static final int BATCHES = 6;

  /** Output of every run: run name to batch id to the batch's rows, sorted. */
  private static final Map<String, SortedMap<Long, List<String>>> OUTPUT =
      new ConcurrentHashMap<>();

  private static SparkS3Harness h;
  private static Path secondDir;
  private static S3ProxyServer second;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    secondDir = Files.createTempDirectory("strata-it-s3-second-");
    second = S3ProxyServer.start(secondDir.resolve("data"), Map.of(
        "s3proxy.identity", DEST_ACCESS_KEY, "s3proxy.credential", DEST_SECRET_KEY));
    try (S3Client s3 = destClient()) {
      s3.createBucket(b -> b.bucket(DEST_BUCKET));
    }
  }

  @AfterAll
  static void stop() throws IOException {
    try {
      if (second != null) {
        second.close();
      }
      SparkS3Harness.deleteRecursively(secondDir);
    } finally {
      if (h != null) {
        h.close();
      }
    }
  }

  /** The four queries, each with the provider of Spark's that is its oracle. */
  enum Query {
    AGGREGATION(HDFS, OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"))),
    DROP_DUPLICATES(HDFS, OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "15 seconds").dropDuplicates("key", "ts")),
    STREAM_STREAM_JOIN(HDFS, OutputMode.Append(), (in, r) ->
        in.withWatermark("ts", "20 seconds")
            .join(r.withWatermark("rts", "20 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 15 seconds"))),
    TRANSFORM_WITH_STATE(ROCKSDB, OutputMode.Update(), (in, r) ->
        in.withWatermark("ts", "10 seconds")
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .transformWithState(new TransformWithStateIT.EventTimeProcessor(),
                TimeMode.EventTime(), OutputMode.Update(), Encoders.STRING())
            .toDF("out"));

    final String oracle;
    final OutputMode mode;
    final BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build;

    Query(String oracle, OutputMode mode,
        BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build) {
      this.oracle = oracle;
      this.mode = mode;
      this.build = build;
    }
  }

  @ParameterizedTest
  @EnumSource(Query.class)
  void aCopyOnAnotherServerResumesExactlyAfterTheSourceIsDeleted(Query q) throws Exception {
    String name = q.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    Path base = Files.createDirectories(h.work.resolve(name + "-" + UUID.randomUUID()));
    Path left = Files.createDirectories(base.resolve("left"));
    Path right = Files.createDirectories(base.resolve("right"));
    String oracleCkpt = h.fileCheckpoint(name + "-oracle");
    String source = h.s3Checkpoint("copy-src-" + name);
    String sourcePrefix = source.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    String destPrefix = "moved-" + name + "-" + UUID.randomUUID();
    String dest = "s3a://" + DEST_BUCKET + "/" + destPrefix;

    // Batches 0 to 2: Strata on the first server (its own S3 settings), the oracle beside it.
    for (int b = 0; b < BATCHES_BEFORE; b++) {
      writeBatch(left, right, b);
    }
    CompletableFuture<Void> oracleBefore = async("oracle-before-" + name, () ->
        run(q, session(q.oracle, base.resolve("unused")), oracleCkpt, left, right,
            name + "@oracle"));
    run(q, session(SparkS3Harness.PROVIDER, base.resolve("local-source")), source, left, right,
        name + "@source");
    await(oracleBefore);
    SortedMap<Long, List<String>> oracle = OUTPUT.get(name + "@oracle");
    assertEquals(oracle, OUTPUT.get(name + "@source"), name + ": batches 0 to 2");
    assertEquals(BATCHES_BEFORE, oracle.size(), name + ": batches 0 to 2 ran");

    // The oracle resumes at once (its input does not depend on the copy).
    for (int b = BATCHES_BEFORE; b < BATCHES; b++) {
      writeBatch(left, right, b);
    }
    CompletableFuture<Void> oracleAfter = async("oracle-after-" + name, () ->
        run(q, session(q.oracle, base.resolve("unused")), oracleCkpt, left, right,
            name + "@oracle"));
    try {
      // The copy, to the second server through per-bucket settings.
      String printed = tool(base, "copy", source, dest);
      assertTrue(printed.contains("Copied batch " + (BATCHES_BEFORE - 1)), printed);
      assertFalse(printed.contains(DEST_SECRET_KEY) || printed.contains(S3ProxyServer.SECRET_KEY),
          "the tool printed a secret: " + printed);

      // The source, gone from the first server.
      try (S3Client s3 = h.s3.client()) {
        List<S3Object> objects = list(s3, SparkS3Harness.BUCKET, sourcePrefix + "/");
        assertFalse(objects.isEmpty(), "the source had objects");
        for (int i = 0; i < objects.size(); i += 1000) {
          List<ObjectIdentifier> ids = objects.subList(i, Math.min(objects.size(), i + 1000))
              .stream().map(o -> ObjectIdentifier.builder().key(o.key()).build()).toList();
          s3.deleteObjects(d -> d.bucket(SparkS3Harness.BUCKET).delete(x -> x.objects(ids)));
        }
        assertEquals(List.of(), list(s3, SparkS3Harness.BUCKET, sourcePrefix + "/"),
            "the source prefix is empty");
      }

      // Batches 3 to 5 on the copy: S3A settings only, the destination's per bucket.
      SparkSession onCopy = session(SparkS3Harness.PROVIDER, base.resolve("local-copy"));
      STRATA_S3_KEYS.forEach(k -> onCopy.conf().unset(PREFIX + k));
      s3aSettings().forEach(onCopy.conf()::set);
      List<org.apache.spark.sql.streaming.StreamingQueryProgress> progress =
          run(q, onCopy, dest, left, right, name + "@copy");
      long restored = progress.stream().flatMap(p -> Arrays.stream(p.stateOperators()))
          .mapToLong(o -> o.customMetrics().getOrDefault("strataRestoreBytes", 0L)).sum();
      assertTrue(restored > 0, name + ": the run on the copy restored its state from S3");
    } finally {
      awaitQuietly(oracleAfter);
    }
    await(oracleAfter);
    SortedMap<Long, List<String>> expected =
        new TreeMap<>(OUTPUT.get(name + "@oracle").tailMap((long) BATCHES_BEFORE));
    assertEquals(BATCHES - BATCHES_BEFORE, expected.size(), name + ": the oracle ran 3 to 5");
    assertFalse(expected.values().stream().allMatch(List::isEmpty),
        name + ": batches 3 to 5 have output");
    assertEquals(expected, OUTPUT.get(name + "@copy"),
        name + ": every batch after the copy equals Spark's provider's resumed run");
    if (q == Query.TRANSFORM_WITH_STATE) {
      assertTrue(expected.values().stream().flatMap(List::stream)
          .anyMatch(row -> row.contains(":fired:")), "a timer set before the copy fired after it");
    }
    try (S3Client s3 = destClient()) {
      List<String> keys = list(s3, DEST_BUCKET, destPrefix + "/").stream().map(S3Object::key)
          .toList();
      assertTrue(keys.contains(destPrefix + "/commits/" + (BATCHES - 1)),
          "the run on the copy committed batch 5 on the second server: " + keys);
    }
  }

  /**
   * Batch {@code b}'s two input files. Left: six rows over keys k00 to k03, event time {@code T0
   * + 10 b + j} s; from batch 1 on, the first two rows of batch {@code b - 1} again; in batch 1
   * one row of k07, which never comes back (its event-time timer fires in batch 5). Right: from
   * batch 1 on, two rows matching left rows of batch {@code b - 1} (same key, 12 s later).
   */
  private static void writeBatch(Path left, Path right, int b) throws IOException {
    StringBuilder l = new StringBuilder();
    StringBuilder r = new StringBuilder();
    for (int j = 0; j < 6; j++) {
      l.append(leftRow(T0.plusSeconds(10L * b + j), (b + j) % 4, 100L * b + j));
    }
    if (b > 0) {
      int p = b - 1;
      for (int j = 0; j < 2; j++) {
        l.append(leftRow(T0.plusSeconds(10L * p + j), (p + j) % 4, 100L * p + j));
      }
      for (int j : new int[] {0, 3}) {
        r.append(rightRow(T0.plusSeconds(10L * p + j + 12), (p + j) % 4, -(100L * p + j)));
      }
    }
    if (b == 1) {
      l.append(leftRow(T0.plusSeconds(10L * b + 5), 7, 999));
    }
    StreamingComparison.writeBatch(left, right, b, l, r);
  }

  /** A session of the harness's Spark with {@code provider} and Strata's local state under dir. */
  private static SparkSession session(String provider, Path localDir) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set(PREFIX + "localDir", localDir.toString());
    return s;
  }

  /**
   * The S3A settings of both servers: global keys for the first, per-bucket keys for the
   * destination bucket on the second (S3A's names; the tool reads them with {@code spark.hadoop.}
   * in front).
   */
  private static Map<String, String> s3aSettings() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("fs.s3a.endpoint", h.s3.endpoint().toString());
    m.put("fs.s3a.endpoint.region", "us-east-1");
    m.put("fs.s3a.path.style.access", "true");
    m.put("fs.s3a.access.key", S3ProxyServer.ACCESS_KEY);
    m.put("fs.s3a.secret.key", S3ProxyServer.SECRET_KEY);
    String bucket = "fs.s3a.bucket." + DEST_BUCKET + ".";
    m.put(bucket + "endpoint", second.endpoint().toString());
    m.put(bucket + "access.key", DEST_ACCESS_KEY);
    m.put(bucket + "secret.key", DEST_SECRET_KEY);
    return m;
  }

  /**
   * Runs {@code q} on {@code s} to the end of its input ({@code AvailableNow}, one file of each
   * side per batch), recording each batch's rows under {@code run}; rethrows its failure.
   */
  private static List<org.apache.spark.sql.streaming.StreamingQueryProgress> run(Query q,
      SparkSession s, String checkpoint, Path left, Path right, String run) throws Exception {
    OUTPUT.putIfAbsent(run, new ConcurrentSkipListMap<>());
    Dataset<Row> l = s.readStream().schema(StreamingComparison.SCHEMA)
        .option("maxFilesPerTrigger", 1).json(left.toString());
    Dataset<Row> r = s.readStream().schema(StreamingComparison.RIGHT_SCHEMA)
        .option("maxFilesPerTrigger", 1).json(right.toString());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> rows = new ArrayList<>();
      for (Row row : df.collectAsList()) {
        rows.add(row.toString());
      }
      rows.sort(null);
      OUTPUT.get(run).put(batchId, rows);
    };
    StreamingQuery query = q.build.apply(l, r).writeStream()
        .outputMode(q.mode)
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

  /**
   * {@code java -jar strata-tools-<version>.jar args... --conf-file <conf>}, where the file
   * holds {@link #s3aSettings()} as a job's {@code spark-defaults.conf} would ({@code
   * spark.hadoop.} keys); it must exit 0.
   *
   * @return what it printed
   */
  private static String tool(Path dir, String... args) throws Exception {
    Path conf = dir.resolve("spark-defaults.conf");
    StringBuilder sb = new StringBuilder();
    s3aSettings().forEach((k, v) -> sb.append("spark.hadoop.").append(k).append(' ').append(v)
        .append('\n'));
    Files.writeString(conf, sb);
    Path out = dir.resolve(args[0] + "-out.txt");
    List<String> cmd = new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin",
        "java").toString(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-jar",
        System.getProperty("strata.tools.jar")));
    cmd.addAll(List.of(args));
    cmd.addAll(List.of("--conf-file", conf.toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile())
        .start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("strata " + String.join(" ", args) + " did not end in 120 s");
    }
    String printed = Files.readString(out);
    assertEquals(0, p.exitValue(), "strata " + String.join(" ", args) + ": " + printed);
    return printed;
  }

  /** An SDK client for the second server, with its own credentials. */
  private static S3Client destClient() {
    return S3Client.builder().endpointOverride(URI.create(second.endpoint().toString()))
        .region(Region.US_EAST_1).forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create(DEST_ACCESS_KEY, DEST_SECRET_KEY)))
        .build();
  }

  private static List<S3Object> list(S3Client s3, String bucket, String prefix) {
    return s3.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix)).contents().stream()
        .toList();
  }

  /** A body that may throw, for {@link #async}. */
  @FunctionalInterface
  private interface Body {
    void run() throws Exception;
  }

  private static CompletableFuture<Void> async(String thread, Body body) {
    return CompletableFuture.runAsync(() -> {
      try {
        body.run();
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    }, runnable -> new Thread(runnable, thread).start());
  }

  private static void await(CompletableFuture<Void> f) throws Exception {
    try {
      f.join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private static void awaitQuietly(CompletableFuture<Void> f) {
    try {
      f.join();
    } catch (CompletionException e) {
      // reported by the caller
    }
  }
}
