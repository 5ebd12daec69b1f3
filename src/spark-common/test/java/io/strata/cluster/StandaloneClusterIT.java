package io.strata.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.strata.cluster.ClusterEvents.StatefulTask;
import io.strata.cluster.StandaloneCluster.Executor;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.RepoRoot;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
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
@OnlyOnSparkLines(value = {"4.1"},
    reason = "a master, two workers and their executors as JVMs: minutes, and the version-neutral "
        + "code it exercises is the same on each line")
class StandaloneClusterIT {
  private static final int WORKERS = 2;
  private static final int SHUFFLE_PARTITIONS = 4;
  private static final int FIRST_RUN_FILES = 5;
  private static final int SECOND_RUN_FILES = 2;
  private static final int KILL_AFTER_BATCH = 1;
  private static final String BUCKET = "strata-cluster-it";
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final Path OUT = Path.of("target", "cluster-it");
  private static final Path SPARK_DEFAULTS = RepoRoot.resolve("docker", "conf", "spark-defaults.conf");

  private static final Duration CLUSTER_START = Duration.ofSeconds(90);
  private static final Duration EXECUTORS_UP = Duration.ofSeconds(120);
  private static final Duration QUERY_RUN = Duration.ofSeconds(240);
  private static final Duration SESSION_STOP = Duration.ofSeconds(60);

