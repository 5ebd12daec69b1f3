// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.expr;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.testkit.OnlyOnSparkLines;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Spark's state data source on Strata stores with column families: reading a
 * {@code transformWithState} store's state or change feed writes nothing into the checkpoint (the
 * data source loads a write store to declare the family, then aborts it, under a new run id per
 * scan; a claim of that run's epoch would stop the running query's garbage collection), and the
 * change feed of join state format 3's four families equals Spark's (last change per key and
 * batch).
 */
@OnlyOnSparkLines(value = {"4.0", "4.1"},
    reason = "Spark 4.2 allows transformWithState only with its own RocksDB provider")
class ChangeFeedColumnFamiliesIT {
  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(4, StreamingComparison::recurringKeys, 6, 3);

  /** Keys under the checkpoint's state/ directory ending with {@code suffix}. */
  private static List<String> stateKeys(String checkpoint, String suffix) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length())
        + "/state/";
    try (S3Client s3 = cmp.harness().s3.client()) {
      return s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(prefix))
          .contents().stream().map(o -> o.key().substring(prefix.length()))
          .filter(k -> k.endsWith(suffix)).sorted().toList();
    }
  }

  /**
   * Reads of a transformWithState store claim no query-run epoch ({@code runs/<e>.run}) in any
   * store: a claim by a later epoch stops the garbage collection of the running query's
   * instances (docs/format.md, "What a stale or concurrent instance can delete"), and a reader
   * may have no write permission.
   */
  @Test
  void readingStateAndChangesOfTransformWithStateClaimsNoEpoch() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("adv-tws", OutputMode.Update(),
        (in, r, run) -> in.withWatermark("ts", "10 seconds")
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .transformWithState(new TransformWithStateIT.EventTimeProcessor(),
                TimeMode.EventTime(), OutputMode.Update(), Encoders.STRING())
            .toDF("out"), Map.of()), SparkS3Harness.ROCKSDB_PROVIDER);
    List<String> before = stateKeys(res.checkpoint(), ".run");
    assertTrue(!before.isEmpty(), "the query's own runs claimed epochs: " + before);
    ChangeFeeds.read(cmp.harness(), res.checkpoint(),
        Map.of("stateVarName", "count", "changeStartBatchId", "0"), false);
    assertEquals(before, stateKeys(res.checkpoint(), ".run"),
        "a change-feed read claims no epoch in any store");
    cmp.harness().withS3A(() -> cmp.harness().spark.read().format("statestore")
        .option("stateVarName", "count").load(res.checkpoint()).collectAsList());
    assertEquals(before, stateKeys(res.checkpoint(), ".run"),
        "a state read claims no epoch in any store");
  }

  /**
   * Join state format 3 (Spark 4.1: four column families in one store): the change feed of
   * each family equals Spark's (last change per key and batch). Not covered by ChangeFeedIT
   * (format 2 only).
   */
  @Test
  void joinStateFormatV3ChangeFeed() throws Exception {
    Assumptions.assumeTrue(SparkApi.AT_LEAST_4_1, "join state format 3 is new in Spark 4.1");
    StreamingComparison.Result res = cmp.check(new QueryDef("adv-join-v3", OutputMode.Append(),
        (in, r, run) -> in.withWatermark("ts", "20 seconds")
            .join(r.withWatermark("rts", "20 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 15 seconds")),
        Map.of("spark.sql.streaming.join.stateFormatVersion", "3")),
        SparkS3Harness.ROCKSDB_PROVIDER);
    for (String store : List.of("left-keyToNumValues", "left-keyWithIndexToValue",
        "right-keyToNumValues", "right-keyWithIndexToValue")) {
      Map<String, String> o = Map.of("storeName", store, "changeStartBatchId", "0");
      List<String> strata = ChangeFeeds.read(cmp.harness(), res.checkpoint(), o, false);
      assertTrue(!strata.isEmpty(), "changes of " + store);
      assertEquals(ChangeFeeds.read(cmp.harness(), res.baselineCheckpoint(), o, true), strata,
          "change feed of " + store);
    }
  }
}
