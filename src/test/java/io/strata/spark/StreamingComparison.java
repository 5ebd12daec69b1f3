package io.strata.spark;

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
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.VersionObjectCodec;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Runs one stateful streaming query twice on the same input, in the same batches, stopping once
 * halfway: with a baseline provider of Spark's (local checkpoint), and with Strata on the real
 * S3-compatible server, whose every local state directory is wiped at the stop so the second half
 * restores from S3 alone. The outputs (collected with {@code foreachBatch}) must be identical,
 * batch by batch. Shared by the streaming ITs.
 */
final class StreamingComparison {
  static final int BATCHES = 6;
  static final int HALF = 3;
  static final String SCHEMA = "ts TIMESTAMP, key STRING, value LONG";
  static final String RIGHT_SCHEMA = "rts TIMESTAMP, rkey STRING, rvalue LONG";
  private static final Map<String, Map<Long, List<String>>> OUTPUT = new ConcurrentHashMap<>();

  /** Builds the query from the left and right input streams; {@code run} is 0, then 1. */
  interface Builder {
    Dataset<Row> build(Dataset<Row> left, Dataset<Row> right, int run);
  }

  /**
   * One stateful query under test.
   *
   * @param name unique name (directories, checkpoints)
   * @param mode output mode
   * @param build the query; the second run (after the restart) may differ, as a new release of
   *     a query would
   * @param confs SQL settings for both runs (set before each run, restored after)
   */
  record QueryDef(String name, OutputMode mode, Builder build, Map<String, String> confs) {
    QueryDef(String name, OutputMode mode,
        BiFunction<Dataset<Row>, Dataset<Row>, Dataset<Row>> build) {
      this(name, mode, (l, r, run) -> build.apply(l, r), Map.of());
    }
  }

  private final SparkS3Harness h;

  StreamingComparison(SparkS3Harness h) {
    this.h = h;
  }

  /**
   * What Strata's run produced.
   *
   * @param output batch id to the batch's sorted output rows
   * @param checkpoint Strata's checkpoint location ({@code s3a://...})
   * @param baselineCheckpoint the baseline provider's checkpoint location
   */
  record Result(Map<Long, List<String>> output, String checkpoint, String baselineCheckpoint) { }

  /**
   * Runs {@code q} with {@code baselineProvider} and with Strata and asserts equal output, that
   * the query produced output, that Strata wrote version objects and that the restart restored
   * state from S3.
   */
  Result check(QueryDef q, String baselineProvider) throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-" + q.name()));
    Path right = Files.createDirectories(h.work.resolve("right-" + q.name()));
    String baselineCkpt = h.fileCheckpoint(q.name());
    Map<Long, List<String>> baseline = runTwice(q, baselineProvider, baselineCkpt, in, right,
        false);
    Path in2 = Files.createDirectories(h.work.resolve("in2-" + q.name()));
    Path right2 = Files.createDirectories(h.work.resolve("right2-" + q.name()));
    String ckpt = h.s3Checkpoint(q.name());
    Map<Long, List<String>> strata = runTwice(q, SparkS3Harness.PROVIDER, ckpt, in2, right2, true);
    assertFalse(baseline.values().stream().allMatch(List::isEmpty), "the query produced output");
    assertEquals(baseline, strata, q.name() + ": Strata's output differs from Spark's provider");
    assertTrue(versionObjects(ckpt).size() > 0, "Strata wrote version objects under " + ckpt);
    return new Result(strata, ckpt, baselineCkpt);
  }

  private Map<Long, List<String>> runTwice(QueryDef q, String provider, String checkpoint,
      Path in, Path right, boolean wipe) throws Exception {
    String run = q.name() + "@" + provider + "@" + checkpoint;
    OUTPUT.put(run, new TreeMap<>());
    writeInput(in, right, 0, HALF);
    runOnce(q, 0, provider, checkpoint, in, right, run);
    if (wipe) {
      h.wipeLocalState();
    }
    writeInput(in, right, HALF, BATCHES);
    List<StreamingQueryProgress> second = runOnce(q, 1, provider, checkpoint, in, right, run);
    if (wipe) {
      long restored = second.stream().flatMap(p -> java.util.Arrays.stream(p.stateOperators()))
          .mapToLong(o -> o.customMetrics().getOrDefault("strataRestoreBytes", 0L)).sum();
      assertTrue(restored > 0, q.name() + ": the restart restored state from S3");
    }
    return OUTPUT.get(run);
  }

  private List<StreamingQueryProgress> runOnce(QueryDef q, int runNo, String provider,
      String checkpoint, Path in, Path right, String run) throws Exception {
    h.spark.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    h.spark.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    q.confs().forEach((k, v) -> h.spark.conf().set(k, v));
    try {
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
    } finally {
      q.confs().keySet().forEach(k -> h.spark.conf().unset(k));
    }
  }

  /** Batch files [from, to): keys recur across batches, event time advances 10 s per batch. */
  static void writeInput(Path in, Path right, int from, int to) throws IOException {
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

  /** Keys of Strata's version objects under the checkpoint's state directory, sorted. */
  List<String> versionObjects(String checkpoint) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length())
        + "/state/";
    try (S3Client s3 = h.s3.client()) {
      return s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(prefix))
          .contents().stream().map(o -> o.key()).filter(k -> k.endsWith(".svo")).sorted()
          .toList();
    }
  }

  /** The decoded manifest of a version object (by its bucket key). */
  Manifest manifest(String key) throws Exception {
    byte[] object;
    try (S3Client s3 = h.s3.client()) {
      object = s3.getObjectAsBytes(b -> b.bucket(SparkS3Harness.BUCKET).key(key)).asByteArray();
    }
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(object, object.length);
    return ManifestCodec.decode(VersionObjectCodec.manifestFromTail(object, f));
  }
}
