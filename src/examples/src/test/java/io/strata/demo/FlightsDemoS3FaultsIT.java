// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.checkpoint.CheckpointRequests;
import io.strata.metrics.RequestCounter;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The flights demo (its three stateful queries, the stop halfway, the restart on wiped local
 * state and the check against a batch job) on the first 100,000 flights, with all of its S3
 * traffic (the state and Spark's own checkpoint files) going through a {@link S3Relay} in
 * front of a real S3Proxy that answers about 10 % of the requests with 503 SlowDown, 500
 * InternalError or a connection reset. Asserts: the demo's own verification passes (the streams'
 * answer equals the batch answer exactly), some faults hit state store objects, and the SDK's
 * retries show in Strata's {@code strataS3FailedAttempts} metric (state stores) and in {@link
 * CheckpointRequests} (Spark's checkpoint files). Strata's S3 settings are the defaults (10
 * attempts, 30 s per attempt, 2 min per call).
 */
class FlightsDemoS3FaultsIT {
  private static final long ROWS = 100_000;
  private static final String BUCKET = "strata-demo-faults";

  @Test
  void flightsDemoUnderTenPercentS3FaultsIsVerified(@TempDir Path tmp) throws Exception {
    try (S3ProxyServer s3 = S3ProxyServer.start(tmp.resolve("s3"), Map.of());
        S3Client admin = s3.client()) {
      s3.createBucket(BUCKET);
      try (S3Relay proxy =
          new S3Relay(s3.endpoint(), (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)))) {
        proxy.rule(S3Relay.randomShare(0.10, 11, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR,
            Fault.RESET));
        StrataS3MetricsListener.reset();
        RequestCounter.Counts checkpointBefore = CheckpointRequests.snapshot();
        DemoResult result =
            FlightsDemo.run(
                System.out,
                "--checkpoint", "s3://" + BUCKET + "/demo",
                "--endpoint", proxy.endpoint().toString(),
                "--region", "us-east-1",
                "--access-key", S3ProxyServer.ACCESS_KEY,
                "--secret-key", S3ProxyServer.SECRET_KEY,
                "--path-style",
                "--max-rows", Long.toString(ROWS),
                "--files", "6",
                "--partitions", "2",
                "--work-dir", tmp.resolve("work").toString(),
                "--conf", "spark.sql.streaming.streamingQueryListeners="
                    + StrataS3MetricsListener.class.getName());
        proxy.heal();
        RequestCounter.Counts checkpointFiles =
            CheckpointRequests.snapshot().minus(checkpointBefore);

        List<S3Relay.Seen> seen = proxy.seen();
        long faults = seen.stream().filter(s -> s.fault() != Fault.NONE).count();
        long stateFaults = seen.stream()
            .filter(s -> s.fault() != Fault.NONE && s.request().key().contains("/state/"))
            .count();
        System.out.printf("FlightsDemoS3FaultsIT: %d requests through the proxy, %d faults"
            + " (%d on state objects); %d batches, strataS3Requests %d,"
            + " strataS3FailedAttempts %d; checkpoint-file attempts %d, failed %d%n", seen.size(),
            faults, stateFaults, StrataS3MetricsListener.batches(),
            StrataS3MetricsListener.requests(), StrataS3MetricsListener.failedAttempts(),
            checkpointFiles.total(), checkpointFiles.failed());

        assertTrue(result.verified(), result::summary);
        assertEquals(ROWS, result.rows(), "rows replayed");
        assertTrue(faults >= seen.size() / 20,
            "about 10 % of the requests failed: " + faults + " of " + seen.size());
        assertTrue(stateFaults > 0, "some failures hit the state store's requests");
        assertTrue(StrataS3MetricsListener.batches() > 0, "the metrics listener saw the batches");
        assertTrue(StrataS3MetricsListener.failedAttempts() > 0,
            "the retries show in strataS3FailedAttempts");
        assertTrue(checkpointFiles.failed() > 0,
            "retries of Spark's checkpoint files show in CheckpointRequests: " + checkpointFiles);
      }
    }
  }
}