  private final long startNanos = System.nanoTime();

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
    // S3Proxy starts while the first cluster does (both are JVMs that take seconds to start).
    CompletableFuture<S3ProxyServer> s3Starting = CompletableFuture.supplyAsync(() -> {
      try {
        S3ProxyServer server = S3ProxyServer.start(scratch.resolve("s3"), Map.of());
        server.createBucket(BUCKET);
        log("S3Proxy up: " + server.endpoint());
        return server;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
    try {
      Supplier<S3ProxyServer> s3 = () -> s3Starting.orTimeout(90, TimeUnit.SECONDS).join();
      String checkpoint = "s3://" + BUCKET + "/cluster-it/query";
      StreamInput input = new StreamInput(scratch.resolve("input"));
      input.writeFiles(FIRST_RUN_FILES);
      long lastBatch = withCluster(1, home, scratch, (cluster, spark) ->
          firstRunWithAKilledExecutor(cluster, spark, input, checkpoint), defaults, appJar, s3);
      input.writeFiles(SECOND_RUN_FILES);
      withCluster(2, home, scratch, (cluster, spark) ->
          secondRunOnANewCluster(spark, input, checkpoint, lastBatch), defaults, appJar, s3);
    } catch (Throwable t) {
      throw new AssertionError(t + "\n(Logs: " + OUT.toAbsolutePath()
          + "/cluster-<n>/: master.log, worker-<i>.log, executors in"
          + " worker-<i>/work/<app id>/<executor id>/stderr)", t);
    } finally {
      // Closes the server once its start is over (S3ProxyServer.start gives up after 60 s).
      s3Starting.handle((server, failed) -> {
        if (server != null) {
          server.close();
        }
        return null;
      }).get(90, TimeUnit.SECONDS);
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

  /**
   * The streaming answer after {@code lastBatch} equals a batch job's over the same files, which
   * equals the count the input computes without Spark (so the comparison is not vacuous).
   */
  private void assertExact(SparkSession spark, StreamInput input, LatestAnswer sink,
      long lastBatch) {
    Map<String, Long> expected = input.expectedCounts();
    Map<String, Long> batch = new TreeMap<>();
    for (Row r : query(spark.read().schema(StreamInput.SCHEMA)
        .json(input.dir().toUri().toString())).collectAsList()) {
      batch.put(r.getString(0), r.getLong(1));
    }
    assertEquals(expected, batch, "Spark's batch job over " + input.files()
        + " files agrees with the input's own count");
    LatestAnswer.Answer answer = sink.latest().orElseThrow(
        () -> new AssertionError("the streaming query produced no output"));
    assertEquals(lastBatch, answer.batchId(), "the newest output is of the last batch");
    assertEquals(batch, answer.counts(), "the streaming answer after batch " + lastBatch
        + " equals the batch job's over the same " + input.files() + " files");
    log("exact after batch " + lastBatch + ": " + answer.counts().values().stream()
        .mapToLong(Long::longValue).sum() + " distinct ids in " + answer.counts().size()
        + " keys");
  }

  /** The query under test, on a stream or (for the expected answer) on a batch of the files. */
  private static Dataset<Row> query(Dataset<Row> events) {
    return events.dropDuplicates("id").groupBy("key").count();
  }

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

  /** Phase body run with a cluster and a driver session on it. */
  @FunctionalInterface
  private interface ClusterRun {
    long run(StandaloneCluster cluster, SparkSession spark) throws Exception;
  }

  /**
   * Starts cluster {@code n} (logs under {@code target/cluster-it/cluster-<n>}, local directories
   * under {@code scratch/cluster-<n>}), a driver session on it (taking the S3 server from {@code
   * s3} once the master is up), runs {@code body}, then stops the session and kills the cluster,
   * also when {@code body} fails.
   */
  private long withCluster(int n, SparkHome home, Path scratch, ClusterRun body,
      Map<String, String> defaults, Path appJar, Supplier<S3ProxyServer> s3) throws Exception {
    Path local = scratch.resolve("cluster-" + n);
    try (StandaloneCluster cluster = StandaloneCluster.start(home, OUT.resolve("cluster-" + n),
        local, WORKERS, CLUSTER_START)) {
      log("cluster " + n + ": master " + cluster.masterUrl() + " up, " + WORKERS
          + " workers starting");
      // The driver starts while the workers do; the master launches executors as they register.
      SparkSession spark = session(cluster, defaults, appJar, s3.get(), local.resolve("driver"),
          n);
      try {
        cluster.awaitWorkers(CLUSTER_START);
        awaitExecutors(cluster, spark);
        return body.run(cluster, spark);
      } finally {
        stopSession(spark);
        log("cluster " + n + ": driver session stopped");
      }
    } finally {
      log("cluster " + n + " killed");
    }
  }

  /**
   * A driver session on {@code cluster}: the settings of {@code docker/conf/spark-defaults.conf},
   * then the cluster's shape and this test's query settings, then where S3 is (endpoint and test
   * credentials) and the driver's local directory. A key set here that the file also sets is
   * overridden, as {@code --conf} overrides {@code spark-defaults.conf}, and named in the output.
   */
  private SparkSession session(StandaloneCluster cluster, Map<String, String> defaults,
      Path appJar, S3ProxyServer s3, Path driverLocal, int n) {
    Map<String, String> test = new LinkedHashMap<>();
    test.put("spark.master", cluster.masterUrl());
    test.put("spark.app.name", "strata-cluster-it-" + n);
    test.put("spark.jars", appJar.toString());
    test.put("spark.driver.host", "127.0.0.1");
    test.put("spark.driver.bindAddress", "127.0.0.1");
    test.put("spark.ui.enabled", "false");
    test.put("spark.executor.cores", "1");
    test.put("spark.cores.max", Integer.toString(WORKERS));
    test.put("spark.executor.memory", "512m");
    // Short-lived executors on shared cores: no C2 compiler threads, no parallel collector.
    test.put("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1");
    test.put("spark.sql.shuffle.partitions", Integer.toString(SHUFFLE_PARTITIONS));
    test.put(STRATA + "s3.endpoint", s3.endpoint().toString());
    test.put(STRATA + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
    test.put(STRATA + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
    test.put("spark.local.dir", driverLocal.toString());
    Set<String> overridden = new TreeSet<>(test.keySet());
    overridden.retainAll(defaults.keySet());
    if (!overridden.isEmpty()) {
      log("the test overrides these keys of " + SPARK_DEFAULTS + ": " + overridden);
    }
    SparkSession.Builder b = SparkSession.builder();
    defaults.forEach(b::config);
    test.forEach(b::config);
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    // getOrCreate returns a session another test left running (ITs share this JVM) as it is.
    assertEquals(cluster.masterUrl(), spark.sparkContext().master(), "the driver session runs on"
        + " the standalone cluster, not on a session left running in this JVM");
    return spark;
  }

  /** Waits until both executors are registered with the driver and their JVMs are found. */
  private List<Executor> awaitExecutors(StandaloneCluster cluster, SparkSession spark)
      throws InterruptedException {
    // The status tracker lists the driver too.
    awaitCondition(() -> spark.sparkContext().statusTracker().getExecutorInfos().length
        == WORKERS + 1, null, EXECUTORS_UP, WORKERS + " executors to register with the driver");
    List<Executor> executors = awaitValue(() -> Optional.of(cluster.executors())
        .filter(l -> l.size() == WORKERS), EXECUTORS_UP,
        WORKERS + " executor JVMs under the workers (found " + cluster.executors() + ")");
    Set<Integer> workers = executors.stream().map(Executor::worker).collect(Collectors.toSet());
    assertEquals(WORKERS, workers.size(), "one executor per worker: " + executors);
    log("executors " + ids(executors) + " up");
    return executors;
  }

  private static void awaitTermination(StreamingQuery q) throws Exception {
    if (!q.awaitTermination(QUERY_RUN.toMillis())) {
      q.stop();
      fail("the query did not finish its files within " + QUERY_RUN.toSeconds() + " s; last"
          + " progress: " + q.lastProgress());
    }
    if (q.exception().isDefined()) {
      fail("the query failed: " + q.exception().get().getMessage(), q.exception().get());
    }
  }

  /**
   * Polls every 100 ms until {@code condition} holds; fails after {@code timeout}, or as soon as
   * {@code query} (if not null) has stopped, naming {@code what} it waited for.
   */
  private static void awaitCondition(Supplier<Boolean> condition, StreamingQuery query,
      Duration timeout, String what) throws InterruptedException {
    awaitValue(() -> {
      if (condition.get()) {
        return Optional.of(true);
      }
      if (query != null && !query.isActive()) {
        fail("the query stopped while waiting for " + what + ": "
            + (query.exception().isDefined() ? query.exception().get().getMessage() : "no error")
            + "; last progress: " + query.lastProgress());
      }
      return Optional.empty();
    }, timeout, what);
  }

  /** Polls every 100 ms until {@code value} is present; fails after {@code timeout}. */
  private static <T> T awaitValue(Supplier<Optional<T>> value, Duration timeout, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<T> v = value.get();
      if (v.isPresent()) {
        return v.get();
      }
      if (System.nanoTime() > deadline) {
        fail("timed out after " + timeout.toSeconds() + " s waiting for " + what);
      }
      Thread.sleep(100);
    }
  }

  /**
   * Stops the session (and with it the application, whose executors the workers then stop) on
   * another thread, waiting at most {@link #SESSION_STOP}: the cluster is killed next anyway.
   */
  private void stopSession(SparkSession spark) throws InterruptedException {
    Thread stopper = new Thread(spark::stop, "cluster-it-stop-session");
    stopper.setDaemon(true);
    stopper.start();
    stopper.join(SESSION_STOP.toMillis());
    if (stopper.isAlive()) {
      log("the driver session did not stop within " + SESSION_STOP.toSeconds() + " s");
    }
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
  }

  /** Strata's {@code strataRestoreBytes} summed over the operators of batches after {@code b}. */
  private static long restoreBytes(List<StreamingQueryProgress> progress, long b) {
    long sum = 0;
    for (StreamingQueryProgress p : progress) {
      if (p.batchId() > b) {
        for (StateOperatorProgress op : p.stateOperators()) {
          sum += op.customMetrics().getOrDefault("strataRestoreBytes", 0L);
        }
      }
    }
    return sum;
  }

  /** Per batch: id, rows in, wall time of the trigger (ms) and bytes Strata restored. */
  private static String summary(List<StreamingQueryProgress> progress) {
    return progress.stream().map(p -> "batch " + p.batchId() + " (" + p.numInputRows()
        + " rows, " + p.durationMs().get("triggerExecution") + " ms, restored "
        + restoreBytes(List.of(p), p.batchId() - 1) + " B)").collect(Collectors.joining("; "));
  }

  private static Set<Long> batchIds(List<StreamingQueryProgress> progress) {
    return progress.stream().map(StreamingQueryProgress::batchId)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static Set<Long> range(long from, long to) {
    Set<Long> s = new TreeSet<>();
    for (long i = from; i < to; i++) {
      s.add(i);
    }
    return s;
  }

  private static Set<String> ids(List<Executor> executors) {
    return executors.stream().map(Executor::id).collect(Collectors.toCollection(TreeSet::new));
  }

  /** The application jar: the system property {@code strata.cluster.appJar}, which must exist. */
  private static Path appJar() {
    String p = System.getProperty("strata.cluster.appJar");
    assertTrue(p != null && !p.isBlank(), "system property strata.cluster.appJar is set (the"
        + " pom's failsafe configuration sets it; run through 'mvn verify')");
    Path jar = Path.of(p).toAbsolutePath();
    assertTrue(Files.isRegularFile(jar), "the application jar exists: " + jar
        + " (the package phase builds it)");
    return jar;
  }

  /** The settings of {@code docker/conf/spark-defaults.conf}, read as Spark reads the file. */
  private static Map<String, String> sparkDefaults() throws IOException {
    assertTrue(Files.isRegularFile(SPARK_DEFAULTS), "missing: "
        + SPARK_DEFAULTS.toAbsolutePath());
    Properties props = new Properties();
    try (Reader r = Files.newBufferedReader(SPARK_DEFAULTS, StandardCharsets.UTF_8)) {
      props.load(r);
    }
    Map<String, String> settings = new TreeMap<>();
    props.stringPropertyNames().forEach(k -> settings.put(k.trim(), props.getProperty(k).trim()));
    assertTrue(settings.containsKey("spark.sql.streaming.stateStore.providerClass"),
        SPARK_DEFAULTS + " sets Strata's provider: " + settings.keySet());
    return settings;
  }

  private void log(String message) {
    System.out.printf("[cluster-it %6.1f s] %s%n", (System.nanoTime() - startNanos) / 1e9,
        message);
  }
}
