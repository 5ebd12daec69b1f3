// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/**
 * Spark 4.1+'s commit validation with Strata: a stateful {@code foreachBatch} query (the only
 * kind Spark validates) fails a batch with {@code STATE_STORE_COMMIT_VALIDATION_FAILED} unless
 * every store reported its commit to the driver's state store coordinator. Strata reports through
 * a coordinator reference it keeps per {@code SparkEnv} ({@link CoordinatorReports}); this runs
 * the query in one {@code SparkContext}, stops it, and resumes the same checkpoint in a second
 * one in the same JVM, where a reference kept from the first would point at a stopped RPC
 * environment. Every batch of both runs must pass validation and equal, batch by batch, the
 * output of Spark's RocksDB provider on the same input.
 */
class CommitValidationIT {
  private static final Map<String, SortedMap<Long, List<String>>> OUTPUT =
      new ConcurrentHashMap<>();
  private static final StructType SCHEMA = new StructType().add("ts", "timestamp")
      .add("key", "string").add("value", "long");

  @Test
  void everyBatchPassesValidationAcrossANewSparkContextAndEqualsSparksProvider()
      throws Exception {
    try (SparkS3Harness h = new SparkS3Harness(4)) {
      Path in = Files.createDirectories(h.work.resolve("in"));
      Path right = Files.createDirectories(h.work.resolve("right"));
      String strata = h.s3Checkpoint("validated");
      String baseline = h.fileCheckpoint("validated-rocksdb");
      StreamingComparison.recurringKeys(in, right, 0, 4);
      SparkSession first = h.spark;
      assertEquals("true", first.conf().get(
          "spark.sql.streaming.stateStore.commitValidation.enabled", "true"),
          "commit validation is on (Spark's default)");
      run(first, SparkS3Harness.PROVIDER, strata, in, "strata");
      run(first, SparkS3Harness.ROCKSDB_PROVIDER, baseline, in, "rocksdb");
      SparkEnv firstEnv = SparkEnv.get();

      SparkConf conf = first.sparkContext().getConf().clone();
      first.stop();
      SparkSession.clearActiveSession();
      SparkSession.clearDefaultSession();
      SparkSession second = SparkSession.builder().config(conf).getOrCreate();
      try {
        second.sparkContext().setLogLevel("WARN");
        assertNotSame(firstEnv, SparkEnv.get(), "a new SparkContext, a new SparkEnv");
        StreamingComparison.recurringKeys(in, right, 4, 8);
        run(second, SparkS3Harness.PROVIDER, strata, in, "strata");
        run(second, SparkS3Harness.ROCKSDB_PROVIDER, baseline, in, "rocksdb");
      } finally {
        second.stop();
      }
      SortedMap<Long, List<String>> expected = OUTPUT.get("rocksdb");
      assertEquals(8, expected.size(), "eight batches: " + expected.keySet());
      assertEquals(expected, OUTPUT.get("strata"), "batch by batch, as Spark's RocksDB provider");
      assertTrue(expected.values().stream().allMatch(rows -> !rows.isEmpty()),
          "every batch updated some counts");
    } finally {
      OUTPUT.clear();
    }
  }

  /**
   * One {@code AvailableNow} run of the counting query on {@code provider}; throws the query's
   * failure, which is where a batch that failed commit validation shows.
   */
  private static void run(SparkSession spark, String provider, String checkpoint, Path in,
      String name) throws Exception {
    OUTPUT.computeIfAbsent(name, n -> new ConcurrentSkipListMap<>());
    SparkSession session = spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    session.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    Dataset<Row> counts = session.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString()).groupBy("key").count();
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> rows = new ArrayList<>();
      for (Row r : df.collectAsList()) {
        rows.add(r.toString());
      }
      rows.sort(null);
      OUTPUT.get(name).put(batchId, rows);
    };
    StreamingQuery query = counts.writeStream().outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .foreachBatch(sink)
        .start();
    query.awaitTermination();
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
  }
}
