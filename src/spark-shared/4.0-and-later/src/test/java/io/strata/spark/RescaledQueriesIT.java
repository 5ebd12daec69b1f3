// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.testkit.OnlyOnSparkLines;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 44: {@link StrataRepartition} on the operators whose state key is more than their
 * partition key, or whose state is in several stores or column families: a stream-stream join
 * (four stores; the indexed ones hash all but the index), {@code flatMapGroupsWithState}, a
 * session window (prefix-scan keys; all but the session start hashed) and {@code
 * transformWithState} (a family per state variable, timer and TTL index; Spark's RocksDB
 * provider is their reference). Each query is {@link StreamingQueriesIT}'s,
 * run as there (3 files, a stop with Strata's local state wiped, 3 more files), with the job run
 * at the stop on Strata's checkpoint only: every batch after it equals the batch of Spark's HDFS
 * provider's run that never rescaled (Strata's ids one higher, for the job's own batch), and the
 * resumed run restores the rewritten partitions from S3. The join runs in checkpoint format 2
 * (its four checkpoint ids per partition in the commit log). The job's code is the same on
 * every line: the join, flatMapGroupsWithState and session window run on Spark 4.1 only
 * ({@link RepartitionIT} runs the job on 4.0 and 4.2 too; {@link StreamingQueriesIT} runs these
 * queries without the rescale on the other lines); transformWithState on 4.0 and 4.1, whose
 * column families differ (4.0's lists keep an entry counter family).
 */
@OnlyOnSparkLines(value = {"4.0", "4.1"}, reason = "transformWithState's families differ between "
    + "4.0 and 4.1; 4.2 runs transformWithState only on its own RocksDB provider")
class RescaledQueriesIT {
  private static final String ONE_LINE = "the job's code is the same on every 4.x line; "
      + "RepartitionIT runs it on 4.0 and 4.2";
  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(4, StreamingComparison::recurringKeys, 6, 3);

  /** The job at the restart: {@code --partitions to}; asserts what it rewrote. */
  private static StreamingComparison.BetweenRuns rescaleTo(int to, List<String> stores) {
    return (h, checkpoint) -> {
      SparkSession job = h.spark.newSession();
      job.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
      // Spark's state data source reads the schemas through a Hadoop file system for s3a:
      // Strata's read-only one, as docs/operations.md says.
      job.conf().set("fs.s3a.impl", "io.strata.checkpoint.StrataS3FileSystem");
      job.conf().set("fs.s3a.impl.disable.cache", "true");
      StrataRepartition.Result r = StrataRepartition.run(job,
          StrataRepartition.Options.parse(checkpoint, "--partitions", "" + to, "--force"));
      assertTrue(r.written(), r.summary());
      assertEquals(4, r.from(), r.summary());
      assertEquals(stores, r.stores().stream().map(s -> s.operatorName() + "/" + s.storeName())
          .toList(), r.summary());
      assertTrue(r.rows() > 0, r.summary());
      return 1;
    };
  }

  @OnlyOnSparkLines(value = "4.1", reason = ONE_LINE)
  @Test
  void streamStreamJoinInCheckpointFormat2From4To5() throws Exception {
    cmp.check(StreamingQueriesIT.join("rescaled-join", Map.of(StreamingComparison.STRATA_ONLY
        + "spark.sql.streaming.stateStore.checkpointFormatVersion", "2")),
        SparkS3Harness.HDFS_PROVIDER, rescaleTo(5, StatePlacement.JOIN_STORES.stream()
            .map(s -> "symmetricHashJoin/" + s).sorted().toList()));
  }

  @OnlyOnSparkLines(value = "4.1", reason = ONE_LINE)
  @Test
  void flatMapGroupsWithStateFrom4To3() throws Exception {
    cmp.check(StreamingQueriesIT.flatMapGroupsWithState("rescaled-fmgws", Map.of()),
        SparkS3Harness.HDFS_PROVIDER, rescaleTo(3, List.of("flatMapGroupsWithState/default")));
  }

  /**
   * transformWithState in event time: value, list and map state and the two timer indexes,
   * rewritten family by family (Spark's RocksDB provider is the reference: HDFS has no column
   * families).
   */
  @Test
  void transformWithStateEventTimeFrom4To5() throws Exception {
    StreamingComparison.Result res = cmp.check(TransformWithStateIT.eventTime("rescaled-tws"),
        SparkS3Harness.ROCKSDB_PROVIDER, rescaleTo(5, List.of("transformWithStateExec/default")));
    assertTrue(res.output().values().stream().flatMap(List::stream)
        .anyMatch(s -> s.contains(":fired:")), "some event-time timers fired");
  }

  /**
   * transformWithState in processing time with TTL: the TTL index, minimum-expiry and count
   * families of a list and a map state, and a variable the resumed run deletes.
   */
  @Test
  void transformWithStateTtlFrom4To3() throws Exception {
    cmp.check(TransformWithStateIT.processingTime("rescaled-tws-ttl"),
        SparkS3Harness.ROCKSDB_PROVIDER, rescaleTo(3, List.of("transformWithStateExec/default")));
  }

  /**
   * Operators without a grouping key keep their state in partition 0 whatever the count: a
   * {@code dropDuplicates} (rescaled by key) feeding a global count (partition 0 rewritten as it
   * is), in checkpoint format 2 (the global count's one checkpoint id per batch). Counts whose
   * divisors exclude 42 (Murmur3's hash of an empty key): hashing the empty key as Spark 4.2's
   * runner does would place the state elsewhere than partition 0.
   */
  @OnlyOnSparkLines(value = "4.1", reason = ONE_LINE)
  @Test
  void globalCountAfterDropDuplicatesInCheckpointFormat2From4To5() throws Exception {
    cmp.check(new QueryDef("rescaled-global", OutputMode.Update(),
        (in, r, run) -> in.dropDuplicates("key", "value").groupBy().count(),
        Map.of(StreamingComparison.STRATA_ONLY
            + "spark.sql.streaming.stateStore.checkpointFormatVersion", "2")),
        SparkS3Harness.HDFS_PROVIDER,
        rescaleTo(5, List.of("stateStoreSave/default", "dedupe/default")));
  }

  /**
   * A streaming limit ({@code globalLimit}: its count in partition 0): the limit is reached
   * after the rescale, so a lost count would let later rows through.
   */
  @OnlyOnSparkLines(value = "4.1", reason = ONE_LINE)
  @Test
  void streamingLimitFrom4To8() throws Exception {
    cmp.check(new QueryDef("rescaled-limit", OutputMode.Append(),
        (in, r, run) -> in.select("key", "value").limit(150), Map.of()),
        SparkS3Harness.HDFS_PROVIDER, rescaleTo(8, List.of("globalLimit/default")));
  }

  @OnlyOnSparkLines(value = "4.1", reason = ONE_LINE)
  @Test
  void sessionWindowFrom4To3() throws Exception {
    cmp.check(StreamingQueriesIT.sessionWindow("rescaled-session", Map.of()),
        SparkS3Harness.HDFS_PROVIDER,
        rescaleTo(3, List.of("sessionWindowStateStoreSaveExec/default")));
  }
}
