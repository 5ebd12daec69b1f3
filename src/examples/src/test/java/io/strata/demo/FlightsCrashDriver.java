// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The flights demo's three stateful queries as a driver JVM for the crash test: runs them (to
 * the end of the input, {@code Trigger.AvailableNow}) on a checkpoint on S3 through Strata, with
 * a named fault point ({@code io.strata.sync.FaultPoints}) armed that halts the JVM in the middle
 * of a commit; or, unarmed, runs them to the end and checks the outputs against a batch job over
 * the same flights with the demo's {@link Verifier}.
 *
 * <p>Arguments: {@code endpoint checkpointRoot runDir data maxRows files partitions faultPoint},
 * where faultPoint is {@code none} or {@code <name>[@<n>]}. On the first run the input is split
 * into {@code <runDir>/input} (as the demo does); the local state goes to {@code
 * <runDir>/local}, the per-batch outputs to {@code <runDir>/output}. Exit codes: 0 finished (and,
 * unarmed, verified: the line {@code verified} is printed), 1 not verified (the problems are
 * printed), 3 failed, 137 halted by the fault point.
 */
public final class FlightsCrashDriver {
  private FlightsCrashDriver() { }

  /**
   * Runs the queries as described in the class comment, then exits.
   *
   * @param args {@code endpoint checkpointRoot runDir data maxRows files partitions faultPoint}
   */
  public static void main(String[] args) {
    if (!args[7].equals("none")) {
      System.setProperty("strata.test.faultPoint", args[7]); // before any Strata class loads
    }
    int code;
    try {
      code = run(args) ? 0 : 1;
    } catch (Throwable e) {
      e.printStackTrace();
      code = 3;
    }
    System.out.flush();
    System.exit(code);
  }

  private static boolean run(String[] args) throws Exception {
    DemoLogging.useDemoConfigUnlessSet();
    String endpoint = args[0];
    String root = args[1];
    Path runDir = Paths.get(args[2]);
    Path data = Paths.get(args[3]);
    long maxRows = Long.parseLong(args[4]);
    int files = Integer.parseInt(args[5]);
    String partitions = args[6];
    boolean armed = !args[7].equals("none");
    DemoOptions options = DemoOptions.parse("--checkpoint", root, "--endpoint", endpoint,
        "--region", "us-east-1", "--access-key", S3ProxyServer.ACCESS_KEY,
        "--secret-key", S3ProxyServer.SECRET_KEY, "--path-style");
    CheckpointTarget target = CheckpointTarget.fromOptions(options, "run");
    Path local = runDir.resolve("local");
    Path input = runDir.resolve("input");
    String output = runDir.resolve("output").toString();

    SparkSession.Builder b = SparkSession.builder()
        .appName("strata-flights-crash")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", local.resolve("spark").toString())
        .config("spark.sql.shuffle.partitions", partitions)
        .config("spark.sql.session.timeZone", "UTC")
        .config(FlightsDemo.PROVIDER_CLASS, DemoOptions.STRATA_PROVIDER)
        .config(CheckpointTarget.STRATA + "localDir", local.resolve("strata").toString());
    target.sparkConf().forEach(b::config);
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    try {
      if (!Files.isDirectory(input)) {
        List<Path> split = FlightsInput.split(FlightsInput.source(spark, data, maxRows), files,
            runDir.resolve("files"));
        FlightsInput.publish(split, input);
        System.out.println("split the flights into " + split.size() + " files");
      }
      Dataset<Row> stream = spark.readStream()
          .schema(spark.read().parquet(input.toString()).schema())
          .option("maxFilesPerTrigger", 1)
          .parquet(input.toString());
      Map<String, StreamingQuery> queries = new TreeMap<>();
      for (String name : FlightQueries.ALL) {
        queries.put(name, FlightQueries.start(name, stream, target.queryCheckpoint(name), output,
            Trigger.AvailableNow()));
      }
      for (StreamingQuery q : queries.values()) {
        q.awaitTermination();
        if (q.exception().isDefined()) {
          throw new IllegalStateException("Query " + q.name() + " failed",
              q.exception().get());
        }
      }
      if (armed) {
        System.out.println("finished without reaching the fault point");
        return true;
      }
      List<String> problems = new ArrayList<>();
      for (StreamingQuery q : queries.values()) {
        StreamingQueryProgress[] runs = q.recentProgress();
        if (runs.length == 0) {
          problems.add(q.name() + ": no batch ran after the restart");
        } else if (runs[0].batchId() < 1) {
          problems.add(q.name() + ": began at batch " + runs[0].batchId()
              + ", so it did not resume from the checkpoint");
        } else {
          System.out.println(q.name() + ": resumed at batch " + runs[0].batchId()
              + ", last batch " + runs[runs.length - 1].batchId());
        }
      }
      StreamingQueryProgress hours = queries.get(FlightQueries.AIRPORT_HOURS).lastProgress();
      String watermark = hours == null ? null : hours.eventTime().get("watermark");
      if (watermark == null) {
        problems.add("airport_hours: no watermark in the final progress");
        watermark = "1970-01-01T00:00:00.000Z";
      }
      StreamingQueryProgress distinct =
          queries.get(FlightQueries.DISTINCT_FLIGHTS).lastProgress();
      long distinctStateRows = -1;
      if (distinct != null) {
        distinctStateRows = 0;
        for (StateOperatorProgress op : distinct.stateOperators()) {
          distinctStateRows += op.numRowsTotal();
        }
      }
      Verifier.Verification v = Verifier.verify(spark, FlightsInput.source(spark, data, maxRows),
          output, watermark, distinctStateRows);
      problems.addAll(v.problems());
      System.out.printf("checked %d rows, %d routes, %d closed airport-hours, %d distinct"
          + " flights%n", v.rows(), v.routes(), v.closedHours(), v.distinctFlights());
      if (problems.isEmpty() && v.rows() == maxRows) {
        System.out.println("verified");
        return true;
      }
      System.out.println("NOT verified: rows " + v.rows() + "\n  " + String.join("\n  ",
          problems));
      return false;
    } finally {
      StateStore.stop();
      spark.stop();
    }
  }
}
