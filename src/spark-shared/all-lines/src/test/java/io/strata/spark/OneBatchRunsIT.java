// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 15: the restore stays bounded whatever the job's rhythm, here the rhythm of a job run as
 * one-batch {@code Trigger.AvailableNow} runs (a scheduled job that wakes up, processes what
 * arrived, and stops), each in a new driver JVM on wiped local directories, so that every run's
 * every load is a cold restore from S3 and no run lives long enough for maintenance (which
 * takes the periodic snapshots) ever to run.
 *
 * <p>Each run writes one new input file, then a new driver JVM ({@link CrashDriver}, local mode,
 * 2 shuffle partitions, {@code snapshotInterval} 5, a quarter of Strata's default, for CI time) runs the
 * query ({@code groupBy(key).count()}, update mode, {@code maxFilesPerTrigger=1}) to the end of
 * its input: exactly one batch, whose id is the run number. Without anything else each run's
 * cold load would replay one delta more than the last run's, so the chain would grow without
 * bound. What bounds it: a cold load whose chain is at least {@code snapshotInterval} schedules
 * a snapshot of the loaded version in the background ({@code SnapshotScheduler}, told by {@code
 * SyncedStore.load}) and publishes it as {@code b/...bsm}; every later cold load restores from
 * the newest usable published snapshot plus the deltas after it. So the chain climbs to the interval and falls back to 1 every interval's runs.
 *
 * <p>After every run it asserts, from the objects in S3 alone ({@link RestoreChains}), that the
 * chain a cold restore of each store's newest version replays is at most {@code snapshotInterval
 * + 2} (12), and that the batch's output equals that of Spark's HDFS-backed provider running the
 * same query on the same input, one batch per run, on a local checkpoint in this JVM's session.
 * Issue 43: also that the objects per store stay within the bound retention sets, in this rhythm
 * with Spark's defaults: at most 6 objects under {@code runs/} (this run's claim and marker, the
 * previous run's until the next round, and at most two lists of retired runs: retirement takes
 * two rounds, docs/format.md "Run claims") and no more published snapshots ({@code b/})
 * than retained versions; each run prints every store's objects per kind.
 * After the last run: every store has published snapshots, the runs outnumber the bound (so
 * without the snapshots the chain would have exceeded it), and nothing a retained manifest names
 * is missing.
 *
 * <p>Spark does not close the providers when a local-mode driver stops ({@code SparkContext.stop}
 * never calls {@code StateStore.stop}), so the upload a cold load scheduled finishes either
 * during the batch (with this state, 40 keys, about a second before the exit; each run prints
 * that margin for the snapshots it published) or in Strata's shutdown hook ({@code
 * UploadsAtExit}, which {@link SnapshotAtExitIT} covers on every line).
 *
 * <p>Only on Spark 4.1: each run costs a driver JVM start (several seconds), and the rhythm is
 * the same on every line (the mechanism is in {@code strata-core}; the exit on each line is
 * {@link SnapshotAtExitIT}'s). Child logs go to {@code target/one-batch-runs-logs/run-<n>.log}.
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "8 driver JVMs: minutes; the rhythm's mechanism is "
    + "in strata-core, and SnapshotAtExitIT covers each line's exit")
