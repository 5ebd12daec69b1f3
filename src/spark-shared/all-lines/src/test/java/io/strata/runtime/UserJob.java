// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;

/**
 * The child JVM of {@link RuntimeJarIT}: a Spark job as a user writes it, on exactly the
 * class path a user has (the line's Spark jars and Strata's runtime jar, nothing of the build's
 * classes), with Spark's and Hadoop's shipped defaults. It uses only Spark's public API and
 * names Strata by strings, so it compiles without Strata.
 *
 * <p>Arguments: the S3 endpoint URL, the bucket, a local work directory, then the scenarios to
 * run, each {@code name:location:key=value,key=value...} (the settings set on the session, with
 * {@code spark.conf().set}, for that scenario only, {@code $ENDPOINT} in a value standing for
 * the endpoint argument; the location {@code file} for a local checkpoint, {@code s3} for {@code
 * s3://<bucket>/<name>}). Every scenario runs the same streaming
 * aggregation twice on its own checkpoint: run 1 over two input files (two batches), then Strata's
 * local state is wiped, a third file added, and run 2 restores from the checkpoint alone.
 *
 * <p>Prints {@code RESULT <name>-run<n> <key>=<count>:<sum> ...}, {@code BATCHES <name>-run<n>
 * <n>}, {@code METRIC <name>-run<n> <metric>=<value>} (Strata's state operator metrics, summed),
 * and {@code FAILED <name> <exception>} with its stack trace for a scenario that threw; then
 * {@code DONE} and exits 0 (the test judges the lines), or exits 1 if the session itself failed.
 * Never prints a credential.
 */
public final class UserJob {
  /** The input files, {@code key,n} rows; one per batch. */
  static final List<String> FILES = List.of("a,1\nb,2\na,3\n", "b,4\nc,5\n", "a,10\nd,20\n");

  private UserJob() {}

  /** Runs the job; see the class comment. */
  public static void main(String[] args) {
    ChildJobs.runAndExit(() -> run(args[0], args[1], Path.of(args[2]),
        List.of(args).subList(3, args.length)));
  }

  private static void run(String endpoint, String bucket, Path work, List<String> scenarios)
      throws Exception {
    Path sparkLocal = work.resolve("spark-local");
    // Only what every job sets (a master, a name) and what keeps a test JVM on loopback and in
    // its own directories; Strata's provider is the one state setting, as in a user's job.
    SparkSession spark = SparkSession.builder()
        .master("local[2]")
        .appName("strata-user-job")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", sparkLocal.toString())
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.providerClass",
            "io.strata.spark.StrataStateStoreProvider")
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    for (String scenario : scenarios) {
      String[] parts = scenario.split(":", 3);
      String name = parts[0];
      Map<String, String> settings = new LinkedHashMap<>();
      if (parts.length > 2 && !parts[2].isEmpty()) {
        for (String kv : parts[2].split(",(?=[\\w.]+=)")) {
          int eq = kv.indexOf('=');
          settings.put(kv.substring(0, eq), kv.substring(eq + 1).replace("$ENDPOINT", endpoint));
        }
      }
      String checkpoint = parts[1].equals("s3") ? "s3://" + bucket + "/" + name
          : work.resolve("checkpoints").resolve(name).toUri().toString();
      settings.forEach((k, v) -> spark.conf().set(k, v));
      long t0 = System.nanoTime();
      try {
        Path input = Files.createDirectories(work.resolve("input").resolve(name));
        write(input, 0);
        write(input, 1);
        ChildJobs.runTotals(spark, input.toUri().toString(), checkpoint, name + "-run1");
        wipe(sparkLocal, work.resolve("wiped-" + name));
        write(input, 2);
        ChildJobs.runTotals(spark, input.toUri().toString(), checkpoint, name + "-run2");
      } catch (Throwable t) {
        System.out.println("FAILED " + name + " " + t.toString().replace('\n', ' '));
        System.out.println("ELAPSED " + name + " " + (System.nanoTime() - t0) / 1_000_000);
        t.printStackTrace(System.out);
      } finally {
        settings.keySet().forEach(k -> spark.conf().unset(k));
      }
    }
    spark.stop();
  }

  private static void write(Path input, int file) throws Exception {
    Path tmp = input.resolveSibling(input.getFileName() + "-" + file + ".tmp");
    Files.writeString(tmp, FILES.get(file), StandardCharsets.UTF_8);
    Files.move(tmp, input.resolve("part-" + file + ".csv"));
  }

  /**
   * Loses Strata's local disk: every {@code strata} directory under Spark's local dirs (where
   * Strata keeps its databases by default) moved away, then deleted as far as it can be.
   */
  private static void wipe(Path sparkLocal, Path to) throws Exception {
    List<Path> dirs = new ArrayList<>();
    try (Stream<Path> s = Files.walk(sparkLocal, 3)) {
      s.filter(p -> Files.isDirectory(p) && p.getFileName().toString().equals("strata"))
          .forEach(dirs::add);
    }
    if (dirs.isEmpty()) {
      throw new IllegalStateException("no Strata local directory under " + sparkLocal);
    }
    Files.createDirectories(to);
    for (int i = 0; i < dirs.size(); i++) {
      ChildJobs.wipe(dirs.get(i), to.resolve("strata-" + i));
    }
  }
}
