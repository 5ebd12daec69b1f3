// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static io.strata.cluster.ClusterSupport.EXECUTORS_UP;
import static io.strata.cluster.ClusterSupport.QUERY_RUN;
import static io.strata.cluster.ClusterSupport.appJar;
import static io.strata.cluster.ClusterSupport.awaitCondition;
import static io.strata.cluster.ClusterSupport.awaitTermination;
import static io.strata.cluster.ClusterSupport.awaitValue;
import static io.strata.cluster.ClusterSupport.batchIds;
import static io.strata.cluster.ClusterSupport.ids;
import static io.strata.cluster.ClusterSupport.query;
import static io.strata.cluster.ClusterSupport.range;
import static io.strata.cluster.ClusterSupport.restoreBytes;
import static io.strata.cluster.ClusterSupport.sparkDefaults;
import static io.strata.cluster.ClusterSupport.summary;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.strata.cluster.ClusterEvents.StatefulTask;
import io.strata.cluster.StandaloneCluster.Executor;
import io.strata.testkit.OncePerSparkLine;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Strata on a real Spark standalone cluster: a master and two workers, each its own JVM on
 * 127.0.0.1, run from the jars of this test's class path ({@link SparkHome}); this JVM is the
 * driver (client mode), with one executor (1 core, 512 MiB) per worker. Our code reaches the
 * executors only as the application jar ({@code spark.jars}), named by the system property {@code
 * strata.cluster.appJar} that the pom's failsafe configuration sets. The checkpoint (state and
 * Spark's own files) is on S3Proxy ({@link S3ProxyServer}, a separate JVM on loopback), with the
 * Spark settings of {@code docker/conf/spark-defaults.conf} plus only where S3 is, its test
 * credentials, and the local directories.
 *
 * <p>The query: a file source over JSON files ({@link StreamInput}, one file per micro-batch),
 * {@code dropDuplicates("id")}, then {@code groupBy("key").count()} in complete mode, 4 shuffle
 * partitions (both executors hold state of both operators), {@code Trigger.AvailableNow}.
 *
 * <ol>
 *   <li>Cluster 1: after batch {@value #KILL_AFTER_BATCH} committed, the executor that starts the
 *       next stateful task is killed with SIGKILL. The master launches a replacement; the query
 *       finishes its 5 files, and its answer equals a batch job's over the same files. Asserted:
 *       batches committed before and after the kill, the killed executor removed and a new one
 *       added, the executor processes changed, and state restored from S3 after the kill.
 *   <li>The driver session and the whole cluster are stopped (process trees killed).
 *   <li>Cluster 2, on new, empty work and local directories (so Strata's local directories are new
 *       too): a new driver session resumes the same query from the same S3 checkpoint over 2 more
 *       files. Asserted: it continues at the next batch id, restores state from S3, and its answer
 *       equals a batch job's over all 7 files.
 * </ol>
 *
 * <p>Logs stay under {@code target/cluster-it/cluster-<n>/}: {@code master.log}, {@code
 * worker-<i>.log}, and each executor's {@code worker-<i>/work/<app id>/<executor id>/stderr}.
 * 2.5 to 4 minutes on 2 cores shared with other builds. Run it alone with
 *
 * <pre>
 * mvn -B verify -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dit.test=StandaloneClusterIT
 * </pre>
 */
@OnlyOnSparkLines(value = {"4.1", "3.5"},
    reason = "a master, two workers and their executors as JVMs: minutes, and the version-neutral "
        + "code it exercises is the same on each line of a Spark major version")
@OncePerSparkLine(reason = "a standalone Spark 3.5 cluster per Scala build costs a minute; "
    + "executors restoring from S3 and moving partitions go through the provider Java code that "
    + "StatefulOperatorsIT and CheckpointOnS3IT run on this build")
class StandaloneClusterIT {
  private static final int WORKERS = 2;
  private static final int FIRST_RUN_FILES = 5;
  private static final int SECOND_RUN_FILES = 2;
  private static final int KILL_AFTER_BATCH = 1;
  private static final String BUCKET = "strata-cluster-it";
  private static final Path OUT = Path.of("target", "cluster-it");

  private final ClusterSupport support = new ClusterSupport("cluster-it", OUT, WORKERS);

  @Test
  @Timeout(value = 12, unit = TimeUnit.MINUTES)
  void queryOnTwoWorkersSurvivesAKilledExecutorAndResumesOnANewClusterFromS3() throws Exception {
    Path appJar = appJar();
    Map<String, String> defaults = sparkDefaults();
    for (int n = 1; n <= 2; n++) {
      SparkHome.deleteRecursively(OUT.resolve("cluster-" + n));
    }
    SparkHome home = SparkHome.assemble(OUT.resolve("spark-home"));
    log("SPARK_HOME " + home.dir() + ": " + home.jarCount() + " jars; left out: "
        + home.skipped());
    Path scratch = Files.createTempDirectory("strata-cluster-it-");
    CompletableFuture<S3ProxyServer> s3Starting = support.startS3(scratch.resolve("s3"), BUCKET);
    try {
      Supplier<S3ProxyServer> s3 = ClusterSupport.await(s3Starting);
      String checkpoint = "s3://" + BUCKET + "/cluster-it/query";
      StreamInput input = new StreamInput(scratch.resolve("input"));
      input.writeFiles(FIRST_RUN_FILES);
      long lastBatch = support.withCluster(1, home, scratch, (cluster, spark) ->
          firstRunWithAKilledExecutor(cluster, spark, input, checkpoint), defaults, Map.of(),
          appJar, s3);
      input.writeFiles(SECOND_RUN_FILES);
      support.withCluster(2, home, scratch, (cluster, spark) ->
          secondRunOnANewCluster(spark, input, checkpoint, lastBatch), defaults, Map.of(),
          appJar, s3);
    } catch (Throwable t) {
      throw support.withLogs(t);
    } finally {
      ClusterSupport.closeS3(s3Starting);
      try {
        SparkHome.deleteRecursively(scratch);
      } catch (IOException stillBeingWritten) {
        // best effort: the temp directory is the operating system's to clean
      }
    }
    log("done");
  }

  /** Phase 1 (see the class comment); returns the last batch id. */
  private long firstRunWithAKilledExecutor(StandaloneCluster cluster, SparkSession spark,
      StreamInput input, String checkpoint) throws Exception {
    ClusterEvents events = new ClusterEvents();
    spark.sparkContext().addSparkListener(events);
    List<Executor> initial = cluster.executors();
    Set<String> initialIds = ids(initial);

    LatestAnswer sink = new LatestAnswer();
    long queryStart = System.currentTimeMillis();
    StreamingQuery q = startQuery(spark, input, checkpoint, sink);
    awaitCondition(() -> q.lastProgress() != null
        && q.lastProgress().batchId() >= KILL_AFTER_BATCH, q, QUERY_RUN,
        "batch " + KILL_AFTER_BATCH + " to commit");
    long armedAt = System.currentTimeMillis();
    assertTrue(events.await(e -> e.firstStatefulTaskFrom(armedAt).isPresent(),
        Duration.ofSeconds(60)), "a stateful task to start after batch " + KILL_AFTER_BATCH
        + " committed (the query " + (q.isActive() ? "is still running" : "has ended") + ")");
    StatefulTask target = events.firstStatefulTaskFrom(armedAt).orElseThrow();
    Set<String> statefulBefore = events.statefulExecutors(queryStart, armedAt);
    assertEquals(initialIds, statefulBefore,
        "both executors ran stateful tasks (so both hold state) before the kill");
    Executor victim = initial.stream().filter(e -> e.id().equals(target.executorId()))
        .findFirst().orElseThrow(() -> new AssertionError("no executor process with id "
            + target.executorId() + " among " + initial));

    long lastBatchBeforeKill = q.lastProgress().batchId();
    long killedAt = System.currentTimeMillis();
    victim.process().destroyForcibly(); // SIGKILL on Linux
    try {
      victim.process().onExit().get(30, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      fail("executor " + victim.id() + " (pid " + victim.process().pid() + ") still runs 30 s"
          + " after SIGKILL");
    }
    log("killed executor " + victim.id() + " (pid " + victim.process().pid() + ", worker "
        + victim.worker() + ") after it started a task of stateful stage " + target.stageId()
        + "; batches 0.." + lastBatchBeforeKill + " were committed");

    Executor replacement = awaitValue(() -> cluster.executors().stream()
        .filter(e -> !initialIds.contains(e.id())).findFirst(), EXECUTORS_UP,
        "the master to launch a replacement executor (processes: " + cluster.executors() + ")");
    log("replacement executor " + replacement.id() + " (pid " + replacement.process().pid()
        + ", worker " + replacement.worker() + ")");
    awaitTermination(q);
    List<StreamingQueryProgress> progress = Arrays.asList(q.recentProgress());
    log("first run finished: " + summary(progress));

    Set<Long> batches = batchIds(progress);
    assertEquals(range(0, FIRST_RUN_FILES), batches, "one batch per file, each committed once");
    long before = batches.stream().filter(b -> b <= lastBatchBeforeKill).count();
    long after = batches.stream().filter(b -> b > lastBatchBeforeKill).count();
    assertTrue(before > KILL_AFTER_BATCH && after > 0, "the kill landed mid-stream: " + before
        + " batches committed before it, " + after + " after it");
    Set<String> survivors = ids(cluster.executors());
    assertFalse(survivors.contains(victim.id()), "the killed executor is gone: " + survivors);
    assertNotEquals(initialIds, survivors, "the executor set changed");
    assertTrue(events.await(e -> e.executorChanges().stream().anyMatch(c -> !c.added()
        && c.executorId().equals(victim.id())), Duration.ofSeconds(30)),
        "the driver saw executor " + victim.id() + " removed: " + events.executorChanges());
    assertTrue(events.await(e -> e.executorChanges().stream().anyMatch(c -> c.added()
        && c.time() >= killedAt && !initialIds.contains(c.executorId())), EXECUTORS_UP),
        "the driver saw a new executor added after the kill: " + events.executorChanges());
    long restored = restoreBytes(progress, lastBatchBeforeKill);
    assertTrue(restored > 0, "state restored from S3 after the kill (strataRestoreBytes of"
        + " batches after " + lastBatchBeforeKill + ": " + restored + ")");
    log("stateful tasks failed by the kill: " + events.failedStatefulTasks());
    log("executors after the kill: " + events.statefulExecutors(killedAt, Long.MAX_VALUE)
        + " ran stateful tasks; " + restored + " bytes restored from S3");

    assertExact(spark, input, sink, FIRST_RUN_FILES - 1);
    return FIRST_RUN_FILES - 1;
  }

  /** Phase 3 (see the class comment). */
  private long secondRunOnANewCluster(SparkSession spark, StreamInput input, String checkpoint,
      long lastBatch) throws Exception {
    LatestAnswer sink = new LatestAnswer();
    StreamingQuery q = startQuery(spark, input, checkpoint, sink);
    awaitTermination(q);
    List<StreamingQueryProgress> progress = Arrays.asList(q.recentProgress());
    log("second run finished: " + summary(progress));
    assertEquals(range(lastBatch + 1, lastBatch + 1 + SECOND_RUN_FILES), batchIds(progress),
        "the query resumed from the checkpoint at the next batch, one batch per new file");
    long restored = restoreBytes(progress, lastBatch);
    assertTrue(restored > 0, "the new cluster restored state from S3 (strataRestoreBytes: "
        + restored + ")");
    assertExact(spark, input, sink, lastBatch + SECOND_RUN_FILES);
    return lastBatch + SECOND_RUN_FILES;
  }

  /** The query under test over the input directory, one file per micro-batch. */
  private static StreamingQuery startQuery(SparkSession spark, StreamInput input,
      String checkpoint, LatestAnswer sink) throws Exception {
    Dataset<Row> events = spark.readStream().schema(StreamInput.SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(input.dir().toUri().toString());
    return query(events).writeStream()
        .queryName("strata_cluster_it")
        .outputMode(OutputMode.Complete())
        .trigger(Trigger.AvailableNow())
        .option("checkpointLocation", checkpoint)
        .foreachBatch(sink)
        .start();
  }

  private void assertExact(SparkSession spark, StreamInput input, LatestAnswer sink,
      long lastBatch) {
    support.assertExact(spark, input, sink, lastBatch);
  }

  private void log(String message) {
    support.log(message);
  }
}
