// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.OnlyOnSparkLines;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Crashes at named fault points ({@code io.strata.sync.FaultPoints}, armed by the test-only
 * system property {@code strata.test.faultPoint}) with a real driver JVM in local mode, then
 * restarts on the same checkpoint, once with the crashed JVM's local directory kept and once
 * with fresh local directories: the reference query (keys k0..k{K-1}, each added once per batch,
 * {@code groupBy(key).count()}) gives the exact answer (after batch b every count is b + 1)
 * every time. The kept and the fresh restart each start from a copy of the checkpoint as the
 * crash left it (copied in the S3 server's data directory). Also: 20 consecutive restarts, each
 * on fresh local directories.
 */
@OnlyOnSparkLines(value = {"4.1"},
    reason = "crash loops (child JVMs halted mid-commit, restarted on wiped local state) exercise "
        + "the version-neutral commit path; once is enough")
class CrashIT {
  private static final int KEYS = 1500;
  private static final long CHILD_TIMEOUT_S = 600;
  private static SparkS3Harness h;
  private static Path logs;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    logs = Files.createDirectories(Path.of("target", "crash-it-logs"));
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /**
   * Settings of every run, in the test JVM and in the driver JVM: spills (32 KiB threshold),
   * a base snapshot every 3 versions, 2 versions retained (so garbage collection has work).
   */
  private static Map<String, String> conf() {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("spark.sql.streaming.stateStore.strata.spillThreshold", "32k");
    c.put("spark.sql.streaming.stateStore.strata.snapshotInterval", "3");
    c.put("spark.sql.streaming.minBatchesToRetain", "2");
    return c;
  }

  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < KEYS; k++) {
      sb.append("{\"key\":\"k").append(k).append("\"}\n");
    }
    Path tmp = in.resolve(String.format(".part-%03d.tmp", b));
    Files.writeString(tmp, sb, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
    Files.move(tmp, in.resolve(String.format("part-%03d.json", b)));
  }

  /** Runs the query in this JVM to the end of its input; rethrows its failure. */
  private static void runHere(String checkpoint, Path in, Path out, Path localDir,
      long sinkSleepMs) throws Exception {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set("spark.sql.streaming.stateStore.strata.localDir", localDir.toString());
    conf().forEach((k, v) -> s.conf().set(k, v));
    StreamingQuery q = CrashDriver.start(s, checkpoint, in, out, sinkSleepMs);
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
  }

  /** Every batch 0..n-1 in {@code out} has every key with count b + 1. */
  private static void assertExact(String what, Path out, int n) throws IOException {
    List<String> expectedKeys = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      expectedKeys.add("k" + k);
    }
    expectedKeys.sort(null);
    for (int b = 0; b < n; b++) {
      Path f = out.resolve("batch-" + b + ".txt");
      assertTrue(Files.exists(f), what + ": batch " + b + " has output");
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      assertEquals(KEYS, lines.size(), what + ": batch " + b + " has every key");
      for (int i = 0; i < lines.size(); i++) {
        String[] kv = lines.get(i).split(",");
        assertEquals(expectedKeys.get(i), kv[0], what + ": batch " + b);
        assertEquals(b + 1L, Long.parseLong(kv[1]),
            what + ": batch " + b + " count of " + kv[0] + " is exactly " + (b + 1));
      }
    }
  }

  private static String prefixOf(String checkpoint) {
    return checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
  }

  private static Path bucketDir() {
    return h.s3.dataDir().resolve(SparkS3Harness.BUCKET);
  }

  /** Copies a directory tree (files only; new modification times are kept from the source). */
  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> s = Files.walk(from)) {
      for (Path p : s.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
  }

  /** A copy of the checkpoint under a new name in the same bucket. */
  private static String cloneCheckpoint(String checkpoint, String name) throws IOException {
    String clone = h.s3Checkpoint(name);
    copyTree(bucketDir().resolve(prefixOf(checkpoint)), bucketDir().resolve(prefixOf(clone)));
    return clone;
  }

  /** Makes every object of the checkpoint's state two hours old (past gc.gracePeriod). */
  private static void age(String checkpoint) throws IOException {
    FileTime old = FileTime.fromMillis(System.currentTimeMillis() - 2 * 3600_000L);
    try (Stream<Path> s = Files.walk(bucketDir().resolve(prefixOf(checkpoint)).resolve("state"))) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(p, old);
      }
    }
  }

  /**
   * Runs batches 0..prefix-1 here, then the rest in a driver JVM with {@code point} armed;
   * checks the JVM halted there; then restarts a copy of the checkpoint with the driver's local
   * directory kept, another with fresh local directories, and checks both answers.
   */
  private void crashAndRestart(String point, int prefix, int total, long sinkSleepMs,
      boolean ageBeforeCrash) throws Exception {
    String name = point.replaceAll("[^A-Za-z0-9]", "-");
    String ckpt = h.s3Checkpoint(name);
    Path base = Files.createDirectories(h.work.resolve("crash-" + name + "-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    Path out = base.resolve("out");
    Path local = base.resolve("local");
    for (int b = 0; b < prefix; b++) {
      writeBatch(in, b);
    }
    runHere(ckpt, in, out, base.resolve("local-prefix"), sinkSleepMs);
    assertExact(point + " before the crash", out, prefix);
    if (ageBeforeCrash) {
      age(ckpt);
    }
    for (int b = prefix; b < total; b++) {
      writeBatch(in, b);
    }
    List<String> args = new ArrayList<>(List.of(h.s3.endpoint().toString(), ckpt, in.toString(),
        out.toString(), local.toString(), point, Long.toString(sinkSleepMs),
        "spark.sql.streaming.stateStore.maintenanceInterval=1s"));
    conf().forEach((k, v) -> args.add(k + "=" + v));
    Path log = logs.resolve(name + ".log");
    long t0 = System.nanoTime();
    int code;
    try (ChildJvm child = ChildJvm.start(CrashDriver.class, log, args.toArray(new String[0]))) {
      code = child.await(CHILD_TIMEOUT_S);
    }
    String text = Files.readString(log);
    String pointName = point.contains("@") ? point.substring(0, point.indexOf('@')) : point;
    assertTrue(text.contains("strata fault point " + pointName + " reached"),
        "the driver reached " + point + " (exit " + code + "); log " + log);
    assertEquals(137, code, "the driver halted at " + point + "; log " + log);
    System.out.printf("CrashIT: %s halted the driver after %d s%n", point,
        (System.nanoTime() - t0) / 1_000_000_000L);

    String kept = cloneCheckpoint(ckpt, name + "-kept");
    Path outKept = base.resolve("out-kept");
    copyTree(out, outKept);
    String fresh = cloneCheckpoint(ckpt, name + "-fresh");
    Path outFresh = base.resolve("out-fresh");
    copyTree(out, outFresh);

    runHere(kept, in, outKept, local, 0);
    assertExact(point + ", restarted with the local dirs kept", outKept, total);
    runHere(fresh, in, outFresh, base.resolve("local-fresh"), 0);
    assertExact(point + ", restarted with fresh local dirs", outFresh, total);
    // minBatchesToRetain=2: the two newest versions of every store must be loadable
    List<String> missing = CheckpointAudit.missingNamedObjects(h.s3.dataDir(),
        SparkS3Harness.BUCKET, prefixOf(fresh), 2);
    assertTrue(missing.isEmpty(), "no retained manifest names a missing object: " + missing);
  }

  @Test
  void killedWhileSpillDeltasUpload() throws Exception {
    crashAndRestart("spill.upload@3", 2, 5, 0, false);
  }

  @Test
  void killedJustBeforeTheVersionObjectPut() throws Exception {
    crashAndRestart("commit.beforePut@3", 2, 5, 0, false);
  }

  @Test
  void killedDuringTheVersionObjectPut() throws Exception {
    crashAndRestart("commit.duringPut@3", 2, 5, 0, false);
  }

  @Test
  void killedAfterTheVersionObjectPutBeforeTheLocalIngest() throws Exception {
    crashAndRestart("commit.afterPut@3", 2, 5, 0, false);
  }

  @Test
  void killedDuringABackgroundSnapshotUpload() throws Exception {
    crashAndRestart("snapshot.upload", 2, 6, 1500, false);
  }

  @Test
  void killedDuringGarbageCollection() throws Exception {
    crashAndRestart("gc.afterDelete", 5, 9, 1500, true);
  }

  @Test
  void twentyConsecutiveRestartsOnFreshLocalDirs() throws Exception {
    String ckpt = h.s3Checkpoint("restarts");
    Path base = Files.createDirectories(h.work.resolve("restarts"));
    Path in = Files.createDirectories(base.resolve("in"));
    Path out = base.resolve("out");
    int restarts = 20;
    for (int r = 0; r < restarts; r++) {
      writeBatch(in, r);
      runHere(ckpt, in, out, base.resolve("local-" + r), 0);
      assertExact("restart " + r, out, r + 1);
    }
  }
}