class OneBatchRunsIT {
  private static final int KEYS = 40;
  /**
   * Half Strata's default of 10 (CI time: each run is a driver JVM start; the mechanism does not
   * depend on the interval, and strata-core's RetentionBoundTest runs fifty one-batch runs);
   * the harness's in-JVM session uses 3.
   */
  private static final int SNAPSHOT_INTERVAL = 5;
  /** The longest restore chain allowed: the snapshot interval plus a margin of two. */
  private static final int BOUND = SNAPSHOT_INTERVAL + 2;
  /**
   * One-batch runs, each in a new driver JVM: one more than {@link #BOUND}, so the chain climbs
   * to the interval and falls back, and the runs outnumber the bound. (Fifty
   * one-batch runs, each a new run and instance, are strata-core's RetentionBoundTest.)
   */
  private static final int RUNS = BOUND + 1;
  private static final long CHILD_TIMEOUT_S = 300;
  /** Spark's default {@code minBatchesToRetain}, which the driver runs keep. */
  private static final int RETAINED_VERSIONS = 100;
  /**
   * Objects under a store's {@code runs/} after a run: this run's claim and marker, the previous
   * run's (deleted by the next round, once a listed list names it), and at most two lists.
   */
  private static final int MAX_RUN_OBJECTS = 6;
  private static SparkS3Harness h;
  private static Path logs;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    logs = Files.createDirectories(Path.of("target", "one-batch-runs-logs"));
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /**
   * Batch b: a rotating subset of the keys (key kj is absent when (j + b) % 5 == 0), key kj
   * appearing 1 + (3j + b) % 4 times, so every batch changes most of the state and the counts
   * grow at different rates.
   */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < KEYS; j++) {
      if ((j + b) % 5 == 0) {
        continue;
      }
      for (int n = 0; n <= (3 * j + b) % 4; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  /** Runs the query with Strata in a new driver JVM (local mode) with Strata on {@code local}. */
  private static void runInNewDriver(String checkpoint, Path in, Path out, Path local, int run)
      throws Exception {
    DriverRuns.inNewDriver(h, checkpoint, in, out, local, 0, logs.resolve("run-" + run + ".log"),
        CHILD_TIMEOUT_S,
        "spark.sql.streaming.stateStore.strata.snapshotInterval=" + SNAPSHOT_INTERVAL);
  }

  /** The batch ids of the outputs in {@code out}. */
  private static List<Long> batches(Path out) throws IOException {
    try (Stream<Path> s = Files.list(out)) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.matches("batch-[0-9]+\\.txt"))
          .map(n -> Long.parseLong(n.substring(6, n.length() - 4))).sorted().toList();
    }
  }

  private static List<String> output(Path out, int batch) throws IOException {
    return Files.readAllLines(out.resolve("batch-" + batch + ".txt"), StandardCharsets.UTF_8);
  }

  /**
   * The published snapshots ({@code b/...bsm}) written since {@code since}, each with how long
   * before {@code exitedAt} it was written (its file's time in S3Proxy's data directory): how
   * much of a margin the upload a cold load scheduled had before the driver JVM exited.
   */
  private static Map<String, Long> publishedBefore(String prefix, long since, long exitedAt)
      throws IOException {
    Map<String, Long> out = new java.util.TreeMap<>();
    Path state = h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix).resolve("state");
    try (Stream<Path> files = Files.walk(state)) {
      for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".bsm")).toList()) {
        long at = Files.getLastModifiedTime(f).toMillis();
        if (at >= since) {
          out.put(state.relativize(f).toString(), exitedAt - at);
        }
      }
    }
    return out;
  }

  /**
   * The objects under one store root ({@code storeRoot} relative to the bucket, ending in
   * {@code /}) in S3Proxy's data directory, counted per kind: the key's first segment under the
   * root with its slash ({@code v/}, {@code runs/}, {@code b/}, {@code snap/}, {@code sst/},
   * {@code spill/}), or the file name for an object directly under the root.
   */
  private static Map<String, Integer> objectsPerKind(String storeRoot) throws IOException {
    Map<String, Integer> kinds = new java.util.TreeMap<>();
    Path root = h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(storeRoot);
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        Path rel = root.relativize(f);
        String kind = rel.getNameCount() > 1 ? rel.getName(0) + "/" : rel.toString();
        kinds.merge(kind, 1, Integer::sum);
      }
    }
    return kinds;
  }

  /** Generous: on two shared, busy cores a run (driver JVM plus the HDFS run) took up to 70 s. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.MINUTES)
  void theRestoreChainStaysBoundedOverOneBatchRunsInNewDriversOnWipedLocalDirs()
      throws Exception {
    int runs = RUNS;
    Path base = Files.createDirectories(h.work.resolve("one-batch-runs-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    String baseline = h.fileCheckpoint("one-batch-runs");
    Path outBase = base.resolve("out-hdfs");
    String strata = h.s3Checkpoint("one-batch-runs");
    String prefix = strata.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    List<Integer> longestPerRun = new ArrayList<>();
    List<Long> millisPerRun = new ArrayList<>();
    Path previous = null;
    for (int run = 0; run < runs; run++) {
      writeBatch(in, run);
      DriverRuns.oracle(h, baseline, in, outBase);
      assertEquals(run, batches(outBase).get(batches(outBase).size() - 1).intValue(),
          "run " + run + ": the HDFS provider ran batch " + run);

      // A new driver on new, empty local dirs: Strata's under run-<n>/local, Spark's work dir
      // under run-<n>/out/work; the previous run's are deleted first.
      if (previous != null) {
        SparkS3Harness.deleteRecursively(previous);
      }
      Path dir = Files.createDirectories(base.resolve("run-" + run));
      Path out = dir.resolve("out");
      long t0 = System.nanoTime();
      long startedAt = System.currentTimeMillis();
      runInNewDriver(strata, in, out, dir.resolve("local"), run);
      long exitedAt = System.currentTimeMillis();
      millisPerRun.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
      assertEquals(List.of((long) run), batches(out),
          "run " + run + " ran exactly one batch, batch " + run);
      assertEquals(output(outBase, run), output(out, run),
          "run " + run + ": batch " + run + " equals the HDFS provider's");
      previous = dir;

      Map<String, RestoreChains.Chain> chains =
          RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefix);
      assertEquals(2, chains.size(), "run " + run + ": one store per shuffle partition " + chains);
      int longest = 0;
      for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
        RestoreChains.Chain c = e.getValue();
        assertEquals(run + 1, c.version(), "run " + run + ": " + e.getKey() + " at version "
            + (run + 1));
        assertTrue(c.restoreChain() <= BOUND, "run " + run + ": a cold restore of "
            + e.getKey() + " replays at most " + BOUND + " deltas: " + c + "; log "
            + logs.resolve("run-" + run + ".log"));
        longest = Math.max(longest, c.restoreChain());
      }
      longestPerRun.add(longest);
      System.out.printf("OneBatchRunsIT run %d: %d ms, longest restore chain %d, published "
          + "by this run (ms before the driver's exit was seen) %s, %s%n", run,
          millisPerRun.get(run), longest, publishedBefore(prefix, startedAt, exitedAt), chains);

      // Issue 43: the objects per store stay within the bound retention sets, run after run.
      long retained = Math.min(run + 1, RETAINED_VERSIONS);
      for (String store : chains.keySet()) {
        Map<String, Integer> kinds = objectsPerKind(store);
        System.out.printf("OneBatchRunsIT run %d: %s objects per kind %s%n", run, store, kinds);
        int runObjects = kinds.getOrDefault("runs/", 0);
        assertTrue(runObjects <= MAX_RUN_OBJECTS, "run " + run + ": " + store + " holds "
            + runObjects + " objects under runs/, at most " + MAX_RUN_OBJECTS + " allowed (this "
            + "run's and the previous run's claim and marker, two lists of retired runs): "
            + kinds);
        int published = kinds.getOrDefault("b/", 0);
        assertTrue(published <= retained, "run " + run + ": " + store + " holds " + published
            + " published snapshots (b/), more than its " + retained + " retained versions: "
            + kinds);
      }
    }
    System.out.println("OneBatchRunsIT longest restore chain per run: " + longestPerRun);
    System.out.println("OneBatchRunsIT ms per run: " + millisPerRun);

    assertTrue(runs > BOUND, "the runs (" + runs + ") outnumber the bound (" + BOUND
        + "): without published snapshots the chain would have exceeded it");
    Map<String, RestoreChains.Chain> chains =
        RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefix);
    for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
      assertTrue(e.getValue().publishedSnapshots() > 0,
          e.getKey() + " has published snapshots: " + e.getValue());
    }
    List<String> missing =
        CheckpointAudit.missingNamedObjects(h.s3.dataDir(), SparkS3Harness.BUCKET, prefix);
    assertTrue(missing.isEmpty(), "nothing a retained manifest names is missing: " + missing);
    assertEquals(List.of(), RestoreChains.missingPublishedFiles(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefix), "every published snapshot's files exist");
  }
}
