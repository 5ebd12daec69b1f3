// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * What one run of {@link FlightsDemo} found.
 *
 * @param verified true when the restarted streams' answer equals the batch answer
 * @param rows flights replayed
 * @param routes routes (origin, destination) checked
 * @param closedAirportHours airport-hour windows closed by the final watermark and checked
 * @param distinctFlights distinct flight records checked
 * @param problems what differed (empty when verified)
 * @param checkpoint the checkpoint root of the run
 * @param elapsed wall time of the run
 */
public record DemoResult(
    boolean verified,
    long rows,
    long routes,
    long closedAirportHours,
    long distinctFlights,
    List<String> problems,
    String checkpoint,
    Duration elapsed) {

  /**
   * Copies {@code problems}.
   *
   * @param verified true when the restarted streams' answer equals the batch answer
   * @param rows flights replayed
   * @param routes routes checked
   * @param closedAirportHours closed airport-hour windows checked
   * @param distinctFlights distinct flight records checked
   * @param problems what differed
   * @param checkpoint the checkpoint root of the run
   * @param elapsed wall time of the run
   */
  public DemoResult {
    problems = List.copyOf(problems);
  }

  /**
   * The verdict for the console.
   *
   * @return one line, {@code verified: 3,000,000 rows, 3,399 routes, ...}, or {@code NOT
   *     verified: ...} followed by one line per problem
   */
  public String summary() {
    String counts =
        String.format(
            Locale.ROOT,
            "%,d rows, %,d routes, %,d airport-hours, %,d distinct flights (%d s)",
            rows,
            routes,
            closedAirportHours,
            distinctFlights,
            elapsed.toSeconds());
    if (verified) {
      return "verified: " + counts;
    }
    return "NOT verified: " + counts + "\n  " + String.join("\n  ", problems);
  }
}
