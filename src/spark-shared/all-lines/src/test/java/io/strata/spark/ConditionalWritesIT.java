// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.ConditionalWriteProbe;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An S3 endpoint that ignores {@code If-None-Match: *} (a {@link S3Relay} in {@link
 * Fault#IGNORE_CONDITIONAL} mode in front of the real S3Proxy): a streaming query whose state and
 * checkpoint files are on it fails at once, at the checkpoint file manager's first create-only
 * write, with the error naming the endpoint, the bucket and what was expected, and writes
 * nothing; Strata's state store provider on it fails its first commit the same way and leaves a
 * committed version object as it was.
 */
class ConditionalWritesIT {
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);
  private static SparkS3Harness h;
  private static S3Relay proxy;
  private static S3Client admin;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    admin = h.s3.client();
    proxy = new S3Relay(h.s3.endpoint(), (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
    proxy.rule(r -> Fault.IGNORE_CONDITIONAL);
  }

  @AfterAll
  static void stop() throws IOException {
    if (proxy != null) {
      proxy.close();
    }
    if (admin != null) {
      admin.close();
    }
    if (h != null) {
      h.close();
    }
  }

  private static List<String> keys(String bucket, String prefix) {
    return admin.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix)).contents()
        .stream().map(o -> o.key()).sorted().collect(Collectors.toList());
  }

  private static String chain(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  private static void assertClearError(String text, String bucket) {
    assertTrue(text.contains("Cannot use S3 endpoint " + proxy.endpoint() + " bucket " + bucket
        + " for Strata: a second create-only PUT (If-None-Match: *) of s3://" + bucket + "/"),
        "names the endpoint, the bucket and the probe: " + text);
    assertTrue(text.contains("succeeded instead of failing with 412 Precondition Failed; this"
        + " server ignores conditional writes"), "says what was expected: " + text);
    assertTrue(text.contains("docs/operations.md#a-server-that-ignores-conditional-writes"), text);
    assertFalse(text.contains(S3ProxyServer.SECRET_KEY), "no credentials");
  }

  @Test
  void aQueryOnAnEndpointThatIgnoresConditionalWritesFailsAtOnceAndWritesNothing()
      throws Exception {
    Path in = Files.createDirectories(h.work.resolve("ignoring-in"));
    Files.writeString(in.resolve("part-000.json"), "{\"key\":\"a\"}\n{\"key\":\"b\"}\n",
        StandardCharsets.UTF_8);
    String checkpoint = h.s3Checkpoint("ignoring");
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    SparkSession session = h.spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    session.conf().set(STRATA + "s3.endpoint", proxy.endpoint().toString());
    int seenBefore = proxy.seen().size();
    long t0 = System.nanoTime();
    Throwable e = assertThrows(Throwable.class, () -> {
      StreamingQuery q = session.readStream().schema(SCHEMA).json(in.toString())
          .groupBy("key").agg(count("*").as("n"))
          .writeStream().outputMode("update").format("noop")
          .option("checkpointLocation", checkpoint)
          .start();
      q.awaitTermination(); // rethrows the query's failure
    });
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertClearError(chain(e), SparkS3Harness.BUCKET);
    assertTrue(ms < 60_000, "failed at once, not retried: " + ms + " ms");
    assertEquals(List.of(), keys(SparkS3Harness.BUCKET, prefix),
        "nothing under the checkpoint: no metadata, offsets, commits or state");
    List<S3Relay.Seen> seen = proxy.seen();
    seen = seen.subList(seenBefore, seen.size());
    long puts = seen.stream().filter(s -> s.request().isPut()).count();
    assertEquals(2, puts, "only the probe's two PUTs: " + seen);
  }

  @Test
  void theStateStoreProviderOnSuchAnEndpointFailsItsFirstCommitAndOverwritesNothing()
      throws Exception {
    // Its own bucket: the verdict of the query above (same endpoint, other bucket) is not
    // reused, so the state store runs the probe itself.
    String bucket = "strata-it-state-" + UUID.randomUUID().toString().substring(0, 8);
    h.s3.createBucket(bucket);
    String root = "ckpt/state";
    String committed = root + "/0/0/v/00000000000000000001.svo";
    admin.putObject(p -> p.bucket(bucket).key(committed), RequestBody.fromString("winner"));
    SQLConf sql = new SQLConf();
    sql.setConfString(STRATA + "localDir", h.work.resolve("provider-local").toString());
    sql.setConfString(STRATA + "s3.endpoint", proxy.endpoint().toString());
    sql.setConfString(STRATA + "s3.region", "us-east-1");
    sql.setConfString(STRATA + "s3.pathStyleAccess", "true");
    sql.setConfString(STRATA + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
    sql.setConfString(STRATA + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
    StructType keySchema = new StructType().add("k", DataTypes.StringType);
    StructType valueSchema = new StructType().add("v", DataTypes.IntegerType);
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    try {
      StoreApi.init(p, new StateStoreId("s3a://" + bucket + "/" + root, 0, 0,
          StateStoreId.DEFAULT_STORE_NAME()), keySchema, valueSchema, sql, new Configuration());
      StateStore s = SparkApi.getStore(p, 0);
      UnsafeRow key = UnsafeProjection.create(keySchema).apply(
          new GenericInternalRow(new Object[] {UTF8String.fromString("a")})).copy();
      UnsafeRow value = UnsafeProjection.create(valueSchema).apply(
          new GenericInternalRow(new Object[] {1})).copy();
      StoreApi.put(s, key, value);
      long t0 = System.nanoTime();
      Exception e = assertThrows(Exception.class, s::commit);
      assertTrue(System.nanoTime() - t0 < 60_000_000_000L, "failed at once");
      assertClearError(chain(e), bucket);
      try {
        s.abort();
      } catch (RuntimeException alreadyAborted) {
        // the failed commit already dropped the version
      }
    } finally {
      p.close();
    }
    try (InputStream o = admin.getObject(g -> g.bucket(bucket).key(committed))) {
      assertEquals("winner", new String(o.readAllBytes(), StandardCharsets.UTF_8),
          "the committed version object is unchanged");
    }
    assertEquals(List.of(committed), keys(bucket, ""),
        "nothing else was written (the probe object " + ConditionalWriteProbe.PREFIX
            + "... was deleted)");
  }
}
