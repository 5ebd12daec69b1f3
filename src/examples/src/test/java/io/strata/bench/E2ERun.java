// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.testkit.S3ProxyServer;
import java.io.BufferedWriter;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore$;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One end-to-end benchmark run ({@link RunSpec}): a real streaming query in local mode whose
 * checkpoint (Spark's logs and the state) goes to the S3 server through an {@link S3Gateway}.
 *
 * <p>The input is a directory of text files (one id per line) read with {@code
 * maxFilesPerTrigger=1}, so each file is exactly one micro-batch: first the <b>load</b> batches
 * (ids {@code 0 .. stateKeys-1}, {@code loadBatchKeys} per batch), then {@code warmupBatches +
 * steadyBatches} batches of {@code batchKeys} new ids each. The {@code agg} query counts by
 * {@code id % stateKeys} (steady batches update existing keys; the state stays at {@code
 * stateKeys} keys); the {@code dedup} query is {@code dropDuplicates(id)} (steady batches insert
 * new keys). Output goes to Spark's {@code noop} sink.
 *
 * <p>After the steady batches the query stops, every loaded state store provider is closed
 * (Spark's {@code StateStore.unloadAll()}, as when executors are lost) and Strata's local
 * directory is deleted; one more steady batch's file is added and the query restarts on the same
 * checkpoint. Its first batch must restore the whole state from S3: that batch is the
 * <b>restore</b> measurement.
 *
 * <p>Measured per batch: Spark's query progress (durations, state rows, the operator's summed
 * commit time and custom metrics), each task's own commit time (the SQL metric {@code time to
 * commit changes} of the stateful operator, i.e. one state store's {@code commit()}), and the S3
 * requests the gateway recorded while the batch ran. See {@link #run} for the result's fields.
 */
final class E2ERun {
  static final String BUCKET = "strata-bench";
  /** Strata's {@code transferThreads} default: parallel transfers per store in a restore. */
  static final int TRANSFER_THREADS = 8;
  private static final ObjectMapper JSON = new ObjectMapper();

  private E2ERun() { }

  /**
   * Child-JVM entry point: {@code --spec <json> --endpoint <url> --work <dir> --out <file>
   * [--s3-data <dir>]}. Writes the result as JSON to {@code --out}; exits 1 if the run failed
   * (the stack trace goes to stderr).
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      a.put(args[i], args[i + 1]);
    }
    // Exit explicitly either way: Spark leaves non-daemon threads behind.
    try {
      RunSpec spec = JSON.readValue(a.get("--spec"), RunSpec.class);
      Path s3Data = a.containsKey("--s3-data") ? Paths.get(a.get("--s3-data")) : null;
      Map<String, Object> result = run(spec, URI.create(a.get("--endpoint")),
          Paths.get(a.get("--work")), s3Data);
      JSON.writerWithDefaultPrettyPrinter().writeValue(Paths.get(a.get("--out")).toFile(),
          result);
    } catch (Throwable t) {
      t.printStackTrace();
      System.exit(1);
    }
    System.exit(0);
  }

  /**
   * Runs {@code spec} against the S3 server at {@code s3Endpoint} (bucket {@value #BUCKET} must
   * exist) with scratch files under {@code work}.
   *
   * @param s3Data the server's filesystem store directory, to report the checkpoint's size in
   *     bytes; null to skip
   * @return {@code spec}, {@code batches} (one map per batch: {@code phase} load / warmup /
   *     steady / restore, times in ms, {@code commitMsTasks}, requests by scope and kind), and
   *     {@code summary} (steady-phase percentiles, requests and bytes per batch, restore)
   * @throws IllegalStateException if the query fails or does not run the expected batches
   */
  static Map<String, Object> run(RunSpec spec, URI s3Endpoint, Path work, Path s3Data)
      throws Exception {
    ProviderSetup setup = ProviderSetup.of(spec.setup());
    LatencyProfile latency = LatencyProfile.of(spec.latency());
    Files.createDirectories(work);
    Path input = Files.createDirectories(work.resolve("input"));
    Path strataLocal = work.resolve("strata-local");
    int load = spec.loadBatches();
    int steadyTotal = spec.warmupBatches() + spec.steadyBatches();
    long mtimeBase = System.currentTimeMillis() - TimeUnit.HOURS.toMillis(1);
    for (int i = 0; i < load; i++) {
      long from = i * spec.loadBatchKeys();
      writeIds(input, i, from, Math.min(spec.stateKeys(), from + spec.loadBatchKeys()), mtimeBase);
    }
    // The restore batch's file is written after the first run stops.
    for (int j = 0; j < steadyTotal; j++) {
      long from = spec.stateKeys() + j * spec.batchKeys();
      writeIds(input, load + j, from, from + spec.batchKeys(), mtimeBase);
    }
    String prefix = spec.name() + "-" + UUID.randomUUID().toString().substring(0, 8);
    String checkpoint = "s3a://" + BUCKET + "/" + prefix + "/ckpt";
    Map<String, Object> env = new LinkedHashMap<>();
    env.put("startedAt", Instant.now().toString());
    env.put("loadAvgStart", loadAverage());
    env.put("cores", Runtime.getRuntime().availableProcessors());
    env.put("maxHeapBytes", Runtime.getRuntime().maxMemory());

    try (S3Gateway gateway = new S3Gateway(s3Endpoint, latency)) {
      SparkSession spark = session(spec, setup, gateway.endpoint(), work, strataLocal);
      Progress progress = new Progress();
      CommitTimes commits = new CommitTimes();
      spark.streams().addListener(progress);
      spark.sparkContext().addSparkListener(commits);
      try {
        long t0 = System.nanoTime();
        String queryId = runQuery(spark, spec, input, checkpoint);
        long mainMs = (System.nanoTime() - t0) / 1_000_000;
        int mainBatches = load + steadyTotal;
        progress.await(mainBatches, 60_000);

        // Lose every executor's local state, then restart from the S3 checkpoint alone.
        StateStore$.MODULE$.unloadAll();
        deleteRecursively(strataLocal);
        long from = spec.stateKeys() + (long) steadyTotal * spec.batchKeys();
        writeIds(input, load + steadyTotal, from, from + spec.batchKeys(), mtimeBase);
        runQuery(spark, spec, input, checkpoint);
        progress.await(mainBatches + 1, 60_000);
        // One-batch runs: each restarts the query on wiped local state for one new batch.
        for (int run = 1; run < spec.runs(); run++) {
          StateStore$.MODULE$.unloadAll();
          deleteRecursively(strataLocal);
          long f = spec.stateKeys() + (long) (steadyTotal + run) * spec.batchKeys();
          writeIds(input, load + steadyTotal + run, f, f + spec.batchKeys(), mtimeBase);
          runQuery(spark, spec, input, checkpoint);
          progress.await(mainBatches + 1 + run, 60_000);
        }
        commits.await(queryId, mainBatches + spec.runs(), spec.partitions(), 30_000);
        // Closes the providers: a Strata store lets its background snapshot upload finish, so
        // nothing else uses the server while the ceiling below is measured.
        StateStore$.MODULE$.unloadAll();

        Map<String, Object> result = new LinkedHashMap<>();
        result.put("spec", spec);
        List<Map<String, Object>> batches = batches(spec, progress.sorted(), commits, queryId,
            gateway.requests());
        if (batches.size() != mainBatches + spec.runs()) {
          throw new IllegalStateException("Run " + spec.name() + " ran " + batches.size()
              + " batches with data, expected " + (mainBatches + spec.runs()));
        }
        if (setup.provider() == ProviderSetup.Provider.STRATA && s3Data != null
            && !spec.plan().equals("requests")) {
          Map<String, Object> restore = batches.get(mainBatches);
          long start = (Long) restore.get("startMs");
          List<String> keys = gateway.requests().stream()
              .filter(r -> r.state() && r.kind() == S3Kind.GET && r.timeMs() >= start
                  && r.timeMs() <= start + (Long) restore.get("durationMs"))
              .map(S3Request::key).distinct().sorted()
              // A GET that found nothing (a load's guessed key, VersionObjectReader.likelyKey)
              // has no bytes for a ceiling to fetch.
              .filter(k -> Files.exists(s3Data.resolve(BUCKET).resolve(k))).toList();
          // Stores restoring at once in the query: one per task slot.
          int concurrent = Math.min(spec.cores(), spec.partitions());
          int streams = concurrent * TRANSFER_THREADS;
          result.put("getCeiling", RangedGetCeiling.measure(gateway.endpoint(), BUCKET,
              s3Data.resolve(BUCKET), keys, streams, concurrent, TRANSFER_THREADS));
          // The same stores restored by Strata's restore path alone, then the ceiling of the
          // objects those restores read: the download rate without the query's tasks.
          long lastVersion = progress.sorted().stream()
              .mapToLong(StreamingQueryProgress::batchId).max().orElse(-1) + 1;
          // Tries alternate (restore, ceiling, restore, ...): the server and gateway warm up
          // over the first seconds, and a ceiling measured after all the restores would get all
          // of that warm-up.
          try (RestoreAlone restores = new RestoreAlone(gateway.endpoint(), checkpoint,
              spec.partitions(), lastVersion, concurrent, work)) {
            Map<String, Object> first = restores.tryOnce();
            long aFrom = (Long) first.get("startMs");
            long aTo = (Long) first.get("endMs");
            List<String> aloneKeys = gateway.requests().stream()
                .filter(r -> r.state() && r.kind() == S3Kind.GET && r.timeMs() >= aFrom
                    && r.timeMs() <= aTo)
                .map(S3Request::key).distinct().sorted()
                .filter(k -> Files.exists(s3Data.resolve(BUCKET).resolve(k))).toList();
            try (RangedGetCeiling ceiling = new RangedGetCeiling(gateway.endpoint(), BUCKET,
                s3Data.resolve(BUCKET), aloneKeys, streams, concurrent, TRANSFER_THREADS)) {
              ceiling.tryOnce();
              for (int t = 1; t < RestoreAlone.TRIES; t++) {
                restores.tryOnce();
                ceiling.tryOnce();
              }
              Map<String, Object> alone = restores.result();
              alone.put("getCeiling", ceiling.result());
              result.put("restoreAlone", alone);
            }
          }
        }
        env.put("loadAvgEnd", loadAverage());
        env.put("mainRunMs", mainMs);
        env.put("checkpointBytes", s3Data == null ? null : size(s3Data.resolve(BUCKET)
            .resolve(prefix)));
        env.put("checkpointStateBytes", s3Data == null ? null : size(s3Data.resolve(BUCKET)
            .resolve(prefix).resolve("ckpt").resolve("state")));
        result.put("env", env);
        result.put("summary", summary(spec, batches, gateway.requests()));
        result.put("batches", batches);
        return result;
      } finally {
        spark.stop();
      }
    }
  }

  private static SparkSession session(RunSpec spec, ProviderSetup setup, URI endpoint, Path work,
      Path strataLocal) {
    SparkSession.Builder b = SparkSession.builder()
        .master("local[" + spec.cores() + "]")
        .appName("strata-e2e-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "WARN")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", work.resolve("spark-local").toString())
        .config("spark.sql.shuffle.partitions", Integer.toString(spec.partitions()))
        .config("spark.hadoop.fs.s3a.endpoint", endpoint.toString())
        .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
        .config("spark.hadoop.fs.s3a.path.style.access", "true")
        .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
        .config("spark.hadoop.fs.s3a.access.key", io.strata.testkit.S3ProxyServer.ACCESS_KEY)
        .config("spark.hadoop.fs.s3a.secret.key", io.strata.testkit.S3ProxyServer.SECRET_KEY)
        .config("spark.hadoop.fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        // S3Proxy returns no ETag on HEAD of a directory marker (see ../shared notes).
        .config("spark.hadoop.fs.s3a.change.detection.version.required", "false");
    if (!spec.maintenanceInterval().isEmpty()) {
      b.config("spark.sql.streaming.stateStore.maintenanceInterval", spec.maintenanceInterval());
    }
    if (setup.provider() == ProviderSetup.Provider.STRATA) {
      String p = "spark.sql.streaming.stateStore.strata.";
      b.config(p + "s3.endpoint", endpoint.toString())
          .config(p + "s3.region", "us-east-1")
          .config(p + "s3.pathStyleAccess", "true")
          .config(p + "s3.accessKeyId", io.strata.testkit.S3ProxyServer.ACCESS_KEY)
          .config(p + "s3.secretAccessKey", io.strata.testkit.S3ProxyServer.SECRET_KEY)
          .config(p + "localDir", strataLocal.toString());
      spec.strataConf().forEach((k, v) -> b.config(p + k, v));
    }
    setup.sparkConf().forEach(b::config);
    return b.getOrCreate();
  }

  /** Starts the query, processes every input file, stops it; returns the query id. */
  private static String runQuery(SparkSession spark, RunSpec spec, Path input, String checkpoint)
      throws Exception {
    Dataset<Row> ids = spark.readStream().format("text").option("maxFilesPerTrigger", "1")
        .load(input.toString()).selectExpr("CAST(value AS BIGINT) AS id");
    Dataset<Row> out;
    String mode;
    if (spec.workload().equals("agg")) {
      out = ids.selectExpr("id % " + spec.stateKeys() + " AS k").groupBy("k").count();
      mode = "update";
    } else {
      out = ids.dropDuplicates("id");
      mode = "append";
    }
    StreamingQuery q = out.writeStream().format("noop").queryName("bench")
        .option("checkpointLocation", checkpoint).outputMode(mode).start();
    try {
      q.processAllAvailable();
    } finally {
      q.stop();
    }
    if (q.exception().isDefined()) {
      throw new IllegalStateException("Run " + spec.name() + ": query failed",
          q.exception().get());
    }
    return q.id().toString();
  }

  /** Writes ids {@code from .. to-1}, one per line, as input file {@code index}. */
  private static void writeIds(Path dir, int index, long from, long to, long mtimeBase)
      throws IOException {
    Path tmp = dir.resolveSibling(String.format("ids-%06d.txt.tmp", index));
    try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.US_ASCII)) {
      for (long id = from; id < to; id++) {
        w.write(Long.toString(id));
        w.write('\n');
      }
    }
    // Spark's file source takes the oldest unseen file first: give each a distinct time.
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(mtimeBase + index * 1000L));
    Files.move(tmp, dir.resolve(String.format("ids-%06d.txt", index)));
  }

  /** Per-batch records, in batch order, with the requests of each batch's time window. */
  private static List<Map<String, Object>> batches(RunSpec spec,
      List<StreamingQueryProgress> progress, CommitTimes commits, String queryId,
      List<S3Request> requests) {
    int load = spec.loadBatches();
    int warm = spec.warmupBatches();
    int steady = spec.steadyBatches();
    List<Map<String, Object>> out = new ArrayList<>();
    int index = 0;
    for (StreamingQueryProgress p : progress) {
      if (p.numInputRows() == 0) {
        continue; // not a batch of ours (none expected without a watermark)
      }
      String phase = index < load ? "load" : index < load + warm ? "warmup"
          : index < load + warm + steady ? "steady" : "restore";
      int run = index - (load + warm + steady) + 1; // the restore batches' one-batch run
      index++;
      Map<String, Object> b = new LinkedHashMap<>();
      if (phase.equals("restore")) {
        b.put("run", run);
      }
      long start = Instant.parse(p.timestamp()).toEpochMilli();
      long trigger = p.durationMs().getOrDefault("triggerExecution", 0L);
      b.put("batchId", p.batchId());
      b.put("phase", phase);
      b.put("startMs", start);
      b.put("durationMs", trigger);
      b.put("durations", new LinkedHashMap<>(p.durationMs()));
      b.put("inputRows", p.numInputRows());
      StateOperatorProgress op = p.stateOperators().length > 0 ? p.stateOperators()[0] : null;
      b.put("stateRows", op == null ? null : op.numRowsTotal());
      b.put("rowsUpdated", op == null ? null : op.numRowsUpdated());
      b.put("commitMsSum", op == null ? null : op.commitTimeMs());
      b.put("commitMsTasks", commits.times(queryId, p.batchId()));
      b.put("taskMsTasks", commits.taskTimes(queryId, p.batchId()));
      b.put("customMetrics", op == null ? Map.of() : new LinkedHashMap<>(op.customMetrics()));
      Window w = Window.of(requests, start, start + trigger);
      b.put("requests", w.counts());
      b.put("bytesUp", w.bytes());
      out.add(b);
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> summary(RunSpec spec, List<Map<String, Object>> batches,
      List<S3Request> requests) {
    List<Map<String, Object>> steady = batches.stream()
        .filter(b -> b.get("phase").equals("steady")).toList();
    List<Long> commitTasks = new ArrayList<>();
    List<Long> taskMs = new ArrayList<>();
    List<Long> batchMs = new ArrayList<>();
    List<Long> addBatchMs = new ArrayList<>();
    List<Long> commitFromProgress = new ArrayList<>();
    for (Map<String, Object> b : steady) {
      commitTasks.addAll((List<Long>) b.get("commitMsTasks"));
      taskMs.addAll((List<Long>) b.get("taskMsTasks"));
      batchMs.add((Long) b.get("durationMs"));
      addBatchMs.add(addBatch(b));
      if (b.get("commitMsSum") != null) {
        commitFromProgress.add((Long) b.get("commitMsSum") / spec.partitions());
      }
    }
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("commitMsPerPartition", Stats.of(commitTasks).asMap());
    s.put("commitMsPerPartitionFromProgress", Stats.of(commitFromProgress).asMap());
    s.put("statefulTaskMs", Stats.of(taskMs).asMap());
    s.put("batchMs", Stats.of(batchMs).asMap());
    s.put("addBatchMs", Stats.of(addBatchMs).asMap());
    // Every request from the first steady batch's start to the last one's end, background
    // maintenance included, divided by the number of steady batches.
    long from = (Long) steady.get(0).get("startMs");
    Map<String, Object> last = steady.get(steady.size() - 1);
    long to = (Long) last.get("startMs") + (Long) last.get("durationMs");
    Window w = Window.of(requests, from, to);
    int n = steady.size();
    s.put("steadyWallMs", to - from);
    s.put("requestsPerBatch", w.perBatch(n, 1));
    s.put("stateRequestsPerPartitionCommit", w.perBatch(n, spec.partitions()).get("state"));
    // Strata's commit path is the PUT of each version object (v/...svo); everything else in the
    // window (base snapshots, published snapshots, garbage collection) is background work.
    long versionPuts = requests.stream().filter(x -> x.state() && x.kind() == S3Kind.PUT
        && x.timeMs() >= from && x.timeMs() <= to && x.key().contains("/v/")
        && x.key().endsWith(".svo")).count();
    s.put("versionObjectPutsPerPartitionCommit",
        Math.round(100.0 * versionPuts / n / spec.partitions()) / 100.0);
    // The window's state requests by kind and by the store's directory they go to (v, b, sst,
    // runs, ...: docs/format.md, "Where a store's objects live"; the first segment after
    // state/<operator>/<partition>/; other set-ups' own file names), in all, not per batch.
    Map<String, Long> byDir = new java.util.TreeMap<>();
    for (S3Request x : requests) {
      if (x.state() && x.timeMs() >= from && x.timeMs() <= to) {
        byDir.merge(x.kind() + " " + storeDir(x.key()), 1L, Long::sum);
      }
    }
    s.put("stateRequestsByDirectory", byDir);
    Map<String, Long> bytes = w.bytes();
    s.put("bytesUpPerBatch", Map.of("state", bytes.get("state") / n, "all",
        bytes.get("all") / n));
    List<Map<String, Object>> loads = batches.stream()
        .filter(b -> b.get("phase").equals("load")).toList();
    s.put("loadMs", loads.stream().mapToLong(b -> (Long) b.get("durationMs")).sum());
    s.put("stateRowsEnd", last.get("stateRows"));
    List<Map<String, Object>> restores = batches.stream()
        .filter(b -> b.get("phase").equals("restore")).toList();
    Map<String, Object> restore = restores.get(0);
    Map<String, Object> r = new LinkedHashMap<>();
    // The restore batch does one steady batch's work plus loading every store from S3; its
    // addBatch (the tasks: load, process, commit) minus a steady batch's median addBatch is the
    // time the restore added. Query start (planning, reading Spark's logs) is outside addBatch.
    r.put("batchMs", restore.get("durationMs"));
    r.put("addBatchMs", addBatch(restore));
    r.put("estimateMs", Math.max(0, addBatch(restore) - Stats.of(addBatchMs).p50()));
    r.put("stateRows", restore.get("stateRows"));
    r.put("requests", restore.get("requests"));
    r.put("customMetrics", restore.get("customMetrics"));
    s.put("restore", r);
    if (restores.size() > 1) {
      // Every one-batch run's batch is a restore: what it added, and its state requests.
      List<Map<String, Object>> runs = new ArrayList<>();
      for (Map<String, Object> b : restores) {
        Map<String, Object> one = new LinkedHashMap<>();
        one.put("run", b.get("run"));
        one.put("batchMs", b.get("durationMs"));
        one.put("addBatchMs", addBatch(b));
        one.put("estimateMs", Math.max(0, addBatch(b) - Stats.of(addBatchMs).p50()));
        one.put("stateRequests", ((Map<String, Object>) b.get("requests")).get("state"));
        one.put("customMetrics", b.get("customMetrics"));
        runs.add(one);
      }
      s.put("runs", runs);
    }
    return s;
  }

  /**
   * The first path segment of {@code key} after {@code state/<operator>/<partition>/}, or
   * {@code "-"} when the key has no such segment (a request on the store's root).
   */
  static String storeDir(String key) {
    int i = key.indexOf("/state/");
    if (i < 0) {
      return "-";
    }
    String[] parts = key.substring(i + "/state/".length()).split("/");
    return parts.length > 3 ? parts[2] : "-";
  }

  @SuppressWarnings("unchecked")
  private static long addBatch(Map<String, Object> batch) {
    return ((Map<String, Long>) batch.get("durations")).getOrDefault("addBatch", 0L);
  }

  /** The requests recorded in a time window, counted by scope and kind. */
  private record Window(Map<String, Map<String, Long>> counts, Map<String, Long> bytes) {
    static Window of(List<S3Request> requests, long fromMs, long toMs) {
      Map<S3Kind, Long> state = new EnumMap<>(S3Kind.class);
      Map<S3Kind, Long> other = new EnumMap<>(S3Kind.class);
      for (S3Kind k : S3Kind.values()) {
        state.put(k, 0L);
        other.put(k, 0L);
      }
      long stateBytes = 0;
      long allBytes = 0;
      for (S3Request r : requests) {
        if (r.timeMs() < fromMs || r.timeMs() > toMs) {
          continue;
        }
        (r.state() ? state : other).merge(r.kind(), 1L, Long::sum);
        allBytes += r.bytesUp();
        if (r.state()) {
          stateBytes += r.bytesUp();
        }
      }
      Map<String, Map<String, Long>> c = new LinkedHashMap<>();
      c.put("state", named(state));
      c.put("other", named(other));
      Map<String, Long> all = new LinkedHashMap<>();
      for (S3Kind k : S3Kind.values()) {
        all.put(k.name(), state.get(k) + other.get(k));
      }
      all.put("total", c.get("state").get("total") + c.get("other").get("total"));
      c.put("all", all);
      return new Window(c, Map.of("state", stateBytes, "all", allBytes));
    }

    private static Map<String, Long> named(Map<S3Kind, Long> m) {
      Map<String, Long> out = new LinkedHashMap<>();
      long total = 0;
      for (S3Kind k : S3Kind.values()) {
        out.put(k.name(), m.get(k));
        total += m.get(k);
      }
      out.put("total", total);
      return out;
    }

    /** Counts divided by {@code batches * per}, rounded to 0.01. */
    Map<String, Map<String, Double>> perBatch(int batches, int per) {
      Map<String, Map<String, Double>> out = new LinkedHashMap<>();
      counts.forEach((scope, m) -> {
        Map<String, Double> d = new LinkedHashMap<>();
        m.forEach((k, v) -> d.put(k, Math.round(100.0 * v / batches / per) / 100.0));
        out.put(scope, d);
      });
      return out;
    }
  }

  /** Collects query progress events (delivered asynchronously by Spark's listener bus). */
  private static final class Progress extends StreamingQueryListener {
    private final List<StreamingQueryProgress> events =
        Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onQueryStarted(QueryStartedEvent event) { }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      events.add(event.progress());
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) { }

    List<StreamingQueryProgress> sorted() {
      synchronized (events) {
        List<StreamingQueryProgress> l = new ArrayList<>(events);
        l.sort(Comparator.comparingLong(StreamingQueryProgress::batchId));
        return l;
      }
    }

    /** Waits until {@code n} batches with input have been reported or the timeout passes. */
    void await(int n, long timeoutMs) throws InterruptedException {
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (System.currentTimeMillis() < deadline) {
        if (sorted().stream().filter(p -> p.numInputRows() > 0).count() >= n) {
          return;
        }
        Thread.sleep(50);
      }
    }
  }

  /**
   * Each finished stateful task's commit time: the stateful operator's SQL metric {@value
   * #METRIC} ({@code commitTimeMs} of Spark's {@code StateStoreWriter}), the time one state
   * store's {@code commit()} took; and the task's whole run time ({@code executorRunTime}: load
   * the store, read the shuffle, update, commit), which also holds what a provider does when it
   * opens the store for the batch. Tasks are tied to a query and batch through the local
   * properties Spark sets on each micro-batch's jobs.
   */
  private static final class CommitTimes extends SparkListener {
    static final String METRIC = "time to commit changes";
    private final Map<Integer, String> stageToBatch = new ConcurrentHashMap<>();
    private final Map<String, List<Long>> times = new ConcurrentHashMap<>();
    private final Map<String, List<Long>> taskTimes = new ConcurrentHashMap<>();

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted event) {
      Properties p = event.properties();
      if (p == null) {
        return;
      }
      String query = p.getProperty("sql.streaming.queryId");
      String batch = p.getProperty("streaming.sql.batchId");
      if (query != null && batch != null) {
        stageToBatch.put(event.stageInfo().stageId(), query + "/" + batch);
      }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd event) {
      String key = stageToBatch.get(event.stageId());
      if (key == null || event.taskInfo() == null || !event.taskInfo().successful()) {
        return;
      }
      for (AccumulableInfo acc : CollectionConverters.asJava(event.taskInfo().accumulables())) {
        if (acc.name().isDefined() && METRIC.equals(acc.name().get())
            && acc.update().isDefined() && acc.update().get() instanceof Number n) {
          if (event.taskMetrics() != null) {
            taskTimes.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>()))
                .add(event.taskMetrics().executorRunTime());
          }
          times.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>()))
              .add(n.longValue());
        }
      }
    }

    List<Long> times(String queryId, long batchId) {
      return copy(times.get(queryId + "/" + batchId));
    }

    List<Long> taskTimes(String queryId, long batchId) {
      return copy(taskTimes.get(queryId + "/" + batchId));
    }

    private static List<Long> copy(List<Long> l) {
      if (l == null) {
        return List.of();
      }
      synchronized (l) {
        return new ArrayList<>(l);
      }
    }

    /** Waits until batch {@code batchId - 1}'s last task reported, or the timeout passes. */
    void await(String queryId, long batches, int perBatch, long timeoutMs)
        throws InterruptedException {
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (System.currentTimeMillis() < deadline) {
        if (times(queryId, batches - 1).size() >= perBatch) {
          return;
        }
        Thread.sleep(50);
      }
    }
  }

  /** The 1-minute load average from /proc/loadavg, or -1 where there is none. */
  static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Paths.get("/proc/loadavg")).split(" ")[0]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  static long size(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return 0;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
    }
  }

  static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(x);
      }
    }
  }
}
