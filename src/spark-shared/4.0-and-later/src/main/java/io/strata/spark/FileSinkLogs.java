// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import org.apache.spark.sql.SparkSession;

/**
 * The repartition batch in a file sink's log ({@code <output>/_spark_metadata}), for {@link
 * StrataRepartition}: batch {@code N + 1} runs no sink, but Spark's file sink log ({@code
 * FileStreamSinkLog}, a {@code CompactibleFileStreamLog}) needs every batch id: a batch read of
 * the output walks them from the last compaction ("... doesn't exist"), and the compaction of
 * every tenth batch fails on a gap ({@code BATCH_METADATA_NOT_FOUND}). The batch is added
 * empty, through Spark's own class (so a compaction batch is compacted as Spark would), found
 * by name: it moved to {@code execution.streaming.sinks} in Spark 4.1.
 */
final class FileSinkLogs {
  private static final String[] PACKAGES = {"org.apache.spark.sql.execution.streaming.sinks",
      "org.apache.spark.sql.execution.streaming"};

  private FileSinkLogs() { }

  /**
   * Checks that {@code output} has a file sink log and that Spark's class for it loads (before
   * the job writes anything).
   *
   * @throws StrataRepartition.Refused if not, naming the directory or the class
   */
  static void check(SparkSession spark, String output) {
    checkExists(spark, output);
  }

  /**
   * Checks {@code output} as {@link #check(SparkSession, String)} does, and that its log ends at
   * the batch the job reads, {@code readBatch} (the file sink writes an entry for every batch,
   * empty or not), or, when {@code resumed} (an earlier run of the job committed the
   * repartition batch), at the repartition batch {@code readBatch + 1}.
   *
   * @throws StrataRepartition.Refused naming the directory, its newest batch and the one
   *     expected: a log that ends after {@code readBatch} has output of a batch the checkpoint did
   *     not commit (a crash after the sink's write, or a rewind), which the repartition batch
   *     would hide; one that ends before it is not this query's sink
   */
  static void check(SparkSession spark, String output, long readBatch, boolean resumed) {
    checkExists(spark, output);
    String metadata = output.replaceAll("/+$", "") + "/_spark_metadata";
    long newest;
    try {
      Object log = sinkLog(spark, metadata);
      scala.Option<?> latest = (scala.Option<?>) log.getClass().getMethod("getLatestBatchId")
          .invoke(log);
      newest = latest.isDefined() ? ((Number) latest.get()).longValue() : -1;
    } catch (InvocationTargetException e) {
      throw new StrataRepartition.Refused("--file-sink " + output + ": " + metadata
          + " cannot be read (" + e.getCause() + ")");
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Reading " + metadata + " failed: " + e, e);
    }
    if (newest == readBatch || (resumed && newest == readBatch + 1)) {
      return;
    }
    throw new StrataRepartition.Refused("--file-sink " + output + ": its log's newest batch is "
        + newest + ", expected " + readBatch + (resumed ? " or " + (readBatch + 1) : "")
        + " (the checkpoint's newest committed batch" + (resumed ? ", or the repartition "
        + "batch" : "") + "). " + (newest > readBatch ? "The sink wrote output of a batch "
        + "the checkpoint did not commit (a crash after the sink's write, or a rewind): the "
        + "repartition batch would hide it. Finish that batch first (start the query once "
        + "with Trigger.AvailableNow())" : "Not this query's file sink?"));
  }

  private static void checkExists(SparkSession spark, String output) {
    String metadata = output.replaceAll("/+$", "") + "/_spark_metadata";
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(metadata);
    try {
      org.apache.hadoop.fs.FileSystem fs = dir.getFileSystem(
          ((org.apache.spark.sql.classic.SparkSession) spark).sessionState().newHadoopConf());
      if (!fs.exists(dir)) {
        throw new StrataRepartition.Refused("--file-sink " + output + ": " + metadata
            + " does not exist: not the output directory of a file sink");
      }
    } catch (java.io.IOException e) {
      throw new StrataRepartition.Refused("--file-sink " + output + ": " + metadata
          + " cannot be read (" + e + ")");
    }
    for (String pkg : PACKAGES) {
      try {
        Class.forName(pkg + ".FileStreamSinkLog");
        return;
      } catch (ClassNotFoundException e) {
        // the other package
      }
    }
    throw new StrataRepartition.Refused("--file-sink " + output + ": Spark's FileStreamSinkLog "
        + "was not found in " + String.join(" or ", PACKAGES));
  }

  /**
   * Adds batch {@code batch} with no files to the log of the file sink writing {@code output},
   * unless the log has it already. The log takes the job session's {@code
   * spark.sql.streaming.fileSink.log.*} settings (its compaction interval among them), which
   * must be the query's.
   *
   * @throws StrataRepartition.Refused if {@code output} has no file sink log
   * @throws IllegalStateException if Spark's class is missing or its write fails (the cause
   *     attached)
   */
  static void addEmptyBatch(SparkSession spark, String output, long batch) {
    check(spark, output);
    String metadata = output.replaceAll("/+$", "") + "/_spark_metadata";
    try {
      Object sinkLog = sinkLog(spark, metadata);
      // SinkFileStatus sits in the log's package on every line.
      Class<?> status = Class.forName(sinkLog.getClass().getPackageName() + ".SinkFileStatus");
      sinkLog.getClass().getMethod("add", long.class, Object.class).invoke(sinkLog, batch,
          Array.newInstance(status, 0));
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("Adding batch " + batch + " to " + metadata + " failed: "
          + e.getCause(), e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Adding batch " + batch + " to " + metadata + " failed: "
          + e, e);
    }
  }

  /** Spark's {@code FileStreamSinkLog} of {@code metadata}, made as Spark's file sink makes it. */
  private static Object sinkLog(SparkSession spark, String metadata)
      throws ReflectiveOperationException {
    for (String pkg : PACKAGES) {
      Class<?> log;
      try {
        log = Class.forName(pkg + ".FileStreamSinkLog");
      } catch (ClassNotFoundException e) {
        continue;
      }
      for (Constructor<?> c : log.getConstructors()) {
        if (c.getParameterCount() == 4) {
          return c.newInstance(1, spark, metadata, scala.Option.empty());
        }
      }
    }
    throw new ClassNotFoundException("Spark's FileStreamSinkLog (with a 4-argument constructor) "
        + "in " + String.join(" or ", PACKAGES));
  }
}
