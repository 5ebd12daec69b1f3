// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.VersionObjectCodec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.BiFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Runs one stateful streaming query twice on the same input, in the same micro-batches, and
 * compares the outputs batch by batch: once with a baseline provider of Spark's own (checkpoint on
 * the local file system) and once with Strata (checkpoint on the harness's S3 server). Each run
 * stops once halfway and starts again on the same checkpoint; for Strata every local state
 * directory is wiped at that stop, so the second half must restore from S3 alone.
 *
 * <p>Input is two directories of JSON files, one file per micro-batch ({@code maxFilesPerTrigger
 * 1}): the left stream with {@link #SCHEMA} and a right stream with {@link #RIGHT_SCHEMA} (for
 * joins). Each run uses {@link Trigger#AvailableNow()}, a {@code foreachBatch} sink that records
 * every batch's rows (sorted, as strings) and no no-data batches, so batch ids and contents are
 * reproducible. The restart comes after batch {@code half - 1} of {@code batches}. The baseline and
 * Strata runs of one query run concurrently, each in its own
 * {@link SparkSession#newSession() session} (same SparkContext, own SQL settings).
 *
 * <p>A JUnit extension: register it as a static field with {@code @RegisterExtension}; it starts
 * a {@link SparkS3Harness} before the class's tests and closes it after them.
 */
final class StreamingComparison implements BeforeAllCallback, AfterAllCallback {
  static final String SCHEMA = "ts TIMESTAMP, key STRING, value LONG";
  static final String RIGHT_SCHEMA = "rts TIMESTAMP, rkey STRING, rvalue LONG";
  /** Event time of the first batch; batch {@code b} of both inputs starts {@code 10 b} s later. */
  static final Instant T0 = Instant.parse("2024-01-01T00:00:00Z");

  /** Output of every run: run name -&gt; batch id -&gt; the batch's rows, sorted. */
  private static final Map<String, SortedMap<Long, List<String>>> OUTPUT =
      new ConcurrentHashMap<>();

  /** Builds the query from the left and right input streams; {@code run} is 0, then 1. */
  @FunctionalInterface
  interface Builder {
    Dataset<Row> build(Dataset<Row> left, Dataset<Row> right, int run);
  }

  /**
   * One stateful query under test, with SQL settings of its own (applied to both runs). The
   * second run (after the restart) may build a different query, as a new release would.
   */
  /**
   * A {@link QueryDef#conf()} key (not a Spark setting): how many times the {@code foreachBatch}
   * sink reads each batch's DataFrame, unpersisted (each read re-runs the batch's stateful
   * stage); every read must give the same rows.
   */
  static final String SINK_READS = "strata.test.sinkReads";

  /**
   * A {@link QueryDef#conf()} key (not a Spark setting): if {@code "true"}, the {@code
   * foreachBatch} sink reads {@code df.union(df).coalesce(1)}, so that one task computes every
   * partition of the batch's stateful stage twice, one after the other.
   */
  static final String SINK_SELF_UNION = "strata.test.sinkSelfUnion";

  /**
   * A {@link QueryDef#conf()} key (not a Spark setting): if {@code "true"}, the {@code
   * foreachBatch} sink first counts {@code df.rdd().zip(df.rdd())}, so that one task computes
   * each partition of the batch's stateful stage twice at once, interleaved.
   */
  static final String SINK_ZIP = "strata.test.sinkZip";
  /**
   * A prefix of {@link QueryDef#conf()} keys set (without the prefix) only on Strata's runs, for
   * a setting the baseline provider does not support (checkpoint format 2 on HDFS).
   */
  static final String STRATA_ONLY = "strata.test.strataOnly.";

  record QueryDef(String name, OutputMode mode, Builder build, Map<String, String> conf) {
    QueryDef(String name, OutputMode mode,
        BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build, Map<String, String> conf) {
      this(name, mode, (Builder) (l, r, run) -> build.apply(l, r), conf);
    }

    QueryDef(String name, OutputMode mode,
        BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build) {
      this(name, mode, build, Map.of());
    }
  }

  /**
   * Work on Strata's checkpoint between its two runs: after the first run stopped (and the local
   * state was wiped), before the restart. The baseline's runs have no such step.
   */
  @FunctionalInterface
  interface BetweenRuns {
    /**
     * @return how many batch ids it used (its own batches, without output): the second run's
     *     batch ids are that many higher than the baseline's
     */
    long run(SparkS3Harness h, String checkpoint) throws Exception;
  }

  /** Writes the input files of batches {@code [from, to)} into the left and right directories. */
  @FunctionalInterface
  interface Input {
    void write(Path left, Path right, int from, int to) throws IOException;
  }

  /**
   * What one comparison produced: the output of both runs (equal by then) and Strata's checkpoint
   * location, for assertions of a test's own.
   */
  record Result(SortedMap<Long, List<String>> baseline, SortedMap<Long, List<String>> strata,
      String strataCheckpoint, String baselineCheckpoint) {
    /** Strata's output: batch id to the batch's sorted rows. */
    SortedMap<Long, List<String>> output() {
      return strata;
    }

    /** Strata's checkpoint location. */
    String checkpoint() {
      return strataCheckpoint;
    }

    /** Every output row of every batch. */
    List<String> rows() {
      return strata.values().stream().flatMap(List::stream).toList();
    }
  }

  private final int shufflePartitions;
  private final Input input;
  private final int batches;
  private final int half;
  private SparkS3Harness h;

  /**
   * Compares queries on {@code input}, {@code batches} micro-batches per run, {@code half} of them
   * before the restart, with {@code shufflePartitions} state partitions per stateful operator.
   */
  StreamingComparison(int shufflePartitions, Input input, int batches, int half) {
    this.shufflePartitions = shufflePartitions;
    this.input = input;
    this.batches = batches;
    this.half = half;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    h = new SparkS3Harness(shufflePartitions);
  }

  @Override
  public void afterAll(ExtensionContext context) throws IOException {
    if (h != null) {
      h.close();
      h = null;
    }
  }

  /**
   * Runs {@code q} with {@code baselineProvider} and with Strata and asserts: the baseline produced
   * output, both outputs are equal batch by batch, Strata's restart restored bytes from S3, and
   * Strata wrote version objects.
   */
  Result check(QueryDef q, String baselineProvider) throws Exception {
    return check(q, baselineProvider, null);
  }

  /**
   * {@link #check(QueryDef, String)} with {@code between} run on Strata's checkpoint at the
   * restart; Strata's output is compared with its batch ids after the step moved down by the
   * ids the step used (none of which may have output).
   */
  Result check(QueryDef q, String baselineProvider, BetweenRuns between) throws Exception {
    if (h.spark.sparkContext().isStopped()) {
      restart(q.name(), "found stopped before it");
    }
    try {
      return checkOnce(q, baselineProvider, between);
    } catch (Exception | AssertionError e) {
      if (!ContextStopCause.isStoppedContext(e)) {
        throw e;
      }
      // Spark stopped the shared SparkContext on its own (a fatal error in its listener bus or
      // context cleaner, or its DAG scheduler's event loop): a fault of the test JVM, not of
      // the query. Say why, loudly, and run the query once more on a new session; a second
      // stop fails the test.
      restart(q.name(), "stopped by Spark while it ran");
      return checkOnce(q, baselineProvider, between);
    }
  }

  /** Replaces the session after Spark stopped its context, printing Spark's last ERRORs. */
  private void restart(String query, String when) throws IOException {
    System.err.println("[StreamingComparison] the shared SparkContext was " + when + " ("
        + query + "); Spark's last ERRORs in this JVM:\n" + ContextStopCause.lastErrors()
        + "\n[StreamingComparison] starting a new session");
    try {
      h.close();
    } finally {
      h = new SparkS3Harness(shufflePartitions);
    }
  }

  private Result checkOnce(QueryDef q, String baselineProvider, BetweenRuns between)
      throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-" + q.name()));
    Path right = Files.createDirectories(h.work.resolve("right-" + q.name()));
    String baselineCkpt = h.fileCheckpoint(q.name());
    CompletableFuture<SortedMap<Long, List<String>>> baselineRun = CompletableFuture.supplyAsync(
        () -> runTwiceUnchecked(q, baselineProvider, baselineCkpt, in, right, null),
        runnable -> new Thread(runnable, "baseline-" + q.name()).start());
    Path in2 = Files.createDirectories(h.work.resolve("in2-" + q.name()));
    Path right2 = Files.createDirectories(h.work.resolve("right2-" + q.name()));
    String ckpt = h.s3Checkpoint(q.name());
    SortedMap<Long, List<String>> strata;
    try {
      strata = runTwice(q, SparkS3Harness.PROVIDER, ckpt, in2, right2, between);
    } finally {
      awaitQuietly(baselineRun);
    }
    SortedMap<Long, List<String>> baseline;
    try {
      baseline = baselineRun.join();
    } catch (CompletionException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
    assertFalse(baseline.values().stream().allMatch(List::isEmpty), "the query produced output");
    assertEquals(baseline, strata, q.name() + ": Strata's output differs from Spark's provider");
    assertTrue(versionObjects(ckpt) > 0, "Strata wrote version objects under " + ckpt);
    return new Result(baseline, strata, ckpt, baselineCkpt);
  }

  private static void awaitQuietly(CompletableFuture<?> f) {
    try {
      f.join();
    } catch (CompletionException e) {
      // reported by the caller
    }
  }

  private SortedMap<Long, List<String>> runTwiceUnchecked(QueryDef q, String provider,
      String checkpoint, Path in, Path right, BetweenRuns between) {
    try {
      return runTwice(q, provider, checkpoint, in, right, between);
    } catch (Exception e) {
      throw new CompletionException(e);
    }
  }

  private SortedMap<Long, List<String>> runTwice(QueryDef q, String provider, String checkpoint,
      Path in, Path right, BetweenRuns between) throws Exception {
    boolean strata = provider.equals(SparkS3Harness.PROVIDER);
    String run = q.name() + "@" + provider + "@" + checkpoint;
    OUTPUT.put(run, new ConcurrentSkipListMap<>());
    input.write(in, right, 0, half);
    runOnce(q, 0, provider, checkpoint, in, right, run);
    if (strata) {
      h.wipeLocalState();
    }
    long firstOfSecondRun = OUTPUT.get(run).isEmpty() ? 0 : OUTPUT.get(run).lastKey() + 1;
    long used = between == null ? 0 : between.run(h, checkpoint);
    input.write(in, right, half, batches);
    List<StreamingQueryProgress> second = runOnce(q, 1, provider, checkpoint, in, right, run);
    if (strata) {
      long restored = second.stream().flatMap(p -> Arrays.stream(p.stateOperators()))
          .mapToLong(o -> o.customMetrics().getOrDefault("strataRestoreBytes", 0L)).sum();
      assertTrue(restored > 0, q.name() + ": the restart restored state from S3");
    }
    SortedMap<Long, List<String>> out = OUTPUT.remove(run);
    if (used == 0) {
      return out;
    }
    SortedMap<Long, List<String>> moved = new java.util.TreeMap<>();
    for (Map.Entry<Long, List<String>> e : out.entrySet()) {
      long b = e.getKey();
      assertFalse(b >= firstOfSecondRun && b < firstOfSecondRun + used, q.name()
          + ": batch " + b + " was the step's own between the runs, yet the query ran it");
      moved.put(b < firstOfSecondRun ? b : b - used, e.getValue());
    }
    return moved;
  }

  private List<StreamingQueryProgress> runOnce(QueryDef q, int runNo, String provider,
      String checkpoint, Path in, Path right, String run) throws Exception {
    SparkSession session = h.spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    session.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    boolean strataRun = provider.equals(SparkS3Harness.PROVIDER);
    q.conf().forEach((k, v) -> {
      if (!k.startsWith(STRATA_ONLY)) {
        session.conf().set(k, v);
      } else if (strataRun) {
        session.conf().set(k.substring(STRATA_ONLY.length()), v);
      }
    });
    Dataset<Row> left = session.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString());
    Dataset<Row> rightDf = session.readStream().schema(RIGHT_SCHEMA)
        .option("maxFilesPerTrigger", 1).json(right.toString());
    int reads = Integer.parseInt(q.conf().getOrDefault(SINK_READS, "1"));
    boolean selfUnion = Boolean.parseBoolean(q.conf().getOrDefault(SINK_SELF_UNION, "false"));
    boolean zip = Boolean.parseBoolean(q.conf().getOrDefault(SINK_ZIP, "false"));
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      if (zip) {
        df.javaRDD().zip(df.javaRDD()).count();
      }
      Dataset<Row> read = selfUnion ? df.union(df).coalesce(1) : df;
      List<String> first = null;
      for (int i = 0; i < reads; i++) {
        List<String> rows = new ArrayList<>();
        for (Row r : read.collectAsList()) {
          rows.add(r.toString());
        }
        rows.sort(null);
        if (first == null) {
          first = rows;
        } else if (!first.equals(rows)) {
          throw new IllegalStateException("batch " + batchId + " read " + (i + 1) + " gave "
              + rows + ", read 1 gave " + first);
        }
      }
      OUTPUT.get(run).put(batchId, first);
    };
    StreamingQuery query = q.build().build(left, rightDf, runNo).writeStream()
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

  /**
   * The input of {@link StreamingQueriesIT}: 40 left rows per batch (every fifth one twice) over
   * 25 keys that all recur in every batch, event time {@code T0 + 10 b + (j mod 10)} s; a right
   * row for every third left row, up to 6 s later.
   */
  static void recurringKeys(Path in, Path right, int from, int to) throws IOException {
    for (int b = from; b < to; b++) {
      StringBuilder left = new StringBuilder();
      StringBuilder rs = new StringBuilder();
      for (int j = 0; j < 40; j++) {
        int k = (b * 7 + j) % 25;
        Instant ts = T0.plusSeconds(b * 10L + j % 10);
        String row = leftRow(ts, k, b * 100 + j);
        left.append(row);
        if (j % 5 == 0) {
          left.append(row); // an exact duplicate, for dropDuplicates
        }
        if (j % 3 == 0) {
          rs.append(rightRow(ts.plusSeconds(j % 7), k, -(b * 100 + j)));
        }
      }
      writeBatch(in, right, b, left, rs);
    }
  }

  /** One left-stream JSON line. */
  static String leftRow(Instant ts, int key, long value) {
    return String.format("{\"ts\":\"%s\",\"key\":\"k%02d\",\"value\":%d}%n", ts, key, value);
  }

  /** One right-stream JSON line. */
  static String rightRow(Instant ts, int key, long value) {
    return String.format("{\"rts\":\"%s\",\"rkey\":\"k%02d\",\"rvalue\":%d}%n", ts, key, value);
  }

  /**
   * Writes batch {@code b}'s two files; their modification times follow {@code b}, so the file
   * source reads one per batch in order.
   */
  static void writeBatch(Path in, Path right, int b, CharSequence left, CharSequence rs)
      throws IOException {
    write(in.resolve(String.format("part-%03d.json", b)), left.toString(), b);
    write(right.resolve(String.format("part-%03d.json", b)), rs.toString(), b);
  }

  private static void write(Path file, String text, int order) throws IOException {
    Files.writeString(file, text, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_000L + order * 1000L));
  }

  /** Number of Strata version objects ({@code .svo}) under a checkpoint's state directory. */
  /** The harness (Spark session, S3 server) while the class's tests run. */
  SparkS3Harness harness() {
    return h;
  }

  /**
   * The decoded manifest of a version object, by its key relative to the checkpoint's state
   * directory (as {@link #versionObjectKeys} returns them).
   */
  Manifest manifest(String checkpoint, String relativeKey) throws Exception {
    String key = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length())
        + "/state/" + relativeKey;
    byte[] object;
    try (S3Client s3 = h.s3.client()) {
      object = s3.getObjectAsBytes(b -> b.bucket(SparkS3Harness.BUCKET).key(key)).asByteArray();
    }
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(object, object.length);
    return ManifestCodec.decode(VersionObjectCodec.manifestFromTail(object, f));
  }

  long versionObjects(String checkpoint) {
    return versionObjectKeys(checkpoint).size();
  }

  /**
   * The stores (as {@code operatorId/partitionId[/storeName]}) that have at least one version
   * object under the checkpoint.
   */
  Set<String> storesWithVersions(String checkpoint) {
    Set<String> stores = new TreeSet<>();
    for (String key : versionObjectKeys(checkpoint)) {
      int v = key.indexOf("/v/");
      stores.add(key.substring(0, v));
    }
    return stores;
  }

  /** Keys of version objects, relative to the checkpoint's {@code state/} directory. */
  List<String> versionObjectKeys(String checkpoint) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length())
        + "/state/";
    try (S3Client s3 = h.s3.client()) {
      return s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(prefix))
          .contents().stream().map(o -> o.key().substring(prefix.length()))
          .filter(k -> k.endsWith(".svo")).toList();
    }
  }
}
