// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The end-to-end benchmark: every provider set-up ({@link ProviderSetup}) runs the same streaming
 * workloads ({@link E2ERun}) against one S3Proxy server (a child JVM, filesystem store, loopback),
 * each run in its own JVM, one after another, through an {@link S3Gateway} that counts requests
 * and adds the latency profile's delays. Results of all runs go to one JSON file ({@code --out}),
 * rewritten after each run so a long run that is interrupted keeps what it measured; {@link
 * BenchReport} turns it into the tables and plots of {@code docs/benchmarks.md}.
 *
 * <p>Run it with {@code mvn -B -Pbench -DskipTests verify -Dbench.args="..."} (see
 * docs/benchmarks.md); {@code --help} lists the options. A run that fails is recorded with its
 * error and the others go on; the exit code is then 1. Bad options exit 2.
 */
public final class E2EBenchmark {
  private static final ObjectMapper JSON = new ObjectMapper();

  private E2EBenchmark() { }

  /** The options, with the defaults of the full profile. */
  static final class Options {
    String profile = "full";
    List<Long> sizes = List.of(100_000L, 1_000_000L, 10_000_000L);
    List<String> setups = List.of(ProviderSetup.DEFAULT_LIST.split(","));
    List<String> latencies = List.of("s3-like", "none");
    List<String> workloads = List.of("agg");
    List<Long> dedupSizes = List.of(1_000_000L);
    int partitions = 8;
    long batchKeys = 10_000;
    long loadBatchKeys = 1_000_000;
    int warmup = 3;
    int steady = 20;
    int requestPartitions = 200;
    long requestSize = 100_000;
    int requestSteady = 5;
    int cores = Runtime.getRuntime().availableProcessors();
    String heap = "12g";
    String maintenanceInterval = "";
    Map<String, String> strataConf = Map.of();
    int oneBatchRuns = 0;
    long runsSize = 100_000;
    long runTimeoutMin = 120;
    int serverWarmupSeconds = 30;
    Path out = Paths.get("target", "bench", "e2e-results.json");
    Path work = Paths.get("target", "bench", "e2e-work");

    /** The quick profile: small sizes and few batches, minutes in all. */
    void quick() {
      profile = "quick";
      sizes = List.of(20_000L, 100_000L);
      partitions = 4;
      batchKeys = 2_000;
      loadBatchKeys = 50_000;
      warmup = 1;
      steady = 5;
      latencies = List.of("s3-like");
      dedupSizes = List.of();
      requestPartitions = 0;
      heap = "3g";
    }
  }

  static final String HELP = """
      E2EBenchmark: Strata vs Spark's state store providers on one S3Proxy, real streaming queries.
        --quick                  quick profile (agg at 20000 and 100000 keys, s3-like latency only,
                                 4 partitions, 5 steady batches of 2000 keys, no request run)
        --full                   full profile (default: sizes 100000,1000000,10000000; 8 partitions;
                                 20 steady batches of 10000 keys; request run with 200 partitions)
        --sizes a,b,c|none       state sizes (keys) of the agg workload
        --dedup-sizes a,b|none   state sizes of the dedup workload
        --setups x,y             provider set-ups, of: %s
        --latency x,y            latency profiles, of: s3-like, none
        --partitions n           shuffle partitions (state stores per operator)
        --batch-keys n           keys per steady batch
        --load-batch-keys n      keys per load batch
        --warmup n               unmeasured steady batches
        --steady n               measured steady batches
        --request-partitions n   partitions of the request-count run (0: no such run)
        --request-size n         state size of the request-count run
        --request-steady n       measured batches of the request-count run
        --one-batch-runs n       per set-up, a run of n one-batch runs (0: none): each restarts
                                 the query on wiped local state for one batch, no maintenance
        --runs-size n            state size of the one-batch runs (default 100000)
        --cores n                Spark local[n]
        --heap 12g               heap of each run's JVM (quick: 3g)
        --maintenance-interval d Spark's stateStore.maintenanceInterval (default: Spark's, 60s)
        --strata-conf k=v,...    Strata settings for the Strata set-ups, keys under
                                 spark.sql.streaming.stateStore.strata. (default: none)
        --run-timeout-min n      kill a run after n minutes
        --server-warmup-seconds n  before the first run, send the S3 server every kind of
                                 request for n seconds (default 30; 0: none), so that no set-up
                                 meets a server still JIT-compiling its request path
        --out file               results JSON (default target/bench/e2e-results.json)
        --work dir               scratch directory (default target/bench/e2e-work)
      """;

