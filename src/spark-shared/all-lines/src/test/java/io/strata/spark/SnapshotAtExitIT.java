// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.StoreLayout;
import io.strata.testkit.ChildJvm;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Issue 15: a one-batch run whose driver JVM exits while the base snapshot its cold load
 * scheduled is still uploading still publishes it. Spark closes no state store provider when a
 * JVM exits, so only Strata's shutdown hook ({@code UploadsAtExit}) lets the upload finish. Five
 * batches build a chain of 5 deltas (snapshot interval 100: no snapshot); then a new driver JVM
 * (local mode, snapshot interval 3, Strata's local directory left at its default: inside Spark's
 * local directories, which Spark's own shutdown hook deletes) runs one batch: its cold loads
 * replay 5 deltas and schedule a snapshot each, whose pack upload a {@link S3Relay} in front
 * of S3Proxy delays by {@value #DELAY_MS} ms, longer than the rest of the run; the driver exits
 * when the query ends. Asserted: the child exited normally, and each store has a published
 * snapshot of the version the run loaded, written seconds after the batch's output (so during
 * the JVM's exit), with which the next cold load replays one delta.
 */
@OncePerSparkLine(reason = "the upload at JVM exit is strata-core's shutdown hook "
    + "(UploadsAtExit), with no Scala on its path")
class SnapshotAtExitIT {
  private static final long DELAY_MS = 6_000;
  private static SparkS3Harness h;
  private static S3Relay proxy;
  private static S3Client admin;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    admin = h.s3.client();
    proxy = new S3Relay(h.s3.endpoint(), (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
  }

  @AfterAll
  static void stop() throws IOException {
    if (proxy != null) {
      proxy.close();
    }
    if (admin != null) {
      admin.close();
    }
    if (h != null) {
      h.close();
    }
  }

  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < 30; j++) {
      if ((j + b) % 3 != 0) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void aSnapshotStillUploadingWhenTheDriverExitsIsPublished() throws Exception {
    Path base = Files.createDirectories(h.work.resolve("at-exit-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    String ckpt = h.s3Checkpoint("at-exit");
    String prefix = ckpt.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    for (int b = 0; b < 5; b++) {
      writeBatch(in, b);
    }
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set("spark.sql.streaming.stateStore.strata.localDir",
        base.resolve("local-0").toString());
    s.conf().set("spark.sql.streaming.stateStore.strata.snapshotInterval", "100");
    StreamingQuery q = CrashDriver.start(s, ckpt, in, base.resolve("out-0"), 0);
    q.awaitTermination();
    assertTrue(q.exception().isEmpty(), "the first run: " + q.exception());
    Map<String, RestoreChains.Chain> before =
        RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefix);
    assertEquals(2, before.size(), "two stores: " + before);
    before.values().forEach(c -> assertEquals(5, c.restoreChain(), "a chain of 5: " + before));

    writeBatch(in, 5);
    proxy.delayMillis = DELAY_MS;
    proxy.rule(r -> r.isPut() && r.key().contains("/" + StoreLayout.PUBLISHED_SNAPSHOTS)
        ? Fault.DELAY : Fault.NONE);
    int delaysBefore = proxy.injected(Fault.DELAY);
    Path log = Files.createDirectories(Path.of("target", "snapshot-at-exit-logs"))
        .resolve("driver.log");
    int code;
    try (ChildJvm child = ChildJvm.start(CrashDriver.class, log, proxy.endpoint().toString(),
        ckpt, in.toString(), base.resolve("out-1").toString(),
        CrashDriver.SPARK_LOCAL_DIRS, "none", "0",
        "spark.sql.streaming.stateStore.strata.snapshotInterval=3")) {
      code = child.await(240);
    } finally {
      proxy.heal();
    }
    assertEquals(0, code, "the driver ran its one batch and exited; log " + log);
    assertEquals(2, proxy.injected(Fault.DELAY) - delaysBefore,
        "each store's snapshot upload (its one object) was delayed past the end of the run");
    Map<String, RestoreChains.Chain> after =
        RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefix);
    for (Map.Entry<String, RestoreChains.Chain> e : after.entrySet()) {
      assertEquals(6, e.getValue().version(), e.getKey());
      assertEquals(1, e.getValue().publishedSnapshots(),
          e.getKey() + ": the snapshot of version 5 was published before the JVM exited");
      assertEquals(1, e.getValue().restoreChain(),
          e.getKey() + ": the next cold load replays one delta: " + e.getValue());
    }
    assertEquals(java.util.List.of(), CheckpointAudit.missingNamedObjects(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefix));
    assertEquals(java.util.List.of(), RestoreChains.missingPublishedFiles(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefix), "every published snapshot's files exist");
    // The scenario is the intended one: each published snapshot was written well after the
    // batch's output, when only the JVM's exit was left to do.
    long batchDone = Files.getLastModifiedTime(base.resolve("out-1").resolve("batch-5.txt"))
        .toMillis();
    Path state = h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix).resolve("state");
    try (java.util.stream.Stream<Path> files = Files.walk(state)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".bsm")).toList()) {
        long at = Files.getLastModifiedTime(f).toMillis();
        assertTrue(at - batchDone >= 2_000, f + " was written " + (at - batchDone)
            + " ms after the batch's output: the upload outlasted the batch");
      }
    }
  }
}
