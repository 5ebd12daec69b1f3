// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.apache.spark.sql.functions.avg;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.row_number;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;

import java.util.List;
import java.util.concurrent.TimeoutException;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.Window;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The demo's three stateful queries, each usable on a stream and on a batch DataFrame so the
 * check compares like with like. Each runs as its own streaming query (Spark allows one stateful
 * chain per Update-mode query) with its own checkpoint, writing every micro-batch's output to
 * {@code <output>/<query>/batch=<id>} (overwritten when a batch is re-run after the restart).
 */
final class FlightQueries {
  /** Per route (origin, destination): flights, total and max delay, total distance; Update. */
  static final String ROUTES = "routes";

  /** Per airport (origin) and hour: flights, total and average delay; watermark, Append. */
  static final String AIRPORT_HOURS = "airport_hours";

  /** Every distinct flight record, state never evicted (~3M keys); Append. */
  static final String DISTINCT_FLIGHTS = "distinct_flights";

  static final List<String> ALL = List.of(ROUTES, AIRPORT_HOURS, DISTINCT_FLIGHTS);

  /** Watermark delay on {@code date}. The input files are in date order, so nothing is late. */
  static final String WATERMARK_DELAY = "1 hour";

  private FlightQueries() {}

  static Dataset<Row> routeStats(Dataset<Row> flights) {
    return flights
        .groupBy(col("origin"), col("destination"))
        .agg(
            count(lit(1)).as("flights"),
            sum("delay").as("total_delay"),
            avg("delay").as("avg_delay"),
            max("delay").as("max_delay"),
            sum("distance").as("total_distance"));
  }

  static Dataset<Row> airportHours(Dataset<Row> flights) {
    return flights
        .groupBy(window(col("date"), "1 hour").as("hour"), col("origin"))
        .agg(
            count(lit(1)).as("flights"),
            sum("delay").as("total_delay"),
            avg("delay").as("avg_delay"))
        .select(
            col("hour.start").as("hour_start"),
            col("hour.end").as("hour_end"),
            col("origin"),
            col("flights"),
            col("total_delay"),
            col("avg_delay"));
  }

  static Dataset<Row> distinctFlights(Dataset<Row> flights) {
    return flights.dropDuplicates();
  }

  /**
   * Starts one query on {@code stream}.
   *
   * @param outputDir local directory (a path string) for the per-batch outputs
   */
  static StreamingQuery start(
      String name, Dataset<Row> stream, String checkpoint, String outputDir, Trigger trigger)
      throws TimeoutException {
    Dataset<Row> result;
    OutputMode mode;
    switch (name) {
      case ROUTES -> {
        result = routeStats(stream);
        mode = OutputMode.Update();
      }
      case AIRPORT_HOURS -> {
        result = airportHours(stream.withWatermark("date", WATERMARK_DELAY));
        mode = OutputMode.Append();
      }
      case DISTINCT_FLIGHTS -> {
        result = distinctFlights(stream);
        mode = OutputMode.Append();
      }
      default -> throw new IllegalArgumentException("Unknown query " + name);
    }
    String dir = outputDir + "/" + name;
    VoidFunction2<Dataset<Row>, Long> sink =
        (batch, batchId) ->
            batch.write().mode(SaveMode.Overwrite).parquet(dir + "/batch=" + batchId);
    return result
        .writeStream()
        .queryName(name)
        .outputMode(mode)
        .trigger(trigger)
        .option("checkpointLocation", checkpoint)
        .foreachBatch(sink)
        .start();
  }

  /** Everything query {@code name} wrote, with a {@code batch} column. */
  static Dataset<Row> output(SparkSession spark, String outputDir, String name) {
    return spark.read().parquet(outputDir + "/" + name);
  }

  /** The route table as the stream left it: each route's row from its latest batch. */
  static Dataset<Row> latestRoutes(Dataset<Row> routesOutput) {
    return routesOutput
        .withColumn(
            "rank",
            row_number()
                .over(
                    Window.partitionBy(col("origin"), col("destination"))
                        .orderBy(col("batch").desc())))
        .where(col("rank").equalTo(1))
        .drop("rank", "batch");
  }
}
