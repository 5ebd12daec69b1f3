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
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The child JVM of {@link RuntimeJarIT}: a Spark job as a user writes it, on a
 * classpath of Spark, hadoop-aws with its AWS SDK bundle, and Strata's runtime jar. It uses only
 * Spark's public API and configuration keys (Strata is named by strings, never by class), so it
 * runs without Strata's classes on the compile-time path.
 *
 * <p>Arguments: S3 endpoint URL, access key id, secret access key, bucket, local work directory.
 * The bucket holds {@code input/} (CSV files of {@code key,n}) and {@code staging/} (one more such
 * file). The job
 *
 * <ol>
 *   <li>counts {@code input/} with a batch query through {@code s3a://};
 *   <li>runs a streaming aggregation over {@code input/} (one file per batch, until none is left)
 *       with Strata's state store and Strata's checkpoint file manager, checkpoint on {@code
 *       s3://};
 *   <li>appends {@code staging/} to {@code input/} with a batch write through {@code s3a://},
 *       deletes Strata's local state, and runs the streaming query again on the same checkpoint,
 *       which restores its state from S3;
 *   <li>counts {@code input/} with a batch query again.
 * </ol>
 *
 * <p>It prints {@code HADOOP <version>} and {@code S3A_JAR <jar file name>} first, {@code RESULT <step> <key>=<count>:<sum> ...} (keys in order), {@code METRIC <step>
 * <name>=<value>} (sums of Strata's state operator metrics over the run's batches), {@code
 * BATCHES <step> <n>} and {@code TIME <step> <ms>} lines, then {@code DONE}, and exits 0; on any
 * error it prints the stack trace and exits 1. It never prints the credentials.
 */
public final class CoexistenceJob {
  private CoexistenceJob() {}

  /** Runs the job; see the class comment for the arguments and the output. */
  public static void main(String[] args) {
    int exit = 1;
    try {
      run(args[0], args[1], args[2], args[3], Path.of(args[4]));
      System.out.println("DONE");
      exit = 0;
    } catch (Throwable t) {
      t.printStackTrace(System.out);
    }
    System.out.flush();
    // Spark leaves non-daemon threads behind; the exit code is the result.
    System.exit(exit);
  }

  private static void run(String endpoint, String accessKey, String secretKey, String bucket,
      Path work) throws Exception {
    long started = System.nanoTime();
    Path strataLocal = work.resolve("strata-local");
    String strata = "spark.sql.streaming.stateStore.strata.";
    SparkSession spark = SparkSession.builder()
        .master("local[2]")
        .appName("strata-coexistence")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", work.resolve("spark-local").toString())
        .config("spark.sql.shuffle.partitions", "2")
        // Strata: the state store, and Spark's own checkpoint files, on S3.
        .config("spark.sql.streaming.stateStore.providerClass",
            "io.strata.spark.StrataStateStoreProvider")
        .config("spark.sql.streaming.checkpointFileManagerClass",
            "io.strata.checkpoint.StrataCheckpointFileManager")
        .config(strata + "s3.endpoint", endpoint)
        .config(strata + "s3.region", "us-east-1")
        .config(strata + "s3.pathStyleAccess", "true")
        .config(strata + "s3.accessKeyId", accessKey)
        .config(strata + "s3.secretAccessKey", secretKey)
        .config(strata + "localDir", strataLocal.toString())
        // Hadoop S3A for the job's data, with the SDK of hadoop-aws's bundle.
        .config("spark.hadoop.fs.s3a.endpoint", endpoint)
        .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
        .config("spark.hadoop.fs.s3a.path.style.access", "true")
        .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
        .config("spark.hadoop.fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
        .config("spark.hadoop.fs.s3a.access.key", accessKey)
        .config("spark.hadoop.fs.s3a.secret.key", secretKey)
        // S3Proxy returns no ETag on HEAD of a directory marker (S3A's directory rename needs it).
        .config("spark.hadoop.fs.s3a.change.detection.version.required", "false")
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    // Which Hadoop and S3A the job runs on (the test checks them against what it put there).
    System.out.println("HADOOP " + org.apache.hadoop.util.VersionInfo.getVersion());
    System.out.println("S3A_JAR " + Path.of(Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")
        .getProtectionDomain().getCodeSource().getLocation().toURI()).getFileName());

    String input = "s3a://" + bucket + "/input/";
    String checkpoint = "s3://" + bucket + "/ckpt/counts";
    long t = time("session", started);
    print("batch-before", totals(spark.read().schema("key STRING, n INT").csv(input)));
    t = time("batch-before", t);

    runStream(spark, input, checkpoint, "run1");
    t = time("run1", t);

    spark.read().schema("key STRING, n INT").csv("s3a://" + bucket + "/staging/")
        .coalesce(1).write().mode(SaveMode.Append).csv(input);
    wipe(strataLocal, work); // the next run restores its state from S3 alone
    t = time("append", t);
    runStream(spark, input, checkpoint, "run2");
    t = time("run2", t);

    print("batch-after", totals(spark.read().schema("key STRING, n INT").csv(input)));
    t = time("batch-after", t);
    spark.stop();
  }

  /** Prints the milliseconds since {@code since} for {@code step}; returns now. */
  private static long time(String step, long since) {
    long now = System.nanoTime();
    System.out.println("TIME " + step + " " + (now - since) / 1_000_000);
    return now;
  }

  /** The streaming aggregation over every file not yet processed, one file per batch. */
  private static void runStream(SparkSession spark, String input, String checkpoint, String step)
      throws Exception {
    Dataset<Row> rows = spark.readStream().schema("key STRING, n INT")
        .option("maxFilesPerTrigger", "1").csv(input);
    StreamingQuery q = totals(rows).writeStream()
        .queryName(step)
        .outputMode("complete")
        .format("memory")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .start();
    q.awaitTermination();
    StreamingQueryProgress[] progress = q.recentProgress();
    int batches = 0;
    Map<String, Long> metrics = new TreeMap<>();
    for (StreamingQueryProgress p : progress) {
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
    print(step, spark.table(step));
  }

  private static Dataset<Row> totals(Dataset<Row> rows) {
    return rows.groupBy("key").agg(count(lit(1)).as("count"), sum("n").as("sum"));
  }

  private static void print(String step, Dataset<Row> totals) {
    StringBuilder line = new StringBuilder("RESULT " + step);
    for (Row r : totals.orderBy("key").collectAsList()) {
      line.append(' ').append(r.getString(0)).append('=').append(r.getLong(1)).append(':')
          .append(r.getLong(2));
    }
    System.out.println(line);
  }

  /**
   * Loses the local disk: moves Strata's local directory away (the previous run's stores may
   * still be unloading into it), then deletes it as far as it can.
   */
  private static void wipe(Path local, Path work) throws Exception {
    if (!Files.isDirectory(local)) {
      throw new IllegalStateException("no local state to delete at " + local);
    }
    Path gone = Files.move(local, work.resolve("strata-local-wiped"));
    try (Stream<Path> s = Files.walk(gone)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (java.io.IOException stillBeingWritten) {
      // nothing under the old path is reachable by the next run
    }
  }
}
