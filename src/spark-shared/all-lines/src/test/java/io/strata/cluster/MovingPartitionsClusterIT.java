// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static io.strata.cluster.ClusterSupport.EXECUTORS_UP;
import static io.strata.cluster.ClusterSupport.QUERY_RUN;
import static io.strata.cluster.ClusterSupport.STRATA;
import static io.strata.cluster.ClusterSupport.awaitCondition;
import static io.strata.cluster.ClusterSupport.awaitValue;
import static io.strata.cluster.ClusterSupport.ids;
import static io.strata.cluster.ClusterSupport.query;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.strata.cluster.ClusterEvents.StatefulTask;
import io.strata.cluster.StandaloneCluster.Executor;
import io.strata.spark.CheckpointAudit;
import io.strata.spark.RestoreChains;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 15, the "moving partitions" rhythm: on a real Spark standalone cluster (two workers, one
 * executor of 1 core each, as in {@link StandaloneClusterIT}; checkpoint on S3Proxy), every
 * micro-batch runs each state partition on an executor that did not hold it in the batch before,
 * as with dynamic allocation, spot instances or restarted clusters. Every load is then a cold
 * load from S3, and no executor lives long enough for maintenance (its first run is a minute
 * after the first load) to upload a base snapshot. What bounds the restore then is the load
 * itself: a cold load that replayed at least {@code snapshotInterval} deltas schedules a snapshot
 * of the loaded version on the store's background thread ({@code SnapshotScheduler}, told
 * by {@code SyncedStore.load}), which publishes it as {@code b/<...>.bsm}; a later cold load, on whichever
 * executor, restores from the newest usable published snapshot plus the deltas after it.
 *
 * <p>How the partitions move: the query ({@code dropDuplicates("id").groupBy("key").count()},
 * complete mode, 4 shuffle partitions, so 8 stores) runs with a processing-time trigger over a
 * directory this test adds one file to per batch. After each batch commits, the test checks the
 * answer, lets the executors live {@value #LINGER_MS} ms more (an executor does not die the
 * instant its batch ends; the snapshot uploads scheduled at the batch's loads run meanwhile),
 * then kills both executors with SIGKILL. The master launches two new ones, with new, empty work
 * and local directories (so new Strata local directories); once the driver has them, the next
 * file goes in and the next batch runs on them. {@code snapshotInterval} is {@value
 * #SNAPSHOT_INTERVAL}, so the bound is {@value #SNAPSHOT_INTERVAL} + 2 and {@value #BATCHES}
 * batches exceed it well: without published snapshots the chain would grow by one per batch.
 *
 * <p>Asserted after every batch {@code b}:
 *
 * <ul>
 *   <li>every task of both stateful stages ran on an executor other than the one that ran the
 *       same operator's partition in batch {@code b - 1}, indeed on one added after the kill; and
 *       (from batch 1) Strata restored state from S3 for both operators ({@code
 *       strataRestoreBytes});
 *   <li>the streaming answer equals a batch job's over the same files ({@link
 *       ClusterSupport#assertExact});
 *   <li>(from batch 1) every store was restored by a cold load, and the deltas it replayed (the
 *       {@code Restorer}'s INFO line in the executors' {@code stderr}) are the chain the objects
 *       gave after the previous batch's kill, below;
 *   <li>after the kill, for every store ({@link RestoreChains}, from the objects in S3Proxy's data
 *       directory): its newest version is {@code b + 1}, and the delta chain a cold restore of it
 *       replays is at most {@code snapshotInterval + 2}. The slack of 2 covers an upload or two
 *       a SIGKILL cut short; the next long cold load schedules the snapshot again.
 * </ul>
 *
 * <p>After the last batch: every store has published snapshots, the batches outnumber the bound,
 * and no manifest names a missing object ({@link CheckpointAudit}).
 *
 * <p>When every upload lands before its kill, the chains after batches 0, 1, 2, ... are 1, 2, 3,
 * 1, 2, 3, ...: the load of batch 3 replays 3 deltas and publishes version 3, so version 4 is one
 * delta past it, and so on (the log prints them per batch, with the manifests' own chains).
 *
 * <p>Logs stay under {@code target/moving-it/cluster-1/} (as {@link StandaloneClusterIT}'s). About
 * 3.5 minutes on 2 shared cores: about 20 to 30 s a batch, mostly the new executors' start (JVM, class
 * loading, code generation, the provider's first set-up). Run it alone with
 *
 * <pre>
 * mvn -B verify -pl src/spark-4.1 -am -Dconformance.skip=true -Dtest=NONE \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Dfailsafe.failIfNoSpecifiedTests=false \
 *     -Dit.test=MovingPartitionsClusterIT
 * </pre>
 */
@OnlyOnSparkLines(value = {"4.1"},
    reason = "a master, two workers and two new executor JVMs per batch: minutes, and the "
        + "version-neutral restore code it exercises is the same on each line")
class MovingPartitionsClusterIT {
  private static final int WORKERS = 2;
  /** Two more than the bound: two published snapshots per store (versions 3 and 6) and on. */
  private static final int BATCHES = 7;
  private static final int SNAPSHOT_INTERVAL = 3;
  private static final int CHAIN_BOUND = SNAPSHOT_INTERVAL + 2;
  private static final long LINGER_MS = 2_000;
  /** dropDuplicates' stage and the aggregation's, one state store per partition each. */
  private static final int STATEFUL_STAGES = 2;
  private static final int STORES = STATEFUL_STAGES * ClusterSupport.SHUFFLE_PARTITIONS;
  private static final String BUCKET = "strata-moving-it";
  private static final String PREFIX = "moving-it/query";
  private static final Path OUT = Path.of("target", "moving-it");
  /** The Restorer's line after a cold load: store, version, base version, deltas replayed. */
  private static final Pattern RESTORED = Pattern.compile("Restorer: store (\\S+) at \\S+"
      + " restored version (\\d+) from the object store: base version (-?\\d+), (\\d+) deltas");

  private final ClusterSupport support = new ClusterSupport("moving-it", OUT, WORKERS);

  @Test
  @Timeout(value = 12, unit = TimeUnit.MINUTES)
  void restoreChainStaysBoundedWhenEveryBatchRunsOnNewExecutors() throws Exception {
    Path appJar = ClusterSupport.appJar();
    Map<String, String> defaults = ClusterSupport.sparkDefaults();
    SparkHome.deleteRecursively(OUT.resolve("cluster-1"));
    SparkHome home = SparkHome.assemble(OUT.resolve("spark-home"));
    support.log("SPARK_HOME " + home.dir() + ": " + home.jarCount() + " jars");
    Path scratch = Files.createTempDirectory("strata-moving-it-");
    CompletableFuture<S3ProxyServer> s3Starting = support.startS3(scratch.resolve("s3"), BUCKET);
    try {
      Supplier<S3ProxyServer> s3 = ClusterSupport.await(s3Starting);
      StreamInput input = new StreamInput(scratch.resolve("input"));
      support.withCluster(1, home, scratch, (cluster, spark) ->
          everyBatchOnNewExecutors(cluster, spark, input, s3.get().dataDir()), defaults,
          Map.of(STRATA + "snapshotInterval", Integer.toString(SNAPSHOT_INTERVAL)), appJar, s3);
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
    support.log("done");
  }

  /** The run (see the class comment); returns the last batch id. */
  private long everyBatchOnNewExecutors(StandaloneCluster cluster, SparkSession spark,
      StreamInput input, Path dataDir) throws Exception {
    ClusterEvents events = new ClusterEvents();
    spark.sparkContext().addSparkListener(events);
    List<Executor> executors = cluster.executors();
    Set<String> everKilled = new TreeSet<>();
    LatestAnswer sink = new LatestAnswer();
    // (stateful stage ordinal in the batch, partition) -> executors that ran it, previous batch
    Map<String, Set<String>> previous = Map.of();
    // store ("operator/partition/name") -> the chain a cold restore replays, after the last kill
    Map<String, Integer> predicted = Map.of();
    List<String> chainsPerBatch = new ArrayList<>();
    long batchStart = System.currentTimeMillis();
    input.writeFiles(1);
    StreamingQuery q = startQuery(spark, input, sink);
    try {
      for (long b = 0; b < BATCHES; b++) {
        StreamingQueryProgress progress = awaitBatch(q, b);
        long committedAt = System.currentTimeMillis();

        Map<String, Set<String>> ran = statefulTasksOf(events, b, batchStart, committedAt);
        Set<String> ranOn = ran.values().stream().flatMap(Set::stream)
            .collect(Collectors.toCollection(TreeSet::new));
        Set<String> current = ids(executors);
        assertTrue(current.containsAll(ranOn), "batch " + b + " ran its stateful tasks on the"
            + " executors started for it " + current + ": " + ran);
        for (Map.Entry<String, Set<String>> e : ran.entrySet()) {
          Set<String> before = previous.getOrDefault(e.getKey(), Set.of());
          Set<String> both = new TreeSet<>(e.getValue());
          both.retainAll(before);
          assertTrue(both.isEmpty(), "batch " + b + ": stateful task " + e.getKey() + " ran on "
              + e.getValue() + ", which ran it in batch " + (b - 1) + " too (" + before + ")");
        }
        long restored = 0;
        for (StateOperatorProgress op : progress.stateOperators()) {
          long bytes = op.customMetrics().getOrDefault("strataRestoreBytes", 0L);
          restored += bytes;
          if (b > 0) {
            assertTrue(bytes > 0, "batch " + b + ": operator " + op.operatorName() + " restored"
                + " its state from S3 (strataRestoreBytes " + bytes + ")");
          }
        }
        support.assertExact(spark, input, sink, b);
        if (b > 0) {
          // What the cold loads of batch b replayed, from the executors' logs, is what the
          // objects said after batch b - 1 (every executor is gone; nothing changed since).
          Map<String, Integer> replayed = replayed(cluster, spark, executors, b);
          assertEquals(predicted.keySet(), replayed.keySet(), "batch " + b + " restored every"
              + " store from S3 (Restorer's log lines in " + ids(executors) + "'s stderr)");
          assertEquals(predicted, replayed, "batch " + b + ": the deltas each cold load"
              + " replayed equal the restore chains the objects gave after batch " + (b - 1));
        }

        long linger = committedAt + LINGER_MS - System.currentTimeMillis();
        if (linger > 0) {
          Thread.sleep(linger);
        }
        killAll(executors);
        everKilled.addAll(current);

        Map<String, RestoreChains.Chain> chains = RestoreChains.of(dataDir, BUCKET, PREFIX);
        assertEquals(STORES, chains.size(), "one chain per store: "
            + chains.keySet());
        List<Integer> lengths = new ArrayList<>();
        predicted = new TreeMap<>();
        for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
          RestoreChains.Chain c = e.getValue();
          lengths.add(c.restoreChain());
          predicted.put(storeOf(e.getKey()), c.restoreChain());
          assertEquals(b + 1, c.version(), "the newest version of " + e.getKey() + " after"
              + " batch " + b);
          assertTrue(c.restoreChain() <= CHAIN_BOUND, "after batch " + b + " a cold restore of "
              + e.getKey() + " version " + c.version() + " replays " + c.restoreChain()
              + " deltas, more than snapshotInterval + 2 = " + CHAIN_BOUND + " (" + c
              + "); every store: " + chains);
        }
        String line = "batch " + b + " on " + ranOn + ": " + progress.durationMs()
            .get("triggerExecution") + " ms, restored " + restored + " B; restore chains "
            + lengths + ", manifest chains " + chains.values().stream()
                .map(RestoreChains.Chain::manifestChain).toList() + ", published "
            + chains.values().stream().map(RestoreChains.Chain::publishedSnapshots).toList();
        chainsPerBatch.add(line);
        support.log(line);
        previous = ran;

        if (b + 1 < BATCHES) {
          executors = awaitNewExecutors(cluster, events, everKilled);
          batchStart = System.currentTimeMillis();
          input.writeFiles(1);
        }
      }
    } finally {
      q.stop();
    }
    support.log("per batch:\n  " + String.join("\n  ", chainsPerBatch));

    Map<String, RestoreChains.Chain> chains = RestoreChains.of(dataDir, BUCKET, PREFIX);
    for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
      assertTrue(e.getValue().publishedSnapshots() > 0, e.getKey() + " has published snapshots"
          + " (b/*.bsm): " + e.getValue());
    }
    assertTrue(BATCHES > CHAIN_BOUND + 1, "the versions (" + BATCHES + ") outnumber the bound ("
        + CHAIN_BOUND + "), so without published snapshots the chain would exceed it");
    List<String> missing = CheckpointAudit.missingNamedObjects(dataDir, BUCKET, PREFIX);
    assertTrue(missing.isEmpty(), "no manifest names a missing object: " + missing);
    return BATCHES - 1;
  }

  /** Waits until {@code q} committed batch {@code b}; its progress. */
  private static StreamingQueryProgress awaitBatch(StreamingQuery q, long b)
      throws InterruptedException {
    return awaitValue(() -> {
      if (!q.isActive()) {
        fail("the query stopped before batch " + b + ": " + (q.exception().isDefined()
            ? q.exception().get().getMessage() : "no error") + "; last progress: "
            + q.lastProgress());
      }
      // Idle progress (no new file yet) has no input rows.
      return Arrays.stream(q.recentProgress()).filter(p -> p.batchId() == b
          && p.numInputRows() > 0).findFirst();
    }, QUERY_RUN, "batch " + b + " to commit");
  }

  /**
   * The stateful tasks of batch {@code b} (started in {@code [fromMs, toMs)}), as "stage
   * ordinal in the batch / partition" to the executors that ran an attempt of it; waits until
   * the listener has every one of them.
   */
  private static Map<String, Set<String>> statefulTasksOf(ClusterEvents events, long b,
      long fromMs, long toMs) throws InterruptedException {
    int expected = STORES;
    Supplier<Map<String, Set<String>>> ran = () -> {
      List<StatefulTask> tasks = events.statefulTasks(fromMs, toMs);
      List<Integer> stages = tasks.stream().map(StatefulTask::stageId).distinct().sorted()
          .toList();
      Map<String, Set<String>> m = new TreeMap<>();
      for (StatefulTask t : tasks) {
        m.computeIfAbsent(stages.indexOf(t.stageId()) + "/" + t.partition(),
            k -> new TreeSet<>()).add(t.executorId());
      }
      return m;
    };
    if (!events.await(e -> ran.get().size() >= expected, Duration.ofSeconds(30))) {
      fail("batch " + b + ": " + expected + " stateful tasks (" + STATEFUL_STAGES + " stages of "
          + ClusterSupport.SHUFFLE_PARTITIONS + " partitions), seen: " + ran.get());
    }
    Map<String, Set<String>> m = ran.get();
    assertEquals(expected, m.size(), "batch " + b + ": the stateful tasks " + m);
    return m;
  }

  /**
   * Store ({@code "<operator>/<partition>/<name>"}, as Strata's log names it) to the deltas a cold
   * load of {@code version} replayed, from the Restorer's INFO lines in the {@code stderr} of
   * {@code executors}.
   */
  private static Map<String, Integer> replayed(StandaloneCluster cluster, SparkSession spark,
      List<Executor> executors, long version) throws IOException {
    Map<String, Integer> out = new TreeMap<>();
    for (Executor e : executors) {
      Path stderr = cluster.logDir().resolve("worker-" + e.worker()).resolve("work")
          .resolve(spark.sparkContext().applicationId()).resolve(e.id()).resolve("stderr");
      for (String line : Files.readAllLines(stderr, StandardCharsets.UTF_8)) {
        Matcher m = RESTORED.matcher(line);
        if (m.find() && Long.parseLong(m.group(2)) == version) {
          out.put(m.group(1), Integer.parseInt(m.group(4)));
        }
      }
    }
    return out;
  }

  /** {@code "<op>/<partition>/<name>"} of a store root {@code .../state/<op>/<p>[/<name>]/}. */
  private static String storeOf(String storeRoot) {
    String rel = storeRoot.substring((PREFIX + "/state/").length(), storeRoot.length() - 1);
    return rel.split("/").length == 2 ? rel + "/default" : rel;
  }

  /** Kills every executor in {@code executors} (SIGKILL) and waits until each is gone. */
  private void killAll(List<Executor> executors) {
    for (Executor e : executors) {
      e.process().destroyForcibly(); // SIGKILL on Linux
    }
    for (Executor e : executors) {
      try {
        e.process().onExit().get(30, TimeUnit.SECONDS);
      } catch (TimeoutException | InterruptedException | ExecutionException x) {
        fail("executor " + e.id() + " (pid " + e.process().pid() + ") still runs 30 s after"
            + " SIGKILL");
      }
    }
    support.log("killed executors " + ids(executors));
  }

  /**
   * Waits until the driver saw every killed executor removed and the master's replacements
   * (ids never killed) added, one per worker, and returns their processes.
   */
  private List<Executor> awaitNewExecutors(StandaloneCluster cluster, ClusterEvents events,
      Set<String> killed) throws InterruptedException {
    long start = System.nanoTime();
    List<Executor> fresh = awaitValue(() -> Optional.of(cluster.executors())
        .filter(l -> l.size() == WORKERS && l.stream().noneMatch(e -> killed.contains(e.id()))),
        EXECUTORS_UP, WORKERS + " new executor JVMs (found " + cluster.executors()
            + ", killed so far " + killed + ")");
    Set<String> freshIds = ids(fresh);
    awaitCondition(() -> {
      Set<String> removed = new HashSet<>();
      Set<String> added = new HashSet<>();
      for (ClusterEvents.ExecutorChange c : events.executorChanges()) {
        (c.added() ? added : removed).add(c.executorId());
      }
      return removed.containsAll(killed) && added.containsAll(freshIds);
    }, null, EXECUTORS_UP, "the driver to see " + killed + " removed and " + freshIds
        + " added: " + events.executorChanges());
    assertEquals(WORKERS, fresh.stream().map(Executor::worker).distinct().count(),
        "one executor per worker: " + fresh);
    support.log("executors " + freshIds + " up, " + (System.nanoTime() - start) / 1_000_000
        + " ms after the kill");
    return fresh;
  }

  /** The query over the input directory, one file per micro-batch as files arrive. */
  private static StreamingQuery startQuery(SparkSession spark, StreamInput input,
      LatestAnswer sink) throws Exception {
    Dataset<Row> events = spark.readStream().schema(StreamInput.SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(input.dir().toUri().toString());
    return query(events).writeStream()
        .queryName("strata_moving_it")
        .outputMode(OutputMode.Complete())
        .trigger(Trigger.ProcessingTime(500))
        .option("checkpointLocation", "s3://" + BUCKET + "/" + PREFIX)
        .foreachBatch(sink)
        .start();
  }
}
