// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The flights demo end to end on the first 200,000 flights: a real S3-compatible server
 * (S3Proxy in a child JVM), real Spark, the state store provider under test (Strata's unless the
 * system property {@code strata.demo.provider} names another), a restart from the checkpoint
 * with all local state wiped, and the check against a batch job.
 */
class FlightsDemoIT {
  private static final long ROWS = 200_000;

  @Test
  void restartedStreamsMatchTheBatchAnswer(@TempDir Path tmp) throws Exception {
    String provider = System.getProperty("strata.demo.provider", DemoOptions.STRATA_PROVIDER);

    DemoResult result =
        FlightsDemo.run(
            System.out,
            "--provider", provider,
            "--max-rows", Long.toString(ROWS),
            "--files", "8",
            "--partitions", "4",
            "--work-dir", tmp.resolve("work").toString());

    assertTrue(result.verified(), result::summary);
    assertEquals(ROWS, result.rows(), "rows replayed");
    assertTrue(result.routes() > 3_000, "routes checked: " + result.routes());
    assertTrue(
        result.closedAirportHours() > 20_000,
        "airport-hours checked: " + result.closedAirportHours());
    assertTrue(
        result.distinctFlights() > ROWS * 99 / 100,
        "distinct flights checked: " + result.distinctFlights());
    assertTrue(result.checkpoint().startsWith("s3://strata-demo/"), result.checkpoint());
  }
}
