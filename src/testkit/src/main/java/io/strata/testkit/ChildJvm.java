// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A separate JVM running a test main class, by default on this JVM's test classpath minus
 * hadoop-aws (so Spark there has no Hadoop FileSystem for s3:// or s3a://), or on a classpath the
 * caller gives, with the same {@code --add-opens} flags. Its output goes to a log file. Public for
 * the demo's crash test ({@code io.strata.demo}) and the runtime jar's coexistence test ({@code
 * io.strata.runtime}).
 */
public final class ChildJvm implements AutoCloseable {
  /** The child process. */
  public final Process process;
  /** Where the child's standard output and error go. */
  public final Path log;

  private ChildJvm(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  /** The test classpath (failsafe runs tests from a manifest-only jar) without hadoop-aws. */
  public static String classpathWithoutHadoopAws() {
    String cp = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    List<String> kept = Arrays.stream(cp.split(File.pathSeparator))
        .filter(e -> !Paths.get(e).getFileName().toString().startsWith("hadoop-aws-"))
        .collect(Collectors.toList());
    return String.join(File.pathSeparator, kept);
  }

  /**
   * Starts {@code main} with {@code args} on the test classpath without hadoop-aws.
   *
   * @param log file for the child's standard output and error
   */
  public static ChildJvm start(Class<?> main, Path log, String... args) throws IOException {
    return start(classpathWithoutHadoopAws(), main, log, args);
  }

  /** The whole test classpath (with hadoop-aws), and {@code extra} entries after it. */
  public static String fullClasspath(String... extra) {
    List<String> all = new ArrayList<>(Arrays.asList(System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path")).split(File.pathSeparator)));
    all.addAll(Arrays.asList(extra));
    return String.join(File.pathSeparator, all);
  }

  /**
   * Starts {@code main} with {@code args} on exactly {@code classpath}: only the class's name is
   * passed, so the classpath must hold it.
   *
   * @param classpath entries joined by {@link File#pathSeparator}
   * @param log file for the child's standard output and error
   * @throws IOException if the process cannot be started
   */
  public static ChildJvm start(String classpath, Class<?> main, Path log, String... args)
      throws IOException {
    return start(classpath, List.of(), main.getName(), log, args);
  }

  /**
   * Starts the class named {@code main} with {@code args} on exactly {@code classpath}, with
   * {@code jvmOptions} after the defaults (so they win: e.g. {@code -Duser.home=...}).
   *
   * @param classpath entries joined by {@link File#pathSeparator}
   * @param jvmOptions extra JVM options, each one argument
   * @param main the main class's binary name; the classpath must hold it
   * @param log file for the child's standard output and error
   * @throws IOException if the process cannot be started
   */
  public static ChildJvm start(String classpath, List<String> jvmOptions, String main, Path log,
      String... args) throws IOException {
    return start(classpath, jvmOptions, Map.of(), main, log, args);
  }

  /**
   * As {@link #start(String, List, String, Path, String...)}, with {@code environment} added to
   * (or replacing entries of) the child's environment, which is otherwise this JVM's without any
   * {@code AWS_*} variable (so credentials in the caller's environment never reach a test's job).
   *
   * @param environment variables for the child, such as {@code AWS_ACCESS_KEY_ID}
   */
  public static ChildJvm start(String classpath, List<String> jvmOptions,
      Map<String, String> environment, String main, Path log, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx1g");
    // Short-lived drivers: the C1 compiler only and the serial collector start Spark faster and
    // leave the test JVM's cores to it (no behaviour of the code under test depends on either).
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-XX:+UseSerialGC");
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens") || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
          || a.startsWith("-Djdk.reflect") || a.startsWith("-Dio.netty")) {
        cmd.add(a);
      }
    }
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(classpath);
    cmd.add(main);
    cmd.addAll(Arrays.asList(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("AWS_"));
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    pb.environment().putAll(environment);
    return new ChildJvm(pb.start(), log);
  }

  /** Waits for the exit code, or throws after {@code seconds}. */
  public int await(long seconds) throws Exception {
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      throw new IllegalStateException("child JVM still running after " + seconds + " s; log "
          + log);
    }
    return process.exitValue();
  }

  /** SIGKILL (Process.destroyForcibly on Linux), then waits for it to be gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      kill();
    }
  }
}
