// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.strata.testkit.ChildJvm;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * Runs of {@link CrashDriver}'s query to the end of its input, for the rhythm tests: the oracle
 * (Spark's HDFS-backed provider in the test JVM's session) and Strata in a new driver JVM.
 */
final class DriverRuns {
  private DriverRuns() { }

  /**
   * Runs the query with Spark's HDFS-backed provider in a new session of {@code h}'s Spark, to
   * its input's end ({@code Trigger.AvailableNow}, one input file per batch).
   */
  static void oracle(SparkS3Harness h, String checkpoint, Path in, Path out) throws Exception {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.HDFS_PROVIDER);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    StreamingQuery q = CrashDriver.start(s, checkpoint, in, out, 0);
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
  }

  /**
   * Runs the query with Strata in a new driver JVM (local mode) on {@code h}'s S3 server, with
   * Strata's local directory {@code local}, {@code sinkSleepMs} in the sink per batch and the
   * Spark settings {@code conf} ({@code key=value}); asserts it exits 0 within {@code
   * timeoutSeconds}. The child's output goes to {@code log}.
   */
  static void inNewDriver(SparkS3Harness h, String checkpoint, Path in, Path out, Path local,
      long sinkSleepMs, Path log, long timeoutSeconds, String... conf) throws Exception {
    List<String> args = new ArrayList<>(List.of(h.s3.endpoint().toString(), checkpoint,
        in.toString(), out.toString(), local.toString(), "none", Long.toString(sinkSleepMs)));
    args.addAll(List.of(conf));
    int code;
    try (ChildJvm child = ChildJvm.start(CrashDriver.class, log, args.toArray(new String[0]))) {
      code = child.await(timeoutSeconds);
    }
    assertEquals(0, code, "the new driver ran the query to the end; log " + log);
  }
}
