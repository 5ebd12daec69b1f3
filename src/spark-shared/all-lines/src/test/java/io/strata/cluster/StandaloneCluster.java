// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.launcher.JavaModuleOptions;

/**
 * A Spark standalone cluster on 127.0.0.1: one master and {@code workers} workers, each a separate
 * JVM started from an assembled {@link SparkHome} (the master's and workers' main classes, as
 * Spark's {@code sbin} scripts run them). Each worker offers {@value #WORKER_CORES} core and
 * {@value #WORKER_MEMORY} of memory to executors, and has its own work directory (under {@code
 * logDir}, so the executors' {@code stdout}/{@code stderr} stay for diagnosis) and its own local
 * directory ({@code SPARK_LOCAL_DIRS}, under {@code scratch}). Every port is chosen by the
 * operating system (port 0), web UIs included; the master's REST submission server is off.
 *
 * <p>Logs: {@code <logDir>/master.log}, {@code <logDir>/worker-<n>.log} and {@code
 * <logDir>/worker-<n>/work/<app id>/<executor id>/stderr}.
 *
 * <p>{@link #close()} kills the master, the workers and every process they started (SIGKILL);
 * a shutdown hook does the same if the test JVM exits without closing.
 */
final class StandaloneCluster implements AutoCloseable {
  static final String MASTER_CLASS = "org.apache.spark.deploy.master.Master";
  static final String WORKER_CLASS = "org.apache.spark.deploy.worker.Worker";
  /** The main class of a standalone executor JVM (its command line names it). */
  static final String EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend";
  static final int WORKER_CORES = 1;
  static final String WORKER_MEMORY = "1g";
  /** Heap of the master and worker JVMs. */
  static final String DAEMON_HEAP = "-Xmx512m";

  private static final Pattern MASTER_URL = Pattern.compile(
      "Starting Spark master at (spark://127\\.0\\.0\\.1:\\d+)");
  private static final Pattern LEADER = Pattern.compile("I have been elected leader");
  private static final Pattern REGISTERED = Pattern.compile(
      "Successfully registered with master");

  /** An executor JVM: Spark's executor id, the worker (0-based) that started it, the process. */
  record Executor(String id, int worker, ProcessHandle process) { }

  private final Path logDir;
  private final List<Daemon> daemons = new ArrayList<>();
  private final Thread shutdownHook;
  private String masterUrl;

  private record Daemon(String name, Process process, Path log) { }

  private StandaloneCluster(Path logDir) {
    this.logDir = logDir;
    this.shutdownHook = new Thread(this::killAll, "standalone-cluster-shutdown");
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }

  /**
   * Starts the master, waits until it leads, then starts the workers without waiting for them
   * ({@link #awaitWorkers}), so a driver can start meanwhile.
   *
   * @param home the Spark installation the JVMs run from
   * @param logDir directory for the daemons' logs and the workers' work directories; created
   * @param scratch directory for the workers' local directories (shuffle files, Strata's
   *     RocksDB instances); created
   * @param workers how many workers, at least 1
   * @param timeout how long to wait for the master
   * @return the running cluster; the caller closes it
   * @throws IOException if a JVM cannot start, or the master exits or does not lead within
   *     {@code timeout} (the message names its log and quotes its end); everything started so
   *     far is killed
   */
  static StandaloneCluster start(SparkHome home, Path logDir, Path scratch, int workers,
      Duration timeout) throws IOException, InterruptedException {
    return start(home, logDir, scratch, workers, WORKER_CORES, timeout);
  }

  /**
   * As {@link #start(SparkHome, Path, Path, int, Duration)}, with {@code cores} cores per worker
   * (room for that many one-core executors, of one application or several).
   */
  static StandaloneCluster start(SparkHome home, Path logDir, Path scratch, int workers,
      int cores, Duration timeout) throws IOException, InterruptedException {
    Files.createDirectories(logDir);
    Files.createDirectories(scratch);
    StandaloneCluster cluster = new StandaloneCluster(logDir);
    boolean started = false;
    try {
      Daemon master = cluster.launch(home, "master", Map.of(), MASTER_CLASS,
          "--host", "127.0.0.1", "--port", "0", "--webui-port", "0");
      cluster.masterUrl = awaitLog(master, MASTER_URL, timeout).group(1);
      awaitLog(master, LEADER, timeout);
      for (int i = 0; i < workers; i++) {
        Path work = Files.createDirectories(logDir.resolve("worker-" + i).resolve("work"));
        Path local = Files.createDirectories(scratch.resolve("worker-" + i + "-local"));
        cluster.launch(home, "worker-" + i,
            Map.of("SPARK_LOCAL_DIRS", local.toString()), WORKER_CLASS,
            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
            "--cores", Integer.toString(cores), "--memory", WORKER_MEMORY,
            "--work-dir", work.toString(), cluster.masterUrl);
      }
      started = true;
      return cluster;
    } finally {
      if (!started) {
        cluster.close();
      }
    }
  }

