// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The flights demo (README command 1): three million real U.S. flights replayed in event-time
 * order as a file stream into three stateful queries whose state is checkpointed through a state
 * store provider (Strata's by default) to S3; stopped halfway, local state wiped, restarted from
 * the checkpoint in a new SparkSession, finished, and checked against a batch job.
 *
 * <p>Run with {@code mvn -B -q -Pdemo -DskipTests verify} ({@code -Ddemo.args="--help"} lists
 * the options). {@link #main} exits 0 when verified (or after {@code --help}), 1 when the answer
 * differs, 2 on a bad command line and 3 when the run fails.
 *
 * <p>It runs in this JVM ({@value #LOCAL_MASTER}) unless a master is already set, as {@code
 * spark-submit --master spark://...} sets it: then on that cluster (see {@link #sessionConf}),
 * with {@code --checkpoint} required and {@code --data} and {@code --work-dir} on paths every
 * worker sees at the same place (docker/README.md).
 */
public final class FlightsDemo {
  /** Spark's setting that selects the state store provider. */
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";

  /** Bucket used on the demo's own S3Proxy. */
  static final String LOCAL_BUCKET = "strata-demo";

  /** The master when none is set: Spark in this JVM. */
  static final String LOCAL_MASTER = "local[2]";

  private static final Duration PHASE_ONE_LIMIT = Duration.ofMinutes(60);

  private final DemoOptions options;
  private final PrintStream out;
  private final String master;
  private final Logger log = LoggerFactory.getLogger(FlightsDemo.class);
  /** Each query's totals in phase 1 and in phase 2 (after the restore), for the report. */
  private final Map<String, BatchReporter.QueryTotals> phase1Totals = new LinkedHashMap<>();
  private final Map<String, BatchReporter.QueryTotals> phase2Totals = new LinkedHashMap<>();

  private FlightsDemo(DemoOptions options, PrintStream out, String master) {
    this.options = options;
    this.out = out;
    this.master = master;
  }

  /**
   * Runs the demo and exits: 0 when verified, 1 when the answer differs, 2 on a bad command
   * line, 3 when the run fails.
   *
   * @param args the options; see {@code --help}
   */
  public static void main(String[] args) {
    DemoLogging.useDemoConfigUnlessSet();
    int code;
    try {
      DemoResult result = run(System.out, args);
      code = result.verified() ? 0 : 1;
    } catch (DemoOptions.HelpRequested help) {
      System.out.println(help.getMessage());
      code = 0;
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      code = 2;
    } catch (Exception e) {
      System.err.println("The demo failed: " + e);
      e.printStackTrace(System.err);
      code = 3;
    }
    System.out.flush();
    System.exit(code);
  }

  /**
   * Runs the demo in this JVM and returns what it found, printing progress to {@code out}. It
   * creates and stops its own SparkSessions, so no other SparkSession may be active.
   *
   * @param out where the per-batch lines and the result go
   * @param args the options; see {@code --help}
   * @return what the run found; {@link DemoResult#verified()} is the verdict
   * @throws IllegalArgumentException on a bad command line (the message says what and how)
   * @throws Exception when the data cannot be had, S3Proxy does not start, or a query fails
   */
  public static DemoResult run(PrintStream out, String... args) throws Exception {
    DemoLogging.useDemoConfigUnlessSet();
    DemoOptions options = DemoOptions.parse(args);
    // spark-submit puts its settings, spark.master among them, into system properties before it
    // calls main; SparkConf reads them from there.
    String master = master(new SparkConf());
    checkMaster(master, options);
    return new FlightsDemo(options, out, master).run();
  }

  /**
   * The master to run on: {@code spark.master} when it is already set (spark-submit sets it),
   * else {@value #LOCAL_MASTER}.
   *
   * @param conf Spark's configuration as a new SparkConf sees it (system properties included)
   * @return the master URL
   */
  static String master(SparkConf conf) {
    String m = conf.get("spark.master", "").strip();
    return m.isEmpty() ? LOCAL_MASTER : m;
  }

  /**
   * True when the executors run on this machine ({@code local}, {@code local[N]}, {@code
   * local-cluster[...]}): the demo then binds the driver to loopback and keeps the local state
   * under its run directory.
   */
  static boolean onThisMachine(String master) {
    return master.startsWith("local");
  }

  /**
   * Fails on a cluster master without {@code --checkpoint}: the demo's own S3Proxy listens on
   * this machine's loopback, which executors on other hosts cannot reach.
   *
   * @throws IllegalArgumentException saying what to pass instead
   */
  static void checkMaster(String master, DemoOptions options) {
    if (!onThisMachine(master) && options.localS3Proxy()) {
      throw new IllegalArgumentException(
          "Cannot run on "
              + master
              + " without --checkpoint: the demo's own S3Proxy listens on this machine's"
              + " loopback only. Pass --checkpoint s3://<bucket>/<prefix> and --endpoint <url>"
              + " of an S3 server the executors reach.");
    }
  }

  private DemoResult run() throws Exception {
    Instant started = Instant.now();
    String runId =
        "flights-"
            + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT)
                .withZone(ZoneOffset.UTC)
                .format(started)
            + "-"
            + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
    Path runDir = options.workDir().resolve(runId).toAbsolutePath();
    checkProviderLoads(options.provider());
    out.println("Strata flights demo, run " + runId);
    Path data = FlightsData.locate(options.data(), options.cacheDir()).toAbsolutePath();
    out.println("  data        " + data);
    out.println("  provider    " + options.provider());
    out.println("  master      " + master);

    S3ProxyServer proxy = null;
    try {
      CheckpointTarget target;
      if (options.localS3Proxy()) {
        proxy = S3ProxyServer.start(runDir.resolve("s3proxy"), Map.of());
        proxy.createBucket(LOCAL_BUCKET);
        target =
            CheckpointTarget.localS3Proxy(
                proxy, LOCAL_BUCKET, runId, options.s3aCheckpointFiles());
      } else {
        target = CheckpointTarget.fromOptions(options, runId);
      }
      out.println("  checkpoint  " + target);
      DemoResult result = runPhases(runDir, data, target, started);
      out.println(result.summary());
      Path report = DemoReport.write(options.workDir().resolve("report").toAbsolutePath(),
          phase1Totals, phase2Totals, result.summary());
      out.println(DemoReport.describe(report));
      if (result.verified() && !options.keep()) {
        if (proxy != null) {
          proxy.close();
          proxy = null;
        }
        DemoFiles.deleteRecursively(runDir);
      } else {
        out.println("Run directory kept: " + runDir);
        String describe = ToolCommand.describe(target.queryCheckpoint(FlightQueries.ROUTES),
            options, Optional.ofNullable(proxy).map(p -> p.endpoint().toString()),
            List.of(S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY));
        if (proxy == null || options.serve()) {
          out.println("Inspect the checkpoint of query " + FlightQueries.ROUTES + " (also "
              + FlightQueries.AIRPORT_HOURS + ", " + FlightQueries.DISTINCT_FLIGHTS
              + "), from the project root:");
          out.println("  " + describe);
        } else {
          // The server's objects stay in its directory, which the tool reads as a local
          // checkpoint (no server needed).
          out.println("The demo's S3 server stops with it; the strata tool reads the kept "
              + "objects from its directory (or run again with --serve), from the project root:");
          out.println("  " + ToolCommand.describe(proxyDirectory(proxy,
              target.queryCheckpoint(FlightQueries.ROUTES)), options, Optional.empty(),
              List.of()));
        }
        if (proxy != null && options.serve()) {
          out.println("S3 server running at " + proxy.endpoint() + " (bucket " + LOCAL_BUCKET
              + "); press Ctrl-C to stop it.");
          out.flush();
          // Until the process is stopped, or its parent (Maven, under exec:exec) is: a killed
          // mvn would otherwise leave this JVM and its S3 server running.
          ProcessHandle.current().parent()
              .map(ProcessHandle::onExit)
              .orElseGet(java.util.concurrent.CompletableFuture::new)
              .get();
          out.println("The parent process ended; stopping the S3 server.");
        }
      }
      return result;
    } finally {
      if (proxy != null) {
        proxy.close();
      }
    }
  }

  private DemoResult runPhases(Path runDir, Path data, CheckpointTarget target, Instant started)
      throws Exception {
    Path input = runDir.resolve("input");
    String output = runDir.resolve("output").toString();
    Path local = runDir.resolve("local");

    // Phase 1: split the flights into files, replay about half of them, stop.
    SparkSession spark = newSession(target, local);
    int files;
    DemoFiles.Usage localState;
    try {
      Instant splitStart = Instant.now();
      Dataset<Row> source = FlightsInput.source(spark, data, options.maxRows());
      List<Path> split = FlightsInput.split(source, options.files(), runDir.resolve("files"));
      files = split.size();
      int stopAfter = Math.min(options.stopAfterFiles(), files - 1);
      out.printf(
          Locale.ROOT,
          "  input       %d files by date in %s (split in %d s), %d state partitions per query%n",
          files,
          input,
          Duration.between(splitStart, Instant.now()).toSeconds(),
          options.partitions());
      Instant phaseStart = Instant.now();
      try (BatchReporter reporter = new BatchReporter(out, files)) {
        register(spark, reporter);
        if (options.hardStop()) {
          out.printf(
              Locale.ROOT,
              "Phase 1: queries %s; stopping each once it has done file %d of %d%n",
              String.join(", ", FlightQueries.ALL),
              stopAfter,
              files);
          FlightsInput.publish(split, input);
          runAndStop(spark, reporter, input, target, output, stopAfter);
        } else {
          out.printf(
              Locale.ROOT,
              "Phase 1: queries %s over files 1..%d of %d (Trigger.AvailableNow)%n",
              String.join(", ", FlightQueries.ALL),
              stopAfter,
              files);
          FlightsInput.publish(split.subList(0, stopAfter), input);
          runAvailable(spark, input, target, output);
        }
        reporter.drain();
        printTotals(reporter, phaseStart);
        for (String name : FlightQueries.ALL) {
          phase1Totals.put(name, reporter.totals(name));
        }
      }
      localState = DemoFiles.usage(local);
    } finally {
      stopSession(spark);
    }

    // Between the phases: lose what a lost machine loses.
    if (onThisMachine(master)) {
      DemoFiles.deleteRecursively(local);
      out.printf(
          Locale.ROOT,
          "Stopped the queries and the SparkSession; wiped all local state in %s (%,d files,"
              + " %s)%n",
          local,
          localState.files(),
          BatchReporter.bytes(localState.bytes()));
    } else {
      out.println(
          "Stopped the queries and the SparkSession; its executors exited, and each worker"
              + " deletes their local directories (all local state) as the application ends");
    }
    FlightsInput.publish(DemoFiles.list(runDir.resolve("files")), input);

    // Phase 2: a new session restores from the checkpoint and finishes the stream.
    spark = newSession(target, local);
    try {
      out.println(
          "Phase 2: new SparkSession, queries restarted from the checkpoint, all files"
              + " (Trigger.AvailableNow)");
      Map<String, BatchReporter.QueryTotals> totals = new LinkedHashMap<>();
      Instant phaseStart = Instant.now();
      try (BatchReporter reporter = new BatchReporter(out, files)) {
        register(spark, reporter);
        runAvailable(spark, input, target, output);
        reporter.drain();
        printTotals(reporter, phaseStart);
        for (String name : FlightQueries.ALL) {
          totals.put(name, reporter.totals(name));
          phase2Totals.put(name, reporter.totals(name));
        }
      }
      return verify(spark, data, output, totals, target, started);
    } finally {
      stopSession(spark);
    }
  }

  /** Runs the queries over the files present now, to the end (Trigger.AvailableNow). */
  private static void runAvailable(
      SparkSession spark, Path input, CheckpointTarget target, String output)
      throws TimeoutException, org.apache.spark.sql.streaming.StreamingQueryException {
    List<StreamingQuery> queries = startAll(spark, input, target, output, Trigger.AvailableNow());
    try {
      for (StreamingQuery q : queries) {
        q.awaitTermination();
        failIfFailed(q);
      }
    } finally {
      for (StreamingQuery q : queries) {
        q.stop();
      }
    }
  }

  private DemoResult verify(
      SparkSession spark,
      Path data,
      String output,
      Map<String, BatchReporter.QueryTotals> totals,
      CheckpointTarget target,
      Instant started) {
    List<String> problems = new ArrayList<>();
    for (var e : totals.entrySet()) {
      if (e.getValue().firstBatch < 1) {
        problems.add(
            e.getKey() + ": phase 2 began at batch " + e.getValue().firstBatch
                + ", so it did not resume from the checkpoint");
      }
    }
    StreamingQueryProgress hours = totals.get(FlightQueries.AIRPORT_HOURS).lastProgress;
    StreamingQueryProgress distinct = totals.get(FlightQueries.DISTINCT_FLIGHTS).lastProgress;
    String watermark = hours == null ? null : hours.eventTime().get("watermark");
    if (watermark == null) {
      problems.add("airport_hours: no watermark in the final progress");
      watermark = Instant.EPOCH.toString();
    }
    long distinctStateRows = -1;
    if (distinct != null) {
      distinctStateRows = 0;
      for (StateOperatorProgress op : distinct.stateOperators()) {
        distinctStateRows += op.numRowsTotal();
      }
    }
    out.println("Checking against a batch job over the same flights...");
    Instant checkStart = Instant.now();
    Verifier.Verification v =
        Verifier.verify(
            spark,
            FlightsInput.source(spark, data, options.maxRows()),
            output,
            watermark,
            distinctStateRows);
    problems.addAll(v.problems());
    out.printf(
        Locale.ROOT,
        "  done in %d s; %,d of %,d airport-hours closed by the final watermark %s%n",
        Duration.between(checkStart, Instant.now()).toSeconds(),
        v.closedHours(),
        v.allHours(),
        watermark);
    return new DemoResult(
        problems.isEmpty(),
        v.rows(),
        v.routes(),
        v.closedHours(),
        v.distinctFlights(),
        problems,
        target.root(),
        Duration.between(started, Instant.now()));
  }

  /**
   * Runs the queries until each has finished {@code stopAfter} files, then stops it, whatever it
   * is doing (the batch it is in may be interrupted and is re-run after the restart).
   */
  private void runAndStop(
      SparkSession spark,
      BatchReporter reporter,
      Path input,
      CheckpointTarget target,
      String output,
      int stopAfter)
      throws TimeoutException, InterruptedException {
    List<StreamingQuery> running =
        new ArrayList<>(startAll(spark, input, target, output, Trigger.ProcessingTime(0)));
    long deadline = System.nanoTime() + PHASE_ONE_LIMIT.toNanos();
    try {
      while (!running.isEmpty()) {
        for (StreamingQuery q : List.copyOf(running)) {
          failIfFailed(q);
          if (reporter.filesDone(q.name()) >= stopAfter || !q.isActive()) {
            q.stop();
            failIfFailed(q);
            running.remove(q);
            log.info("Stopped query {} after file {}", q.name(), reporter.filesDone(q.name()));
          }
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "Cannot finish phase 1: not halfway after " + PHASE_ONE_LIMIT);
        }
        Thread.sleep(20);
      }
    } finally {
      for (StreamingQuery q : running) {
        q.stop();
      }
    }
  }

  private static List<StreamingQuery> startAll(
      SparkSession spark, Path input, CheckpointTarget target, String output, Trigger trigger)
      throws TimeoutException {
    Dataset<Row> stream =
        spark
            .readStream()
            .schema(spark.read().parquet(input.toString()).schema())
            .option("maxFilesPerTrigger", 1)
            .parquet(input.toString());
    List<StreamingQuery> queries = new ArrayList<>();
    for (String name : FlightQueries.ALL) {
      queries.add(
          FlightQueries.start(name, stream, target.queryCheckpoint(name), output, trigger));
    }
    return queries;
  }

  private static void failIfFailed(StreamingQuery q) {
    if (q.exception().isDefined()) {
      throw new IllegalStateException(
          "Query " + q.name() + " failed: " + q.exception().get().getMessage(),
          q.exception().get());
    }
  }

  private void printTotals(BatchReporter reporter, Instant phaseStart) {
    out.printf(
        Locale.ROOT,
        "  done in %d s%n",
        Duration.between(phaseStart, Instant.now()).toSeconds());
    for (String name : FlightQueries.ALL) {
      BatchReporter.QueryTotals t = reporter.totals(name);
      out.printf(
          Locale.ROOT,
          "  %-16s batches %d..%d (%d), %,d rows in, files done %d, commit p50 %s max %s, S3 %s%n",
          name,
          t.firstBatch,
          t.lastBatch,
          t.batches,
          t.rowsIn,
          t.filesDone,
          BatchReporter.ms(BatchReporter.percentile(t.commitMs, 50)).strip(),
          BatchReporter.ms(BatchReporter.percentile(t.commitMs, 100)).strip(),
          t.s3Reported ? BatchReporter.s3(t.s3Bytes, t.s3Requests) : "n/a");
    }
  }

  /** Fails fast, before any server or session starts, when the provider is not on the path. */
  private static void checkProviderLoads(String provider) {
    try {
      Class.forName(provider, false, Thread.currentThread().getContextClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      throw new IllegalArgumentException(
          "Cannot load the state store provider "
              + provider
              + ": "
              + e
              + ". To try the demo with Spark's own RocksDB provider, pass --provider "
              + "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
          e);
    }
  }

  private static void register(SparkSession spark, BatchReporter reporter) {
    spark.streams().addListener(reporter);
    spark.sparkContext().addSparkListener(reporter.commitTimes());
  }

  private SparkSession newSession(CheckpointTarget target, Path local) {
    SparkSession.Builder b =
        SparkSession.builder().appName("strata-flights-demo").master(master);
    sessionConf(master, local, options, target).forEach(b::config);
    return b.getOrCreate();
  }

  /**
   * The settings the demo puts on its SparkSessions, in the order applied (a later one wins):
   * partitions, time zone, provider, then the checkpoint target's S3 settings, then {@code
   * --conf}. On this machine (see {@link #onThisMachine}) also: the driver on loopback, no UI,
   * and Spark's and Strata's local directories under {@code local}, which the demo wipes between
   * its phases. On a cluster those stay as the cluster sets them: the driver's address, the UI,
   * and the executors' local directories on their workers (a worker deletes an application's
   * local directories when it ends, so phase 2's executors start with none).
   *
   * @param master the master URL the session runs on
   * @param local the run's local directory (used on this machine only)
   * @param options the command line
   * @param target where the checkpoints go
   * @return the settings, in order
   */
  static Map<String, String> sessionConf(
      String master, Path local, DemoOptions options, CheckpointTarget target) {
    Map<String, String> c = new LinkedHashMap<>();
    if (onThisMachine(master)) {
      c.put("spark.ui.enabled", "false");
      c.put("spark.driver.bindAddress", "127.0.0.1");
      c.put("spark.driver.host", "127.0.0.1");
      c.put("spark.local.dir", local.resolve("spark").toString());
    }
    c.put("spark.sql.shuffle.partitions", Integer.toString(options.partitions()));
    c.put("spark.sql.session.timeZone", "UTC");
    c.put(PROVIDER_CLASS, options.provider());
    if (onThisMachine(master)) {
      c.put(CheckpointTarget.STRATA + "localDir", local.resolve("strata").toString());
    }
    c.putAll(target.sparkConf());
    c.putAll(options.conf());
    return c;
  }

  /**
   * Stops the session and what would die with its JVM: the state store providers Spark keeps
   * loaded per JVM (closed, as at executor exit) and Hadoop's cached file systems. The providers
   * go first, while the SparkEnv they report to still runs; after it, Spark's maintenance thread
   * can hang for its 5-minute shutdown timeout.
   */
  private void stopSession(SparkSession spark) throws IOException {
    try {
      StateStore.stop();
    } finally {
      spark.stop();
      FileSystem.closeAll();
    }
  }

  /**
   * Where the demo's own S3 server keeps the objects of {@code checkpoint} ({@code
   * s3://<bucket>/<key>} or {@code s3a://...}) on disk, as a {@code file:} URI.
   */
  static String proxyDirectory(S3ProxyServer proxy, String checkpoint) {
    String path = checkpoint.substring(checkpoint.indexOf("://") + 3);
    return proxy.dataDir().resolve(path).toAbsolutePath().toUri().toString();
  }
}
