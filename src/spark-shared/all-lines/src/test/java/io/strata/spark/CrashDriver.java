// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The reference query of the crash tests (keys each added once per batch into {@code
 * groupBy(key).count()}, update mode, one input file per batch, AvailableNow), runnable in the
 * test JVM ({@link #start}) or as a driver JVM in local mode ({@link #main}) that a named fault
 * point halts. Every batch's output goes to {@code <out>/batch-<id>.txt} as sorted "key,count"
 * lines, replaced atomically when a batch is re-run.
 */
public final class CrashDriver {
  static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);

  private CrashDriver() { }

  /**
   * Starts the query on {@code spark} (settings already applied).
   *
   * @param sinkSleepMs the sink sleeps this long after each batch (0 for none), so background
   *     maintenance (snapshots, garbage collection) runs between batches
   */
  static StreamingQuery start(SparkSession spark, String checkpoint, Path input, Path out,
      long sinkSleepMs) throws Exception {
    return start(spark, checkpoint, input, out, sinkSleepMs, Trigger.AvailableNow());
  }

  /** As {@link #start(SparkSession, String, Path, Path, long)} with another trigger. */
  static StreamingQuery start(SparkSession spark, String checkpoint, Path input, Path out,
      long sinkSleepMs, Trigger trigger) throws Exception {
    Files.createDirectories(out);
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> lines = new ArrayList<>();
      for (Row r : df.collectAsList()) {
        lines.add(r.getString(0) + "," + r.getLong(1));
      }
      lines.sort(null);
      Path tmp = out.resolve("batch-" + batchId + ".tmp");
      Files.write(tmp, lines, StandardCharsets.UTF_8);
      Files.move(tmp, out.resolve("batch-" + batchId + ".txt"),
          StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      if (sinkSleepMs > 0) {
        Thread.sleep(sinkSleepMs);
      }
    };
    return spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(input.toString())
        .groupBy("key").agg(count("*").as("n"))
        .writeStream().outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(trigger)
        .foreachBatch(sink)
        .start();
  }

  /**
   * Runs the query in this JVM: {@code endpoint checkpoint input out localDir faultPoint
   * sinkSleepMs [key=value ...]}, where faultPoint is {@code none} or {@code <name>[@<n>]}
   * (set as the system property {@code strata.test.faultPoint} before any Strata class loads)
   * and the key=value pairs are extra Spark settings; localDir {@value #SPARK_LOCAL_DIRS} leaves
   * Strata's local directory unset (its default: inside Spark's local directories, which Spark
   * deletes at exit). Exits 0 when the query finished, 3 when it
   * failed (the failure chain is printed); a fault point halts the JVM with 137.
   */
  /** The localDir argument that leaves Strata's localDir setting unset. */
  static final String SPARK_LOCAL_DIRS = "spark-local-dirs";

  public static void main(String[] args) throws Exception {
    if (!args[5].equals("none")) {
      System.setProperty("strata.test.faultPoint", args[5]);
    }
    String endpoint = args[0];
    String checkpoint = args[1];
    Path input = Paths.get(args[2]);
    Path out = Paths.get(args[3]);
    long sinkSleepMs = Long.parseLong(args[6]);
    Path work = Files.createDirectories(out.resolve("work"));
    SparkSession.Builder b = SparkSession.builder().master("local[2]").appName("crash-driver");
    Map<String, String> conf = CheckpointDriver.sparkConf(endpoint, work);
    if (args[4].equals(SPARK_LOCAL_DIRS)) {
      conf.remove("spark.sql.streaming.stateStore.strata.localDir");
    } else {
      conf.put("spark.sql.streaming.stateStore.strata.localDir", args[4]);
    }
    for (int i = 7; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      conf.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    conf.forEach(b::config);
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    int code = 0;
    try {
      StreamingQuery q = start(spark, checkpoint, input, out, sinkSleepMs);
      q.awaitTermination();
    } catch (Throwable e) {
      e.printStackTrace();
      code = 3;
    } finally {
      spark.stop();
    }
    System.exit(code);
  }
}
