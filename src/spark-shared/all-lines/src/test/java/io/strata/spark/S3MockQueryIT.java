// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3MockServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 17, then issue 43: a stateful query on the second S3 server, Adobe's S3Mock ({@link
 * S3MockServer}), with the state and Spark's checkpoint files both on it through Strata. S3Mock
 * refuses a create-only PUT sent after another but lets several racing ones win, so Strata's
 * conditional-write probe refuses it: the query fails at once, before any batch, with an error
 * naming the endpoint, the bucket and how many racing writers won, and nothing is left under the
 * checkpoint. (Everything else against S3Mock: {@code S3MockObjectStoreIT}; the query on S3Proxy
 * is most of the other Spark tests.)
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

  @Test
  @Timeout(300)
  void aStatefulQueryOnS3MockFailsAtOnceNamingItsNonAtomicCreateOnlyWrites() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("s3mock-in"));
    Path out = h.work.resolve("s3mock-out");
    Path local = h.work.resolve("s3mock-local");
    String checkpoint = "s3a://" + BUCKET + "/query-" + UUID.randomUUID();
    for (int b = 0; b < 2; b++) {
      writeBatch(in, b);
    }
    long t0 = System.nanoTime();
    Throwable failure = null;
    try {
      // Spark writes the checkpoint's metadata file in start(): the probe may fail it there
      StreamingQuery q = CrashDriver.start(session(local), checkpoint, in, out, 0);
      q.awaitTermination();
    } catch (Exception e) {
      failure = e;
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(failure != null, "the query failed");
    StringWriter w = new StringWriter();
    failure.printStackTrace(new PrintWriter(w));
    String chain = w.toString();
    assertTrue(Pattern.compile("Cannot use S3 endpoint " + Pattern.quote(
        s3mock.endpoint().toString()) + " bucket " + BUCKET + " for Strata: [2-8] of 8 racing "
        + "create-only PUTs \\(If-None-Match: \\*\\) of the new key s3://" + BUCKET + "/")
        .matcher(chain).find(), chain);
    assertTrue(chain.contains("create-only write is not atomic"), chain);
    assertTrue(ms < 120_000, "failed at once: " + ms + " ms");
    assertEquals(0, BatchFiles.outputs(out).size(), "no batch ran");
    try (var admin = s3mock.client()) {
      String prefix = checkpoint.substring(("s3a://" + BUCKET + "/").length());
      assertEquals(List.of(), admin.listObjectsV2Paginator(b -> b.bucket(BUCKET).prefix(prefix))
          .contents().stream().map(o -> o.key()).toList(), "nothing left under the checkpoint");
    }
  }
}
