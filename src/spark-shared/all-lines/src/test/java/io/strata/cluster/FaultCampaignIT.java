// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Issue 43, part 9: the fault campaign. A stateful job runs for {@code strata.campaign.minutes}
 * minutes on a Spark standalone cluster (a master and two workers with two cores each, one-core
 * executors as JVMs; {@link StandaloneCluster}) with its checkpoint on S3Proxy behind a {@link
 * S3Relay}, while random faults hit it; every answer it gives is compared with Spark's
 * HDFS-backed provider's answer for the same batch of the same input. Off unless the property is
 * set (the script {@code docs/campaign/fault-campaign.sh} sets it; the table in
 * docs/operations.md, "Fault campaign", is its output).
 *
 * <p>The job is {@link CampaignDriver} (two queries, about one input file per batch; which files
 * each batch read is taken from its checkpoint, {@link CampaignBatches}, and the oracle reads the
 * same files in the same batches), started as a user
 * starts one: its own JVM, on Spark's jars and the runtime jar, with the settings of {@code
 * docker/conf/spark-defaults.conf} plus where S3 is. Faults, one at a time, every 15 to 45 s,
 * each kind once in every eight faults in a random order (seeded by {@code
 * strata.campaign.seed}):
 *
 * <ul>
 *   <li>{@code driver-kill}: SIGKILL of the driver (half the time its local directory is wiped
 *       too), then a new driver: a new application, new executors, a new query run;
 *   <li>{@code executor-kill}: SIGKILL of one executor; the master starts another;
 *   <li>{@code 503-storm}: for 10 to 20 s, half the requests get 503 SlowDown or 500;
 *   <li>{@code slow}: for 10 to 20 s, a fifth of the requests wait 1.5 s;
 *   <li>{@code reset}: for 10 to 20 s, a tenth of the connections are reset;
 *   <li>{@code lost-writes}: for 20 s, 30% of the PUTs are lost in flight (the connection is
 *       reset before the server applies them; the writer sees an error), and every PUT of a
 *       published snapshot ({@code b/}) is answered 200 and then deleted (an object loads and
 *       collection must do without). A PUT that S3 acknowledged and then lost, which S3 never
 *       does, of an object a manifest names is found at the next load, which fails naming the
 *       object ({@code SparkS3FaultsIT}); no store survives that, so it is not injected here;
 *   <li>{@code dropped-answers}: for 10 to 20 s, a fifth of the PUTs are applied but their
 *       answer never comes (the ambiguous write);
 *   <li>{@code zombie}: the driver is frozen (SIGSTOP) mid-run, a new driver takes over and
 *       commits, then the old one is thawed (SIGCONT) and left 20 s to do what a zombie does
 *       before it is killed.
 * </ul>
 *
 * <p>A driver that exits on its own (a query failed) is started again and counted. At the end
 * the faults stop, the job finishes every file, stops, and a final offline garbage collection
 * ({@code strata gc --apply}, grace period 1 minute, once the last object is older) runs. Then:
 * every answer any run gave (every batch, every re-run, the zombie's) against the oracle's
 * (wrong answers), batches without an answer, objects beyond the collection bound per store in
 * samples every minute ({@link CheckpointCensus}, slack {@value #ROUND_SLACK} versions),
 * orphans after the final collection (slack 0), {@code strata verify}, and the drift of
 * resident memory, threads and open files of the longest-lived driver and executor (sampled
 * from two minutes of age on; the faults replace both every few minutes).
 */
@EnabledIfSystemProperty(named = "strata.campaign.minutes", matches = "\\d+")
class FaultCampaignIT {
  private static final String BUCKET = "strata-campaign";
  private static final String PREFIX = "campaign";
  private static final Path OUT = Path.of("target", "fault-campaign").toAbsolutePath();
  private static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  private static final int RETAIN = 100; // Spark's minBatchesToRetain default
  /**
   * Versions a store may be past its last round: a round is due once an instance committed
   * Spark's {@code minVersionsToDelete} (30) versions since its last one, and runs at the next
   * maintenance (every 60 s, Spark's default), by when this job commits up to about 15 more.
   */
  private static final int ROUND_SLACK = 45;
  private static final long GRACE_MILLIS = 3_600_000; // Strata's gc.gracePeriod default

  private static final List<String> QUERIES =
      List.of(CampaignDriver.DEDUP, CampaignDriver.WINDOWS);

  enum Kind { DRIVER_KILL, EXECUTOR_KILL, STORM_503, SLOW, RESET, LOST_WRITES, DROPPED_ANSWERS,
    ZOMBIE }

  private final ClusterSupport support = new ClusterSupport("campaign", OUT, 2);
  private final Map<Kind, AtomicInteger> injected = new EnumMap<>(Kind.class);
  private final AtomicInteger driversStarted = new AtomicInteger();
  private final List<String> failures = new ArrayList<>();
  private final Map<Long, Gauge[]> gauges = new ConcurrentHashMap<>(); // pid -> first, last
  private final Map<Long, String> gaugeNames = new ConcurrentHashMap<>();
  private final AtomicLong maxBeyond = new AtomicLong();
  private final AtomicInteger samples = new AtomicInteger();
  private final List<String> beyondSeen = new ArrayList<>();
  private final Object driverLock = new Object();
  private ChildJvm driver;
  private boolean driverKilledOnPurpose;
  private volatile boolean finishing;
  /** The oracle's answers per "query/batch"; its lock guards {@link #oracleSpark} too. */
  private final Map<String, List<String>> oracle = new ConcurrentHashMap<>();
  private SparkSession oracleSpark;
  /** Per query: how many batches are in the oracle's input (one file per job batch). */
  private final Map<String, Integer> oracleStaged = new ConcurrentHashMap<>();
  private final Map<String, Long> oracleStagedMillis = new ConcurrentHashMap<>();
  private CampaignBatches batches;
  private volatile String recordError;
  private volatile String lastSample = "none";

  private Path settings;
  private String driverClassPath;
  private CampaignInput input;
  private Path outputs;
  private Path stopFile;
  private S3Relay proxy;
  private StandaloneCluster cluster;

  /** One sample of a process: resident set (KiB), threads, open file descriptors. */
  record Gauge(long atMillis, long rssKib, int threads, int fds) { }

  @Test
  void aStatefulJobUnderRandomFaultsAnswersAsSparksOwnProviderDoes() throws Exception {
    long minutes = Long.getLong("strata.campaign.minutes");
    long seed = Long.getLong("strata.campaign.seed", 43L);
    Random random = new Random(seed);
    for (Kind k : Kind.values()) {
      injected.put(k, new AtomicInteger());
    }
    SparkHome.deleteRecursively(OUT);
    Files.createDirectories(OUT);
    SparkHome home = SparkHome.assemble(OUT.resolve("spark-home"));
    Path scratch = Files.createTempDirectory("strata-campaign-");
    Path appJar = ClusterSupport.appJar();
    try (S3ProxyServer s3 = S3ProxyServer.start(scratch.resolve("s3"), Map.of())) {
      s3.createBucket(BUCKET);
      proxy = new S3Relay(s3.endpoint(),
          (b, k) -> s3.client().deleteObject(d -> d.bucket(b).key(k)));
      cluster = StandaloneCluster.start(home, OUT.resolve("cluster"), scratch.resolve("cluster"),
          2, 2, ClusterSupport.CLUSTER_START);
      cluster.awaitWorkers(ClusterSupport.CLUSTER_START);
      input = new CampaignInput(scratch.resolve("input"));
      outputs = Files.createDirectories(OUT.resolve("answers"));
      stopFile = OUT.resolve("stop");
      settings = writeSettings(appJar, scratch.resolve("driver-local"));
      driverClassPath = driverClassPath(home, appJar);
      CheckpointCensus census = new CheckpointCensus(s3.dataDir(), BUCKET, PREFIX);
      batches = new CampaignBatches(s3.dataDir().resolve(BUCKET).resolve(PREFIX), QUERIES);

      long start = System.currentTimeMillis();
      long deadline = start + TimeUnit.MINUTES.toMillis(minutes);
      input.writeNext();
      startDriver();
      Thread feeder = daemon("campaign-input", () -> feed(deadline));
      Thread sampler = daemon("campaign-sampler", () -> sample(census));
      Thread monitor = daemon("campaign-monitor", this::monitor);
      Thread recorder = daemon("campaign-batches", () -> {
        try {
          while (!finishing) {
            recordBatches();
            Thread.sleep(10_000);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      Thread oracleThread = daemon("campaign-oracle", () -> {
        try {
          while (!finishing) {
            for (int i = 0; i < 120 && !finishing; i++) {
              Thread.sleep(1_000);
            }
            if (!finishing) {
              oracleRound(scratch.resolve("oracle"));
            }
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      awaitAnswer(0, Duration.ofMinutes(5));
      support.log("first batch answered; faults begin (seed " + seed + ")");
      List<Kind> deck = new ArrayList<>();
      while (System.currentTimeMillis() < deadline) {
        Thread.sleep(15_000 + random.nextInt(30_000));
        if (System.currentTimeMillis() >= deadline) {
          break;
        }
        if (deck.isEmpty()) { // every kind once per round of the deck, in a random order
          deck.addAll(List.of(Kind.values()));
          java.util.Collections.shuffle(deck, random);
        }
        inject(deck.remove(0), random);
      }
      proxy.heal();
      feeder.join();
      int lastFile = input.files() - 1;
      support.log("faults over; waiting for the job to answer the batches of file " + lastFile);
      Map<String, Long> last = awaitRead(lastFile, Duration.ofMinutes(20));
      finishing = true;
      recorder.join();
      StringBuilder targets = new StringBuilder();
      last.forEach((q, b) -> targets.append(q).append('=').append(b).append('\n'));
      Path stopTmp = OUT.resolve(".stop.tmp");
      Files.writeString(stopTmp, targets, StandardCharsets.UTF_8);
      Files.move(stopTmp, stopFile, StandardCopyOption.ATOMIC_MOVE);
      ChildJvm d;
      synchronized (driverLock) {
        d = driver;
      }
      int code = d.await(300);
      support.log("the job stopped after batches " + last + " (exit " + code + ")");
      monitor.interrupt();
      sampler.interrupt();
      sampler.join();
      cluster.close();
      sampleOnce(census); // the job's own collection, as it left the checkpoint

      // The final, offline collection, once every object is older than its grace period.
      Path toolConf = writeToolConf(s3);
      Thread.sleep(70_000);
      List<String> toolOut = new ArrayList<>();
      int verifyProblems = 0;
      for (String q : QUERIES) {
        String ckpt = "s3://" + BUCKET + "/" + PREFIX + "/" + q;
        toolOut.add(tool(toolConf, "gc", ckpt, "--apply", "--force", "--conf",
            "spark.sql.streaming.stateStore.strata.gc.gracePeriod=1min"));
        String v = tool(toolConf, "verify", ckpt);
        toolOut.add(v);
        if (!v.contains("OK: no problems")) {
          verifyProblems++;
        }
      }
      List<String> orphans = new ArrayList<>();
      int stores = 0;
      // The offline collection keeps back to the oldest batch in Spark's logs (CheckpointScan
      // .retention: 101 versions once Spark purged by minBatchesToRetain 100), one version more
      // than the job's rounds; what that version names is not an orphan (campaign run 5 counted
      // version 441's chain, 11 objects, in one store before).
      int finalRetain = RETAIN;
      for (String q : QUERIES) {
        finalRetain = Math.max(finalRetain, toolRetention(s3.dataDir(), q));
      }
      for (CheckpointCensus.Store st : census.take(finalRetain, 0, 60_000,
          System.currentTimeMillis())) {
        stores++;
        st.beyond().forEach(o -> orphans.add(st.root() + "/" + o));
      }

      // The oracle: Spark's HDFS-backed provider over the same files in the same batches.
      oracleThread.join(); // its round in progress ends first
      recordBatches();
      oracleRound(scratch.resolve("oracle"));
      stopOracle();
      Comparison c = compare(oracle, lastFile);

      long end = System.currentTimeMillis();
      String report = report(minutes, seed, start, end, lastFile, c, stores, orphans,
          verifyProblems);
      Files.writeString(OUT.resolve("report.md"), report + "\n## Tool output\n\n```\n"
          + String.join("\n", toolOut) + "\n```\n", StandardCharsets.UTF_8);
      System.out.println(report);
      assertEquals(List.of(), c.wrong(), "every answer equals the oracle's");
      assertEquals(List.of(), c.missing(), "every batch has an answer");
      assertEquals(null, recordError, "every batch's files are known");
      assertEquals(0, maxBeyond.get(), "no object beyond the bound: " + beyondSeen);
      assertEquals(List.of(), orphans, "no orphan after the final collection");
      assertEquals(0, verifyProblems, "strata verify finds no problem: " + toolOut);
    } catch (Throwable t) {
      throw support.withLogs(t);
    } finally {
      finishing = true;
      synchronized (driverLock) {
        if (driver != null) {
          driver.close();
        }
      }
      if (cluster != null) {
        cluster.close();
      }
      stopOracle();
      if (proxy != null) {
        proxy.close();
      }
      try {
        SparkHome.deleteRecursively(scratch);
      } catch (IOException stillBeingWritten) {
        // best effort
      }
    }
  }

  // ---- the job -------------------------------------------------------------------------------

  private Path writeSettings(Path appJar, Path driverLocal) throws IOException {
    Map<String, String> s = new LinkedHashMap<>(ClusterSupport.sparkDefaults());
    s.put("spark.master", cluster.masterUrl());
    s.put("spark.app.name", "strata-fault-campaign");
    s.put("spark.jars", appJar.toString());
    s.put("spark.driver.host", "127.0.0.1");
    s.put("spark.driver.bindAddress", "127.0.0.1");
    s.put("spark.ui.enabled", "false");
    s.put("spark.executor.cores", "1");
    s.put("spark.cores.max", "2");
    s.put("spark.executor.memory", "512m");
    s.put("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1");
    s.put("spark.sql.shuffle.partitions", Integer.toString(ClusterSupport.SHUFFLE_PARTITIONS));
    // One batch per input file in every run and in the oracle: no batch without data.
    s.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.put(ClusterSupport.STRATA + "s3.endpoint", proxy.endpoint().toString());
    s.put(ClusterSupport.STRATA + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
    s.put(ClusterSupport.STRATA + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
    s.put("spark.local.dir", driverLocal.toString());
    Path f = OUT.resolve("driver.properties");
    StringBuilder sb = new StringBuilder();
    s.forEach((k, v) -> sb.append(k).append('=').append(v.replace("\\", "\\\\")).append('\n'));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    return f;
  }

  /**
   * Spark's jars ({@code $SPARK_HOME/jars}), the runtime jar, and a directory holding only the
   * driver's own classes: what a user's driver has.
   */
  private static String driverClassPath(SparkHome home, Path appJar) throws IOException {
    Path classes = OUT.resolve("driver-classes");
    Path pkg = Files.createDirectories(classes.resolve("io/strata/cluster"));
    Path from = Path.of(CampaignDriver.class.getResource("CampaignDriver.class").getPath())
        .getParent();
    try (Stream<Path> s = Files.list(from)) {
      for (Path p : s.filter(p -> p.getFileName().toString().startsWith("CampaignDriver"))
          .toList()) {
        Files.copy(p, pkg.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    return String.join(java.io.File.pathSeparator, home.dir().resolve("jars") + "/*",
        appJar.toString(), classes.toString());
  }

  /** Starts a new driver (the caller holds no lock); it becomes the current one. */
  private ChildJvm startDriver() throws IOException {
    int n = driversStarted.incrementAndGet();
    String tag = "d" + n;
    Path log = Files.createDirectories(OUT.resolve("drivers")).resolve(tag + ".log");
    ChildJvm d = ChildJvm.start(driverClassPath, List.of("-Xmx768m"), Map.of(),
        CampaignDriver.class.getName(), log, settings.toString(), input.dir().toString(),
        outputs.toString(), "s3://" + BUCKET + "/" + PREFIX, stopFile.toString(), tag);
    synchronized (driverLock) {
      driver = d;
      driverKilledOnPurpose = false;
    }
    gaugeNames.put(d.process.pid(), "driver " + tag);
    support.log("driver " + tag + " started (pid " + d.process.pid() + ")");
    return d;
  }

  /** Restarts the current driver whenever it exits on its own (a failed query), and counts it. */
  private void monitor() {
    try {
      while (!finishing) {
        Thread.sleep(1_000);
        ChildJvm d;
        synchronized (driverLock) {
          d = driver;
          if (driverKilledOnPurpose || d.process.isAlive()) {
            continue;
          }
        }
        if (finishing) {
          return;
        }
        String why = lastError(d.log);
        synchronized (failures) {
          failures.add("driver exited " + d.process.exitValue() + ": " + why);
        }
        support.log("driver exited on its own (" + d.process.exitValue() + "): " + why);
        Thread.sleep(3_000);
        startDriver();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String lastError(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      for (String marker : List.of("stopped: ", "Exception:")) {
        for (int i = lines.size() - 1; i >= 0; i--) {
          String l = lines.get(i);
          if (l.contains(marker)) {
            return l.length() > 400 ? l.substring(0, 400) + "..." : l;
          }
        }
      }
      return "(no error in " + log + ")";
    } catch (IOException e) {
      return "(cannot read " + log + ")";
    }
  }

  /** Adds a file every 5 s while at most 4 files wait, until the deadline. */
  private void feed(long deadline) {
    try {
      while (System.currentTimeMillis() < deadline) {
        Thread.sleep(5_000);
        if (input.files() - 1 - newestAnswer() < 4) {
          input.writeNext();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The newest batch both queries answered, -1 if none. */
  private long newestAnswer() {
    long min = Long.MAX_VALUE;
    for (String q : QUERIES) {
      long newest = -1;
      Path dir = outputs.resolve(q);
      if (Files.isDirectory(dir)) {
        try (Stream<Path> s = Files.list(dir)) {
          newest = s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith("."))
              .mapToLong(n -> Long.parseLong(n.substring(0, 8))).max().orElse(-1);
        } catch (IOException e) {
          newest = -1;
        }
      }
      min = Math.min(min, newest);
    }
    return min;
  }

  /** Records the job's newest batches' files; an error is kept for the end, not thrown. */
  private void recordBatches() {
    try {
      batches.record();
    } catch (RuntimeException e) {
      if (recordError == null) {
        recordError = e.toString();
      }
      support.log("recording batches failed: " + e);
    }
  }

  /** Whether query {@code q} has an answer (from any run) for batch {@code b}. */
  private boolean answered(String q, long b) {
    String prefix = String.format("%08d-", b);
    Path dir = outputs.resolve(q);
    if (!Files.isDirectory(dir)) {
      return false;
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.anyMatch(p -> p.getFileName().toString().startsWith(prefix));
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Waits until each query committed and answered the batch that read file {@code lastFile};
   * returns that batch per query.
   */
  private Map<String, Long> awaitRead(int lastFile, Duration timeout)
      throws InterruptedException {
    long until = System.nanoTime() + timeout.toNanos();
    while (true) {
      Map<String, Long> last = new TreeMap<>();
      for (String q : QUERIES) {
        long b = batches.batchOf(q, lastFile);
        if (b >= 0 && answered(q, b)) {
          last.put(q, b);
        }
      }
      if (last.size() == QUERIES.size()) {
        return last;
      }
      if (System.nanoTime() > until) {
        throw new AssertionError("file " + lastFile + " not read and answered by every query "
            + "within " + timeout + "; batches recorded " + QUERIES.stream()
            .map(q -> q + " " + batches.count(q)).toList() + "; failures " + failures);
      }
      Thread.sleep(1_000);
    }
  }

  private void awaitAnswer(long batch, Duration timeout) throws InterruptedException {
    long until = System.nanoTime() + timeout.toNanos();
    while (newestAnswer() < batch) {
      if (System.nanoTime() > until) {
        throw new AssertionError("no answer of batch " + batch + " within " + timeout
            + "; newest " + newestAnswer() + "; failures " + failures);
      }
      Thread.sleep(1_000);
    }
  }

  // ---- faults --------------------------------------------------------------------------------

  private void inject(Kind k, Random random) throws Exception {
    injected.get(k).incrementAndGet();
    int seconds = 10 + random.nextInt(11);
    if (k == Kind.LOST_WRITES) {
      seconds = 20;
    }
    support.log("fault " + k + (k.ordinal() >= Kind.STORM_503.ordinal()
        && k != Kind.ZOMBIE ? " for " + seconds + " s" : ""));
    switch (k) {
      case DRIVER_KILL -> {
        ChildJvm d;
        synchronized (driverLock) {
          d = driver;
          driverKilledOnPurpose = true;
        }
        d.kill();
        if (random.nextBoolean()) {
          SparkHome.deleteRecursively(Path.of(settingValue("spark.local.dir")));
        }
        startDriver();
      }
      case EXECUTOR_KILL -> {
        List<StandaloneCluster.Executor> ex = cluster.executors();
        if (!ex.isEmpty()) {
          StandaloneCluster.Executor victim = ex.get(random.nextInt(ex.size()));
          victim.process().destroyForcibly();
          victim.process().onExit().get(30, TimeUnit.SECONDS);
        }
      }
      case STORM_503 -> window(seconds, S3Relay.randomShare(0.5, random.nextLong(),
          Fault.SLOW_DOWN, Fault.INTERNAL_ERROR));
      case SLOW -> {
        proxy.delayMillis = 1_500;
        window(seconds, S3Relay.randomShare(0.2, random.nextLong(), Fault.DELAY));
      }
      case RESET -> window(seconds, S3Relay.randomShare(0.1, random.nextLong(), Fault.RESET));
      case LOST_WRITES -> {
        java.util.function.Function<S3Relay.Request, Fault> inFlight =
            S3Relay.randomShare(0.3, random.nextLong(), Fault.RESET);
        // A published snapshot's object now holds the base files its next commit names
        // (format 2): S3 never loses an acknowledged write, so only resets in flight here (a
        // lost .bsm was a lost publication before; it would now be lost data).
        window(seconds, r -> !r.isPut() ? Fault.NONE : inFlight.apply(r));
      }
      case DROPPED_ANSWERS -> {
        proxy.holdMillis = 0;
        java.util.function.Function<S3Relay.Request, Fault> share =
            S3Relay.randomShare(0.2, random.nextLong(), Fault.APPLY_THEN_DROP);
        window(seconds, r -> r.isPut() ? share.apply(r) : Fault.NONE);
      }
      case ZOMBIE -> zombie();
      default -> throw new IllegalStateException(k.toString());
    }
  }

  private void window(int seconds, java.util.function.Function<S3Relay.Request, Fault> rule)
      throws InterruptedException {
    proxy.rule(rule);
    try {
      Thread.sleep(seconds * 1_000L);
    } finally {
      proxy.heal();
    }
  }

  /** Freezes the driver, lets a new one take over and commit, then thaws the old one. */
  private void zombie() throws Exception {
    ChildJvm old;
    synchronized (driverLock) {
      old = driver;
      driverKilledOnPurpose = true; // the monitor leaves it alone from here on
    }
    long before = newestAnswer();
    signal("STOP", old.process.pid());
    try {
      Thread.sleep(3_000);
      startDriver();
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (newestAnswer() <= before && System.nanoTime() < until) {
        Thread.sleep(1_000);
      }
    } finally {
      signal("CONT", old.process.pid());
    }
    support.log("zombie: the new driver answered batch " + newestAnswer() + " (the frozen one "
        + "had answered " + before + "); thawed the old one for 20 s");
    Thread.sleep(20_000);
    String fate = old.process.isAlive() ? "still running; killed" : "exited "
        + old.process.exitValue() + ": " + lastError(old.log);
    synchronized (failures) {
      failures.add("zombie " + fate);
    }
    old.kill();
  }

  private static void signal(String sig, long pid) throws Exception {
    int code = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start()
        .waitFor();
    assertEquals(0, code, "kill -" + sig + " " + pid);
  }

  private String settingValue(String key) throws IOException {
    for (String l : Files.readAllLines(settings, StandardCharsets.UTF_8)) {
      if (l.startsWith(key + "=")) {
        return l.substring(key.length() + 1);
      }
    }
    throw new IllegalStateException(key);
  }

  // ---- samples -------------------------------------------------------------------------------

  private void sample(CheckpointCensus census) {
    try {
      while (!Thread.currentThread().isInterrupted()) {
        Thread.sleep(60_000);
        sampleOnce(census);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      support.log("sample failed: " + e);
    }
  }

  private void sampleOnce(CheckpointCensus census) throws IOException {
    long beyond = 0;
    int objects = 0;
    long newest = -1;
    int stores = 0;
    for (CheckpointCensus.Store st : census.take(RETAIN, ROUND_SLACK, GRACE_MILLIS,
        System.currentTimeMillis())) {
      stores++;
      beyond += st.beyond().size();
      objects += st.objects();
      newest = Math.max(newest, st.newest());
      if (!st.beyond().isEmpty()) {
        synchronized (beyondSeen) {
          beyondSeen.add(st.root() + ": " + st.beyond());
        }
      }
    }
    maxBeyond.accumulateAndGet(beyond, Math::max);
    samples.incrementAndGet();
    lastSample = newest + " newest version, " + objects + " state objects in "
        + stores + " stores";
    List<ProcessHandle> procs = new ArrayList<>();
    synchronized (driverLock) {
      if (driver != null && driver.process.isAlive()) {
        procs.add(driver.process.toHandle());
      }
    }
    if (cluster != null) {
      for (StandaloneCluster.Executor e : cluster.executors()) {
        procs.add(e.process());
        gaugeNames.putIfAbsent(e.process().pid(), "executor " + e.id());
      }
    }
    StringBuilder g = new StringBuilder();
    for (ProcessHandle p : procs) {
      // From two minutes of age on: a JVM's start (class loading, JIT) is not drift.
      if (p.info().startInstant().map(t -> t.isAfter(java.time.Instant.now()
          .minusSeconds(120))).orElse(true)) {
        continue;
      }
      Gauge now = gauge(p.pid());
      if (now == null) {
        continue;
      }
      gauges.merge(p.pid(), new Gauge[] {now, now}, (a, b) -> new Gauge[] {a[0], b[1]});
      g.append(String.format(" [%s: %d MiB, %d threads, %d fds]", gaugeNames.get(p.pid()),
          now.rssKib() / 1024, now.threads(), now.fds()));
    }
    support.log("sample: newest version " + newest + ", " + objects + " state objects, "
        + beyond + " beyond the bound;" + g);
  }

  /** /proc of {@code pid}: VmRSS, Threads, entries of fd/; null if it is gone. */
  private static Gauge gauge(long pid) {
    try {
      long rss = 0;
      int threads = 0;
      for (String l : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (l.startsWith("VmRSS:")) {
          rss = Long.parseLong(l.replaceAll("[^0-9]", ""));
        } else if (l.startsWith("Threads:")) {
          threads = Integer.parseInt(l.replaceAll("[^0-9]", ""));
        }
      }
      int fds;
      try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
        fds = (int) s.count();
      }
      return new Gauge(System.currentTimeMillis(), rss, threads, fds);
    } catch (IOException | RuntimeException gone) {
      return null;
    }
  }

  // ---- the oracle and the comparison ---------------------------------------------------------

  /**
   * One round of the oracle: Spark's HDFS-backed provider runs both queries ({@code
   * Trigger.AvailableNow}, one file per batch) over a directory per query holding, for each
   * batch of the job recorded so far ({@link CampaignBatches}), one file with the contents of the
   * input files that batch read, so the oracle's batch {@code b} reads what the job's did;
   * it resumes from its own local checkpoint and adds its answers per "query/batch" to {@link
   * #oracle}. Rounds run every two minutes beside the job (so its cost overlaps the campaign),
   * and once at the end.
   */
  private void oracleRound(Path dir) {
    synchronized (oracle) {
      try {
        stageOracleInput(dir);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      if (oracleSpark == null) {
        oracleSpark = SparkSession.builder().master("local[2]")
            .appName("strata-campaign-oracle")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", ClusterSupport.SHUFFLE_PARTITIONS)
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
            .config("spark.sql.streaming.stateStore.providerClass", HDFS)
            .config("spark.local.dir", dir.resolve("local").toString())
            .getOrCreate();
        oracleSpark.sparkContext().setLogLevel("WARN");
      }
      for (String q : QUERIES) {
        Dataset<Row> events = oracleSpark.readStream().schema(CampaignDriver.SCHEMA)
            .option("maxFilesPerTrigger", 1).json(dir.resolve("input").resolve(q).toString());
        VoidFunction2<Dataset<Row>, Long> sink = (batch, id) ->
            oracle.put(q + "/" + id, CampaignDriver.lines(batch));
        StreamingQuery sq;
        try {
          sq = CampaignDriver.query(q, events).writeStream()
              .outputMode(CampaignDriver.DEDUP.equals(q) ? "complete" : "update")
              .trigger(Trigger.AvailableNow())
              .option("checkpointLocation", dir.resolve(q).toString())
              .foreachBatch(sink).start();
          sq.awaitTermination();
        } catch (Exception e) {
          throw new AssertionError("the oracle failed", e);
        }
        if (sq.exception().isDefined()) {
          throw new AssertionError("the oracle failed", sq.exception().get());
        }
      }
    }
  }

  /** Adds to the oracle's input one file per job batch recorded since the last call. */
  private void stageOracleInput(Path dir) throws IOException {
    for (String q : QUERIES) {
      Path in = Files.createDirectories(dir.resolve("input").resolve(q));
      Path staging = Files.createDirectories(dir.resolve("staging"));
      int staged = oracleStaged.getOrDefault(q, 0);
      for (List<Integer> files; (files = batches.files(q, staged)) != null; staged++) {
        Path tmp = staging.resolve(String.format("batch-%08d.json", staged));
        try (var out = Files.newOutputStream(tmp)) {
          for (int f : files) {
            Files.copy(input.file(f), out);
          }
        }
        // Modification times one second apart in batch order: the file source takes the
        // oldest unseen file first (as CampaignInput does for the job).
        long last = oracleStagedMillis.getOrDefault(q, 0L);
        long mtime = Math.max(System.currentTimeMillis(), last + 1_000);
        oracleStagedMillis.put(q, mtime);
        Files.setLastModifiedTime(tmp, java.nio.file.attribute.FileTime.fromMillis(mtime));
        Files.move(tmp, in.resolve(tmp.getFileName()), StandardCopyOption.ATOMIC_MOVE);
      }
      oracleStaged.put(q, staged);
    }
  }

  private void stopOracle() {
    synchronized (oracle) {
      if (oracleSpark != null) {
        oracleSpark.stop();
        oracleSpark = null;
        SparkSession.clearActiveSession();
        SparkSession.clearDefaultSession();
      }
    }
  }

  record Comparison(int answers, int reRuns, List<String> wrong, List<String> missing,
      Map<String, Integer> answersPerDriver) { }

  /**
   * Every answer against the oracle's for its batch; missing: a batch of the job without an
   * answer, or an input file no batch read (or read twice, or out of order).
   */
  private Comparison compare(Map<String, List<String>> oracle, int lastFile) throws IOException {
    List<String> wrong = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    Map<String, Integer> perDriver = new TreeMap<>();
    int answers = 0;
    int reRuns = 0;
    for (String q : QUERIES) {
      Map<Long, Integer> seen = new TreeMap<>();
      try (Stream<Path> s = Files.list(outputs.resolve(q))) {
        for (Path p : s.filter(p -> !p.getFileName().toString().startsWith(".")).toList()) {
          String name = p.getFileName().toString();
          long batch = Long.parseLong(name.substring(0, 8));
          String tag = name.substring(9).replaceAll("[-.].*", "");
          answers++;
          perDriver.merge(tag, 1, Integer::sum);
          if (seen.merge(batch, 1, Integer::sum) > 1) {
            reRuns++;
          }
          List<String> expected = oracle.get(q + "/" + batch);
          List<String> got = Files.readAllLines(p, StandardCharsets.UTF_8);
          if (expected == null || !expected.equals(got)) {
            wrong.add(q + " batch " + batch + " by " + tag + ": " + got.size() + " rows, the "
                + "oracle's " + (expected == null ? "none" : expected.size()));
          }
        }
      }
      for (long b = 0; b < batches.count(q); b++) {
        if (!seen.containsKey(b)) {
          missing.add(q + " batch " + b);
        }
      }
      missing.addAll(batches.problems(q, lastFile));
    }
    return new Comparison(answers, reRuns, wrong, missing, perDriver);
  }

  // ---- the tool and the report ---------------------------------------------------------------

  private static Path writeToolConf(S3ProxyServer s3) throws IOException {
    Path f = OUT.resolve("tool.conf");
    Files.writeString(f, String.join("\n",
        ClusterSupport.STRATA + "s3.endpoint " + s3.endpoint(),
        ClusterSupport.STRATA + "s3.accessKeyId " + S3ProxyServer.ACCESS_KEY,
        ClusterSupport.STRATA + "s3.secretAccessKey " + S3ProxyServer.SECRET_KEY,
        ClusterSupport.STRATA + "s3.pathStyleAccess true",
        ClusterSupport.STRATA + "s3.region us-east-1", ""), StandardCharsets.UTF_8);
    return f;
  }

  private static String tool(Path conf, String... args) throws Exception {
    Path jar = Path.of(System.getProperty("strata.tools.jar"));
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
        "-jar", jar.toString()));
    cmd.addAll(List.of(args));
    cmd.add("--conf-file");
    cmd.add(conf.toString());
    Path out = Files.createTempFile(OUT, "tool", ".txt");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile())
        .start();
    assertTrue(p.waitFor(5, TimeUnit.MINUTES), "strata " + String.join(" ", args));
    String text = Files.readString(out, StandardCharsets.UTF_8);
    return "$ strata " + String.join(" ", args) + "   (exit " + p.exitValue() + ")\n"
        + (text.length() > 4000 ? text.substring(0, 4000) + "\n..." : text);
  }

  /**
   * The retention {@code strata gc} collects query {@code q} by: {@link #RETAIN}, or back to the
   * oldest batch in its offset or commit log from the version a restart loads (the newest
   * committed batch + 1), whichever is more.
   */
  private static int toolRetention(Path dataDir, String q) throws IOException {
    long oldest = Long.MAX_VALUE;
    long newestCommit = -1;
    for (String log : List.of("offsets", "commits")) {
      Path dir = dataDir.resolve(BUCKET).resolve(PREFIX).resolve(q).resolve(log);
      if (!Files.isDirectory(dir)) {
        continue;
      }
      try (java.util.stream.Stream<Path> files = Files.list(dir)) {
        for (Path f : files.toList()) {
          String name = f.getFileName().toString();
          if (name.matches("[0-9]+")) {
            long b = Long.parseLong(name);
            oldest = Math.min(oldest, b);
            if (log.equals("commits")) {
              newestCommit = Math.max(newestCommit, b);
            }
          }
        }
      }
    }
    if (newestCommit < 0 || oldest == Long.MAX_VALUE) {
      return RETAIN;
    }
    return (int) Math.max(RETAIN, newestCommit + 1 - oldest);
  }

  private String report(long minutes, long seed, long start, long end, int lastFile, Comparison c,
      int stores, List<String> orphans, int verifyProblems) {
    StringBuilder r = new StringBuilder();
    r.append(String.format("# Fault campaign: %d min of faults (seed %d), %.1f min in all%n%n",
        minutes, seed, (end - start) / 60_000.0));
    r.append("| figure | value |\n|---|---|\n");
    injected.forEach((k, n) -> r.append("| faults: ").append(k.name().toLowerCase()
        .replace('_', '-')).append(" | ").append(n.get()).append(" |\n"));
    StringBuilder faulted = new StringBuilder();
    for (Fault f : Fault.values()) {
      if (f != Fault.NONE && proxy.injected(f) > 0) {
        faulted.append(faulted.length() == 0 ? "" : ", ").append(f.name().toLowerCase()
            .replace('_', '-')).append(' ').append(proxy.injected(f));
      }
    }
    r.append("| requests the relay faulted, by answer | ").append(faulted).append(" |\n");
    r.append("| drivers started (restarts + 1) | ").append(driversStarted.get()).append(" |\n");
    synchronized (failures) {
      r.append("| drivers that exited on their own, and zombies | ").append(failures.size())
          .append(" |\n");
    }
    r.append("| input files; batches per query (of them reading two files or more) | ")
        .append(lastFile + 1).append("; ").append(String.join(", ", QUERIES.stream()
            .map(q -> q + " " + batches.count(q) + " (" + batches.multiFile(q) + ")").toList()))
        .append(" |\n");
    r.append("| answers compared (every run's, re-runs included) | ").append(c.answers())
        .append(" (").append(c.reRuns()).append(" re-runs) |\n");
    r.append("| the checkpoint as the job left it | ").append(lastSample).append(" |\n");
    r.append("| wrong answers | ").append(c.wrong().size()).append(" |\n");
    r.append("| batches without an answer | ").append(c.missing().size()).append(" |\n");
    r.append("| objects beyond the bound (most in one of ").append(samples.get())
        .append(" samples) | ").append(maxBeyond.get()).append(" |\n");
    r.append("| orphans after the final collection (").append(stores).append(" stores) | ")
        .append(orphans.size()).append(" |\n");
    r.append("| `strata verify` problems | ").append(verifyProblems).append(" |\n");
    r.append(drift("driver"));
    r.append(drift("executor"));
    r.append("\nFailures and zombies:\n");
    synchronized (failures) {
      failures.forEach(f -> r.append("- ").append(f).append('\n'));
    }
    if (!c.wrong().isEmpty() || !c.missing().isEmpty() || !orphans.isEmpty()) {
      r.append("\nWrong: ").append(c.wrong()).append("\nMissing: ").append(c.missing())
          .append("\nOrphans: ").append(orphans).append('\n');
    }
    return r.toString();
  }

  /** RSS, threads and fds from the first to the last sample of the longest-lived process. */
  private String drift(String kind) {
    long best = -1;
    Gauge[] g = null;
    for (Map.Entry<Long, Gauge[]> e : gauges.entrySet()) {
      if (!gaugeNames.getOrDefault(e.getKey(), "").startsWith(kind)) {
        continue;
      }
      long lived = e.getValue()[1].atMillis() - e.getValue()[0].atMillis();
      if (lived > best) {
        best = lived;
        g = e.getValue();
      }
    }
    if (g == null) {
      return "| " + kind + " drift | no sample |\n";
    }
    return String.format("| %s drift, longest-lived (%.0f min sampled) | RSS %d to %d MiB, "
        + "threads %d to %d, open files %d to %d |%n", kind, best / 60_000.0,
        g[0].rssKib() / 1024, g[1].rssKib() / 1024, g[0].threads(), g[1].threads(),
        g[0].fds(), g[1].fds());
  }

  private Thread daemon(String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