  /** Entry point; see the class comment. */
  public static void main(String[] args) throws Exception {
    Options o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("E2EBenchmark: " + e.getMessage());
      System.err.printf(HELP, ProviderSetup.DEFAULT_LIST + ",strata-default");
      System.exit(2);
      return;
    }
    if (o == null) {
      System.out.printf(HELP, ProviderSetup.DEFAULT_LIST + ",strata-default");
      return;
    }
    int failed = run(o, String.join(" ", args));
    System.exit(failed == 0 ? 0 : 1);
  }

  static Options parse(String[] args) {
    Options o = new Options();
    if (Arrays.asList(args).contains("--quick")) {
      o.quick(); // first, so that explicit options override the profile
    }
    boolean customized = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--help")) {
        return null;
      }
      if (a.equals("--quick") || a.equals("--full")) {
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("option " + a + " needs a value");
      }
      String v = args[++i];
      customized |= !List.of("--out", "--work", "--heap", "--cores", "--run-timeout-min")
          .contains(a);
      switch (a) {
        case "--sizes" -> o.sizes = v.equals("none") ? List.of() : longs(a, v);
        case "--one-batch-runs" -> o.oneBatchRuns = (int) nonNegative(a, v);
        case "--runs-size" -> o.runsSize = positive(a, v);
        case "--dedup-sizes" -> o.dedupSizes = v.isBlank() || v.equals("none") ? List.of()
            : longs(a, v);
        case "--setups" -> o.setups = checked(v, ProviderSetup::of);
        case "--latency" -> o.latencies = checked(v, LatencyProfile::of);
        case "--partitions" -> o.partitions = (int) positive(a, v);
        case "--batch-keys" -> o.batchKeys = positive(a, v);
        case "--load-batch-keys" -> o.loadBatchKeys = positive(a, v);
        case "--warmup" -> o.warmup = (int) nonNegative(a, v);
        case "--steady" -> o.steady = (int) positive(a, v);
        case "--request-partitions" -> o.requestPartitions = (int) nonNegative(a, v);
        case "--request-size" -> o.requestSize = positive(a, v);
        case "--request-steady" -> o.requestSteady = (int) positive(a, v);
        case "--cores" -> o.cores = (int) positive(a, v);
        case "--heap" -> o.heap = v;
        case "--maintenance-interval" -> o.maintenanceInterval = v;
        case "--strata-conf" -> o.strataConf = keyValues(a, v);
        case "--run-timeout-min" -> o.runTimeoutMin = positive(a, v);
        case "--server-warmup-seconds" -> o.serverWarmupSeconds = (int) nonNegative(a, v);
        case "--out" -> o.out = Paths.get(v);
        case "--work" -> o.work = Paths.get(v);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    if (customized) {
      o.profile += "+custom";
    }
    return o;
  }

  /** The runs of {@code o}, in execution order. */
  static List<RunSpec> plan(Options o) {
    List<RunSpec> runs = new ArrayList<>();
    for (String latency : o.latencies) {
      for (long size : o.sizes) {
        for (String setup : o.setups) {
          runs.add(new RunSpec(setup, "agg", size, latency, o.partitions, o.batchKeys,
              o.loadBatchKeys, o.warmup, o.steady, o.cores, o.maintenanceInterval, "main", 1, o.strataConf));
        }
      }
      for (long size : o.dedupSizes) {
        for (String setup : o.setups) {
          runs.add(new RunSpec(setup, "dedup", size, latency, o.partitions, o.batchKeys,
              o.loadBatchKeys, o.warmup, o.steady, o.cores, o.maintenanceInterval, "main", 1, o.strataConf));
        }
      }
    }
    if (o.requestPartitions > 0) {
      for (String setup : o.setups) {
        runs.add(new RunSpec(setup, "agg", o.requestSize, "none", o.requestPartitions,
            o.batchKeys, o.loadBatchKeys, 1, o.requestSteady, o.cores, o.maintenanceInterval,
            "requests", 1, o.strataConf));
      }
    }
    if (o.oneBatchRuns > 0) {
      // Each run is a driver that starts, processes one batch and stops: as in a new driver
      // JVM, Spark's maintenance never runs (maintenanceInterval 1 h), so whatever bounds the
      // chain happens in the runs themselves.
      for (String setup : o.setups) {
        runs.add(new RunSpec(setup, "agg", o.runsSize, o.latencies.get(0), o.partitions,
            o.batchKeys, o.loadBatchKeys, 1, 3, o.cores, "1h", "runs", o.oneBatchRuns, o.strataConf));
      }
    }
    return runs;
  }

  /** Runs the plan; returns the number of failed runs. */
  static int run(Options o, String commandLine) throws Exception {
    List<RunSpec> runs = plan(o);
    Files.createDirectories(o.work);
    Path out = o.out.toAbsolutePath();
    Files.createDirectories(out.getParent());
    Map<String, Object> meta = meta(o, commandLine);
    List<Object> results = new ArrayList<>();
    int failed = 0;
    System.out.printf("E2EBenchmark: %d runs (%s profile), results to %s%n", runs.size(),
        o.profile, out);
    Path s3Data = o.work.resolve("s3").toAbsolutePath();
    try (S3ProxyServer s3 = S3ProxyServer.start(s3Data, Map.of())) {
      s3.createBucket(E2ERun.BUCKET);
      Map<String, Object> warm = ServerWarmup.run(s3.endpoint(), S3ProxyServer.ACCESS_KEY,
          S3ProxyServer.SECRET_KEY, E2ERun.BUCKET, o.serverWarmupSeconds);
      meta.put("serverWarmup", warm);
      System.out.printf("E2EBenchmark: S3 server warmed up with %s requests in %s ms%n",
          warm.get("requests"), warm.get("ms"));
      int i = 0;
      for (RunSpec spec : runs) {
        i++;
        long t0 = System.nanoTime();
        Map<String, Object> r = fork(o, spec, s3.endpoint(), s3Data);
        long secs = (System.nanoTime() - t0) / 1_000_000_000L;
        if (r.containsKey("error")) {
          failed++;
          System.out.printf("[%d/%d] %s FAILED after %d s: %s%n", i, runs.size(), spec.name(),
              secs, r.get("error"));
        } else {
          System.out.printf("[%d/%d] %s done in %d s: %s%n", i, runs.size(), spec.name(), secs,
              oneLine(r));
        }
        r.put("runSeconds", secs);
        results.add(r);
        meta.put("loadAvgEnd", E2ERun.loadAverage());
        meta.put("finishedAt", Instant.now().toString());
        meta.put("failedRuns", failed);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("meta", meta);
        doc.put("runs", results);
        Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
        JSON.writerWithDefaultPrettyPrinter().writeValue(tmp.toFile(), doc);
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING);
        deletePrefixed(s3Data.resolve(E2ERun.BUCKET), spec.name());
      }
    }
    System.out.printf("E2EBenchmark: %d runs, %d failed; results in %s%n", runs.size(), failed,
        out);
    return failed;
  }

  /** Runs one spec in a child JVM; returns its result, or the spec with an {@code error}. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> fork(Options o, RunSpec spec, URI endpoint, Path s3Data)
      throws IOException, InterruptedException {
    Path dir = o.work.resolve("runs").resolve(spec.name()).toAbsolutePath();
    E2ERun.deleteRecursively(dir);
    Files.createDirectories(dir);
    Path resultFile = dir.resolve("result.json");
    Path log = o.work.resolve("logs").resolve(spec.name() + ".log").toAbsolutePath();
    Files.createDirectories(log.getParent());
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx" + o.heap);
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-opens") || arg.startsWith("-XX:+IgnoreUnrecognized")
          || arg.startsWith("-Djdk.reflect") || arg.startsWith("-Dio.netty")) {
        cmd.add(arg);
      }
    }
    // Extra options for every run's JVM, for profiling (docs/benchmarks.md, "Profiling a run"):
    // e.g. -XX:StartFlightRecording=filename=run.jfr,settings=profile or async-profiler's agent.
    String extra = System.getenv("STRATA_BENCH_CHILD_OPTS");
    if (extra != null && !extra.isBlank()) {
      cmd.addAll(List.of(extra.trim().split("\\s+")));
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(E2ERun.class.getName());
    cmd.add("--spec");
    cmd.add(JSON.writeValueAsString(spec));
    cmd.add("--endpoint");
    cmd.add(endpoint.toString());
    cmd.add("--work");
    cmd.add(dir.resolve("work").toString());
    cmd.add("--out");
    cmd.add(resultFile.toString());
    cmd.add("--s3-data");
    cmd.add(s3Data.toString());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    Thread killer = new Thread(p::destroyForcibly);
    Runtime.getRuntime().addShutdownHook(killer);
    boolean done = p.waitFor(o.runTimeoutMin, TimeUnit.MINUTES);
    Runtime.getRuntime().removeShutdownHook(killer);
    Map<String, Object> r;
    if (!done) {
      p.destroyForcibly().waitFor();
      r = failure(spec, "timed out after " + o.runTimeoutMin + " min; log " + log);
    } else if (p.exitValue() != 0 || !Files.isRegularFile(resultFile)) {
      r = failure(spec, "exit " + p.exitValue() + "; " + lastError(log) + " (log " + log + ")");
    } else {
      r = JSON.readValue(resultFile.toFile(), LinkedHashMap.class);
    }
    E2ERun.deleteRecursively(dir);
    return r;
  }

  private static Map<String, Object> failure(RunSpec spec, String error) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("spec", spec);
    r.put("error", error);
    return r;
  }

  /** The first exception line of a log, for the console and the results file. */
  private static String lastError(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      for (String l : lines) {
        if (l.contains("Exception") || l.contains("Error:")) {
          return l.length() > 300 ? l.substring(0, 300) : l;
        }
      }
      return "no exception in the log";
    } catch (IOException e) {
      return "no log: " + e.getMessage();
    }
  }

  @SuppressWarnings("unchecked")
  private static String oneLine(Map<String, Object> r) {
    Map<String, Object> s = (Map<String, Object>) r.get("summary");
    Map<String, Object> c = (Map<String, Object>) s.get("commitMsPerPartition");
    Map<String, Object> b = (Map<String, Object>) s.get("batchMs");
    Map<String, Object> req = (Map<String, Object>) s.get("stateRequestsPerPartitionCommit");
    Map<String, Object> restore = (Map<String, Object>) s.get("restore");
    return "commit p50 " + c.get("p50") + " ms, batch p50 " + b.get("p50")
        + " ms, state requests/partition/batch " + req.get("total") + ", restore batch "
        + restore.get("batchMs") + " ms";
  }

  private static void deletePrefixed(Path bucketDir, String prefix) throws IOException {
    if (!Files.isDirectory(bucketDir)) {
      return;
    }
    try (var s = Files.list(bucketDir)) {
      for (Path p : s.filter(x -> x.getFileName().toString().startsWith(prefix)).toList()) {
        E2ERun.deleteRecursively(p);
      }
    }
  }

  private static Map<String, Object> meta(Options o, String commandLine) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("profile", o.profile);
    m.put("startedAt", Instant.now().toString());
    m.put("arguments", commandLine);
    m.put("loadAvgStart", E2ERun.loadAverage());
    m.put("cores", Runtime.getRuntime().availableProcessors());
    m.put("memoryBytes", totalMemory());
    m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
        + System.getProperty("os.arch"));
    m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
    m.put("spark", org.apache.spark.package$.MODULE$.SPARK_VERSION());
    m.put("s3Server", "S3Proxy 4.1.0, filesystem store, loopback");
    Map<String, Object> lat = new LinkedHashMap<>();
    for (String l : o.latencies) {
      lat.put(l, LatencyProfile.of(l).asMap());
    }
    m.put("latencyProfilesMs", lat);
    m.put("heap", o.heap);
    m.put("gitCommit", gitCommit());
    return m;
  }

  /** The commit of the working tree, with "+dirty" if it has changes; "unknown" without git. */
  private static String gitCommit() {
    try {
      Process p = new ProcessBuilder("git", "describe", "--always", "--dirty=+dirty", "--abbrev=12")
          .redirectErrorStream(true).start();
      String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return p.waitFor() == 0 ? s : "unknown";
    } catch (IOException | InterruptedException e) {
      return "unknown";
    }
  }

  private static long totalMemory() {
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/meminfo"))) {
        if (l.startsWith("MemTotal:")) {
          return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    return -1;
  }

  private static List<Long> longs(String opt, String v) {
    List<Long> l = new ArrayList<>();
    for (String s : v.split(",")) {
      l.add(positive(opt, s.trim()));
    }
    return l;
  }

  private static List<String> checked(String v, java.util.function.Function<String, ?> check) {
    List<String> l = new ArrayList<>();
    for (String s : v.split(",")) {
      check.apply(s.trim());
      l.add(s.trim());
    }
    return l;
  }

  /** {@code k=v,k=v} as a map; a key without {@code =} is an error naming the option. */
  private static Map<String, String> keyValues(String opt, String v) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String kv : v.split(",")) {
      int eq = kv.indexOf('=');
      if (eq < 1) {
        throw new IllegalArgumentException(opt + " takes key=value pairs separated by commas, "
            + "was " + v);
      }
      m.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
    }
    return m;
  }

  private static long positive(String opt, String v) {
    long n = nonNegative(opt, v);
    if (n < 1) {
      throw new IllegalArgumentException(opt + " must be >= 1, was " + v);
    }
    return n;
  }

  private static long nonNegative(String opt, String v) {
    try {
      long n = Long.parseLong(v.replace("_", ""));
      if (n < 0) {
        throw new IllegalArgumentException(opt + " must be >= 0, was " + v);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(opt + " expects a whole number, was '" + v + "'");
    }
  }
}
