// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;

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
 *   <li>counts {@code input/} with a batch query again;
 *   <li>on Spark 4.x, repartitions the checkpoint's state from 2 to 3 partitions with {@code
 *       io.strata.spark.StrataRepartition} (by reflection: Spark 3.5 has none and prints {@code
 *       REPARTITION none}), appends {@code staging/} once more and runs the query again.
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
    ChildJobs.runAndExit(() -> run(args[0], args[1], args[2], args[3], Path.of(args[4])));
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

    ChildJobs.runTotals(spark, input, checkpoint, "run1");
    t = time("run1", t);

    spark.read().schema("key STRING, n INT").csv("s3a://" + bucket + "/staging/")
        .coalesce(1).write().mode(SaveMode.Append).csv(input);
    // the next run restores its state from S3 alone
    ChildJobs.wipe(strataLocal, work.resolve("strata-local-wiped"));
    t = time("append", t);
    ChildJobs.runTotals(spark, input, checkpoint, "run2");
    t = time("run2", t);

    print("batch-after", totals(spark.read().schema("key STRING, n INT").csv(input)));
    t = time("batch-after", t);

    // Spark 4.x: the runtime jar's repartition job (issue 44) on this session, 2 to 3 state
    // partitions, then the staging file once more: exact totals with the new count. Spark's
    // state data source, which the job reads schemas with, qualifies the s3:// path with a
    // Hadoop file system: Strata's read-only one (docs/operations.md).
    Class<?> job;
    try {
      job = Class.forName("io.strata.spark.StrataRepartition");
    } catch (ClassNotFoundException spark35) {
      job = null;
      System.out.println("REPARTITION none");
    }
    if (job != null) {
      spark.conf().set("fs.s3.impl", "io.strata.checkpoint.StrataS3FileSystem");
      Class<?> options = Class.forName("io.strata.spark.StrataRepartition$Options");
      Object parsed = options.getMethod("parse", String[].class).invoke(null,
          (Object) new String[] {checkpoint, "--partitions", "3", "--force"});
      Object result = job.getMethod("run", SparkSession.class, options).invoke(null, spark,
          parsed);
      System.out.println("REPARTITION " + ((String) result.getClass().getMethod("summary")
          .invoke(result)).lines().findFirst().orElse(""));
      spark.conf().unset("fs.s3.impl");
      spark.read().schema("key STRING, n INT").csv("s3a://" + bucket + "/staging/")
          .coalesce(1).write().mode(SaveMode.Append).csv(input);
      ChildJobs.runTotals(spark, input, checkpoint, "run3");
      time("run3", t);
    }
    spark.stop();
  }

  /** Prints the milliseconds since {@code since} for {@code step}; returns now. */
  private static long time(String step, long since) {
    long now = System.nanoTime();
    System.out.println("TIME " + step + " " + (now - since) / 1_000_000);
    return now;
  }

  private static Dataset<Row> totals(Dataset<Row> rows) {
    return ChildJobs.totals(rows);
  }

  private static void print(String step, Dataset<Row> totals) {
    ChildJobs.printTotals(step, totals);
  }
}
