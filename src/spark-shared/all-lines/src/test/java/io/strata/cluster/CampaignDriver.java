// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The driver of the fault campaign ({@link FaultCampaignIT}): a user's program, run in its own
 * JVM on the class path a user has (Spark's jars and the runtime jar, nothing of Strata's test
 * code but this class), so the campaign can kill it with SIGKILL, freeze it, and start it again.
 * It uses Spark's API only; Strata comes in through the settings file (as {@code
 * spark-defaults.conf} brings it).
 *
 * <p>Two queries over one file source ({@code maxFilesPerTrigger} 1: a file a batch, but two
 * after a driver died at the wrong moment; {@link CampaignBatches}), each through {@code
 * foreachBatch}, which
 * writes the batch's rows, sorted, to {@code <out>/<query>/<batchId>-<tag>.txt} (a new file per
 * run, written whole then moved into place), so every answer any run gave is kept:
 *
 * <ul>
 *   <li>{@value #DEDUP}: {@code dropDuplicates("id").groupBy("key").count()}, complete mode (two
 *       stateful operators; the deduplication state grows with the input);
 *   <li>{@value #WINDOWS}: a count per 10-second event-time window and key with a 20-second
 *       watermark, update mode (windows are evicted as the watermark passes them).
 * </ul>
 *
 * <p>Arguments: {@code settings input out checkpointBase stopFile tag}. {@code settings} is a
 * properties file of Spark settings; the queries run with a 2-second processing-time trigger
 * until the file {@code stopFile} exists, which holds, a line per query, {@code name=batchId}:
 * the batch each must have committed first. Exit codes: 0 stopped as asked, 3 a query failed (its error is printed).
 */
public final class CampaignDriver {
  /** The deduplicating count's name. */
  static final String DEDUP = "dedup_count";
  /** The windowed count's name. */
  static final String WINDOWS = "window_count";
  /** The input's schema: JSON lines of id, key, event time. */
  static final StructType SCHEMA = new StructType()
      .add("id", DataTypes.StringType)
      .add("key", DataTypes.StringType)
      .add("ts", DataTypes.TimestampType);

  private CampaignDriver() { }

  /**
   * Runs the queries as the class comment says, then exits.
   *
   * @param args {@code settings input out checkpointBase stopFile tag}
   */
  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (Throwable e) {
      e.printStackTrace();
      code = 3;
    }
    System.out.flush();
    System.exit(code);
  }

  private static int run(String[] args) throws Exception {
    Properties settings = new Properties();
    try (Reader r = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      settings.load(r);
    }
    String input = args[1];
    Path out = Paths.get(args[2]);
    String checkpointBase = args[3];
    Path stop = Paths.get(args[4]);
    String tag = args[5];
    SparkSession.Builder b = SparkSession.builder();
    settings.stringPropertyNames().forEach(k -> b.config(k, settings.getProperty(k)));
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    Dataset<Row> events = spark.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(input);
    List<StreamingQuery> queries = new ArrayList<>();
    for (String name : List.of(DEDUP, WINDOWS)) {
      queries.add(query(name, events).writeStream().queryName(name)
          .outputMode(DEDUP.equals(name) ? "complete" : "update")
          .trigger(Trigger.ProcessingTime("2 seconds"))
          .option("checkpointLocation", checkpointBase + "/" + name)
          .foreachBatch(writer(out.resolve(name), tag))
          .start());
    }
    System.out.println("campaign driver " + tag + ": queries started");
    while (true) {
      for (StreamingQuery q : queries) {
        if (!q.isActive()) {
          System.out.println("campaign driver " + tag + ": query " + q.name() + " stopped: "
              + (q.exception().isDefined() ? q.exception().get() : "no error"));
          if (q.exception().isDefined()) {
            q.exception().get().printStackTrace(System.out);
          }
          return 3;
        }
      }
      if (Files.exists(stop)) {
        Properties targets = new Properties();
        try (Reader r = Files.newBufferedReader(stop, StandardCharsets.UTF_8)) {
          targets.load(r);
        }
        String target = targets.toString();
        boolean done = true;
        for (StreamingQuery q : queries) {
          StreamingQueryProgress p = q.lastProgress();
          done &= p != null && p.batchId() >= Long.parseLong(targets.getProperty(q.name()));
        }
        if (done) {
          for (StreamingQuery q : queries) {
            q.stop();
          }
          spark.stop();
          System.out.println("campaign driver " + tag + ": stopped after batch " + target);
          return 0;
        }
      }
      Thread.sleep(500);
    }
  }

  /** The named query over {@code events} (a stream here, the same file source in the oracle). */
  static Dataset<Row> query(String name, Dataset<Row> events) {
    if (DEDUP.equals(name)) {
      return events.dropDuplicates("id").groupBy("key").count();
    }
    return events.withWatermark("ts", "20 seconds")
        .groupBy(functions.window(functions.col("ts"), "10 seconds"), functions.col("key"))
        .count();
  }

  /** A batch's rows as sorted lines, the form both the driver and the oracle compare. */
  static List<String> lines(Dataset<Row> batch) {
    List<String> lines = new ArrayList<>();
    for (Row r : batch.collectAsList()) {
      lines.add(r.toString());
    }
    Collections.sort(lines);
    return lines;
  }

  private static VoidFunction2<Dataset<Row>, Long> writer(Path dir, String tag) {
    return (batch, id) -> {
      List<String> lines = lines(batch);
      Files.createDirectories(dir);
      String name = String.format("%08d-%s.txt", id, tag);
      Path tmp = dir.resolve("." + name + ".tmp");
      Files.write(tmp, lines, StandardCharsets.UTF_8);
      Path target = dir.resolve(name);
      if (Files.exists(target)) { // the same batch again in this run: keep both answers
        target = dir.resolve(String.format("%08d-%s-%d.txt", id, tag, System.nanoTime()));
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    };
  }
}
