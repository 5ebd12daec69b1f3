// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.sum;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.spark.StreamingComparison.QueryDef;
import io.strata.testkit.S3Relay;
import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.util.Map;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Issue 43, part 8: a store whose listings and reads lag behind its writes. Strata (its state
 * stores and Spark's checkpoint files) talks to a {@link S3Relay} in {@linkplain
 * S3Relay#lag(long) lag mode} in front of the real S3Proxy: every new object is hidden from
 * LIST, GET and HEAD for {@value #LAG_MS} ms after its PUT. A stateful query runs its batches, stops,
 * restarts on wiped local directories (restoring from S3 through the relay) and runs more; every
 * batch must equal that of Spark's HDFS-backed provider on a local checkpoint ({@link
 * StreamingComparison}). Before, batch 0 failed writing Spark's state schema file: Spark checks
 * for it again from another checkpoint file manager in the same batch, that manager's LIST missed
 * it, Spark wrote it again, the create-only PUT got a 412 and its one HEAD missed as well ("...
 * has since been deleted"). Now a file this JVM wrote exists without a LIST, a GET that misses it
 * looks again, and a 412 whose HEAD misses looks again (bounded, about 4.5 s).
 */
@OncePerSparkLine(reason = "the checkpoint file manager and the object store are the same "
    + "classes in both Scala builds of a line")
class LaggingStoreIT {
  /** How long the relay hides a new object, ms. */
  static final long LAG_MS = 2_000;

  /**
   * {@link StreamingComparison#recurringKeys}, but the second half's input (written between the
   * two runs) only after the lag has passed: a restarted driver lists Spark's offset and commit
   * logs, and no client can see what a lagging store still hides from a listing (see
   * docs/operations.md#a-store-whose-reads-lag-behind-its-writes).
   */
  @RegisterExtension
  static final StreamingComparison cmp = new StreamingComparison(2, (in, right, from, to) -> {
    if (from > 0) {
      try {
        Thread.sleep(LAG_MS + 500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }
    StreamingComparison.recurringKeys(in, right, from, to);
  }, 4, 2);

  private static S3Relay proxy;
  private static S3Client admin;

  @BeforeAll
  static void relay() throws IOException {
    admin = cmp.harness().s3.client();
    proxy = new S3Relay(cmp.harness().s3.endpoint(),
        (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
    proxy.lag(LAG_MS);
  }

  @AfterAll
  static void stop() throws IOException {
    if (proxy != null) {
      proxy.close();
    }
    if (admin != null) {
      admin.close();
    }
  }

  @Test
  void aStoreWhoseReadsLagBehindItsWritesGivesSparksAnswersAcrossARestart() throws Exception {
    cmp.check(new QueryDef("lagging", OutputMode.Update(), (in, r) ->
        in.groupBy("key").agg(count("*").as("n"), sum("value").as("total")),
        Map.of("spark.sql.streaming.stateStore.strata.s3.endpoint",
            proxy.endpoint().toString())), SparkS3Harness.HDFS_PROVIDER);
    assertTrue(proxy.lagged() > 0, "the relay hid fresh objects from reads or listings");
  }
}
