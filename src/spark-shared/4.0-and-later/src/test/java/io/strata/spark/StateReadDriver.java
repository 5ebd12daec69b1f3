// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * A driver JVM that reads a Strata checkpoint with Spark's state data source the way a user
 * without hadoop-aws does: Strata's settings and its read-only {@code StrataS3FileSystem} as the
 * {@code s3a} file system, set at launch (docs/operations.md, "Reading state and changes").
 * Arguments: {@code endpoint checkpoint out work}; writes {@code <out>/state.txt} (the state of
 * the last batch) and {@code <out>/changes.txt} (the change feed from batch 0), each as sorted
 * rows, and {@code <out>/hadoop-aws.txt} ("present" or "absent"). Exits 1 on any failure.
 */
public final class StateReadDriver {
  private StateReadDriver() { }

  /** Runs the reads; see the class comment. */
  public static void main(String[] args) throws Exception {
    String endpoint = args[0];
    String checkpoint = args[1];
    Path out = Files.createDirectories(Paths.get(args[2]));
    Path work = Paths.get(args[3]);
    boolean s3a;
    try {
      Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem");
      s3a = true;
    } catch (ClassNotFoundException e) {
      s3a = false;
    }
    Files.writeString(out.resolve("hadoop-aws.txt"), s3a ? "present" : "absent");
    SparkSession.Builder b = SparkSession.builder().master("local[2]").appName("state-reader");
    CheckpointDriver.sparkConf(endpoint, work).forEach(b::config);
    b.config("spark.hadoop.fs.s3a.impl", "io.strata.checkpoint.StrataS3FileSystem");
    b.config("spark.hadoop.fs.s3a.impl.disable.cache", "true");
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    int code = 0;
    try {
      write(out.resolve("state.txt"), spark.read().format("statestore").load(checkpoint)
          .collectAsList());
      write(out.resolve("changes.txt"), spark.read().format("statestore")
          .options(Map.of("readChangeFeed", "true", "changeStartBatchId", "0"))
          .load(checkpoint).collectAsList());
    } catch (Throwable e) {
      e.printStackTrace();
      code = 1;
    } finally {
      spark.stop();
    }
    System.exit(code);
  }

  private static void write(Path file, List<Row> rows) throws Exception {
    List<String> lines = new ArrayList<>();
    for (Row r : rows) {
      lines.add(r.toString());
    }
    lines.sort(null);
    Files.write(file, lines, StandardCharsets.UTF_8);
  }
}
