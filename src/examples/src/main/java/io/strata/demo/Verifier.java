// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.TimestampNTZType;

/**
 * Checks what the streams wrote against the same aggregates computed by a plain batch job over
 * the same flights.
 */
final class Verifier {
  private static final int SAMPLE = 5;

  /**
   * The outcome.
   *
   * @param rows flights in the input
   * @param routes routes in the batch answer
   * @param closedHours airport-hours whose window closed under the final watermark
   * @param allHours all airport-hours in the batch answer (the rest are still open)
   * @param distinctFlights distinct flight records in the batch answer
   * @param problems what differed; empty when verified
   */
  record Verification(
      long rows,
      long routes,
      long closedHours,
      long allHours,
      long distinctFlights,
      List<String> problems) {}

  private Verifier() {}

  /**
   * Compares the outputs under {@code outputDir} with batch answers over {@code source}.
   *
   * @param watermark the airport-hours query's final watermark (ISO-8601 instant, as in its
   *     progress); windows ending at or before it must have been emitted, the rest not
   * @param distinctStateRows the distinct query's state rows after its last batch, or -1
   */
  static Verification verify(
      SparkSession spark,
      Dataset<Row> source,
      String outputDir,
      String watermark,
      long distinctStateRows) {
    List<String> problems = new ArrayList<>();
    source = source.cache();
    long rows = source.count();

    // (a) route statistics: each route's latest Update-mode row equals the batch aggregate.
    Column[] routeCols = cols("origin", "destination", "flights", "total_delay", "max_delay",
        "total_distance");
    Dataset<Row> expectedRoutes = FlightQueries.routeStats(source).select(routeCols).cache();
    Dataset<Row> actualRoutes =
        FlightQueries.latestRoutes(
                FlightQueries.output(spark, outputDir, FlightQueries.ROUTES))
            .select(routeCols);
    long routes = expectedRoutes.count();
    compare("routes", expectedRoutes, actualRoutes, problems);

    // (b) airport-hours: Append mode emits each closed window exactly once, none still open.
    Dataset<Row> allHoursDs = FlightQueries.airportHours(source).cache();
    long allHours = allHoursDs.count();
    Column end = col("hour_end");
    Instant wm = Instant.parse(watermark);
    Object wmLiteral =
        allHoursDs.schema().apply("hour_end").dataType() instanceof TimestampNTZType
            ? LocalDateTime.ofInstant(wm, ZoneOffset.UTC)
            : java.sql.Timestamp.from(wm);
    Column[] hourCols = cols("hour_start", "hour_end", "origin", "flights", "total_delay");
    Dataset<Row> expectedHours = allHoursDs.where(end.leq(lit(wmLiteral))).select(hourCols);
    long closedHours = expectedHours.count();
    Dataset<Row> actualHours =
        FlightQueries.output(spark, outputDir, FlightQueries.AIRPORT_HOURS).select(hourCols);
    long emittedTwice =
        actualHours.groupBy("hour_start", "origin").count().where(col("count").gt(1)).count();
    if (emittedTwice > 0) {
      problems.add("airport_hours: " + emittedTwice + " windows were emitted more than once");
    }
    compare("airport_hours", expectedHours, actualHours, problems);

    // (c) distinct flights: every distinct record exactly once, nothing else. One shuffle:
    // group the emitted rows and the input rows together by all columns and count each side.
    Dataset<Row> emittedRows =
        FlightQueries.output(spark, outputDir, FlightQueries.DISTINCT_FLIGHTS)
            .select(cols(source.columns()))
            .withColumn("emitted", lit(1L))
            .withColumn("input", lit(0L));
    Dataset<Row> inputRows = source.withColumn("emitted", lit(0L)).withColumn("input", lit(1L));
    Row c =
        emittedRows
            .unionByName(inputRows)
            .groupBy(cols(source.columns()))
            .agg(sum("emitted").as("e"), sum("input").as("i"))
            .agg(
                sum(when(col("i").gt(0), 1L).otherwise(0L)).as("distinct"),
                sum(col("e")).as("emitted"),
                sum(when(col("e").gt(1), 1L).otherwise(0L)).as("twice"),
                sum(when(col("i").equalTo(0), 1L).otherwise(0L)).as("foreign"),
                sum(when(col("e").equalTo(0), 1L).otherwise(0L)).as("missing"))
            .first();
    long distinct = c.getLong(0);
    long emitted = c.getLong(1);
    long twice = c.getLong(2);
    long foreign = c.getLong(3);
    long missing = c.getLong(4);
    if (emitted != distinct || twice != 0 || foreign != 0 || missing != 0) {
      problems.add(
          String.format(
              "distinct_flights: emitted %,d rows for %,d distinct flights: %,d missing,"
                  + " %,d emitted more than once, %,d not in the input",
              emitted, distinct, missing, twice, foreign));
    }
    if (distinctStateRows >= 0 && distinctStateRows != distinct) {
      problems.add(
          String.format(
              "distinct_flights: the state store reports %,d state rows, expected %,d",
              distinctStateRows, distinct));
    }
    source.unpersist();
    expectedRoutes.unpersist();
    allHoursDs.unpersist();
    return new Verification(rows, routes, closedHours, allHours, distinct, problems);
  }

  private static void compare(
      String what, Dataset<Row> expected, Dataset<Row> actual, List<String> problems) {
    Dataset<Row> missing = expected.exceptAll(actual);
    Dataset<Row> extra = actual.exceptAll(expected);
    long m = missing.count();
    long x = extra.count();
    if (m == 0 && x == 0) {
      return;
    }
    StringBuilder sb =
        new StringBuilder(
            String.format(
                "%s: %,d expected rows missing or different, %,d unexpected rows", what, m, x));
    for (Row r : missing.takeAsList(SAMPLE)) {
      sb.append("\n    expected ").append(r);
    }
    for (Row r : extra.takeAsList(SAMPLE)) {
      sb.append("\n    got      ").append(r);
    }
    problems.add(sb.toString());
  }

  private static Column[] cols(String... names) {
    Column[] c = new Column[names.length];
    for (int i = 0; i < names.length; i++) {
      c[i] = col(names[i]);
    }
    return c;
  }
}
