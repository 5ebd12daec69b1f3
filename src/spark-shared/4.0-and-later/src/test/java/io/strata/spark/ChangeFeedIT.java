// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.window;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.spark.StreamingComparison.QueryDef;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Spark's state data source reads the change feed ({@code readChangeFeed}) and the state of a
 * batch from a snapshot ({@code snapshotStartBatchId}) of a Strata checkpoint exactly as of the
 * same query's checkpoint with Spark's RocksDB provider with changelog checkpointing (Spark 4.0+:
 * {@code SupportsFineGrainedReplay}): puts of an aggregation, puts and evictions (deletes) of a
 * windowed aggregation in append mode and of {@code dropDuplicatesWithinWatermark}, across the
 * restart halfway ({@link StreamingComparison}).
 */
class ChangeFeedIT {
  private static final int BATCHES = 6;

  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(3, StreamingComparison::recurringKeys, BATCHES, 3);

  /** The change feed's rows of a checkpoint, as sorted strings. */
  private static List<String> changes(String checkpoint, Map<String, String> options) {
    return ChangeFeeds.read(cmp.harness(), checkpoint, options, false);
  }

  /** The state rows of a batch in one partition (all for -1), as sorted strings. */
  private static List<String> state(String checkpoint, Map<String, String> options,
      int partition) {
    List<String> rows = new ArrayList<>();
    List<Row> read = cmp.harness().withS3A(() -> cmp.harness().spark.read().format("statestore")
        .options(options).load(checkpoint).collectAsList());
    for (Row r : read) {
      if (partition < 0 || r.getInt(r.length() - 1) == partition) {
        rows.add(r.toString());
      }
    }
    rows.sort(null);
    return rows;
  }

  private static void assertSameFeeds(StreamingComparison.Result res, boolean expectDeletes) {
    for (Map<String, String> range : List.of(Map.of("changeStartBatchId", "0"),
        Map.of("changeStartBatchId", "2", "changeEndBatchId", "4"),
        Map.of("changeStartBatchId", String.valueOf(BATCHES - 1)))) {
      List<String> baseline = changes(res.baselineCheckpoint(), range);
      List<String> strata = changes(res.checkpoint(), range);
      assertTrue(!baseline.isEmpty(), "the baseline has changes for " + range);
      assertEquals(baseline, strata, "change feed " + range);
      if (expectDeletes && range.size() == 1 && range.get("changeStartBatchId").equals("0")) {
        assertTrue(strata.stream().anyMatch(s -> s.contains(",delete,")),
            "evictions appear as deletes: " + strata);
      }
    }
  }

