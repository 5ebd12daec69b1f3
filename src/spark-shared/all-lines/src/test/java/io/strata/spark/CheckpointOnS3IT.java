// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.checkpoint.CheckpointRequests;
import io.strata.objectstore.RequestListener;
import io.strata.testkit.ChildJvm;
import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The whole checkpoint (Spark's offsets, commits, metadata, source log and schema files, and
 * Strata's state) on a real S3-compatible server through {@link
 * io.strata.checkpoint.StrataCheckpointFileManager}: the driver's requests per batch, two
 * instances of one query on one checkpoint, and a driver killed with SIGKILL between {@code
 * offsets/N} and {@code commits/N}. The second instance and the killed driver run in their own
 * JVMs on a classpath without hadoop-aws.
 */
class CheckpointOnS3IT {
  private static final int KEYS = 12;
  /** Generous: a driver JVM starts Spark from scratch, and CI machines can be very loaded. */
  private static final long CHILD_TIMEOUT_S = 900;
  private static SparkS3Harness h;
  /** Child JVM logs, kept after the run (the harness deletes its work directory). */
  private static Path logs;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    logs = Files.createDirectories(Path.of("target", "checkpoint-it-logs"));
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** Input file of batch {@code b}: 30 rows over {@value #KEYS} keys, values unique. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < 30; j++) {
      sb.append(String.format("{\"key\":\"k%02d\",\"value\":%d}%n", (b * 7 + j * 5) % KEYS,
          b * 100 + j));
    }
    Path f = in.resolve(String.format("part-%03d.json", b));
    Path tmp = in.resolve(String.format(".part-%03d.tmp", b));
    Files.writeString(tmp, sb.toString(), StandardCharsets.UTF_8);
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
    Files.move(tmp, f);
  }

  /** What the query must output for batch {@code n}: the keys of batch n, totals up to n. */
  private static List<String> expected(int n) {
    Map<String, long[]> totals = new TreeMap<>();
    Set<String> touched = new java.util.TreeSet<>();
    for (int b = 0; b <= n; b++) {
      for (int j = 0; j < 30; j++) {
        String key = String.format("k%02d", (b * 7 + j * 5) % KEYS);
        long[] t = totals.computeIfAbsent(key, k -> new long[2]);
        t[0]++;
        t[1] += b * 100 + j;
        if (b == n) {
          touched.add(key);
        }
      }
    }
    return touched.stream().map(k -> k + "," + totals.get(k)[0] + "," + totals.get(k)[1])
        .sorted().collect(Collectors.toList());
  }

  private static List<String> output(Path out, int batch) throws IOException {
    return Files.readAllLines(out.resolve("batch-" + batch + ".txt"), StandardCharsets.UTF_8);
  }

  /** Keys under the checkpoint, relative to it. */
  private static List<String> keys(String checkpoint, String under) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length()) + "/";
    try (S3Client s3 = h.s3.client()) {
      return s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(prefix + under))
          .contents().stream().map(o -> o.key().substring(prefix.length()))
          .collect(Collectors.toList());
    }
  }

  private static String describe(List<RequestListener.Request> rs) {
    return rs.stream().map(r -> r.kind() + (r.conditional() ? "(If-None-Match)" : "") + " "
        + r.key().replaceFirst("^.*?/(?=(offsets|commits|sources|state|metadata))", "")
        + " " + r.statusCode()).collect(Collectors.joining(", ", "[", "]"));
  }

  /**
   * Why the tests with a second driver JVM run on one Scala build of a line: the create-only
   * writes and their refusal are the checkpoint file manager's Java over Hadoop's API and the
   * object store (no Scala conversion on the path), and the steady-batch test runs that file
   * manager under both builds' Spark.
   */
  /**
   * Why the tests with a second driver JVM run on 3.5 and 4.1: the checkpoint file manager has
   * two sources, {@code src/spark-shared/3.5-and-4.0} and {@code 4.1-and-later}, and these two
   * lines run one each.
   */
  static final String FILE_MANAGERS = "the checkpoint file manager has two sources, 3.5-and-4.0 "
      + "and 4.1-and-later; 3.5 and 4.1 run one each (CI time)";

  static final String CHILD_JVMS = "the checkpoint file manager's create-only writes are the same "
      + "Java on both Scala builds; aSteadyBatchCostsTheDriverThreeCreateOnlyPutsAndNothingElse "
      + "runs them on this build";

  /** A gauge of Strata's source, read through the running SparkContext's metrics system. */
  private static long strataGauge(String name) {
    scala.collection.Seq<org.apache.spark.metrics.source.Source> sources =
        org.apache.spark.SparkEnv.get().metricsSystem().getSourcesByName(
            io.strata.reporting.StrataMetricsSource.NAME);
    assertEquals(1, sources.size(), "one Strata source in the metrics system");
    return (Long) sources.head().metricRegistry().getGauges().get(name).getValue();
  }

  @Test
  void aSteadyBatchCostsTheDriverThreeCreateOnlyPutsAndNothingElse() throws Exception {
    String ckpt = h.s3Checkpoint("steady");
    Path in = Files.createDirectories(h.work.resolve("steady-in"));
    Path out = h.work.resolve("steady-out");
    List<RequestListener.Request> log = new CopyOnWriteArrayList<>();
    List<List<RequestListener.Request>> batches = new ArrayList<>();
    List<RequestListener.Request> startup;
    int total = 12;
    StreamingQuery q;
    // The counters the source's gauges read (the source registers with the first S3 use).
    long stateAtStart = io.strata.metrics.JvmRequests.stateStores().puts();
    long checkpointAtStart = io.strata.metrics.JvmRequests.checkpointFiles().total();
    try (AutoCloseable listening = CheckpointRequests.listen(log::add)) {
      q = CheckpointDriver.start(h.spark, ckpt, in, out, Trigger.ProcessingTime(100), "steady",
          -1);
      while (q.isActive() && q.lastProgress() == null) {
        Thread.sleep(20); // the first trigger found no data: start-up is done
      }
      startup = List.copyOf(log);
      for (int b = 0; b < total; b++) {
        int from = log.size();
        writeBatch(in, b);
        q.processAllAvailable();
        batches.add(List.copyOf(log.subList(from, log.size())));
      }
      q.stop();
    }
    // Spark's metrics system has Strata's source (issue 46): what its sinks export is what the
    // driver's checkpoint files and the state stores sent.
    assertEquals(log.size(), strataGauge("checkpointFiles.requests.total") - checkpointAtStart,
        "the metrics source counts every checkpoint request of the query");
    assertTrue(strataGauge("stateStore.requests.put") - stateAtStart >= total,
        "the metrics source counts the state stores' commits");
    System.out.println("Checkpoint requests of the driver (StrataCheckpointFileManager):");
    System.out.println("  query start (" + startup.size() + "): " + describe(startup));
    for (int b = 0; b < total; b++) {
      System.out.println("  batch " + b + " (" + batches.get(b).size() + "): "
          + describe(batches.get(b)));
    }
    long walMs = 0;
    long commitMs = 0;
    long latestOffsetMs = 0;
    int steady = 0;
    for (StreamingQueryProgress p : q.recentProgress()) {
      if (p.numInputRows() > 0 && p.batchId() >= 2) {
        walMs += p.durationMs().getOrDefault("walCommit", 0L);
        commitMs += p.durationMs().getOrDefault("commitOffsets", 0L);
        latestOffsetMs += p.durationMs().getOrDefault("latestOffset", 0L);
        steady++;
      }
    }
    if (steady > 0) {
      System.out.printf("  steady batches: walCommit %d ms, commitOffsets %d ms, latestOffset"
          + " %d ms (averages over %d)%n", walMs / steady, commitMs / steady,
          latestOffsetMs / steady, steady);
    }

    for (int b = 2; b < total; b++) {
      List<RequestListener.Request> rs = new java.util.ArrayList<>(batches.get(b));
      if (!SparkApi.AT_LEAST_4_1) {
        // Spark 4.0's driver also asks whether the batch's commit entry exists before writing
        // it: one LIST of commits/<b> (4.1 answers it from the log's listing at start).
        String probe = "commits/" + b;
        assertTrue(rs.removeIf(r -> r.kind().equals("LIST") && r.key().endsWith(probe)),
            "Spark 4.0, batch " + b + ": the LIST of " + probe + ": " + describe(rs));
      }
      assertEquals(3, rs.size(), "batch " + b + ": " + describe(rs));
      for (RequestListener.Request r : rs) {
        assertEquals("PUT", r.kind(), "batch " + b + ": only PUTs, " + describe(rs));
        assertTrue(r.conditional(), "create-only (If-None-Match: *): " + describe(rs));
        assertEquals(200, r.statusCode(), describe(rs));
      }
      List<String> written = rs.stream().map(r -> r.key().substring(r.key().indexOf('/') + 1))
          .sorted().collect(Collectors.toList());
      String id = Integer.toString(b);
      // every 10th entry of the file source's log is a compaction of the previous ones
      String source = "sources/0/" + id + (b % 10 == 9 ? ".compact" : "");
      assertEquals(List.of("commits/" + id, "offsets/" + id, source), written,
          "batch " + b + " writes its source log, offsets and commit entries once each");
    }
    for (int b = 0; b < total; b++) {
      assertEquals(expected(b), output(out, b), "batch " + b + " output");
    }
    assertTrue(log.stream().noneMatch(r -> r.kind().equals("COPY")), "no COPY: " + describe(log));
    List<String> all = keys(ckpt, "");
    assertTrue(all.contains("metadata"), all.toString());
    assertTrue(all.stream().noneMatch(k -> k.endsWith(".tmp") || k.endsWith("/")),
        "no temp files, no directory markers: " + all);
  }

  @Test
  @OncePerSparkLine(reason = CHILD_JVMS)
  @io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1"}, reason = FILE_MANAGERS)
  void aSecondInstanceFailsOnItsFirstBatchWriteAndTheFirstContinuesExactly() throws Exception {
    String ckpt = h.s3Checkpoint("two");
    Path in = Files.createDirectories(h.work.resolve("two-in"));
    Path out1 = h.work.resolve("two-out-1");
    Path out2 = h.work.resolve("two-out-2");
    for (int b = 0; b < 3; b++) {
      writeBatch(in, b);
    }
    StreamingQuery q1 = CheckpointDriver.start(h.spark, ckpt, in, out1,
        Trigger.ProcessingTime(200), "q1", -1);
    try {
      q1.processAllAvailable();
      long interval = 10_000;
      try (ChildJvm q2 = ChildJvm.start(CheckpointDriver.class, logs.resolve("q2.log"),
          h.s3.endpoint().toString(), ckpt, in.toString(), out2.toString(),
          h.work.resolve("q2-work").toString(), "processing:" + interval, "q2", "-1")) {
        Path ready = out2.resolve("ready-q2.marker");
        long deadline = System.currentTimeMillis() + CHILD_TIMEOUT_S * 1000;
        while (!Files.exists(ready)) {
          assertTrue(q2.process.isAlive(), "the second instance started; log " + q2.log);
          assertTrue(System.currentTimeMillis() < deadline, "second instance not ready");
          Thread.sleep(200);
        }
        // The second instance runs a trigger every 10 s (at multiples of 10 s). Publish the new
        // file at least 7 s before its next trigger, so the first instance (200 ms) takes it
        // first.
        long now = System.currentTimeMillis();
        long next = (now / interval + 1) * interval;
        if (next - now < 7_000) {
          Thread.sleep(next - now + 1_000);
        }
        writeBatch(in, 3);
        q1.processAllAvailable();
        assertEquals(0, q2.await(CHILD_TIMEOUT_S),
            "the second instance's JVM exits; log " + q2.log);
      }
      String error = Files.readString(out2.resolve("error-q2.txt"));
      assertTrue(error.contains("org.apache.hadoop.fs.FileAlreadyExistsException"), error);
      assertTrue(error.contains("concurrently using"), "Spark's concurrent-writer error: " + error);
      assertTrue(error.contains("/3"), "on batch 3: " + error);
      assertEquals("absent", Files.readString(out2.resolve("hadoop-aws-q2.txt")));
      try (var files = Files.list(out2)) {
        assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith("batch-")),
            "the second instance ran no batch");
      }
      writeBatch(in, 4);
      q1.processAllAvailable();
      assertTrue(q1.isActive(), "the first instance keeps running");
    } finally {
      q1.stop();
    }
    for (int b = 0; b <= 4; b++) {
      assertEquals(expected(b), output(out1, b), "first instance, batch " + b);
    }
    assertEquals(List.of("commits/0", "commits/1", "commits/2", "commits/3", "commits/4"),
        keys(ckpt, "commits/"));
  }

  @Test
  @OncePerSparkLine(reason = CHILD_JVMS)
  @io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1"}, reason = FILE_MANAGERS)
  void aDriverKilledBetweenOffsetsAndCommitsReRunsTheBatchOnRestart() throws Exception {
    String ckpt = h.s3Checkpoint("kill");
    Path in = Files.createDirectories(h.work.resolve("kill-in"));
    Path out = h.work.resolve("kill-out");
    int total = 6;
    int killAt = 3;
    for (int b = 0; b < total; b++) {
      writeBatch(in, b);
    }
    String endpoint = h.s3.endpoint().toString();
    try (ChildJvm first = ChildJvm.start(CheckpointDriver.class, logs.resolve("kill-1.log"),
        endpoint, ckpt, in.toString(), out.toString(), h.work.resolve("kill-work-1").toString(),
        "availableNow", "run1", Integer.toString(killAt))) {
      Path marker = out.resolve("in-batch-" + killAt + ".marker");
      long deadline = System.currentTimeMillis() + CHILD_TIMEOUT_S * 1000;
      while (!Files.exists(marker)) {
        assertTrue(first.process.isAlive(), "the driver runs; log " + first.log);
        assertTrue(System.currentTimeMillis() < deadline, "batch " + killAt + " not reached");
        Thread.sleep(200);
      }
      List<String> offsets = keys(ckpt, "offsets/");
      List<String> commits = keys(ckpt, "commits/");
      assertTrue(offsets.contains("offsets/" + killAt), offsets.toString());
      assertEquals(List.of("commits/0", "commits/1", "commits/2"), commits,
          "killed between offsets/" + killAt + " and commits/" + killAt);
      first.kill();
    }
    assertEquals("absent", Files.readString(out.resolve("hadoop-aws-run1.txt")));

    // Restart on a fresh machine: new JVM, new local directories; everything comes from S3.
    try (ChildJvm second = ChildJvm.start(CheckpointDriver.class, logs.resolve("kill-2.log"),
        endpoint, ckpt, in.toString(), out.toString(), h.work.resolve("kill-work-2").toString(),
        "availableNow", "run2", "-1")) {
      assertEquals(0, second.await(CHILD_TIMEOUT_S),
          "the restarted driver finishes; log " + second.log);
    }
    List<String> reruns = Files.readAllLines(out.resolve("runs.log")).stream()
        .filter(l -> l.startsWith("run2 ")).collect(Collectors.toList());
    assertEquals(List.of("run2 3", "run2 4", "run2 5"), reruns,
        "the restart re-runs batch " + killAt + " and goes on");
    for (int b = 0; b < total; b++) {
      assertEquals(expected(b), output(out, b), "batch " + b + " output");
    }
    assertEquals(total, keys(ckpt, "commits/").size());
    assertFalse(keys(ckpt, "state/").isEmpty());
  }
}
