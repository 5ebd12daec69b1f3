// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.sum;

import io.strata.checkpoint.StrataCheckpointFileManager;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The stateful query of the checkpoint tests, runnable in the test JVM ({@link #start}) or as a
 * separate driver JVM ({@link #main}; the tests start it with a classpath without hadoop-aws and
 * kill it with SIGKILL). The query counts and sums {@code value} per {@code key} over JSON files
 * read one file per batch, in update mode, with Strata's state store and Strata's checkpoint
 * file manager on S3. Every batch's output goes to {@code <out>/batch-<id>.txt} (replaced
 * atomically when a batch is re-run) and its id to {@code <out>/runs.log}.
 */
public final class CheckpointDriver {
  private CheckpointDriver() { }

  /** The query's output for one batch: "key,count,sum" lines, sorted. */
  static List<String> rows(Dataset<Row> df) {
    List<String> lines = new ArrayList<>();
    for (Row r : df.collectAsList()) {
      lines.add(r.getString(0) + "," + r.getLong(1) + "," + r.getLong(2));
    }
    lines.sort(null);
    return lines;
  }

  /**
   * Starts the query.
   *
   * @param killAt batch id at which the sink, after writing its output, writes {@code
   *     <out>/in-batch-<id>.marker} and blocks forever (the test then kills the JVM); -1 for none
   */
  static StreamingQuery start(SparkSession spark, String checkpoint, Path input, Path out,
      Trigger trigger, String tag, long killAt) throws Exception {
    return start(spark, checkpoint, input, out, trigger, tag, killAt,
        StrataStateStoreProvider.class.getName());
  }

  /** As the other {@code start}, with the state store provider class {@code provider}. */
  static StreamingQuery start(SparkSession spark, String checkpoint, Path input, Path out,
      Trigger trigger, String tag, long killAt, String provider) throws Exception {
    Files.createDirectories(out);
    spark.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    spark.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    Dataset<Row> in = spark.readStream().schema("key STRING, value LONG")
        .option("maxFilesPerTrigger", 1).json(input.toString());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> lines = rows(df);
      Path tmp = out.resolve("batch-" + batchId + ".tmp-" + tag);
      Files.write(tmp, lines, StandardCharsets.UTF_8);
      Files.move(tmp, out.resolve("batch-" + batchId + ".txt"),
          StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      Files.writeString(out.resolve("runs.log"), tag + " " + batchId + "\n",
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      if (batchId == killAt) {
        Files.writeString(out.resolve("in-batch-" + batchId + ".marker"), tag);
        Thread.sleep(TimeUnit.HOURS.toMillis(1));
      }
    };
    return in.groupBy("key").agg(count("*").as("n"), sum("value").as("total"))
        .writeStream()
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(trigger)
        .foreachBatch(sink)
        .start();
  }

  /** Spark settings of the driver JVM: Strata for the state and for the checkpoint files. */
  static Map<String, String> sparkConf(String endpoint, Path work) {
    Map<String, String> c = new HashMap<>();
    c.put("spark.ui.enabled", "false");
    c.put("spark.driver.bindAddress", "127.0.0.1");
    c.put("spark.driver.host", "127.0.0.1");
    c.put("spark.local.dir", work.resolve("spark-local").toString());
    c.put("spark.sql.shuffle.partitions", "2");
    c.put("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    c.put("spark.sql.streaming.stateStore.providerClass", StrataStateStoreProvider.class.getName());
    c.put(StrataCheckpointFileManager.SPARK_CONF, StrataCheckpointFileManager.class.getName());
    String p = "spark.sql.streaming.stateStore.strata.";
    c.put(p + "s3.endpoint", endpoint);
    c.put(p + "s3.region", "us-east-1");
    c.put(p + "s3.pathStyleAccess", "true");
    c.put(p + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
    c.put(p + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
    c.put(p + "localDir", work.resolve("strata-local").toString());
    return c;
  }

  /**
   * Runs the query in this JVM: {@code endpoint checkpoint input out work trigger tag killAt},
   * where trigger is {@code availableNow} or {@code processing:<ms>}. With {@code processing}
   * the driver writes {@code <out>/ready-<tag>.marker} once its first trigger found no new data.
   * A query failure is written to {@code <out>/error-<tag>.txt} (exception chain, one per line)
   * and the JVM exits 0, so the test reads the failure it expects; any other failure exits 1.
   */
  public static void main(String[] args) throws Exception {
    String endpoint = args[0];
    String checkpoint = args[1];
    Path input = Paths.get(args[2]);
    Path out = Paths.get(args[3]);
    Path work = Paths.get(args[4]);
    String trigger = args[5];
    String tag = args[6];
    long killAt = Long.parseLong(args[7]);
    Files.createDirectories(out);
    boolean s3a;
    try {
      Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem");
      s3a = true;
    } catch (ClassNotFoundException e) {
      s3a = false;
    }
    Files.writeString(out.resolve("hadoop-aws-" + tag + ".txt"), s3a ? "present" : "absent");
    SparkSession.Builder b = SparkSession.builder().master("local[2]").appName("driver-" + tag);
    sparkConf(endpoint, work).forEach(b::config);
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    int code = 0;
    try {
      Trigger t = trigger.equals("availableNow") ? Trigger.AvailableNow()
          : Trigger.ProcessingTime(Long.parseLong(trigger.substring("processing:".length())));
      StreamingQuery q = start(spark, checkpoint, input, out, t, tag, killAt);
      if (!trigger.equals("availableNow")) {
        while (q.isActive() && q.lastProgress() == null) {
          Thread.sleep(50);
        }
        Files.writeString(out.resolve("ready-" + tag + ".marker"), Long.toString(
            System.currentTimeMillis()));
      }
      try {
        q.awaitTermination();
      } catch (Exception e) {
        writeChain(out.resolve("error-" + tag + ".txt"), e);
      }
    } catch (Throwable e) {
      e.printStackTrace();
      code = 1;
    } finally {
      spark.stop();
    }
    System.exit(code);
  }

  private static void writeChain(Path file, Throwable e) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      sb.append(t.getClass().getName()).append(": ").append(t.getMessage()).append('\n');
    }
    Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
  }
}