  @Test
  void aggregationUpdateMode() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("cf-agg", OutputMode.Update(),
        (in, right) -> in.groupBy(col("key")).agg(count("*").as("n"))),
        SparkS3Harness.ROCKSDB_PROVIDER);
    assertSameFeeds(res, false);
    // Without hadoop-aws: Strata's read-only file system instead of S3A, same rows.
    Map<String, String> all = Map.of("changeStartBatchId", "0");
    assertEquals(changes(res.checkpoint(), all),
        ChangeFeeds.read(cmp.harness(), res.checkpoint(), all, false, true),
        "change feed through StrataS3FileSystem");
    List<String> viaS3a = state(res.checkpoint(), Map.of(), 1);
    List<String> viaStrata = cmp.harness().withStrataFileSystem(() -> {
      List<String> rows = new ArrayList<>();
      for (Row r : cmp.harness().spark.read().format("statestore").load(res.checkpoint())
          .collectAsList()) {
        if (r.getInt(r.length() - 1) == 1) {
          rows.add(r.toString());
        }
      }
      rows.sort(null);
      return rows;
    });
    assertTrue(!viaS3a.isEmpty(), "state rows in partition 1");
    assertEquals(viaS3a, viaStrata, "state through StrataS3FileSystem");
    cmp.harness().withStrataFileSystem(() -> {
      try {
        org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(res.checkpoint());
        org.apache.hadoop.fs.FileSystem fs = root.getFileSystem(
            cmp.harness().spark.sessionState().newHadoopConf());
        assertEquals("io.strata.checkpoint.StrataS3FileSystem", fs.getClass().getName());
        assertTrue(fs.getFileStatus(new org.apache.hadoop.fs.Path(root, "state/0")).isDirectory());
        assertTrue(fs.getFileStatus(new org.apache.hadoop.fs.Path(root, "commits/0")).isFile());
        UnsupportedOperationException e = org.junit.jupiter.api.Assertions.assertThrows(
            UnsupportedOperationException.class,
            () -> fs.delete(new org.apache.hadoop.fs.Path(root, "commits/0"), false));
        assertTrue(e.getMessage().contains("read-only"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(java.io.FileNotFoundException.class,
            () -> fs.getFileStatus(new org.apache.hadoop.fs.Path(root, "no-such-dir")));
        fs.close();
        return null;
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    String s3 = "s3://" + res.checkpoint().substring("s3a://".length());
    cmp.harness().spark.conf().set("fs.s3.impl", "io.strata.checkpoint.StrataS3FileSystem");
    try {
      assertEquals(changes(res.checkpoint(), all),
          ChangeFeeds.read(cmp.harness(), s3, all, false, true), "change feed of " + s3);
    } finally {
      cmp.harness().spark.conf().unset("fs.s3.impl");
    }
    for (String[] batchAndStart : new String[][] {{"2", "0"}, {"5", "3"}}) {
      String batch = batchAndStart[0];
      for (int p = 0; p < 3; p++) {
        Map<String, String> o = Map.of("batchId", batch, "snapshotStartBatchId",
            batchAndStart[1], "snapshotPartitionId", String.valueOf(p));
        List<String> expected = state(res.baselineCheckpoint(), Map.of("batchId", batch), p);
        assertTrue(!expected.isEmpty(), "state rows in partition " + p);
        assertEquals(expected, state(res.checkpoint(), o, p),
            "state of batch " + batch + ", partition " + p + ", read from a snapshot");
      }
    }
  }

  /**
   * A driver JVM without hadoop-aws on its classpath reads the state and the change feed of a
   * Strata checkpoint through {@code StrataS3FileSystem}, set at launch as docs/operations.md
   * says, and gets the rows this JVM reads through S3A.
   */
  @Test
  @io.strata.testkit.OnlyOnSparkLines(value = "4.1", reason = "a second driver JVM: "
      + "StrataS3FileSystem is the same Java on every line, and RepartitionIT reads the state "
      + "data source through it on 4.0 and 4.2")
  void aDriverWithoutHadoopAwsReadsStateAndChanges() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("cf-no-hadoop-aws",
        OutputMode.Update(), (in, right) -> in.groupBy(col("key")).agg(count("*").as("n"))),
        SparkS3Harness.ROCKSDB_PROVIDER);
    java.nio.file.Path work = java.nio.file.Files.createTempDirectory("state-reader");
    java.nio.file.Path out = work.resolve("out");
    try (io.strata.testkit.ChildJvm reader = io.strata.testkit.ChildJvm.start(
        StateReadDriver.class, work.resolve("reader.log"),
        cmp.harness().s3.endpoint().toString(), res.checkpoint(), out.toString(),
        work.resolve("work").toString())) {
      assertEquals(0, reader.await(300), "the reader finishes; log " + reader.log);
    }
    assertEquals("absent", java.nio.file.Files.readString(out.resolve("hadoop-aws.txt")));
    assertEquals(state(res.checkpoint(), Map.of(), -1),
        java.nio.file.Files.readAllLines(out.resolve("state.txt")), "state rows");
    assertEquals(changes(res.checkpoint(), Map.of("changeStartBatchId", "0")),
        java.nio.file.Files.readAllLines(out.resolve("changes.txt")), "change feed rows");
  }

  @Test
  void windowedAggregationAppendModeEvicts() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("cf-window", OutputMode.Append(),
        (in, right) -> in.withWatermark("ts", "5 seconds")
            .groupBy(window(col("ts"), "10 seconds"), col("key")).agg(count("*").as("n"))),
        SparkS3Harness.ROCKSDB_PROVIDER);
    assertSameFeeds(res, true);
  }

  /**
   * A stream-stream join (state format 2: four stores per partition): the change feed of each
   * store, by {@code storeName}, reduced to each key's last change per batch (a join updates a
   * key's count once per row it adds; Spark's feed lists each update, Strata's the last).
   */
  @Test
  void streamStreamJoinStores() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("cf-join", OutputMode.Append(),
        (in, right) -> in.withWatermark("ts", "10 seconds")
            .join(right.withWatermark("rts", "10 seconds"),
                org.apache.spark.sql.functions.expr(
                    "key = rkey AND rts >= ts AND rts <= ts + interval 10 seconds"),
                "left_outer")), SparkS3Harness.ROCKSDB_PROVIDER);
    for (String store : List.of("left-keyToNumValues", "left-keyWithIndexToValue",
        "right-keyToNumValues", "right-keyWithIndexToValue")) {
      Map<String, String> o = Map.of("storeName", store, "changeStartBatchId", "0");
      List<String> strata = ChangeFeeds.read(cmp.harness(), res.checkpoint(), o, false);
      assertTrue(!strata.isEmpty(), "changes of " + store);
      assertEquals(ChangeFeeds.read(cmp.harness(), res.baselineCheckpoint(), o, true), strata,
          "change feed of " + store);
    }
  }

  @Test
  void dropDuplicatesWithinWatermarkEvicts() throws Exception {
    StreamingComparison.Result res = cmp.check(new QueryDef("cf-dedup", OutputMode.Append(),
        (in, right) -> in.withWatermark("ts", "5 seconds").dropDuplicatesWithinWatermark("key")),
        SparkS3Harness.ROCKSDB_PROVIDER);
    assertSameFeeds(res, true);
    assertSnapshotReads(res, "4", "1");
  }

  /**
   * The state of {@code batch} read from {@code snapshotStartBatchId} {@code start}, partition
   * by partition, equals the baseline's plain read of that batch.
   */
  private static void assertSnapshotReads(StreamingComparison.Result res, String batch,
      String start) {
    for (int p = 0; p < 3; p++) {
      List<String> expected = state(res.baselineCheckpoint(), Map.of("batchId", batch), p);
      assertEquals(expected, state(res.checkpoint(), Map.of("batchId", batch,
          "snapshotStartBatchId", start, "snapshotPartitionId", String.valueOf(p)), p),
          "state of batch " + batch + ", partition " + p + ", read from snapshot batch " + start);
    }
  }
}
