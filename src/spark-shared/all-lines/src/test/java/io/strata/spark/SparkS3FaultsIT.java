// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.checkpoint.CheckpointRequests;
import io.strata.format.StoreLayout;
import io.strata.metrics.RequestCounter;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3Relay;
import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * S3 faults under a real streaming query (local mode): Strata's S3 client (state and Spark's
 * checkpoint files) talks to a {@link S3Relay} in front of the real S3Proxy. The reference
 * query counts keys k0..k{K-1}, each added once per batch; after batch b every count is b + 1.
 * A share of failing requests is retried to the exact answer (and shows in {@code
 * strataS3FailedAttempts}); a server failing everything longer than the retry budget stops the
 * query with an error naming S3's state, the endpoint and the bucket, leaving no manifest that
 * names a missing object; requests held back longer than the SDK's per-attempt timeout are
 * abandoned and retried to the exact answer; a lost write of a version object is found at the
 * next restore and named, never read as an older state.
 */
@OncePerSparkLine(reason = "retries, timeouts and lost writes are handled by the AWS SDK and "
    + "strata-core, with no Scala on their path")
@io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1"}, reason = "the SDK's retries and "
    + "strata-core's handling are line-independent, and SparkErrors is one source for every "
    + "line; 3.5 and 4.1 run it (CI time), the examples' FlightsDemoS3FaultsIT runs 10 % faults "
    + "on 4.1's build as well")
