// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.apache.spark.sql.functions.col;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The replayed input: the flights (optionally only the first N by date) split by date into
 * parquet files {@code flights-000.parquet}, {@code flights-001.parquet}, ... whose modification
 * times increase with the date, so a file stream with {@code maxFilesPerTrigger=1} replays them
 * in event-time order, one file per micro-batch.
 */
final class FlightsInput {
  private FlightsInput() {}

  /**
   * The flights to replay. With {@code maxRows > 0}, the first {@code maxRows} rows in a total
   * order on all columns (date first), so that every evaluation picks the same rows.
   */
  static Dataset<Row> source(SparkSession spark, Path data, long maxRows) {
    // The file has date as TIMESTAMP_NTZ; watermarks need TIMESTAMP. The session time zone is
    // UTC, so the cast keeps the wall-clock values.
    Dataset<Row> all =
        spark
            .read()
            .parquet(data.toAbsolutePath().toString())
            .withColumn("date", col("date").cast("timestamp"));
    if (maxRows <= 0) {
      return all;
    }
    return all.orderBy(
            col("date"), col("origin"), col("destination"), col("delay"), col("distance"))
        .limit((int) Math.min(Integer.MAX_VALUE, maxRows));
  }

  /**
   * Splits {@code source} by date range into about {@code files} parquet files {@code
   * flights-000.parquet}, ... in {@code dir} (equal dates stay in one file, so file i+1 never
   * holds an earlier date than file i), with modification times one second apart in date order.
   *
   * @return the files in date order
   */
  static List<Path> split(Dataset<Row> source, int files, Path dir) throws IOException {
    Path staging = dir.resolveSibling(dir.getFileName() + "-staging");
    DemoFiles.deleteRecursively(staging);
    DemoFiles.deleteRecursively(dir);
    source
        .repartitionByRange(files, col("date"))
        .sortWithinPartitions(col("date"))
        .write()
        .parquet(staging.toString());
    List<Path> parts = new ArrayList<>();
    try (DirectoryStream<Path> s = Files.newDirectoryStream(staging, "part-*.parquet")) {
      s.forEach(parts::add);
    }
    parts.sort(null); // part-00000-..., part-00001-...: the range partitions in date order
    Files.createDirectories(dir);
    List<Path> result = new ArrayList<>();
    long base = System.currentTimeMillis() - parts.size() * 1000L;
    for (int i = 0; i < parts.size(); i++) {
      Path target = dir.resolve(String.format("flights-%03d.parquet", i));
      Files.move(parts.get(i), target);
      Files.setLastModifiedTime(target, FileTime.fromMillis(base + i * 1000L));
      result.add(target);
    }
    DemoFiles.deleteRecursively(staging);
    return result;
  }

  /** Moves files into the stream's input directory, keeping their modification times. */
  static void publish(List<Path> files, Path inputDir) throws IOException {
    Files.createDirectories(inputDir);
    for (Path f : files) {
      Files.move(f, inputDir.resolve(f.getFileName()));
    }
  }
}
