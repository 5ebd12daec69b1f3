// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static io.strata.spark.BatchFiles.outputs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 15, the fourth rhythm: batches that come faster than Spark's maintenance (every {@code
 * spark.sql.streaming.stateStore.maintenanceInterval}, 60 s by default), so that in a run of
 * minutes, as in the flights demo, maintenance never takes a base snapshot. Strata's {@code
 * snapshotOnCommit} (the default) bounds the chain instead: the commit that reaches {@code
 * snapshotInterval} versions since its base starts the next base snapshot on the store's
 * background thread.
 *
 * <p>A new driver JVM ({@link CrashDriver}, local mode, {@value #PARTITIONS} shuffle
 * partitions, so more stores than the JVM's 4 commit-snapshot threads) runs {@value #BATCHES}
 * batches back to back ({@code Trigger.AvailableNow}, one input file per batch, 300 ms
 * in the sink per batch) with maintenance set to once an hour, so it never runs, and {@code
 * snapshotInterval} 3. From the objects alone ({@link RestoreChains}): no committed version's
 * manifest lists more than {@code snapshotInterval + 2} deltas after its base, and a cold restore
 * of the newest version replays at most that many. The same run with {@code
 * snapshotOnCommit=false} is the control: its chain reaches {@value #BATCHES}, so the bound does
 * come from the commits. Both runs' batches equal Spark's HDFS-backed provider's on the same
 * input, batch by batch, and so does the next batch run in another new driver on wiped local
 * state (a cold restore from the published snapshot).
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "three driver JVMs, two of 15 batches: minutes; the "
    + "commit-snapshot mechanism is in strata-core (SnapshotOnCommitTest), and LongTriggerIT "
    + "runs each line's maintenance path")
class FastTriggerIT {
  private static final int KEYS = 40;
  private static final int BATCHES = 15;
  private static final int INTERVAL = 3;
  private static final int BOUND = INTERVAL + 2;
  /**
   * Stores of the Strata runs: more than the JVM's 4 commit-snapshot threads, so every interval
   * the stores' snapshots queue for them.
   */
  private static final int PARTITIONS = 12;
  private static final long CHILD_TIMEOUT_S = 300;
  private static SparkS3Harness h;
  private static Path logs;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    logs = Files.createDirectories(Path.of("target", "fast-trigger-logs"));
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** Batch b: key kj appears 1 + (j + 2b) % 3 times, and not at all when (j + b) % 4 == 0. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < KEYS; j++) {
      if ((j + b) % 4 == 0) {
        continue;
      }
      for (int n = 0; n <= (j + 2 * b) % 3; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  /** Runs the query to its input's end in a new driver JVM with Strata on {@code local}. */
  private static void runInNewDriver(String checkpoint, Path in, Path out, Path local,
      boolean onCommit, String name) throws Exception {
    DriverRuns.inNewDriver(h, checkpoint, in, out, local, 300, logs.resolve(name + ".log"),
        CHILD_TIMEOUT_S,
        "spark.sql.streaming.stateStore.strata.snapshotInterval=" + INTERVAL,
        "spark.sql.streaming.stateStore.strata.snapshotOnCommit=" + onCommit,
        "spark.sql.streaming.stateStore.maintenanceInterval=1h",
        "spark.sql.shuffle.partitions=" + PARTITIONS);
  }

  private static String prefixOf(String checkpoint) {
    return checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
  }

  @Test
  @Timeout(value = 15, unit = TimeUnit.MINUTES)
  void theCommitsBoundTheChainWhenMaintenanceNeverRuns() throws Exception {
    Path base = Files.createDirectories(h.work.resolve("fast-trigger-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    for (int b = 0; b < BATCHES; b++) {
      writeBatch(in, b);
    }
    Path outHdfs = base.resolve("out-hdfs");
    String hdfs = h.fileCheckpoint("fast-trigger-hdfs");
    DriverRuns.oracle(h, hdfs, in, outHdfs);
    TreeMap<Long, List<String>> expected = outputs(outHdfs);
    assertEquals(BATCHES, expected.size(), "the HDFS provider ran one batch per file");

    String on = h.s3Checkpoint("fast-trigger-on");
    Path outOn = base.resolve("out-on");
    runInNewDriver(on, in, outOn, base.resolve("local-on"), true, "on");
    String off = h.s3Checkpoint("fast-trigger-off");
    Path outOff = base.resolve("out-off");
    runInNewDriver(off, in, outOff, base.resolve("local-off"), false, "off");
    assertEquals(expected, outputs(outOn), "snapshotOnCommit: every batch equals HDFS's");
    assertEquals(expected, outputs(outOff), "the control: every batch equals HDFS's");

    int manifests = RestoreChains.longestManifestChain(h.s3.dataDir(), SparkS3Harness.BUCKET,
        prefixOf(on));
    assertTrue(manifests <= BOUND, "no manifest lists more than " + BOUND + " deltas after "
        + "its base: " + manifests);
    Map<String, RestoreChains.Chain> chains =
        RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefixOf(on));
    assertEquals(PARTITIONS, chains.size(), chains.toString());
    for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
      assertEquals(BATCHES, e.getValue().version(), e.getKey());
      assertTrue(e.getValue().restoreChain() <= BOUND, e.getKey() + ": " + e.getValue());
      assertTrue(e.getValue().publishedSnapshots() > 0, e.getKey() + ": " + e.getValue());
    }
    assertEquals(BATCHES, RestoreChains.longest(h.s3.dataDir(), SparkS3Harness.BUCKET,
        prefixOf(off)), "the control: with maintenance never running and snapshotOnCommit "
        + "off, nothing took a snapshot");
    assertEquals(List.of(), RestoreChains.missingPublishedFiles(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefixOf(on)), "every published snapshot's files exist");

    // The next batch, in a new driver on wiped local state: a cold restore from S3.
    writeBatch(in, BATCHES);
    DriverRuns.oracle(h, hdfs, in, outHdfs);
    runInNewDriver(on, in, outOn, base.resolve("local-on-2"), true, "on-restart");
    assertEquals(outputs(outHdfs), outputs(outOn), "after the cold restore too");
  }
}
