// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3MockServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 17: the same stateful query on the second S3 server, Adobe's S3Mock ({@link
 * S3MockServer}), with the state and Spark's checkpoint files both on it through Strata. The
 * query ({@link CrashDriver}'s count per key, one input file per batch) runs to the end of its
 * input, stops, and is started again from the checkpoint with Strata's local directory wiped, so
 * the second run restores every store from S3Mock alone; every batch's output equals that of
 * Spark's HDFS-backed provider on the same input. (The same query on S3Proxy is most of the
 * other Spark tests.)
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "the object store is strata-core's and the same on "
    + "every line; one line runs the query on the second server")
class S3MockQueryIT {
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final String BUCKET = "strata-s3mock";
  private static SparkS3Harness h;
  private static S3MockServer s3mock;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    s3mock = S3MockServer.start(h.work.resolve("s3mock"));
    s3mock.createBucket(BUCKET);
  }

  @AfterAll
  static void stop() throws IOException {
    if (s3mock != null) {
      s3mock.close();
    }
    if (h != null) {
      h.close();
    }
  }

  /** Batch b's input: keys k0..k11, key kj (j * b) % 4 + 1 times, k(b) absent. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < 12; j++) {
      if (j == b) {
        continue;
      }
      for (int n = 0; n <= (j * b) % 4; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  private static SparkSession session(Path local) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set(STRATA + "s3.endpoint", s3mock.endpoint().toString());
    s.conf().set(STRATA + "s3.accessKeyId", s3mock.accessKey());
    s.conf().set(STRATA + "s3.secretAccessKey", s3mock.secretKey());
    s.conf().set(STRATA + "localDir", local.toString());
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    return s;
  }

  private static void run(SparkSession s, String checkpoint, Path in, Path out) throws Exception {
    StreamingQuery q = CrashDriver.start(s, checkpoint, in, out, 0);
    q.awaitTermination();
    assertFalse(q.exception().isDefined(), () -> "no failure: " + q.exception().get());
  }

  private static void wipe(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  @Test
  @Timeout(300)
  void aStatefulQueryRestartedOnWipedLocalDisksIsExactOnS3Mock() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("s3mock-in"));
    Path out = h.work.resolve("s3mock-out");
    Path local = h.work.resolve("s3mock-local");
    String checkpoint = "s3a://" + BUCKET + "/query-" + UUID.randomUUID();
    for (int b = 0; b < 4; b++) {
      writeBatch(in, b);
    }
    run(session(local), checkpoint, in, out);
    assertEquals(4, BatchFiles.outputs(out).size(), "batches 0-3 in the first run");

    wipe(local);
    for (int b = 4; b < 8; b++) {
      writeBatch(in, b);
    }
    run(session(local), checkpoint, in, out);

    Path oracleOut = h.work.resolve("s3mock-oracle-out");
    DriverRuns.oracle(h, h.work.resolve("s3mock-oracle-ckpt").toString(), in, oracleOut);
    assertEquals(8, BatchFiles.outputs(oracleOut).size());
    assertEquals(BatchFiles.outputs(oracleOut), BatchFiles.outputs(out),
        "every batch as Spark's HDFS-backed provider has it");
    try (var admin = s3mock.client()) {
      String prefix = checkpoint.substring(("s3a://" + BUCKET + "/").length());
      assertTrue(admin.listObjectsV2Paginator(b -> b.bucket(BUCKET).prefix(prefix + "/state/"))
          .contents().stream().findAny().isPresent(), "the state is on S3Mock");
      assertTrue(admin.listObjectsV2Paginator(b -> b.bucket(BUCKET).prefix(prefix + "/commits/"))
          .contents().stream().findAny().isPresent(), "Spark's commit log is on S3Mock");
    }
  }
}
