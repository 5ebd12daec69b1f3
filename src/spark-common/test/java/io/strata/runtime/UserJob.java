// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The child JVM of {@link RuntimeJarQueriesIT}: a Spark job as a user writes it, on exactly the
 * class path a user has (the line's Spark jars and Strata's runtime jar, nothing of the build's
 * classes), with Spark's and Hadoop's shipped defaults. It uses only Spark's public API and
 * names Strata by strings, so it compiles without Strata.
 *
 * <p>Arguments: the S3 endpoint URL, the bucket, a local work directory, then the scenarios to
 * run, each {@code name:location:key=value,key=value...} (the settings set on the session, with
 * {@code spark.conf().set}, for that scenario only; the location {@code file} for a local
 * checkpoint, {@code s3} for {@code s3://<bucket>/<name>}). Every scenario runs the same streaming
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
    int exit = 1;
    try {
      run(args[0], args[1], Path.of(args[2]), List.of(args).subList(3, args.length));
      System.out.println("DONE");
      exit = 0;
    } catch (Throwable t) {
      t.printStackTrace(System.out);
    }
    System.out.flush();
    // Spark leaves non-daemon threads behind; the exit code is the result.
    System.exit(exit);
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
      try {
        Path input = Files.createDirectories(work.resolve("input").resolve(name));
        write(input, 0);
        write(input, 1);
        runStream(spark, input, checkpoint, name + "-run1");
        wipe(sparkLocal, work.resolve("wiped-" + name));
        write(input, 2);
        runStream(spark, input, checkpoint, name + "-run2");
      } catch (Throwable t) {
        System.out.println("FAILED " + name + " " + t.toString().replace('\n', ' '));
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

  /** The streaming aggregation over every file not yet processed, one file per batch. */
  private static void runStream(SparkSession spark, Path input, String checkpoint, String step)
      throws Exception {
    Dataset<Row> rows = spark.readStream().schema("key STRING, n INT")
        .option("maxFilesPerTrigger", "1").csv(input.toUri().toString());
    StreamingQuery q = rows.groupBy("key").agg(count(lit(1)).as("count"), sum("n").as("sum"))
        .writeStream()
        .queryName(step.replace('-', '_'))
        .outputMode("complete")
        .format("memory")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .start();
    q.awaitTermination();
    int batches = 0;
    Map<String, Long> metrics = new TreeMap<>();
    for (StreamingQueryProgress p : q.recentProgress()) {
      if (p.numInputRows() > 0) {
        batches++;
      }
      for (StateOperatorProgress op : p.stateOperators()) {
        op.customMetrics().forEach((k, v) -> {
          if (k.startsWith("strata")) {
            metrics.merge(k, v, Long::sum);
          }
        });
      }
    }
    System.out.println("BATCHES " + step + " " + batches);
    metrics.forEach((k, v) -> System.out.println("METRIC " + step + " " + k + "=" + v));
    StringBuilder line = new StringBuilder("RESULT " + step);
    for (Row r : spark.table(step.replace('-', '_')).orderBy("key").collectAsList()) {
      line.append(' ').append(r.getString(0)).append('=').append(r.getLong(1)).append(':')
          .append(r.getLong(2));
    }
    System.out.println(line);
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
      Path gone = Files.move(dirs.get(i), to.resolve("strata-" + i));
      try (Stream<Path> s = Files.walk(gone)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (java.io.IOException stillBeingWritten) {
        // nothing under the old path is reachable by the next run
      }
    }
  }
}