  /**
   * Waits until every worker has registered with the master.
   *
   * @throws IOException if a worker exits or has not registered within {@code timeout} (the
   *     message names its log and quotes its end)
   */
  void awaitWorkers(Duration timeout) throws IOException, InterruptedException {
    for (Daemon d : daemons) {
      if (d.name.startsWith("worker-")) {
        awaitLog(d, REGISTERED, timeout);
      }
    }
  }

  /** The master's URL, {@code spark://127.0.0.1:<port>}. */
  String masterUrl() {
    return masterUrl;
  }

  /** Where the daemons' logs and the workers' work directories (executor logs) are. */
  Path logDir() {
    return logDir;
  }

  /**
   * The executor JVMs running now: child processes of a worker whose command line names {@link
   * #EXECUTOR_CLASS}, with the id from their {@code --executor-id} argument.
   */
  List<Executor> executors() {
    List<Executor> found = new ArrayList<>();
    int worker = 0;
    for (Daemon d : daemons) {
      if (!d.name.startsWith("worker-")) {
        continue;
      }
      int w = worker++;
      d.process.toHandle().children().forEach(child -> executorId(child)
          .ifPresent(id -> found.add(new Executor(id, w, child))));
    }
    return found;
  }

  /** Spark's executor id from an executor JVM's arguments; empty for any other process. */
  private static Optional<String> executorId(ProcessHandle p) {
    ProcessHandle.Info info = p.info();
    if (!p.isAlive() || !info.commandLine().map(c -> c.contains(EXECUTOR_CLASS)).orElse(false)) {
      return Optional.empty();
    }
    String[] args = info.arguments().orElse(new String[0]);
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--executor-id")) {
        return Optional.of(args[i + 1]);
      }
    }
    return Optional.empty();
  }

  private Daemon launch(SparkHome home, String name, Map<String, String> env, String mainClass,
      String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(home.daemonClassPath());
    cmd.add(DAEMON_HEAP);
    // The daemons are mostly idle: a small collector and no C2 compiler spare the shared cores.
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    // The --add-opens flags Spark's own launcher gives every JVM it starts.
    cmd.addAll(Arrays.asList(JavaModuleOptions.defaultModuleOptions().trim().split("\\s+")));
    cmd.add("-Dspark.master.rest.enabled=false");
    // An application whose executors keep dying (the fault campaign kills them) is not removed.
    cmd.add("-Dspark.deploy.maxExecutorRetries=-1");
    cmd.add(mainClass);
    cmd.addAll(Arrays.asList(args));
    Path log = logDir.resolve(name + ".log");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile()).directory(logDir.toFile());
    Map<String, String> e = pb.environment();
    // Nothing of the caller's Spark or Hadoop set-up leaks in (SPARK_TESTING,
    // SPARK_DIST_CLASSPATH, HADOOP_CONF_DIR, ... would change the executors' class path).
    e.keySet().removeIf(k -> k.startsWith("SPARK_") || k.startsWith("PYSPARK_")
        || k.equals("HADOOP_CONF_DIR") || k.equals("YARN_CONF_DIR"));
    e.put("SPARK_HOME", home.dir().toString());
    e.put("SPARK_CONF_DIR", home.conf().toString());
    e.put("SPARK_SCALA_VERSION", SparkHome.SCALA_VERSION);
    e.put("SPARK_LOCAL_IP", "127.0.0.1");
    e.putAll(env);
    Daemon d = new Daemon(name, pb.start(), log);
    daemons.add(d);
    return d;
  }

  private static Matcher awaitLog(Daemon d, Pattern p, Duration timeout)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      String text = Files.exists(d.log) ? Files.readString(d.log, StandardCharsets.UTF_8) : "";
      Matcher m = p.matcher(text);
      if (m.find()) {
        return m;
      }
      if (!d.process.isAlive()) {
        throw new IOException("Cannot start the " + d.name + ": its JVM exited with "
            + d.process.exitValue() + " before logging '" + p.pattern() + "'; log " + d.log
            + ":\n" + tail(text));
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("Cannot start the " + d.name + ": no '" + p.pattern()
            + "' in its log within " + timeout.toSeconds() + " s; log " + d.log + ":\n"
            + tail(text));
      }
      Thread.sleep(100);
    }
  }

  private static String tail(String text) {
    return text.length() > 3000 ? "..." + text.substring(text.length() - 3000) : text;
  }

  /**
   * Kills (SIGKILL) the master first, so it launches nothing more, then each worker together with
   * every process it started, and waits up to 10 s for each to be gone. Idempotent.
   */
  @Override
  public void close() {
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs or has run
    }
    killAll();
  }

  private void killAll() {
    List<ProcessHandle> killed = new ArrayList<>();
    for (Daemon d : daemons) {
      ProcessHandle h = d.process.toHandle();
      // Its descendants are listed while it lives: once it is dead they are no longer its own.
      List<ProcessHandle> tree = new ArrayList<>(h.descendants().toList());
      tree.add(h);
      for (ProcessHandle p : tree) {
        p.destroyForcibly();
        killed.add(p);
      }
    }
    for (ProcessHandle p : killed) {
      try {
        p.onExit().get(10, TimeUnit.SECONDS);
      } catch (Exception stillThere) {
        System.err.println("[cluster-it] process " + p.pid() + " still alive 10 s after SIGKILL");
      }
    }
  }
}
