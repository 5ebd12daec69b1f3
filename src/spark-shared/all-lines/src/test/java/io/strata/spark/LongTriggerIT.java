// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static io.strata.spark.BatchFiles.outputs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStore$;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 15: a trigger of 45 minutes, longer than half of {@code gc.gracePeriod} (1 hour, the
 * default, kept here). The store keeps no timer of its own between two commits (a published base
 * snapshot becomes the next commit's base however late that commit comes), so for Strata 45
 * minutes passing between two batches is every object in S3 becoming 45 minutes older: that is
 * the test clock. The query runs without stopping on a short real trigger; after each batch has
 * committed and maintenance (every 2 s here) has acted on it, the test makes every object of the
 * checkpoint 45 minutes older (its last-modified time in S3Proxy's store), then writes the next
 * batch's file. Retention is 5 versions, so garbage-collection rounds run between batches on
 * objects hours old by then, as in a real job.
 *
 * <p>Asserted after every batch, from the objects: every store's chain a cold restore replays
 * ({@link RestoreChains}), and its newest manifest's own chain, are at most {@code
 * snapshotInterval + 2}. At the end: published snapshots exist, garbage collection deleted
 * objects (Strata's {@code strataGcDeletedObjects}), every retained manifest's and published
 * snapshot's objects exist, every batch's output equals that of Spark's
 * HDFS-backed provider on the same input, batch by batch, and a restart on wiped local state (a
 * cold restore from S3) gives the same next batch as the HDFS provider.
 */
@OncePerSparkLine(reason = "the snapshot and garbage-collection rhythm is strata-core's, the "
    + "same bytecode on both Scala builds; this build runs the query paths that cross Scala "
    + "(StatefulOperatorsIT, CheckpointOnS3IT, StreamingUiMetricsIT)")
@io.strata.testkit.OnlyOnSparkLines(value = {"3.5", "4.1", "4.2"},
    reason = io.strata.testkit.OnlyOnSparkLines.SHARED_40_41)
class LongTriggerIT {
  private static final int KEYS = 40;
  /**
   * Batches: enough that a round finds the first base snapshot named by no retained manifest.
   * A manifest names the files inside its base's published snapshot object (format 2), so that
   * object, and the deltas only it names, go once every retained version (the newest 6) has a
   * later base: at the round of version 13.
   */
  private static final int BATCHES = 14;
  private static final int INTERVAL = 3;
  private static final int RETAIN = 5;
  private static final Duration TRIGGER = Duration.ofMinutes(45);
  private static final long MAINTENANCE_WAIT_S = 120;
  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** Batch b: key kj appears 1 + (j * b) % 3 times, and not at all when (j + b) % 5 == 0. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < KEYS; j++) {
      if ((j + b) % 5 == 0) {
        continue;
      }
      for (int n = 0; n <= (j * b) % 3; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  private static SparkSession session(String provider, Path localDir) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set("spark.sql.streaming.minBatchesToRetain", Integer.toString(RETAIN));
    s.conf().set("spark.sql.streaming.stateStore.strata.localDir", localDir.toString());
    s.conf().set("spark.sql.streaming.stateStore.strata.snapshotInterval",
        Integer.toString(INTERVAL));
    // Snapshots from maintenance only, as before snapshotOnCommit: the rhythm under test is the
    // one where a snapshot waits 45 minutes for the commit that adopts it, and waiting for the
    // chain to fall below the interval (awaitMaintenance) is then what shows that maintenance,
    // and its garbage-collection rounds, ran between the batches. The commit-driven snapshots
    // are FastTriggerIT's.
    s.conf().set("spark.sql.streaming.stateStore.strata.snapshotOnCommit", "false");
    return s;
  }

  private static Path prefixDir(String checkpoint) {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    return h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix);
  }

  private static String prefixOf(String checkpoint) {
    return checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
  }

  /** Every object of the checkpoint, as (relative path, size, last-modified ms). */
  private static List<String> objects(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      List<String> out = new ArrayList<>();
      for (Path p : s.filter(Files::isRegularFile).sorted().toList()) {
        try {
          out.add(dir.relativize(p) + " " + Files.size(p) + " "
              + Files.getLastModifiedTime(p).toMillis());
        } catch (NoSuchFileException gone) {
          out.add(dir.relativize(p) + " gone"); // the server's temporary file of a PUT
        }
      }
      return out;
    }
  }

  /** Waits until the checkpoint's objects stop changing for 2 s (maintenance went quiet). */
  private static void awaitQuiet(Path dir) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    List<String> last = objects(dir);
    int stable = 0;
    while (stable < 2) {
      assertTrue(System.nanoTime() < deadline, "maintenance did not go quiet within 60 s");
      Thread.sleep(1000);
      List<String> now = objects(dir);
      stable = now.equals(last) ? stable + 1 : 0;
      last = now;
    }
  }

  /**
   * The chains once maintenance has acted on this batch: in 45 real minutes Spark's maintenance
   * (every 2 s here, every 60 s by default) runs dozens of times, so a store whose chain reached
   * the snapshot interval has a published snapshot by the next batch. In this JVM the
   * maintenance thread also serves the stores earlier test classes left loaded, so it may come
   * late: wait up to {@value #MAINTENANCE_WAIT_S} s for every chain to be below the interval.
   */
  private static Map<String, RestoreChains.Chain> awaitMaintenance(String ckpt, Path dir)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(MAINTENANCE_WAIT_S);
    while (true) {
      Map<String, RestoreChains.Chain> chains =
          RestoreChains.of(h.s3.dataDir(), SparkS3Harness.BUCKET, prefixOf(ckpt));
      boolean done = chains.values().stream().allMatch(c -> c.restoreChain() < INTERVAL);
      if (done || System.nanoTime() > deadline) {
        return chains;
      }
      Thread.sleep(500);
      awaitQuiet(dir);
    }
  }

  /** Makes every object of the checkpoint {@code by} older: that much time passed. */
  private static void age(Path dir, Duration by) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        try {
          long t = Files.getLastModifiedTime(p).toMillis();
          Files.setLastModifiedTime(p, FileTime.fromMillis(t - by.toMillis()));
        } catch (NoSuchFileException gone) {
          // the server's temporary file of a PUT, renamed into place since the walk
        }
      }
    }
  }

  private static void awaitBatch(StreamingQuery q, Path out, long batchId) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!Files.exists(out.resolve("batch-" + batchId + ".txt"))
        || q.lastProgress() == null || q.lastProgress().batchId() < batchId) {
      if (q.exception().isDefined()) {
        throw q.exception().get();
      }
      assertTrue(System.nanoTime() < deadline, "batch " + batchId + " within 120 s");
      Thread.sleep(100);
    }
  }

  @Test
  @Timeout(value = 25, unit = TimeUnit.MINUTES)
  void restoreChainsAndManifestsStayBoundedWithATriggerOf45Minutes() throws Exception {
    Path base = Files.createDirectories(h.work.resolve("long-trigger-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    Path out = base.resolve("out-strata");
    String ckpt = h.s3Checkpoint("long-trigger");
    Path dir = prefixDir(ckpt);
    int bound = INTERVAL + 2;
    int published = 0;
    SparkSession s = session(SparkS3Harness.PROVIDER, base.resolve("local-1"));
    StreamingQuery q = CrashDriver.start(s, ckpt, in, out, 0, Trigger.ProcessingTime(200));
    try {
      for (int b = 0; b < BATCHES; b++) {
        writeBatch(in, b);
        awaitBatch(q, out, b);
        awaitQuiet(dir);
        Map<String, RestoreChains.Chain> chains = awaitMaintenance(ckpt, dir);
        assertEquals(2, chains.size(), "two stores after batch " + b + ": " + chains);
        for (Map.Entry<String, RestoreChains.Chain> e : chains.entrySet()) {
          RestoreChains.Chain c = e.getValue();
          assertEquals(b + 1, c.version(), e.getKey() + " after batch " + b);
          assertTrue(c.restoreChain() <= bound, "after batch " + b + " a cold restore of "
              + e.getKey() + " replays at most " + bound + " deltas: " + c);
          assertTrue(c.manifestChain() <= bound, "after batch " + b + " the manifest of "
              + e.getKey() + " lists at most " + bound + " deltas (its commit adopted the "
              + "published snapshot, 45 minutes late): " + c);
          published = Math.max(published, c.publishedSnapshots());
        }
        age(dir, TRIGGER);
      }
    } finally {
      q.stop();
    }
    assertTrue(BATCHES > bound + 2, "more batches than the bound");
    assertTrue(published > 0, "stores published base snapshots");
    long gcDeleted = 0;
    for (StreamingQueryProgress p : q.recentProgress()) {
      for (StateOperatorProgress op : p.stateOperators()) {
        Long n = op.customMetrics().get("strataGcDeletedObjects");
        gcDeleted += n == null ? 0 : n;
      }
    }
    assertTrue(gcDeleted > 0, "garbage-collection rounds between the batches deleted objects "
        + "hours old that no retained version needs: " + gcDeleted);
    assertEquals(List.of(), CheckpointAudit.missingNamedObjects(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefixOf(ckpt), RETAIN));
    assertEquals(java.util.List.of(), RestoreChains.missingPublishedFiles(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefixOf(ckpt)), "every published snapshot's files exist");

    // A restart on wiped local state: the first batch restores from S3 alone.
    writeBatch(in, BATCHES);
    StateStore$.MODULE$.unloadAll();
    SparkSession s2 = session(SparkS3Harness.PROVIDER, base.resolve("local-2"));
    StreamingQuery q2 = CrashDriver.start(s2, ckpt, in, out, 0);
    q2.awaitTermination();
    if (q2.exception().isDefined()) {
      throw q2.exception().get();
    }

    Path outHdfs = base.resolve("out-hdfs");
    StreamingQuery oracle = CrashDriver.start(
        session(SparkS3Harness.HDFS_PROVIDER, base.resolve("local-h")),
        h.fileCheckpoint("long-trigger-hdfs"), in, outHdfs, 0);
    oracle.awaitTermination();
    TreeMap<Long, List<String>> expected = outputs(outHdfs);
    assertEquals(BATCHES + 1, expected.size(), "the HDFS provider ran one batch per file");
    assertEquals(expected, outputs(out), "every batch equals the HDFS provider's");
  }
}
