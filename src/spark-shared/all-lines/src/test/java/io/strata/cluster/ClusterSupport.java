// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.strata.cluster.StandaloneCluster.Executor;
import io.strata.testkit.RepoRoot;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * What the standalone cluster tests ({@link StandaloneClusterIT}, {@link
 * MovingPartitionsClusterIT}) share: a cluster of {@code workers} workers with one executor (1
 * core, 512 MiB) each and a driver session on it with the settings of {@code
 * docker/conf/spark-defaults.conf}, S3Proxy started beside it, the query both run ({@code
 * dropDuplicates("id").groupBy("key").count()}) and its exact answer, waits that fail with what
 * they waited for, and a log line prefixed with the seconds since this object was made.
 */
final class ClusterSupport {
  static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  static final Path SPARK_DEFAULTS = RepoRoot.resolve("docker", "conf", "spark-defaults.conf");
  static final int SHUFFLE_PARTITIONS = 4;

  static final Duration CLUSTER_START = Duration.ofSeconds(90);
  static final Duration EXECUTORS_UP = Duration.ofSeconds(120);
  static final Duration QUERY_RUN = Duration.ofSeconds(240);
  static final Duration SESSION_STOP = Duration.ofSeconds(60);

  private final String tag;
  private final Path out;
  private final int workers;
  private final long startNanos = System.nanoTime();

  /**
   * @param tag the log lines' prefix and the applications' name prefix
   * @param out where each cluster's logs go ({@code <out>/cluster-<n>/})
   * @param workers workers per cluster, one executor each
   */
  ClusterSupport(String tag, Path out, int workers) {
    this.tag = tag;
    this.out = out;
    this.workers = workers;
  }

  /** Phase body run with a cluster and a driver session on it. */
  @FunctionalInterface
  interface ClusterRun {
    long run(StandaloneCluster cluster, SparkSession spark) throws Exception;
  }

  /**
   * Starts S3Proxy (objects under {@code dir}) with {@code bucket} created, on another thread:
   * it starts while a cluster does (both are JVMs that take seconds to start).
   */
  CompletableFuture<S3ProxyServer> startS3(Path dir, String bucket) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        S3ProxyServer server = S3ProxyServer.start(dir, Map.of());
        server.createBucket(bucket);
        log("S3Proxy up: " + server.endpoint());
        return server;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  /** Closes the server once its start is over (S3ProxyServer.start gives up after 60 s). */
  static void closeS3(CompletableFuture<S3ProxyServer> starting) throws Exception {
    starting.handle((server, failed) -> {
      if (server != null) {
        server.close();
      }
      return null;
    }).get(90, TimeUnit.SECONDS);
  }

  /** The S3 server once started, waiting at most 90 s. */
  static Supplier<S3ProxyServer> await(CompletableFuture<S3ProxyServer> starting) {
    return () -> starting.orTimeout(90, TimeUnit.SECONDS).join();
  }

  /** {@code t} with where the logs are, for a failure's message. */
  AssertionError withLogs(Throwable t) {
    return new AssertionError(t + "\n(Logs: " + out.toAbsolutePath()
        + "/cluster-<n>/: master.log, worker-<i>.log, executors in"
        + " worker-<i>/work/<app id>/<executor id>/stderr)", t);
  }

