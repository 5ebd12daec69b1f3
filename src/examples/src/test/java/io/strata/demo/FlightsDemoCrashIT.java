// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The flights demo's three stateful queries (routes, airport-hours with a watermark, distinct
 * flights) on the first 100,000 flights in a driver JVM ({@link FlightsCrashDriver}) checkpointed
 * through Strata to a real S3Proxy, halted in the middle of a commit by a named fault point
 * (after a version object's PUT, before the local ingest, in the second batch), then restarted on
 * the same checkpoint with every local directory wiped. Asserts: the run halted at its fault
 * point (exit 137); the restarted run resumed from the checkpoint (first batch &gt; 0), re-ran the
 * halted batch against the version object already in S3 (a later query run's create-only PUT
 * meets it and supersedes it in the next generation),
 * and its outputs equal a batch job over the same flights exactly (the demo's {@link
 * Verifier}).
 *
 * <p>{@code POINTS} lists the crashes in order, each followed by a restart on wiped local state;
 * one keeps the test short (every driver JVM starts Spark anew). Two, {@code
 * commit.duringPut@7} then {@code commit.afterPut@9}, passed with 6 input files (about 4 minutes
 * on 2 busy cores, against 2.5 for one).
 */
class FlightsDemoCrashIT {
  private static final long ROWS = 100_000;
  private static final int FILES = 5;
  /** Fault points armed in successive driver runs; see the class comment. */
  private static final String[] POINTS = {"commit.afterPut@8"};
  private static final String PARTITIONS = "2";
  private static final String BUCKET = "strata-demo-crash";
  private static final long CHILD_TIMEOUT_S = 300;

  @Test
  void flightsDemoHaltedMidCommitAndRestartedOnWipedLocalStateIsVerified(
      @TempDir Path tmp) throws Exception {
    Path data = FlightsData.locate(Optional.empty(),
        Path.of(System.getProperty("user.home"), ".cache", "strata"));
    Path logs = Files.createDirectories(Path.of("target", "crash-it-logs"));
    Path runDir = Files.createDirectories(tmp.resolve("run"));
    try (S3ProxyServer s3 = S3ProxyServer.start(tmp.resolve("s3"), Map.of())) {
      s3.createBucket(BUCKET);
      for (int i = 0; i < POINTS.length; i++) {
        String point = POINTS[i];
        Path log = logs.resolve("flights-crash-" + i + ".log");
        int code = runDriver(s3, runDir, data, point, log);
        String text = Files.readString(log);
        String name = point.substring(0, point.indexOf('@'));
        assertTrue(text.contains("strata fault point " + name + " reached"),
            "the driver reached " + point + " (exit " + code + "); log " + log);
        assertEquals(137, code, "the driver halted at " + point + "; log " + log);
        DemoFiles.deleteRecursively(runDir.resolve("local")); // what a lost machine loses
      }
      Path log = logs.resolve("flights-crash-final.log");
      int code = runDriver(s3, runDir, data, "none", log);
      String text = Files.readString(log);
      assertEquals(0, code, "the restarted queries finished and were verified; log " + log);
      assertTrue(text.contains("verified") && !text.contains("NOT verified"), text);
      assertTrue(text.contains("checked " + ROWS + " rows"), "checked every row; log " + log);
      // The halted commit's version object was in S3: the re-run of its batch, a later query
      // run, met it (412) and re-committed the version in the next generation, superseding it.
      assertTrue(java.util.regex.Pattern.compile("holds query run epoch [0-9]+'s commit; run "
          + "\\S+ \\(epoch [0-9]+\\) re-commits the version as generation [0-9]+")
          .matcher(text).find(),
          "the re-run found the version object the halted driver had written; log " + log);
    }
  }

  private static int runDriver(S3ProxyServer s3, Path runDir, Path data, String point, Path log)
      throws Exception {
    long t0 = System.nanoTime();
    int code;
    try (ChildJvm child = ChildJvm.start(FlightsCrashDriver.class, log,
        s3.endpoint().toString(), "s3://" + BUCKET + "/flights", runDir.toString(),
        data.toString(), Long.toString(ROWS), Integer.toString(FILES), PARTITIONS, point)) {
      code = child.await(CHILD_TIMEOUT_S);
    }
    System.out.printf("FlightsDemoCrashIT: driver with fault point %s exited %d after %d s%n",
        point, code, (System.nanoTime() - t0) / 1_000_000_000L);
    return code;
  }
}
