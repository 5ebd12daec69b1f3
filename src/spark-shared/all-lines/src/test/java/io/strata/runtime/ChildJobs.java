// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
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
 * What the runtime jar's child jobs ({@link CoexistenceJob}, {@link UserJob}) share: their
 * streaming query, what they print for their tests, how they lose their local disk and exit.
 * Spark's public API only: it is copied beside the job's class into the child's class path
 * ({@link RuntimeJarIT#jobClassesOnly}).
 */
final class ChildJobs {
  private ChildJobs() {}

  /** A job's body, which may throw anything. */
  interface Body {
    void run() throws Exception;
  }

  /**
   * Runs a child job's body, prints {@code DONE} if it returned and the stack trace if it threw,
   * and exits the JVM with 0 or 1 (Spark leaves non-daemon threads behind; the exit code is the
   * result).
   */
  static void runAndExit(Body body) {
    int exit = 1;
    try {
      body.run();
      System.out.println("DONE");
      exit = 0;
    } catch (Throwable t) {
      t.printStackTrace(System.out);
    }
    System.out.flush();
    System.exit(exit);
  }

  /**
   * Runs the streaming aggregation {@code key -> count, sum(n)} over the CSV files ({@code
   * key,n}) at {@code input} not yet processed, one file per batch, until none is left, into a
   * memory table named after {@code step}, with its checkpoint at {@code checkpoint}; then prints
   * its progress and totals ({@link #printProgress}, {@link #printTotals}).
   */
  static void runTotals(SparkSession spark, String input, String checkpoint, String step)
      throws Exception {
    Dataset<Row> rows = spark.readStream().schema("key STRING, n INT")
        .option("maxFilesPerTrigger", "1").csv(input);
    String table = step.replace('-', '_');
    StreamingQuery q = totals(rows).writeStream()
        .queryName(table)
        .outputMode("complete")
        .format("memory")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .start();
    q.awaitTermination();
    printProgress(step, q);
    printTotals(step, spark.table(table));
  }

  /** {@code key -> count, sum(n)} of {@code key,n} rows. */
  static Dataset<Row> totals(Dataset<Row> rows) {
    return rows.groupBy("key").agg(count(lit(1)).as("count"), sum("n").as("sum"));
  }

  /**
   * Prints {@code BATCHES <step> <n>} (batches that read rows) and {@code METRIC <step>
   * <name>=<value>} for each of Strata's state operator metrics, summed over the batches.
   */
  static void printProgress(String step, StreamingQuery q) {
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
  }

  /** Prints {@code RESULT <step> <key>=<count>:<sum> ...}, keys in order. */
  static void printTotals(String step, Dataset<Row> totals) {
    StringBuilder line = new StringBuilder("RESULT " + step);
    for (Row r : totals.orderBy("key").collectAsList()) {
      line.append(' ').append(r.getString(0)).append('=').append(r.getLong(1)).append(':')
          .append(r.getLong(2));
    }
    System.out.println(line);
  }

  /**
   * Loses a local directory: moves it to {@code to} (the previous run's stores may still be
   * unloading into it), then deletes it as far as it can.
   */
  static void wipe(Path local, Path to) throws Exception {
    if (!Files.isDirectory(local)) {
      throw new IllegalStateException("no local state to delete at " + local);
    }
    Path gone = Files.move(local, to);
    try (Stream<Path> s = Files.walk(gone)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (java.io.IOException stillBeingWritten) {
      // nothing under the old path is reachable by the next run
    }
  }
}