class SparkS3FaultsIT {
  private static final int KEYS = 8;
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);
  private static final Map<String, Map<Long, Map<String, Long>>> OUTPUT =
      new ConcurrentHashMap<>();
  private static SparkS3Harness h;
  private static S3Relay proxy;
  private static S3Client admin;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    admin = h.s3.client();
    proxy = new S3Relay(h.s3.endpoint(), (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
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

  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < KEYS; k++) {
      sb.append("{\"key\":\"k").append(k).append("\"}\n");
    }
    Path f = in.resolve(String.format("part-%03d.json", b));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(f, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
  }

  /** Strata's settings for a run through the proxy: short timeouts, {@code attempts} tries. */
  private static Map<String, String> throughProxy(int attempts) {
    Map<String, String> c = new HashMap<>();
    c.put(STRATA + "s3.endpoint", proxy.endpoint().toString());
    c.put(STRATA + "s3.maxAttempts", Integer.toString(attempts));
    c.put(STRATA + "s3.apiCallAttemptTimeout", "5s");
    c.put(STRATA + "s3.apiCallTimeout", "30s");
    return c;
  }

  /** Runs the reference query to the end of its input (AvailableNow); rethrows its failure. */
  private static StreamingQuery run(String name, Path in, String checkpoint,
      Map<String, String> conf) throws Exception {
    SparkSession session = h.spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    session.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    conf.forEach((k, v) -> session.conf().set(k, v));
    OUTPUT.putIfAbsent(name, new ConcurrentHashMap<>());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      Map<String, Long> counts = new TreeMap<>();
      for (Row r : df.collectAsList()) {
        counts.put(r.getString(0), r.getLong(1));
      }
      OUTPUT.get(name).put(batchId, counts);
    };
    StreamingQuery q = session.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString())
        .groupBy("key").agg(count("*").as("n"))
        .writeStream().outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .foreachBatch(sink)
        .start();
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
    return q;
  }

  /** {@code strataS3FailedAttempts} summed over the query's batches (as far as Spark keeps them). */
  private static long failedAttempts(StreamingQuery q) {
    long n = 0;
    for (StreamingQueryProgress p : q.recentProgress()) {
      for (StateOperatorProgress op : p.stateOperators()) {
        n += op.customMetrics().getOrDefault("strataS3FailedAttempts", 0L);
      }
    }
    return n;
  }

  /** Every batch 0..n-1 of {@code name} saw all keys with count b + 1. */
  private static void assertExact(String name, int n) {
    for (long b = 0; b < n; b++) {
      Map<String, Long> counts = OUTPUT.get(name).get(b);
      assertTrue(counts != null, name + ": batch " + b + " ran");
      assertEquals(KEYS, counts.size(), name + ": batch " + b + " " + counts);
      for (Map.Entry<String, Long> e : counts.entrySet()) {
        assertEquals(b + 1, e.getValue(), name + ": batch " + b + " count of " + e.getKey());
      }
    }
  }

  private static String chain(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  private static String prefixOf(String checkpoint) {
    return checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
  }

  @Test
  void tenPercentOfRequestsFailingIsRetriedToTheExactAnswer() throws Exception {
    int batches = 50;
    Path in = Files.createDirectories(h.work.resolve("in-share"));
    for (int b = 0; b < batches; b++) {
      writeBatch(in, b);
    }
    String checkpoint = h.s3Checkpoint("share");
    proxy.rule(S3Relay.randomShare(0.10, 7, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR,
        Fault.RESET));
    int before = proxy.seen().size();
    StreamingQuery q;
    try {
      q = run("share", in, checkpoint, throughProxy(10));
    } finally {
      proxy.heal();
    }
    assertExact("share", batches);
    List<S3Relay.Seen> seen = proxy.seen();
    seen = seen.subList(before, seen.size());
    long faults = seen.stream().filter(s -> s.fault() != Fault.NONE).count();
    long stateFaults = seen.stream().filter(s -> s.fault() != Fault.NONE
        && CountingProxy.isStateStoreKey(s.request().key())).count();
    long failedAttempts = failedAttempts(q);
    System.out.printf("SparkS3FaultsIT: %d batches, %d requests, %d faults (%d on state"
        + " objects), strataS3FailedAttempts %d%n", batches, seen.size(), faults, stateFaults,
        failedAttempts);
    assertTrue(faults >= seen.size() / 20, "about 10 % failed: " + faults + " of " + seen.size());
    assertTrue(stateFaults > 0, "some failures hit the state store's requests");
    assertTrue(failedAttempts > 0, "the retries show in strataS3FailedAttempts");
    assertTrue(CheckpointAudit.missingNamedObjects(h.s3.dataDir(), SparkS3Harness.BUCKET,
        prefixOf(checkpoint)).isEmpty(), "every object a manifest names exists");
  }

  @Test
  void requestsHeldLongerThanTheAttemptTimeoutAreRetriedToTheExactAnswer() throws Exception {
    int batches = 10;
    Path in = Files.createDirectories(h.work.resolve("in-delay"));
    for (int b = 0; b < batches; b++) {
      writeBatch(in, b);
    }
    String checkpoint = h.s3Checkpoint("delay");
    // The first attempt of every 5th state store PUT and of two writes of Spark's offset log is
    // held 7 s before the relay forwards it: past the 5 s attempt timeout (throughProxy), within
    // the 30 s call timeout. The SDK abandons the attempt and retries on a new connection; the
    // held request may still reach the server afterwards, after the retry was applied.
    int maxDelays = 4;
    Set<String> delayed = ConcurrentHashMap.newKeySet();
    AtomicInteger statePuts = new AtomicInteger();
    AtomicInteger offsetPuts = new AtomicInteger();
    proxy.delayMillis = 7_000;
    proxy.rule(r -> {
      if (!r.isPut() || delayed.size() >= maxDelays) {
        return Fault.NONE;
      }
      boolean pick = CountingProxy.isStateStoreKey(r.key())
          ? statePuts.incrementAndGet() % 5 == 0
          : r.key().contains("/offsets/") && offsetPuts.incrementAndGet() % 4 == 2;
      return pick && delayed.add(r.key()) ? Fault.DELAY : Fault.NONE;
    });
    int delaysBefore = proxy.injected(Fault.DELAY);
    RequestCounter.Counts checkpointBefore = CheckpointRequests.snapshot();
    StreamingQuery q;
    try {
      q = run("delay", in, checkpoint, throughProxy(10));
    } finally {
      proxy.heal();
    }
    int delays = proxy.injected(Fault.DELAY) - delaysBefore;
    long failedAttempts = failedAttempts(q);
    long checkpointFailed = CheckpointRequests.snapshot().minus(checkpointBefore).failed();
    System.out.printf("SparkS3FaultsIT: %d batches, %d requests held 7 s (%s),"
        + " strataS3FailedAttempts %d, failed checkpoint-file attempts %d%n", batches, delays,
        delayed, failedAttempts, checkpointFailed);
    assertExact("delay", batches);
    assertEquals(maxDelays, delays, "requests held: " + delayed);
    assertTrue(delayed.stream().anyMatch(k -> k.contains("/offsets/")),
        "a write of Spark's offset log was held: " + delayed);
    assertTrue(failedAttempts > 0, "the abandoned attempts show in strataS3FailedAttempts");
    assertTrue(checkpointFailed > 0, "the abandoned offset-log attempts show in"
        + " CheckpointRequests");
    assertTrue(CheckpointAudit.missingNamedObjects(h.s3.dataDir(), SparkS3Harness.BUCKET,
        prefixOf(checkpoint)).isEmpty(), "every object a manifest names exists");
  }

  @Test
  void s3FailingLongerThanTheRetryBudgetStopsTheQueryWithAClearErrorAndNoDanglingManifest()
      throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-down"));
    String checkpoint = h.s3Checkpoint("down");
    for (int b = 0; b < 3; b++) {
      writeBatch(in, b);
    }
    run("down", in, checkpoint, throughProxy(3));
    assertExact("down", 3);

    writeBatch(in, 3);
    proxy.rule(r -> CountingProxy.isStateStoreKey(r.key()) ? Fault.SLOW_DOWN : Fault.NONE);
    long t0 = System.nanoTime();
    Exception e;
    try {
      e = assertThrows(Exception.class, () -> run("down", in, checkpoint, throughProxy(3)));
    } finally {
      proxy.heal();
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    String text = chain(e);
    assertTrue(text.contains("S3 is throttling requests"), "says S3 is throttling: " + text);
    assertTrue(text.contains("503 SlowDown"), text);
    assertTrue(text.contains("s3://" + SparkS3Harness.BUCKET + "/"), "names the bucket: " + text);
    assertTrue(text.contains(proxy.endpoint().toString()), "names the endpoint: " + text);
    assertTrue(ms < 120_000, "gives up within the retry budget, took " + ms + " ms");
    assertNull(OUTPUT.get("down").get(3L), "batch 3 did not run");
    List<String> missing = CheckpointAudit.missingNamedObjects(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefixOf(checkpoint));
    assertTrue(missing.isEmpty(), "no manifest names a missing object: " + missing);

    // S3 is back: the query resumes at batch 3 with the exact answer.
    run("down", in, checkpoint, throughProxy(3));
    assertExact("down", 4);
  }

  @Test
  void aLostWriteOfAVersionObjectIsNamedAtTheNextRestoreNeverReadAsAnOlderState()
      throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-lost"));
    String checkpoint = h.s3Checkpoint("lost");
    // a query run commits format 1 in generations: its first run writes generation 1
    String lostKey = prefixOf(checkpoint) + "/state/0/0/"
        + StoreLayout.generationVersionObject(3, 1);
    for (int b = 0; b < 5; b++) {
      writeBatch(in, b);
    }
    Map<String, String> conf = throughProxy(3);
    // no base snapshot: version 5's manifest names the delta in version 3's object
    conf.put(STRATA + "snapshotInterval", "1000");
    proxy.rule(r -> r.isPut() && r.key().equals(lostKey) ? Fault.LOSE_WRITE : Fault.NONE);
    try {
      run("lost", in, checkpoint, conf);
    } finally {
      proxy.heal();
    }
    assertEquals(1, proxy.injected(Fault.LOSE_WRITE), "the PUT of " + lostKey + " was lost");
    assertExact("lost", 5); // the running instance still had the state locally
    assertTrue(admin.listObjectsV2(b -> b.bucket(SparkS3Harness.BUCKET).prefix(lostKey))
        .contents().isEmpty(), "the object is absent");

    h.wipeLocalState();
    writeBatch(in, 5);
    Exception e = assertThrows(Exception.class, () -> run("lost", in, checkpoint, conf));
    String text = chain(e);
    assertTrue(text.contains("store 0/0/default"), "names the store: " + text);
    assertTrue(text.contains("version 5"), "names the version: " + text);
    assertTrue(text.contains(SparkS3Harness.BUCKET + "/" + lostKey), "names the key: " + text);
    assertTrue(text.contains("does not exist"), "says what is wrong: " + text);
    assertNull(OUTPUT.get("lost").get(5L), "no batch ran on an older state");
  }
}