  /**
   * Starts cluster {@code n} (logs under {@code <out>/cluster-<n>}, local directories under
   * {@code scratch/cluster-<n>}), a driver session on it (taking the S3 server from {@code s3}
   * once the master is up) with the test's {@code settings} on top of the shared ones, runs
   * {@code body}, then stops the session and kills the cluster, also when {@code body} fails.
   */
  long withCluster(int n, SparkHome home, Path scratch, ClusterRun body,
      Map<String, String> defaults, Map<String, String> settings, Path appJar,
      Supplier<S3ProxyServer> s3) throws Exception {
    Path local = scratch.resolve("cluster-" + n);
    try (StandaloneCluster cluster = StandaloneCluster.start(home, out.resolve("cluster-" + n),
        local, workers, CLUSTER_START)) {
      log("cluster " + n + ": master " + cluster.masterUrl() + " up, " + workers
          + " workers starting");
      // The driver starts while the workers do; the master launches executors as they register.
      SparkSession spark = session(cluster, defaults, settings, appJar, s3.get(),
          local.resolve("driver"), n);
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
   * then the cluster's shape and the query's settings, then the test's {@code settings}, then
   * where S3 is (endpoint and test credentials) and the driver's local directory. A key set here
   * that the file also sets is overridden, as {@code --conf} overrides {@code
   * spark-defaults.conf}, and named in the output.
   */
  private SparkSession session(StandaloneCluster cluster, Map<String, String> defaults,
      Map<String, String> settings, Path appJar, S3ProxyServer s3, Path driverLocal, int n) {
    Map<String, String> test = new LinkedHashMap<>();
    test.put("spark.master", cluster.masterUrl());
    test.put("spark.app.name", "strata-" + tag + "-" + n);
    test.put("spark.jars", appJar.toString());
    test.put("spark.driver.host", "127.0.0.1");
    test.put("spark.driver.bindAddress", "127.0.0.1");
    test.put("spark.ui.enabled", "false");
    test.put("spark.executor.cores", "1");
    test.put("spark.cores.max", Integer.toString(workers));
    test.put("spark.executor.memory", "512m");
    // Short-lived executors on shared cores: no C2 compiler threads, no parallel collector.
    test.put("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1");
    test.put("spark.sql.shuffle.partitions", Integer.toString(SHUFFLE_PARTITIONS));
    test.putAll(settings);
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

  /**
   * Waits until {@code workers} executors are registered with the driver and their JVMs are
   * found, one per worker.
   */
  List<Executor> awaitExecutors(StandaloneCluster cluster, SparkSession spark)
      throws InterruptedException {
    // The status tracker lists the driver too.
    awaitCondition(() -> spark.sparkContext().statusTracker().getExecutorInfos().length
        == workers + 1, null, EXECUTORS_UP, workers + " executors to register with the driver");
    List<Executor> executors = awaitValue(() -> Optional.of(cluster.executors())
        .filter(l -> l.size() == workers), EXECUTORS_UP,
        workers + " executor JVMs under the workers (found " + cluster.executors() + ")");
    Set<Integer> onWorkers = executors.stream().map(Executor::worker)
        .collect(Collectors.toSet());
    assertEquals(workers, onWorkers.size(), "one executor per worker: " + executors);
    log("executors " + ids(executors) + " up");
    return executors;
  }

  /**
   * Stops the session (and with it the application, whose executors the workers then stop) on
   * another thread, waiting at most {@link #SESSION_STOP}: the cluster is killed next anyway.
   */
  void stopSession(SparkSession spark) throws InterruptedException {
    Thread stopper = new Thread(spark::stop, tag + "-stop-session");
    stopper.setDaemon(true);
    stopper.start();
    stopper.join(SESSION_STOP.toMillis());
    if (stopper.isAlive()) {
      log("the driver session did not stop within " + SESSION_STOP.toSeconds() + " s");
    }
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
  }

  /**
   * The streaming answer after {@code lastBatch} equals a batch job's over the same files, which
   * equals the count the input computes without Spark (so the comparison is not vacuous).
   */
  void assertExact(SparkSession spark, StreamInput input, LatestAnswer sink, long lastBatch) {
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
  static Dataset<Row> query(Dataset<Row> events) {
    return events.dropDuplicates("id").groupBy("key").count();
  }

  /** Waits for {@code q} to end (an AvailableNow query) and fails if it failed. */
  static void awaitTermination(StreamingQuery q) throws Exception {
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
  static void awaitCondition(Supplier<Boolean> condition, StreamingQuery query,
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
  static <T> T awaitValue(Supplier<Optional<T>> value, Duration timeout, String what)
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

  /** Strata's {@code strataRestoreBytes} summed over the operators of batches after {@code b}. */
  static long restoreBytes(List<StreamingQueryProgress> progress, long b) {
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
  static String summary(List<StreamingQueryProgress> progress) {
    return progress.stream().map(p -> "batch " + p.batchId() + " (" + p.numInputRows()
        + " rows, " + p.durationMs().get("triggerExecution") + " ms, restored "
        + restoreBytes(List.of(p), p.batchId() - 1) + " B)").collect(Collectors.joining("; "));
  }

  static Set<Long> batchIds(List<StreamingQueryProgress> progress) {
    return progress.stream().map(StreamingQueryProgress::batchId)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  static Set<Long> range(long from, long to) {
    Set<Long> s = new TreeSet<>();
    for (long i = from; i < to; i++) {
      s.add(i);
    }
    return s;
  }

  static Set<String> ids(List<Executor> executors) {
    return executors.stream().map(Executor::id).collect(Collectors.toCollection(TreeSet::new));
  }

  /** The application jar: the system property {@code strata.cluster.appJar}, which must exist. */
  static Path appJar() {
    String p = System.getProperty("strata.cluster.appJar");
    assertTrue(p != null && !p.isBlank(), "system property strata.cluster.appJar is set (the"
        + " pom's failsafe configuration sets it; run through 'mvn verify')");
    Path jar = Path.of(p).toAbsolutePath();
    assertTrue(Files.isRegularFile(jar), "the application jar exists: " + jar
        + " (the package phase builds it)");
    return jar;
  }

  /** The settings of {@code docker/conf/spark-defaults.conf}, read as Spark reads the file. */
  static Map<String, String> sparkDefaults() throws IOException {
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

  void log(String message) {
    System.out.printf("[%s %6.1f s] %s%n", tag, (System.nanoTime() - startNanos) / 1e9,
        message);
  }
}
