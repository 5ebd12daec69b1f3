// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.CredentialsFiles;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 17: keys rotated under a running query. The query ({@link CrashDriver}'s count per key,
 * state and checkpoint files on S3 through Strata) takes its S3 keys from a credentials file
 * through the {@code profile} provider ({@code s3.credentialsProvider=profile}, {@code
 * s3.credentialsFile}). Mid-query the S3 server is stopped and started again on the same port
 * and objects accepting only new keys, and the file is rewritten with them; the same query goes
 * on with its next batches, then a restart from the checkpoint goes on again. Every batch's
 * output equals that of Spark's HDFS-backed provider on the same input.
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "the credentials providers are strata-core's and "
    + "the same on every line; one line shows a query across a rotation")
class CredentialRotationQueryIT {
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final String BUCKET = "strata-rotation";
  private static SparkS3Harness h;
  private static S3ProxyServer server;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    server = S3ProxyServer.start(h.work.resolve("rotation-s3"), Map.of());
    server.createBucket(BUCKET);
  }

  @AfterAll
  static void stop() throws IOException {
    if (server != null) {
      server.close();
    }
    if (h != null) {
      h.close();
    }
  }

  /** Batch b's input: keys k0..k9, key kj (j + b) % 3 + 1 times. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < 10; j++) {
      for (int n = 0; n <= (j + b) % 3; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  private static SparkSession session(Path credentials) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set(STRATA + "s3.endpoint", server.endpoint().toString());
    s.conf().unset(STRATA + "s3.accessKeyId");
    s.conf().unset(STRATA + "s3.secretAccessKey");
    s.conf().set(STRATA + "s3.credentialsProvider", "profile");
    s.conf().set(STRATA + "s3.credentialsFile", credentials.toString());
    s.conf().set(STRATA + "s3.profile", "strata");
    s.conf().set(STRATA + "localDir", h.work.resolve("rotation-local").toString());
    return s;
  }

  @Test
  @Timeout(300)
  void aQueryGoesOnExactlyAcrossRotatedKeysWithoutARestart() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("rotation-in"));
    Path out = h.work.resolve("rotation-out");
    Path credentials = h.work.resolve("rotation-credentials");
    CredentialsFiles.write(credentials, "strata", S3ProxyServer.ACCESS_KEY,
        S3ProxyServer.SECRET_KEY,
        Instant.now().minusSeconds(60));
    String checkpoint = "s3a://" + BUCKET + "/rotation-" + UUID.randomUUID();

    for (int b = 0; b < 3; b++) {
      writeBatch(in, b);
    }
    StreamingQuery q = CrashDriver.start(session(credentials), checkpoint, in, out, 0,
        Trigger.ProcessingTime("100 milliseconds"));
    q.processAllAvailable();
    assertEquals(3, BatchFiles.outputs(out).size(), "batches 0-2 before the rotation");

    // Rotate: the server comes back accepting only the new keys, the file holds them.
    int port = server.port();
    server.close();
    CredentialsFiles.write(credentials, "strata", "rotated-key", "rotated-secret", Instant.now());
    Thread.sleep(2_000); // longer than the SDK's check of the file's time (about a second)
    server = S3ProxyServer.start(h.work.resolve("rotation-s3"),
        Map.of("s3proxy.identity", "rotated-key", "s3proxy.credential", "rotated-secret"), port);

    for (int b = 3; b < 6; b++) {
      writeBatch(in, b);
    }
    q.processAllAvailable();
    assertTrue(q.isActive(), "the same query runs on");
    assertFalse(q.exception().isDefined(), () -> "no failure: " + q.exception().get());
    q.stop();

    // A restart from the checkpoint reads it with the rotated keys too.
    writeBatch(in, 6);
    StreamingQuery again = CrashDriver.start(session(credentials), checkpoint, in, out, 0);
    again.awaitTermination();
    assertFalse(again.exception().isDefined(), () -> "no failure: " + again.exception().get());

    Path oracleOut = h.work.resolve("rotation-oracle-out");
    DriverRuns.oracle(h, h.work.resolve("rotation-oracle-ckpt").toString(), in, oracleOut);
    assertEquals(7, BatchFiles.outputs(oracleOut).size());
    assertEquals(BatchFiles.outputs(oracleOut), BatchFiles.outputs(out),
        "every batch as Spark's HDFS-backed provider has it");
  }
}
